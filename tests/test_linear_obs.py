"""Linear (sum) readings of edge energies: the edge-space posterior against the observation-space GP solve from
scratch (dense matrices), and against the per-edge models on single-edge data."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.linegraph import build_line_graph
from evroute.models.bi import BayesianEdgeModel
from evroute.models.linear_obs import (
    DiagonalKernel,
    LinearObsEdgeModel,
    LinearStatistics,
    kernel_factor,
    linear_posterior,
)
from evroute.models.linear_obs_build import linear_model_from, offset_basis
from evroute.models.store import prior_model
from evroute.network.registry import load_network

NET = "synthetic:60:3"


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(load_network(NET))


def _readings(rng: np.random.Generator, n_edges: int, n_trips: int):
    """Trips of 2-5 readings, each over 1-4 distinct edges with shares in (0, 1]; tridiagonal noise (shared bounds)."""
    trips = []
    for _ in range(n_trips):
        edges = rng.choice(n_edges, size=int(rng.integers(3, 9)), replace=False)
        m = int(rng.integers(2, 6))
        a = np.where(rng.random((m, len(edges))) < 0.5, rng.uniform(0.1, 1.0, (m, len(edges))), 0.0)
        a[np.arange(m), rng.integers(0, len(edges), m)] = 1.0
        bound = rng.uniform(0.5, 2.0, m + 1)  # variances of the m + 1 readings that bound the m windows
        r = np.diag(bound[:-1] + bound[1:]) - np.diag(bound[1:-1], 1) - np.diag(bound[1:-1], -1)
        r += np.diag(a.sum(axis=1) * 0.3)
        trips.append((edges, a, rng.normal(20.0, 5.0, m), r))
    return trips


def _stack(n_e: int, trips) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The observation matrix A (n x E), readings y (n,) and block-diagonal R (n x n) of all trips."""
    rows, ys, blocks = [], [], []
    for edges, a, y, r in trips:
        full = np.zeros((len(y), n_e))
        full[:, edges] = a
        rows.append(full)
        ys.append(y)
        blocks.append(r)
    a_all, y_all = np.vstack(rows), np.concatenate(ys)
    r_all = np.zeros((len(y_all), len(y_all)))
    i = 0
    for r in blocks:
        r_all[i : i + len(r), i : i + len(r)] = r
        i += len(r)
    return a_all, y_all, r_all


def _dense_solve(k: np.ndarray, m: np.ndarray, trips) -> tuple[np.ndarray, np.ndarray]:
    """From scratch: mu = m + K A^T S^-1 (y - A m), Sigma = K - K A^T S^-1 A K, S = A K A^T + R."""
    a_all, y_all, r_all = _stack(len(m), trips)
    s = a_all @ k @ a_all.T + r_all
    gain = np.linalg.solve(s, a_all @ k).T  # K A^T S^-1
    return m + gain @ (y_all - a_all @ m), k - gain @ a_all @ k


