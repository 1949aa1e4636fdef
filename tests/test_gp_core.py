"""The GP core: the one Matérn (NumPy and torch), the composable edge kernel, the jittered Cholesky, the posterior type.

References are closed forms written out here (not the code under test), brute force on small inputs, and agreement
between the NumPy and torch evaluations of the same definition (round-off: relative 1e-12 on O(1) entries).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from evroute.environments import EnvironmentConfig
from evroute.environments.paper import prior_covariance
from evroute.kernels.edge import ContextMatern, GraphKernel, Points, edge_kernel, edge_points
from evroute.kernels.graph_gram import dense_graph_gram
from evroute.kernels.graph_matern import GraphMaternKernel, matern_spectrum
from evroute.kernels.graph_matern_local import LocalGraphMatern
from evroute.kernels.linalg import geometric_jitters, jittered_cholesky
from evroute.kernels.matern import matern, matern_dlog_lengthscale, scaled_cdist
from evroute.kernels.posterior import GaussianPosterior
from evroute.linegraph import build_line_graph
from evroute.models.gp_kernels import EdgeContextKernel, GraphMaternIndexKernel
from evroute.network.registry import load_network


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(load_network("synthetic:200:3"))


def _matern52_closed_form(x1: np.ndarray, x2: np.ndarray, ls: np.ndarray) -> np.ndarray:
    """``(1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)``, ``r = ||(x - x') / l||``, pair by pair."""
    out = np.empty((len(x1), len(x2)))
    for i, a in enumerate(x1):
        for j, b in enumerate(x2):
            r = math.sqrt(float(np.sum(((a - b) / ls) ** 2)))
            out[i, j] = (1 + math.sqrt(5) * r + 5 * r * r / 3) * math.exp(-math.sqrt(5) * r)
    return out


# ------------------------------------------------------------------------------------------------------- Matérn
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_matern_numpy_and_torch_agree_with_closed_forms(nu: float) -> None:
    r = np.linspace(0.0, 4.0, 41)
    s = math.sqrt(2 * nu) * r / 0.7
    ref = {0.5: np.exp(-s), 1.5: (1 + s) * np.exp(-s), 2.5: (1 + s + s * s / 3) * np.exp(-s)}[nu]
    np.testing.assert_allclose(matern(r, 0.7, nu), ref, rtol=1e-14)
    got_t = matern(torch.as_tensor(r), 0.7, nu)
    assert isinstance(got_t, torch.Tensor)
    np.testing.assert_allclose(got_t.numpy(), ref, rtol=1e-14)


@pytest.mark.parametrize("nu", [1.5, 2.5])
def test_torch_autograd_through_the_one_matern_matches_the_analytic_derivative(nu: float) -> None:
    rng = np.random.default_rng(0)
    x1, x2 = rng.standard_normal((6, 3)), rng.standard_normal((5, 3))
    log_ls = torch.tensor(math.log(0.8), dtype=torch.float64, requires_grad=True)
    k = matern(scaled_cdist(torch.as_tensor(x1), torch.as_tensor(x2), log_ls.exp()), 1.0, nu)
    k.sum().backward()
    r = np.sqrt(((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1))
    expected = matern_dlog_lengthscale(r, 0.8, nu).sum()
    assert log_ls.grad is not None
    assert float(log_ls.grad) == pytest.approx(float(expected), rel=1e-10)


def test_graph_spectrum_numpy_and_torch() -> None:
    lam = np.array([-1e-14, 0.0, 0.3, 2.0, 7.5])
    ref = (2 * 2.0 / 1.3**2 + np.maximum(lam, 0.0)) ** -2.0
    np.testing.assert_allclose(matern_spectrum(lam, 2.0, 1.3), ref, rtol=1e-15)
    f64 = torch.float64
    nu, kappa = torch.tensor(2.0, dtype=f64, requires_grad=True), torch.tensor(1.3, dtype=f64, requires_grad=True)
    got = matern_spectrum(torch.as_tensor(lam), nu, kappa)
    np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-12)
    got.sum().backward()  # differentiable in nu and kappa (the SVGP's learnable graph kernel)
    assert nu.grad is not None and kappa.grad is not None


# -------------------------------------------------------------------------------------------------- edge kernel
def test_edge_kernel_is_the_paper_formula_in_numpy_and_torch(lg) -> None:
    g = dense_graph_gram(lg.laplacian(), 2.0, 1.0)
    x = lg.contexts()
    ls1, ls2 = np.array([0.8, 1.3, 2.0]), np.array([1.5, 0.6, 0.9])
    ref = 0.7 * g * _matern52_closed_form(x, x, ls1) + 0.4 * _matern52_closed_form(x, x, ls2)
    every = Points(None, x)
    k_np = edge_kernel(GraphKernel(g), 0.7, 0.4, ls1, ls2)
    np.testing.assert_allclose(k_np(every, every), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(k_np.diag(every), np.diag(ref), rtol=1e-13)
    i, j = np.array([3, 7, 7, 150]), np.array([3, 9, 100, 184])
    np.testing.assert_allclose(k_np.pairs(edge_points(x, i), edge_points(x, j)), ref[i, j], rtol=1e-12)
    sub = k_np(edge_points(x, i), edge_points(x, j))
    np.testing.assert_allclose(sub, ref[np.ix_(i, j)], rtol=1e-12)
    tx = torch.as_tensor(x)
    s1_t, s2_t, ls1_t, ls2_t = (torch.tensor(v, dtype=torch.float64) for v in (0.7, 0.4, ls1, ls2))
    k_t = edge_kernel(GraphKernel(torch.as_tensor(g)), s1_t, s2_t, ls1_t, ls2_t)
    np.testing.assert_allclose(k_t(Points(None, tx), Points(None, tx)).numpy(), ref, rtol=1e-12, atol=1e-14)


def test_edge_kernel_composes_and_scales(lg) -> None:
    g = dense_graph_gram(lg.laplacian(), 2.0, 1.0)
    x = lg.contexts()
    p = Points(None, x)
    kg, kf = GraphKernel(g), ContextMatern(1.1)
    np.testing.assert_allclose((kg * kf)(p, p), g * _matern52_closed_form(x, x, np.full(3, 1.1)), rtol=1e-12)
    np.testing.assert_allclose((kg + kf.scale(2.0))(p, p), g + 2.0 * kf(p, p), rtol=1e-15)
    np.testing.assert_allclose((kg * kf).diag(p), np.diag(g), rtol=1e-15)


def test_sparse_local_graph_columns_give_the_dense_kernel_columns(lg) -> None:
    x = lg.contexts()
    ls1, ls2 = np.array([0.8, 1.3, 2.0]), np.array([1.5, 0.6, 0.9])
    local = LocalGraphMatern(lg.laplacian(), 2.0, 1.0, tol=1e-9)
    dense = dense_graph_gram(lg.laplacian(), 2.0, 1.0)
    idx = np.array([5, 6, 40, 184])
    got = edge_kernel(GraphKernel(local), 0.7, 0.4, ls1, ls2)(Points(None, x), edge_points(x, idx))
    ref = edge_kernel(GraphKernel(dense), 0.7, 0.4, ls1, ls2)(Points(None, x), edge_points(x, idx))
    # local columns: entry-wise error <= tol (1e-9) of the graph kernel, times s1 = 0.7 and k_f <= 1
    assert np.max(np.abs(got - ref)) <= 0.7e-9
    glob = GraphMaternKernel(lg.laplacian(), 2.0, 1.0, method="sparse")
    got_g = edge_kernel(GraphKernel(glob), 0.7, 0.4, ls1, ls2)(Points(None, x), edge_points(x, idx))
    np.testing.assert_allclose(got_g, ref, rtol=1e-9, atol=1e-12)


def test_environment_and_svgp_evaluate_the_same_kernel(lg) -> None:
    """The paper environment's prior covariance and the SVGP's torch module are one kernel definition."""
    cfg = EnvironmentConfig(lengthscale=0.8, product_weight=0.3)
    env_cov = prior_covariance(lg, cfg)
    graph = GraphMaternIndexKernel(lg.laplacian(), 2.0, 1.0, method="dense")
    mod = EdgeContextKernel(graph, 3, outputscales=(0.3, 0.7)).double()
    # a float64 tensor: GPyTorch's setter rounds a Python float through float32 (0.8 + 1.2e-8)
    mod.kf.lengthscale = mod.kf2.lengthscale = torch.tensor(0.8, dtype=torch.float64)
    n = lg.n_nodes
    xin = torch.as_tensor(np.concatenate([np.arange(n)[:, None], lg.contexts()], axis=1))
    with torch.no_grad():
        svgp = mod.forward(xin, xin).numpy()
        svgp_diag = mod.forward(xin, xin, diag=True).numpy()
    np.testing.assert_allclose(svgp, env_cov, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(svgp_diag, np.diag(env_cov), rtol=1e-13)
    assert np.mean(np.diag(env_cov)) == pytest.approx(1.0, rel=1e-12)  # unit average prior variance


# ---------------------------------------------------------------------------------------------------- Cholesky
def test_jittered_cholesky_plain_when_positive_definite() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((30, 30))
    a = a @ a.T + 30 * np.eye(30)
    np.testing.assert_array_equal(jittered_cholesky(a), np.linalg.cholesky(a))


def test_jittered_cholesky_adds_the_first_jitter_that_works() -> None:
    a = np.ones((4, 4))  # rank one, mean diagonal 1: the plain factorisation fails
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(a)
    jitters = [0.0, 1e-3, 1e-2]  # 0 fails again, 1e-3 works
    l_ = jittered_cholesky(2.0 * a, jitters)  # relative: 1e-3 * mean(diag) = 2e-3
    np.testing.assert_allclose(l_ @ l_.T, 2.0 * a + 2e-3 * np.eye(4), rtol=1e-13, atol=1e-15)
    l_t = jittered_cholesky(torch.as_tensor(2.0 * a), jitters)  # the torch path: same schedule
    np.testing.assert_allclose(l_t.numpy(), l_, rtol=1e-13, atol=1e-15)
    l_abs = jittered_cholesky(2.0 * a, jitters, relative=False)
    np.testing.assert_allclose(l_abs @ l_abs.T, 2.0 * a + 1e-3 * np.eye(4), rtol=1e-13, atol=1e-15)
    with pytest.raises(np.linalg.LinAlgError):
        jittered_cholesky(-np.eye(3), [1e-6, 1e-3])
    assert list(geometric_jitters(1e-3, 10.0, 3)) == [1e-3, 1e-3 * 10.0, 1e-3 * 10.0 * 10.0]


# --------------------------------------------------------------------------------------------------- posterior
@pytest.mark.slow
def test_posterior_subsets_samples_and_units() -> None:
    rng = np.random.default_rng(2)
    b = rng.standard_normal((5, 5))
    cov = b @ b.T + 0.1 * np.eye(5)
    post = GaussianPosterior(np.arange(5.0), np.diag(cov), lambda: cov, noise_var=np.full(5, 0.3))
    idx = np.array([4, 1])
    np.testing.assert_array_equal(post.covariance_of(idx), cov[np.ix_(idx, idx)])
    assert post.var is post.variance and post.has_covariance
    draws = post.sample(np.random.default_rng(3), 40000)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05 * np.max(np.diag(cov)))
    wh = post.affine(1.0, 2.0)
    np.testing.assert_allclose(wh.covariance_of(idx), 4.0 * cov[np.ix_(idx, idx)])
    assert wh.noise_var is not None
    np.testing.assert_allclose(wh.noise_var, 1.2)
    # a subset covariance without the full matrix, and a model's own joint sampler
    lazy = GaussianPosterior(np.zeros(5), np.diag(cov), subset_covariance=lambda i: cov[np.ix_(i, i)])
    np.testing.assert_array_equal(lazy.covariance_of(idx), cov[np.ix_(idx, idx)])
    fixed = GaussianPosterior(np.zeros(2), np.ones(2), sampler=lambda r: np.array([1.0, -1.0]))
    np.testing.assert_array_equal(fixed.sample(rng, 2, scale=3.0), [[3.0, -3.0], [3.0, -3.0]])
    assert np.all(GaussianPosterior(np.zeros(2), np.array([-1e-18, 2.0])).std >= 0)
