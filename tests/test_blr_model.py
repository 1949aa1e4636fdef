"""The ``blr`` baseline (Bayesian linear regression on edge features with per-edge residuals) against brute force,
and BI's empirical-Bayes refit schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evroute.linegraph import build_line_graph
from evroute.models.bi import BayesianEdgeModel
from evroute.models.blr import HierarchicalEdgeModel, edge_features
from evroute.network.registry import load_network

E, P = 30, 3


def _data(seed: int, s_b2: float, s_r2: float, s_n2: float, n_obs: int = 60):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((E, P))
    m0 = rng.uniform(5.0, 20.0, E)
    f = m0 + x @ (math.sqrt(s_b2) * rng.standard_normal(P)) + math.sqrt(s_r2) * rng.standard_normal(E)
    e = rng.integers(0, E - 5, n_obs)  # the last 5 edges are never observed
    y = f[e] + math.sqrt(s_n2) * rng.standard_normal(n_obs)
    return x, m0, e, y


def _dense(x, m0, e, y, s_b2, s_r2, s_n2):
    """Brute force: the joint Gaussian of all edges and all raw observations."""
    k = s_b2 * x @ x.T + s_r2 * np.eye(E)
    kxy = k[:, e]
    kyy = k[np.ix_(e, e)] + s_n2 * np.eye(len(e))
    sol = np.linalg.solve(kyy, np.column_stack([y - m0[e], kxy.T]))
    mean = m0 + kxy @ sol[:, 0]
    cov = k - kxy @ sol[:, 1:]
    return mean, cov, kyy


def test_posterior_is_the_exact_joint_gaussian_posterior() -> None:
    """Means and variances equal the dense Gaussian conditioning on the raw observations (1e-8 relative: two exact
    formulas, rounding only); the unobserved edges learn through the shared coefficients."""
    s_b2, s_r2, s_n2 = 4.0, 1.5, 0.7
    x, m0, e, y = _data(0, s_b2, s_r2, s_n2)
    model = HierarchicalEdgeModel(m0, x, s_b2, s_n2, refit_first=0)
    model.resid_var = s_r2
    model.update(e, y)
    post = model.posterior()
    mean, cov, _ = _dense(x, m0, e, y, s_b2, s_r2, s_n2)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(post.variance, np.diag(cov), rtol=1e-8, atol=1e-10)
    assert np.all(np.abs(post.mean[-5:] - m0[-5:]) > 0)  # never observed, moved by the shared coefficients


def test_joint_sampler_has_the_posterior_covariance() -> None:
    """40,000 joint draws: every mean within 5 standard errors, and the covariance of two edges that share the
    coefficients within 5 standard errors (``sqrt((v_i v_j + c^2) / n)``): Thompson sampling's draws are joint."""
    s_b2, s_r2, s_n2 = 4.0, 1.5, 0.7
    x, m0, e, y = _data(1, s_b2, s_r2, s_n2, n_obs=8)
    model = HierarchicalEdgeModel(m0, x, s_b2, s_n2, refit_first=0)
    model.resid_var = s_r2
    model.update(e, y)
    post = model.posterior()
    assert post.sampler is not None
    _, cov, _ = _dense(x, m0, e, y, s_b2, s_r2, s_n2)
    n = 40_000
    rng = np.random.default_rng(2)
    draws = np.stack([post.sampler(rng) for _ in range(n)])
    assert np.all(np.abs(draws.mean(axis=0) - post.mean) < 5 * np.sqrt(post.variance / n))
    # the most correlated pair of unobserved edges (correlated only through beta)
    sub = np.abs(cov[E - 5 :, E - 5 :]) - np.diag(np.full(5, np.inf))
    i, j = (E - 5 + k for k in np.unravel_index(np.argmax(sub), sub.shape))
    c = float(np.cov(draws[:, i], draws[:, j])[0, 1])
    assert abs(cov[i, j]) > 0.1
    assert abs(c - cov[i, j]) < 5 * math.sqrt((cov[i, i] * cov[j, j] + cov[i, j] ** 2) / n)


def test_marginal_likelihood_is_the_raw_observations_density() -> None:
    """The statistics' marginal likelihood equals the multivariate normal log density of the raw observations
    (1e-9 relative)."""
    s_b2, s_r2, s_n2 = 2.0, 0.8, 0.5
    x, m0, e, y = _data(3, s_b2, s_r2, s_n2)
    model = HierarchicalEdgeModel(m0, x, 1.0, 1.0, refit_first=0)
    model.update(e, y)
    _, _, kyy = _dense(x, m0, e, y, s_b2, s_r2, s_n2)
    ref = stats.multivariate_normal(m0[e], kyy).logpdf(y)
    assert model.log_marginal_likelihood(s_n2, s_r2, s_b2) == pytest.approx(ref, rel=1e-9)


