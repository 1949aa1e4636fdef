"""The ``trees`` baseline (bootstrapped regression trees on edge features with per-edge residuals): it learns a
known step-function truth, its posterior is the mixture it samples from, it is seeded, and a bandit with it finds
the brute-force best route."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from netfixtures import grid_network

from evroute.errors import ParameterError
from evroute.linegraph import build_line_graph
from evroute.models.bi import BayesianEdgeModel
from evroute.models.trees import TreeConfig, TreeEnsembleEdgeModel, build_trees, tree_features
from evroute.network.registry import load_network

#: per-metre correction (Wh/m) by road class (speed limit in tens of km/h): the step-function truth
STEP = {3.0: 0.10, 5.0: 0.0, 7.0: 0.25}


def _step_truth(lg) -> tuple[np.ndarray, np.ndarray]:
    """``(mu0, f)``: a physics-like prior mean (0.15 Wh/m) and the truth ``mu0 + L c(class)``."""
    x = tree_features(lg)
    length = x[:, 0]
    mu0 = 0.15 * length
    cls = x[:, 3]
    step = np.array([STEP.get(float(c), 0.05 * (c - 5.0)) for c in cls])
    return mu0, mu0 + length * step


def _model(lg, mu0, *, seed: int = 0, **cfg) -> TreeEnsembleEdgeModel:
    var = float(np.mean(mu0**2)) * 0.16**2
    return TreeEnsembleEdgeModel(
        mu0, tree_features(lg), lg.network.length_m, var, var / 4, TreeConfig(seed=seed, **cfg)
    )


def _observe_half(lg, f, seed: int, reps: int = 3, sd: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    seen = rng.choice(lg.n_nodes, lg.n_nodes // 2, replace=False)
    e = np.repeat(seen, reps)
    return seen, e, f[e] + sd * rng.standard_normal(len(e))


def test_learns_a_step_function_truth_on_unobserved_edges() -> None:
    """Half of a 200-edge network's edges observed 3 times (noise 0.5 Wh): on the OTHER half the posterior mean's
    error is under 10 % of the physics prior's (the step is a function of the road class, which the trees split
    on; what is left is the noise averaged over many edges per leaf), while BI leaves them at the prior (100 %)."""
    lg = build_line_graph(load_network("synthetic:200:3"))
    mu0, f = _step_truth(lg)
    seen, e, y = _observe_half(lg, f, seed=1)
    model = _model(lg, mu0)
    model.update(e, y)
    model.advance(1)
    assert model.last_fit == 1 and len(model.members) == 32
    unseen = np.setdiff1d(np.arange(lg.n_nodes), seen)
    post = model.posterior()
    rms_prior = math.sqrt(np.mean((mu0[unseen] - f[unseen]) ** 2))
    rms_trees = math.sqrt(np.mean((post.mean[unseen] - f[unseen]) ** 2))
    assert rms_prior > 1.0  # the step matters
    assert rms_trees < 0.1 * rms_prior
    bi = BayesianEdgeModel(mu0, model.prior_var, model.noise0)
    bi.update(e, y)
    np.testing.assert_allclose(bi.posterior().mean[unseen], mu0[unseen], rtol=1e-12)
    # the observed edges' residual shrinks to the noise: tau^2 at its floor (the truth has no per-edge residual)
    assert model.resid_var == pytest.approx(0.01 * model.prior_var)


def test_before_the_first_fit_it_is_bi_exactly() -> None:
    """Fewer than ``min_edges`` observed edges: one member, the physics energies; the posterior is BI's conjugate
    posterior with the same variances (1e-12 relative: the same closed form, rounding only)."""
    lg = build_line_graph(load_network("synthetic:200:3"))
    mu0, f = _step_truth(lg)
    model = _model(lg, mu0, min_edges=5)
    e = np.array([0, 0, 1, 2, 2, 2])
    y = f[e] + np.linspace(-1, 1, len(e))
    model.update(e, y)
    model.advance(3)
    assert model.last_fit == -1 and len(model.members) == 0
    bi = BayesianEdgeModel(mu0, model.prior_var, model.noise0)
    bi.update(e, y)
    a, b = model.posterior(), bi.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12)
    np.testing.assert_allclose(a.variance, b.variance, rtol=1e-12)


def test_posterior_moments_are_the_sampled_mixtures() -> None:
    """40,000 Thompson draws (one member, then the conditional residual): every edge's mean within 5 standard errors
    of ``posterior().mean`` and its variance within 5 standard errors (``v sqrt(2 / n)`` for a near-normal
    mixture, doubled for its excess kurtosis)."""
    lg = build_line_graph(load_network("synthetic:200:3"))
    mu0, f = _step_truth(lg)
    _, e, y = _observe_half(lg, f, seed=2, reps=1, sd=3.0)
    model = _model(lg, mu0, n_trees=8)
    model.update(e, y)
    model.advance(1)
    post = model.posterior()
    assert post.sampler is not None
    rng = np.random.default_rng(3)
    n = 40_000
    draws = np.stack([post.sampler(rng) for _ in range(n)])
    assert np.all(np.abs(draws.mean(axis=0) - post.mean) < 5 * np.sqrt(post.variance / n))
    assert np.all(np.abs(draws.var(axis=0) - post.variance) < 10 * post.variance * math.sqrt(2 / n))


def test_same_seed_same_numbers_and_the_seed_matters() -> None:
    lg = build_line_graph(load_network("synthetic:200:3"))
    mu0, f = _step_truth(lg)
    _, e, y = _observe_half(lg, f, seed=4)

    def fitted(seed: int) -> TreeEnsembleEdgeModel:
        m = _model(lg, mu0, seed=seed)
        m.update(e, y)
        m.advance(1)
        return m

    a, b, c = fitted(7), fitted(7), fitted(8)
    np.testing.assert_array_equal(a.members, b.members)
    pa, pb = a.posterior(), b.posterior()
    assert pa.sampler is not None and pb.sampler is not None
    np.testing.assert_array_equal(pa.sampler(np.random.default_rng(0)), pb.sampler(np.random.default_rng(0)))
    assert not np.array_equal(a.members, c.members)


def test_refit_schedule() -> None:
    lg = build_line_graph(load_network("synthetic:200:3"))
    mu0, f = _step_truth(lg)
    _, e, y = _observe_half(lg, f, seed=5)
    model = _model(lg, mu0, refit_every=4)
    model.update(e, y)
    fits = []
    for t in range(1, 12):
        model.advance(t)
        fits.append(model.last_fit)
    assert fits == [1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9]


def _simple_best(lg, f: np.ndarray, start: int, goal: int) -> float:
    g = lg.network.turn_graph()
    return min(float(f[p].sum()) for p in nx.all_simple_paths(g, start, goal))


@pytest.mark.parametrize("seed", [0, 1])
def test_bandit_with_trees_finds_the_brute_force_best_route(seed: int) -> None:
    """Thompson sampling with ``trees`` on a 4x3 grid with the step truth (noise 0.5 Wh), 60 rounds: the route of
    the final posterior mean costs (in truth) the minimum over ALL simple routes, enumerated."""
    from evroute.bandit import RoutingBandit
    from evroute.environments.base import EnergyEnvironment
    from evroute.policies import make_policy

    lg = build_line_graph(grid_network(4, 3, seed=seed, hilly=False))
    mu0, f = _step_truth(lg)
    env = EnergyEnvironment(lg, mu0, f, float(np.mean((f - mu0) ** 2)), 0.25)
    start, goal = 0, lg.n_nodes - 1
    best = _simple_best(lg, f, start, goal)
    model = _model(lg, mu0, seed=seed)
    bandit = RoutingBandit(env, model, make_policy("ts"), start, goal, seed=seed)
    bandit.run(60)
    route = bandit.oracle.shortest_route(np.maximum(model.posterior().mean, 1e-9), start, goal)
    assert float(f[route.edges].sum()) == pytest.approx(best, abs=1e-9)


def test_bad_parameters_are_refused() -> None:
    lg = build_line_graph(load_network("synthetic:200:3"))
    from evroute.models.builders import default_prior

    prior = default_prior(lg, 0.15 * lg.network.length_m)
    with pytest.raises(ParameterError, match="n_trees"):
        build_trees(lg, prior, n_trees=0)
    with pytest.raises(ParameterError, match="unknown trees model parameters: depth"):
        build_trees(lg, prior, depth=3)
    with pytest.raises(ParameterError, match="resid_floor"):
        build_trees(lg, prior, resid_floor=0.0)


@pytest.mark.parametrize(("model", "params"), [("trees", {"refit_every": 3}), ("gp-hp", {"prior_scales": "0.5,2"})])
def test_checkpoint_resumes_bit_identically(tmp_path, model: str, params: dict) -> None:
    """A run stopped after 9 rounds (past refits / weight changes) and restored from its data checkpoint plays the
    same rounds 10-14 and ends with the same posterior as an uninterrupted run (the trees' predictions and the
    candidates' statistics are in the checkpoint; no fitted tree is)."""
    from evroute.bandit import RoutingBandit
    from evroute.environments import make_environment
    from evroute.experiments.checkpoint import restore_checkpoint, save_checkpoint
    from evroute.experiments.registry import make_model
    from evroute.policies import make_policy
    from evroute.routes import corner_route

    lg = build_line_graph(load_network("synthetic:200:3"))
    env = make_environment(lg, "misspecified", {"truth": "road-class", "noise": "trip"}, seed=1)
    s, g = corner_route(lg, "A")

    def bandit() -> RoutingBandit:
        return RoutingBandit(env, make_model(model, env, seed=3, **params), make_policy("ts"), s, g, seed=3)

    whole = bandit()
    ref = [(r.route, r.observed_wh) for r in whole.run(14)]
    first = bandit()
    first.run(9)
    binding = {"config_sha256": "x", "network_hash": "y", "seed": 3}
    save_checkpoint(tmp_path / "checkpoint.npz", first, binding)
    resumed = bandit()
    restore_checkpoint(tmp_path / "checkpoint.npz", resumed, binding, 14)
    assert [(r.route, r.observed_wh) for r in resumed.run(5)] == ref[9:]
    a, b = whole.model.posterior(), resumed.model.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.variance, b.variance, rtol=1e-12, atol=1e-12)
