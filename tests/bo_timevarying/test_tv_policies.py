"""Time-varying policies: data-set cap, W2 removal, tracking a moving optimum, validation, seeding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evroute.bo import BoxDomain, FiniteDomain
from evroute.bo.timevarying.bolt import integrated_w2_removal, optimal_dataset_size
from evroute.bo.timevarying.clock import SimulatedClock
from evroute.bo.timevarying.datasets import W2Budget
from evroute.bo.timevarying.kernels import matern
from evroute.bo.timevarying.policies import ALGORITHMS, BOLT, TVGPUCB, TimeVaryingGPUCB, make_policy
from evroute.errors import ParameterError

FAST: dict[str, Any] = {"n_raw": 128, "n_restarts": 2, "fit_iters": 10}


def _moving_peak(x: float, t: float, horizon: float) -> float:
    """Reward with a peak moving slowly from 0.3 to 0.45 over the horizon (regret range about [0, 8])."""
    return -((x - 0.3 - 0.15 * t / horizon) ** 2) / 0.06


def _run(policy: TimeVaryingGPUCB, horizon: float, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    clock, rng = SimulatedClock(compute_scale=0.0), np.random.default_rng(seed)
    regrets, sizes = [], []
    while (t := clock.now()) < horizon:
        x = policy.ask(t)
        clock.evaluate(1.0)
        policy.tell(x, _moving_peak(float(x[0]), t, horizon) + 0.02 * rng.standard_normal(), t)
        regrets.append(-_moving_peak(float(x[0]), t, horizon))
        sizes.append(policy.dataset_size)
    return np.asarray(regrets), sizes


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_each_algorithm_tracks_a_slowly_moving_optimum(name: str) -> None:
    horizon = 110.0
    regrets, _ = _run(make_policy(name, BoxDomain([0.0], [1.0]), seed=1, **FAST), horizon)
    xs = np.random.default_rng(0).random(20000)
    random_regret = float(
        np.mean([-_moving_peak(x, t, horizon) for x, t in zip(xs, np.linspace(80, 110, 20000), strict=True)])
    )
    # most late queries sit near the moving peak (median: ET-GP-UCB explores for a few steps after each reset)
    assert np.median(regrets[-30:]) < 0.2 * random_regret  # uniform random search scores about 1.5 here


def test_bolt_keeps_the_data_set_at_n_star_and_removes_the_w2_argmin() -> None:
    policy = BOLT(BoxDomain([0.0], [1.0]), seed=0, n_max=20, **FAST)  # constant response time -> n* = n_max
    clock, rng = SimulatedClock(compute_scale=0.0), np.random.default_rng(0)
    sizes = []
    for _ in range(45):
        t = clock.now()
        x = policy.ask(t)
        clock.evaluate(1.0)
        y = _moving_peak(float(x[0]), t, 45.0) + 0.02 * rng.standard_normal()
        if policy.dataset_size == 20:  # the next tell must remove the least relevant observation
            before = list(policy.active)
            gp = policy.condition_active()
            gp.set_train_data(np.vstack([gp.train_inputs, [x[0], t]]), np.append(policy.y[before], y))
            expected = (before + [policy.n_obs])[int(np.argmin(integrated_w2_removal(gp, t)))]
            policy.tell(x, y, t)
            assert expected not in policy.active
        else:
            policy.tell(x, y, t)
        sizes.append(policy.dataset_size)
    assert policy.n_star == 20
    assert sizes[19:] == [20] * (45 - 19)


@pytest.mark.slow
def test_bolt_n_star_follows_growing_response_time() -> None:
    policy = BOLT(BoxDomain([0.0], [1.0]), seed=0, **FAST)
    clock, rng = SimulatedClock(compute_scale=0.0), np.random.default_rng(0)
    for _ in range(70):
        t = clock.now()
        x = policy.ask(t)
        clock.evaluate(0.5 + 0.5 * policy.dataset_size)  # R(n) grows with |D|
        policy.tell(x, _moving_peak(float(x[0]), t, 2000.0) + 0.02 * rng.standard_normal(), t)
    assert policy.gp is not None and policy.response_model.coefficients[1:].sum() > 0
    length_t = policy.gp.kernel.length_t
    expected = optimal_dataset_size(lambda lag: matern(lag, length_t, 1.5), policy.response_model, n0=1)
    assert policy.n_star == expected  # recomputed online from the fitted R(n) and the current l_T
    assert policy.dataset_size <= max(expected, 70 - 15)


@pytest.mark.slow
def test_wdbo_budget_removes_observations() -> None:
    policy = make_policy("w-dbo", BoxDomain([0.0], [1.0]), seed=0, **FAST)
    _, sizes = _run(policy, 80.0)
    assert isinstance(policy.manager, W2Budget) and policy.manager.n_removed > 0
    assert sizes[-1] == len(sizes) - policy.manager.n_removed


def test_resets() -> None:
    r = make_policy("r-gp-ucb", BoxDomain([0.0], [1.0]), seed=0, reset_every=10, **FAST)
    _, sizes = _run(r, 45.0)
    assert max(sizes[25:]) <= 10 and min(sizes[25:]) <= 1


def test_same_seed_same_choices_and_finite_domain() -> None:
    dom = FiniteDomain(np.linspace(0.0, 1.0, 21))
    a, b = (make_policy("bolt", dom, seed=3, **FAST) for _ in range(2))
    ra, _ = _run(a, 25.0)
    rb, _ = _run(b, 25.0)
    np.testing.assert_array_equal(a.X, b.X)
    assert all(dom.contains(x) for x in a.X)


def test_validation() -> None:
    dom = BoxDomain([0.0], [1.0])
    with pytest.raises(ParameterError):
        make_policy("nope", dom)
    with pytest.raises(ParameterError):
        make_policy("bolt", dom).ask()  # clock-based policies need t
    with pytest.raises(ParameterError):
        TimeVaryingGPUCB(dom, time_input="none", manager=W2Budget())
    with pytest.raises(ParameterError):
        make_policy("gp-ucb", dom, beta_scale=-1.0)
    p = TVGPUCB(dom, seed=0)
    assert 0.0 < p.epsilon < 1.0
    x = make_policy("gp-ucb", dom, seed=0).ask()  # static policies do not need t
    assert dom.contains(x)
