"""ET-GP-UCB's trigger (uniform error bound over time) and BOLT's removal down to a falling n* (Eq. 9, Eq. 12)."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.bo import BoxDomain, FiniteDomain
from evroute.bo.timevarying.bolt import exact_integrated_w2_removal, integrated_w2_removal
from evroute.bo.timevarying.clock import SimulatedClock
from evroute.bo.timevarying.datasets import EventReset
from evroute.bo.timevarying.gp import GPHyper, SpatioTemporalKernel, spatio_temporal_gp
from evroute.bo.timevarying.policies import BOLT, ETGPUCB

NOISE_SD = 0.1
ARMS = FiniteDomain(np.linspace(0.0, 1.0, 101))


def _static(x: float) -> float:
    return float(np.sin(6.0 * x) + 0.5 * np.cos(11.0 * x))


def _etgpucb(seed: int) -> ETGPUCB:
    # the right model: fixed hyperparameters (f has standard deviation ~0.8, so standardised units ~ observation units)
    hyper = GPHyper(signal=1.0, length_s=0.15, noise=NOISE_SD**2)
    return ETGPUCB(ARMS, seed=seed, noise_var=NOISE_SD**2, fit_iters=0, init_hyper=hyper)


def test_threshold_is_the_union_bound_over_time() -> None:
    trig = EventReset(delta=0.1)
    # sum_k delta_k = delta with delta_k = 6 delta / (pi^2 k^2), and P(|Z| > a) <= exp(-a^2 / 2)
    for k in (1, 2, 10, 500):
        a = trig.threshold_factor(k)
        assert np.isclose(np.exp(-(a**2) / 2), 6 * 0.1 / (np.pi**2 * k**2), rtol=1e-12)
    assert trig.threshold_factor(500) > trig.threshold_factor(1)


@pytest.mark.slow
def test_etgpucb_never_resets_on_a_static_function() -> None:
    for seed in (0, 1):
        pol, rng = _etgpucb(seed), np.random.default_rng(seed)
        for _ in range(500):
            x = pol.ask()
            pol.tell(x, _static(float(x[0])) + NOISE_SD * rng.standard_normal())
        assert isinstance(pol.manager, EventReset)
        assert pol.manager.n_resets == 0
        assert pol.dataset_size == 500


@pytest.mark.slow
def test_etgpucb_resets_promptly_after_an_abrupt_change() -> None:
    pol, rng = _etgpucb(0), np.random.default_rng(0)
    for step in range(300):
        x = pol.ask()
        f = _static(float(x[0])) if step < 200 else -_static(float(x[0]))  # abrupt change at step 200
        pol.tell(x, f + NOISE_SD * rng.standard_normal())
    assert isinstance(pol.manager, EventReset)
    first = pol.manager.reset_steps[0]
    assert 200 <= first <= 202  # the first observation of the new function that the old posterior mispredicts
    assert pol.dataset_size < 100


def test_exact_w2_is_below_the_bound_and_agrees_on_clear_cases() -> None:
    rng = np.random.default_rng(3)
    gp = spatio_temporal_gp(nu_s=2.5, nu_t=1.5, init=GPHyper(signal=1.0, length_s=0.2, length_t=20.0, noise=0.01))
    x, t = rng.random((25, 2)), np.sort(rng.uniform(0.0, 100.0, 25))
    gp.set_train_data(SpatioTemporalKernel.inputs(x, t), np.sin(5 * x[:, 0]) + 0.01 * t)
    bound, exact = integrated_w2_removal(gp, 100.0), exact_integrated_w2_removal(gp, 100.0, n_points=4096)
    assert np.all(exact <= bound * (1 + 1e-2))  # (d sigma)^2 <= |d sigma^2|
    # the oldest observation is the least relevant for the future under both criteria
    assert int(np.argmin(bound)) == int(np.argmin(exact)) == 0


@pytest.mark.slow
def test_bolt_dataset_follows_a_falling_n_star() -> None:
    policy = BOLT(BoxDomain([0.0], [1.0]), seed=0, n_raw=64, n_restarts=1, fit_iters=5)
    clock, rng = SimulatedClock(compute_scale=0.0), np.random.default_rng(0)
    sizes: list[int] = []
    stars: list[int | None] = []
    for k in range(90):
        t = clock.now()
        x = policy.ask(t)
        # response time grows steeply with |D| after step 40, so the fitted R(n) and n* fall
        clock.evaluate(1.0 if k < 40 else 1.0 + 0.02 * policy.dataset_size**3)
        policy.tell(x, float(np.sin(6 * x[0] + 0.01 * t)) + 0.02 * rng.standard_normal(), t)
        sizes.append(policy.dataset_size)
        stars.append(policy.n_star)
    known = [(s, n) for s, n in zip(sizes, stars, strict=True) if n is not None]
    assert all(s <= n for s, n in known)  # |D| <= n* after every step, however far n* fell
    # n* fell from > 1000 to 14 when R(n) started growing: |D| went from 41 to 14 in one step (many removals; one
    # observation added and at most one removed per step would have kept |D| at 41)
    assert max(sizes[i] - sizes[i + 1] for i in range(len(sizes) - 1)) >= 10
    final_star = stars[-1]
    assert final_star is not None and sizes[-1] == final_star < 20
