"""Time-varying routing: drifting environment, per-round regret reference, and the BOLT-capped ``gp-tv`` model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from evroute.bandit import RoutingBandit
from evroute.environments import make_environment
from evroute.environments.drifting import DriftConfig, DriftingEnvironment, parse_params
from evroute.errors import ParameterError
from evroute.experiments.config import ExperimentConfig
from evroute.experiments.registry import make_model
from evroute.experiments.runner import load_linegraph
from evroute.models.gp_tv import TimeVaryingGPEdgeModel, w2_removal_scores
from evroute.policies import make_policy

NET = "synthetic:120:0"


@pytest.fixture(scope="module")
def lg():
    return load_linegraph(NET)


@pytest.fixture(scope="module")
def env(lg):
    return make_environment(lg, "drifting", {"drift": "daily", "drift_period": 40}, seed=3)


def test_drift_is_seeded_smooth_and_moves(lg, env) -> None:
    again = make_environment(lg, "drifting", {"drift": "daily", "drift_period": 40}, seed=3)
    other = make_environment(lg, "drifting", {"drift": "daily", "drift_period": 40}, seed=4)
    assert isinstance(again, DriftingEnvironment) and isinstance(other, DriftingEnvironment)
    ts = np.linspace(0.0, 80.0, 801)
    f = np.stack([env.mean_at(t) for t in ts])
    assert np.array_equal(f, np.stack([again.mean_at(t) for t in ts]))
    assert not np.allclose(f[100], other.mean_at(ts[100]))
    sigma0 = np.sqrt(env.prior_var)
    # smooth: a 0.1-round step moves no edge by more than 0.15 sigma0, while a half period moves it a lot
    assert np.max(np.abs(np.diff(f, axis=0))) < 0.15 * sigma0
    assert np.max(np.abs(env.mean_at(20.0) - env.mean_at(0.0))) > 0.5 * sigma0
    # second differences are tiny relative to first ones (C^2 in time)
    assert np.max(np.abs(np.diff(f, 2, axis=0))) < 0.02 * np.max(np.abs(np.diff(f, axis=0)))


def test_environment_params_are_validated(lg) -> None:
    cfg, drift = parse_params({"drift": "slow", "drift_slow_lengthscale": 30, "noise_frac": 0.2})
    assert cfg.noise_frac == 0.2 and drift == DriftConfig(kind="slow", slow_lengthscale=30.0)
    assert parse_params({})[1] == DriftConfig(kind="daily")
    for bad in (
        {"drift": "weekly"},
        {"drift": "none"},
        {"drift": "daily", "drift_colour": 1},
        {"drift": "daily", "drift_period": -1},
    ):
        with pytest.raises(ParameterError):
            parse_params(bad)
    with pytest.raises(ParameterError):  # drift keys belong to the drifting environment
        ExperimentConfig(network=NET, env="paper", environment={"drift": "daily"})
    exp = ExperimentConfig(network=NET, env="drifting", environment={"drift": "daily"}, model="gp-tv")
    assert exp.env_config()[0].noise_frac == 0.1


@pytest.mark.slow
def test_reference_route_follows_the_truth(lg, env) -> None:
    model = make_model("bi", env)
    bandit = RoutingBandit(env, model, make_policy("ts"), 0, lg.n_nodes - 1, seed=0)
    from evroute.bandit import regret_reference_route

    changed = 0
    last = None
    for _ in range(40):
        rec = bandit.step()
        ref = regret_reference_route(env, 0, lg.n_nodes - 1)
        assert env.time == rec.round
        assert rec.optimal_wh == pytest.approx(ref.cost)
        assert rec.regret_wh >= -1e-9
        changed += last is not None and rec.optimal_wh != last
        last = rec.optimal_wh
    assert changed > 30  # the optimum's energy moves with the truth


def test_static_environment_never_advances(lg) -> None:
    static = make_environment(lg, "paper", {}, seed=3)
    assert not isinstance(static, DriftingEnvironment) and static.advance(5) is False


@pytest.mark.slow
def test_data_cap_holds_and_model_pickles(lg, env) -> None:
    model = make_model("gp-tv", env, n_max=60, compute_scale=200.0)
    assert isinstance(model, TimeVaryingGPEdgeModel)
    bandit = RoutingBandit(env, model, make_policy("ts"), 0, lg.n_nodes - 1, seed=1)
    for _ in range(40):
        bandit.step()
        assert len(model.edges) <= model.n_star <= 60
    assert max(model.size_history) <= 60 and model.n_obs > 60
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(clone.posterior().mean, model.posterior().mean)


@pytest.mark.slow
def test_w2_scores_match_downdate(lg, env) -> None:
    """The closed form equals the exact mean-part difference (+ variance bound) computed by refitting."""
    model = make_model("gp-tv", env, compute_scale=0.0)
    assert isinstance(model, TimeVaryingGPEdgeModel)
    rng = np.random.default_rng(0)
    for t in range(1, 4):
        model.advance(t)
        e = rng.choice(env.n_edges, 5, replace=False)
        model.update(e, env.observe(e, rng))
    scores = model.removal_scores()
    i = 3
    t_grid = np.linspace(model.time, model.time + 400.0, 4001)
    full = [_post_at(model, t) for t in t_grid]
    keep = np.setdiff1d(np.arange(len(model.edges)), [i])
    sub = pickle.loads(pickle.dumps(model))
    sub.edges, sub.times, sub.resid = sub.edges[keep], sub.times[keep], sub.resid[keep]
    sub._refit()
    less = [_post_at(sub, t) for t in t_grid]
    dmu = np.array([(a[0] - b[0]) ** 2 for a, b in zip(full, less, strict=True)]).sum(1)
    dvar = np.array([np.abs(a[1] - b[1]) for a, b in zip(full, less, strict=True)]).sum(1)
    numeric = np.trapezoid(dmu + dvar, t_grid)
    assert scores[i] ** 2 == pytest.approx(numeric, rel=2e-2)
    assert np.all(w2_removal_scores(model._kinv, model._alpha, np.eye(len(keep) + 1)) >= 0)


def _post_at(model, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and variance of f at time t (model units)."""
    model.advance(t)
    p = model.posterior()
    return p.mean / model.scale, p.var / model.scale**2