@pytest.mark.parametrize(("kind", "offsets"), [("bi", False), ("gp-exact", False), ("bi", True), ("gp-exact", True)])
def test_linear_readings_match_the_dense_observation_space_solve(lg, kind, offsets):
    rng = np.random.default_rng(4)
    base = prior_model(kind, lg, method="dense", learn_hyper=False) if kind == "gp-exact" else prior_model(kind, lg)
    basis, sd = offset_basis(lg.network.length_m)
    model = linear_model_from(base, basis=basis, basis_sd=sd) if offsets else linear_model_from(base)
    trips = _readings(rng, lg.n_nodes, 12)
    for edges, a, y, r in trips:
        model.observe(edges, a, y, r)
    post = model.posterior()
    k = model.scale2 * model.kernel.dense()
    if offsets:  # the shared offsets add B diag(sd^2) B^T (Wh^2), written out
        base_k = model.scale2 * model.kernel.base.dense()
        np.testing.assert_allclose(k, base_k + (basis * sd**2) @ basis.T, rtol=1e-12)
    mu, cov = _dense_solve(k, model.prior_mean, trips)
    # both are exact; they differ by round-off of O(cond * eps) on Wh-sized numbers (priors ~ 1-100 Wh)
    np.testing.assert_allclose(post.mean, mu, rtol=1e-7, atol=1e-7 * np.abs(mu).max())
    np.testing.assert_allclose(post.variance, np.diag(cov), rtol=1e-6, atol=1e-8 * np.diag(k).max())
    idx = np.array([trips[0][0][0], trips[0][0][1], trips[3][0][2]])
    np.testing.assert_allclose(post.covariance_of(idx), cov[np.ix_(idx, idx)], atol=1e-7 * np.diag(k).max())
    # log marginal likelihood: log N(y; A m, A K A^T + R) of all readings stacked, from scratch
    a_all, y_all, r_all = _stack(model.prior_mean.size, trips)
    s_mat = a_all @ k @ a_all.T + r_all
    resid = y_all - a_all @ model.prior_mean
    want = -0.5 * (resid @ np.linalg.solve(s_mat, resid) + np.linalg.slogdet(s_mat)[1] + len(y_all) * np.log(2 * np.pi))
    assert model.log_ml == pytest.approx(want, rel=1e-8)


@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_mean_only_posterior_with_a_shared_kernel_factor_matches_the_dense_solve(lg, kind):
    """``linear_posterior(factor=kernel_factor(...), with_variance=False)`` for two noise levels over the same edges
    (one factor shared) gives each level's from-scratch mean and log marginal likelihood, and no variances."""
    base = prior_model(kind, lg, method="dense", learn_hyper=False) if kind == "gp-exact" else prior_model(kind, lg)
    basis, sd = offset_basis(lg.network.length_m)
    model = linear_model_from(base, basis=basis, basis_sd=sd)
    k = model.scale2 * model.kernel.dense()
    trips = _readings(np.random.default_rng(9), lg.n_nodes, 10)
    factor = None
    for inflate in (1.0, 4.0):  # the same readings with the noise covariance scaled: same touched edges
        scaled = [(e, a, y, inflate * r) for e, a, y, r in trips]
        stats = LinearStatistics(lg.n_nodes)
        for e, a, y, r in scaled:
            stats.add(e, a, y, r)
        factor = factor or kernel_factor(model.kernel, model.scale2, stats.touched())
        mu, var, cov_of, log_ml = linear_posterior(
            model.kernel, model.scale2, model.prior_mean, stats, factor=factor, with_variance=False
        )
        assert var is None and cov_of is None
        want_mu, _ = _dense_solve(k, model.prior_mean, scaled)
        np.testing.assert_allclose(mu, want_mu, rtol=1e-7, atol=1e-7 * np.abs(want_mu).max())
        a_all, y_all, r_all = _stack(model.prior_mean.size, scaled)
        s_mat = a_all @ k @ a_all.T + r_all
        resid = y_all - a_all @ model.prior_mean
        want = resid @ np.linalg.solve(s_mat, resid) + np.linalg.slogdet(s_mat)[1] + len(y_all) * np.log(2 * np.pi)
        assert log_ml == pytest.approx(-0.5 * want, rel=1e-8)
    with pytest.raises(ParameterError, match="kernel factor"):
        linear_posterior(model.kernel, model.scale2, model.prior_mean, stats, factor=(factor[0][:-1, :-1], factor[1]))