def test_refits_recover_noise_and_residual_variances() -> None:
    """400 edges, 2-9 observations each, started 10x off: noise within 4 standard errors ``v sqrt(2 / df)``
    (``df = sum(n_e - 1)``), residual variance within 30 % (its ML-II s.e. is about ``sqrt(2 / 400)`` of
    ``s_r^2 + s_n^2 / n_e``, i.e. 11 %); refits happen at rounds 4, 8, 16 only."""
    rng = np.random.default_rng(5)
    n_e, p = 400, 4
    x = rng.standard_normal((n_e, p))
    m0 = rng.uniform(5.0, 20.0, n_e)
    s_r2, s_n2 = 2.0, 1.0
    f = m0 + x @ (2.0 * rng.standard_normal(p)) + math.sqrt(s_r2) * rng.standard_normal(n_e)
    counts = rng.integers(2, 10, n_e)
    e = np.repeat(np.arange(n_e), counts)
    y = f[e] + math.sqrt(s_n2) * rng.standard_normal(len(e))
    model = HierarchicalEdgeModel(m0, x, 20.0, 10.0, refit_first=4)
    model.update(e, y)
    model.advance(3)
    assert model.noise_var == 10.0  # before the first refit
    model.advance(4)
    df = float((counts - 1).sum())
    assert abs(model.noise_var - s_n2) < 4 * s_n2 * math.sqrt(2 / df)
    assert abs(model.resid_var - s_r2) < 0.3 * s_r2
    best = model.log_marginal_likelihood(model.noise_var, model.resid_var, model.coef_var)
    for k in range(3):
        v = [model.noise_var, model.resid_var, model.coef_var]
        v[k] *= 1.1
        assert model.log_marginal_likelihood(*v) < best
    model.noise_var = 3.0
    model.advance(6)
    assert model.noise_var == 3.0  # no refit between 4 and 8


def test_bi_refits_by_empirical_bayes_on_its_schedule() -> None:
    rng = np.random.default_rng(6)
    m0 = rng.uniform(5.0, 20.0, 50)
    e = np.repeat(np.arange(50), 4)
    y = (m0 + 2.0 * rng.standard_normal(50))[e] + rng.standard_normal(len(e))
    model = BayesianEdgeModel(m0, 100.0, 50.0, refit_first=8)
    twin = BayesianEdgeModel(m0, 100.0, 50.0)
    model.update(e, y)
    twin.update(e, y)
    model.advance(7)
    assert model.noise_var[0] == 50.0
    model.advance(8)
    assert (model.noise_var[0], model.prior_var[0]) == pytest.approx(twin.fit_variances(), rel=1e-12)
    model.noise_var[:] = 5.0
    model.advance(12)
    assert model.noise_var[0] == 5.0  # next refit at 16
    model.advance(16)
    assert model.noise_var[0] != 5.0


def test_edge_features_are_scaled_and_name_the_road_classes() -> None:
    lg = build_line_graph(load_network("synthetic:200:3"))
    x, names = edge_features(lg)
    assert x.shape == (lg.n_nodes, len(names)) and names[:4] == ["intercept", "length", "length*speed", "length*grade"]
    np.testing.assert_allclose(np.sqrt(np.mean(x * x, axis=0)), 1.0, rtol=1e-12)
    classes = [n for n in names if n.startswith("class:")]
    assert len(classes) == len(np.unique(np.round(lg.network.speed_mps * 3.6 / 10)))


@pytest.mark.parametrize(("model", "params"), [("blr", {"refit_first": 4}), ("bi", {"refit_first": 4})])
def test_checkpoint_resumes_bit_identically(tmp_path, model, params) -> None:
    """A run stopped after 9 rounds (past the refits at 4 and 8) and restored from its data checkpoint plays the same
    rounds 10-14 and ends with the same posterior as an uninterrupted run (refitted variances are in the checkpoint)."""
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
        return RoutingBandit(env, make_model(model, env, **params), make_policy("ts"), s, g, seed=3)

    whole = bandit()
    ref = [(r.route, r.observed_wh) for r in whole.run(14)]
    first = bandit()
    first.run(9)
    binding = {"config_sha256": "x", "network_hash": "y", "seed": 3}
    save_checkpoint(tmp_path / "checkpoint.npz", first, binding)
    resumed = bandit()
    restore_checkpoint(tmp_path / "checkpoint.npz", resumed, binding, 14)
    assert [(r.route, r.observed_wh) for r in resumed.run(5)] == ref[9:]
    # round 14: the refit values of round 8 restored (1e-12: a restored array's memory layout can change the
    # summation order of a matrix product, the last bit; a lost refit would move them by orders of magnitude more)
    a, b = whole.model.posterior(), resumed.model.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.variance, b.variance, rtol=1e-12, atol=1e-12)
    assert a.noise_var is not None and b.noise_var is not None
    np.testing.assert_array_equal(a.noise_var, b.noise_var)
    fresh = make_model(model, env, **params).posterior().noise_var
    assert fresh is not None and not np.array_equal(a.noise_var, fresh)  # refitted