@pytest.mark.slow
def test_time_aware_model_follows_a_change_static_misses(lg) -> None:
    """Edge energies jump from +sigma0 to -sigma0 around the prior: gp-tv follows, the static GP stays stuck."""
    env = make_environment(lg, "paper", {}, seed=0)
    edges = np.arange(0, 10)
    sigma0 = np.sqrt(env.prior_var)
    tv = make_model("gp-tv", env, time_lengthscale=10.0, compute_scale=0.0)
    st = make_model("bi", env)
    for t in range(1, 61):
        tv.advance(t)
        truth = env.prior_mean_wh[edges] + (sigma0 if t <= 30 else -sigma0)
        y = truth + np.sqrt(env.noise_var) * np.random.default_rng(t).standard_normal(len(edges))
        tv.update(edges, y)
        st.update(edges, y)
    tv.advance(61)
    err_tv = np.abs(tv.posterior().mean[edges] - (env.prior_mean_wh[edges] - sigma0)).mean()
    err_st = np.abs(st.posterior().mean[edges] - (env.prior_mean_wh[edges] - sigma0)).mean()
    assert err_tv < 0.4 * sigma0 and err_st > 0.8 * sigma0  # static: ~ the average of +-sigma0


@pytest.mark.slow
def test_route_set_learner_follows_the_drifting_truth(lg) -> None:
    """The route-set baseline advances the environment's clock too: its regret is against the current optimum."""
    from evroute.bandit import regret_reference_route
    from evroute.routeset import RouteSetBandit

    fresh = make_environment(lg, "drifting", {"drift": "daily", "drift_period": 40}, seed=3)
    assert isinstance(fresh, DriftingEnvironment)
    learner = RouteSetBandit(fresh, 0, lg.n_nodes - 1, policy="ts", seed=0, k=5)
    optima = set()
    for _ in range(12):
        rec = learner.step()
        assert fresh.time == rec.round
        ref = regret_reference_route(fresh, 0, lg.n_nodes - 1)
        assert rec.optimal_wh == pytest.approx(ref.cost)
        optima.add(round(rec.optimal_wh, 6))
    assert len(optima) > 6  # the reference moved with the truth