def test_bi_joint_update_couples_only_edges_read_together():
    """BI with one reading over two edges: the closed form of a 2-d Gaussian; a third edge stays at its prior."""
    m = np.array([10.0, 20.0, 30.0])
    model = LinearObsEdgeModel(m, DiagonalKernel(np.array([4.0, 9.0, 1.0])), 1.0, 1.0, "bi")
    model.observe(np.array([0, 1]), np.array([[1.0, 0.5]]), np.array([26.0]), np.array([[2.0]]))
    post = model.posterior()
    s = 4.0 + 0.25 * 9.0 + 2.0  # a K a^T + R
    innov = 26.0 - (10.0 + 10.0)
    np.testing.assert_allclose(post.mean, [10 + 4 * innov / s, 20 + 0.5 * 9 * innov / s, 30.0], rtol=1e-12)
    np.testing.assert_allclose(post.variance, [4 - 16 / s, 9 - 0.25 * 81 / s, 1.0], rtol=1e-12)
    np.testing.assert_allclose(post.covariance_of(np.array([0, 1]))[0, 1], -4 * 0.5 * 9 / s, rtol=1e-12)


def test_single_edge_readings_reproduce_bi(lg):
    rng = np.random.default_rng(1)
    bi = prior_model("bi", lg)
    assert isinstance(bi, BayesianEdgeModel)
    e = rng.integers(0, lg.n_nodes, 40)
    y = rng.normal(30.0, 4.0, 40)
    bi.update(e[:20], y[:20])
    lin = linear_model_from(bi)  # carries the first 20 as statistics
    lin.update(e[20:], y[20:])
    bi.update(e[20:], y[20:])
    np.testing.assert_allclose(lin.posterior().mean, bi.posterior().mean, rtol=1e-10)
    np.testing.assert_allclose(lin.posterior().variance, bi.posterior().variance, rtol=1e-9)


def test_single_edge_readings_reproduce_the_exact_gp(lg):
    rng = np.random.default_rng(2)
    gp = prior_model("gp-exact", lg, method="dense", learn_hyper=False)
    e = rng.integers(0, lg.n_nodes, 30)
    y = rng.normal(30.0, 4.0, 30)
    gp.update(e, y)
    lin = linear_model_from(gp)
    a, b = lin.posterior(), gp.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-7, atol=1e-7 * np.abs(b.mean).max())
    np.testing.assert_allclose(a.variance, b.variance, rtol=1e-6, atol=1e-9 * b.variance.max())


def test_bad_readings_are_refused():
    model = LinearObsEdgeModel(np.zeros(3), DiagonalKernel(np.ones(3)), 1.0, 1.0, "bi")
    with pytest.raises(ParameterError, match="do not fit"):
        model.observe(np.array([0, 1]), np.ones((1, 3)), np.ones(1), np.eye(1))
    with pytest.raises(ParameterError, match="not positive definite"):
        model.observe(np.array([0, 1]), np.ones((2, 2)), np.ones(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ParameterError, match="distinct"):
        model.observe(np.array([0, 0]), np.ones((1, 2)), np.ones(1), np.eye(1))


@pytest.mark.parametrize(("kind", "offsets"), [("bi", True), ("gp-exact", False)])
def test_saved_linear_model_has_the_same_posterior(lg, tmp_path, kind, offsets):
    from evroute.models.store import load_model, read_header, save_model

    rng = np.random.default_rng(5)
    base = prior_model(kind, lg, method="dense", learn_hyper=False) if kind == "gp-exact" else prior_model(kind, lg)
    basis, sd = offset_basis(lg.network.length_m)
    model = linear_model_from(base, basis=basis, basis_sd=sd) if offsets else linear_model_from(base)
    for edges, a, y, r in _readings(rng, lg.n_nodes, 6):
        model.observe(edges, a, y, r)
    model.update(np.array([1, 2]), np.array([30.0, 40.0]))
    save_model(tmp_path / "m.npz", model, lg)
    assert read_header(tmp_path / "m.npz")["kind"] == "linear"
    loaded, _ = load_model(tmp_path / "m.npz", lg)
    a, b = loaded.posterior(), model.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12)
    np.testing.assert_allclose(a.variance, b.variance, rtol=1e-12, atol=1e-12 * b.variance.max())
    assert loaded.log_ml == pytest.approx(model.log_ml, rel=1e-12)
