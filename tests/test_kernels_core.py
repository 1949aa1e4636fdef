"""The one kernel interface, the one exact-GP core and the one set of index functions (issue 33, item 2), against
closed forms and brute force.

Tolerances: float64 round-off (``u = 1.1e-16``) on matrices of size ``n <= 30`` with condition numbers ``<= 1e4``
(noise ``>= 1e-2`` of a unit signal): a Cholesky solve or an explicit inverse is exact to ``~ n u kappa ~ 3e-10``
relative, so ``1e-8``; finite-difference gradients (central, step ``1e-6``) are exact to ``~ h^2 f''' + u f / h ~
1e-10`` relative, so ``1e-6``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import multivariate_normal, norm

from evroute.bo.timevarying.kernels import SpatioTemporalKernel
from evroute.kernels.base import Kernel, Product, Scaled, Sum
from evroute.kernels.edge import ContextMatern, GraphKernel, Points, edge_kernel
from evroute.kernels.exact import (
    condition,
    likelihood_weights,
    log_marginal_likelihood,
    maximise_log_parameters,
)
from evroute.kernels.indices import (
    bayes_ucb_width,
    lower_confidence_index,
    thompson_sample,
    ucb_terms,
    upper_confidence_index,
)
from evroute.kernels.linalg import jittered_cholesky
from evroute.kernels.posterior import GaussianPosterior
from evroute.kernels.stationary import ArmKernel, Matern, SquaredExponential

REL = 1e-8


class _Cols(Kernel):
    """A stationary kernel on a slice of the columns of ``(n, d)`` points (a test's composition helper)."""

    def __init__(self, kernel: Kernel, cols: slice) -> None:
        self.kernel, self.cols = kernel, cols

    def __call__(self, p, q):  # noqa: ANN001, ANN204
        return self.kernel(p[:, self.cols], q[:, self.cols])

    def diag(self, p):  # noqa: ANN001, ANN201
        return self.kernel.diag(p[:, self.cols])

    def pairs(self, p, q):  # noqa: ANN001, ANN201
        return self.kernel.pairs(p[:, self.cols], q[:, self.cols])


def _points(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, d))


@pytest.mark.parametrize(
    "kernel", [Matern(0.3, 1.7, 0.5), Matern(0.3, 1.0, 1.5), Matern(0.4, 2.0, 2.5), SquaredExponential(0.2, 0.7)]
)
def test_stationary_kernels_are_kernels_with_consistent_diag_and_pairs(kernel: Kernel) -> None:
    x, y = _points(7, 3, 0), _points(7, 3, 1)
    k = kernel(x, y)
    assert isinstance(kernel, Kernel)
    np.testing.assert_allclose(kernel.pairs(x, y), np.diagonal(k), rtol=1e-13)
    np.testing.assert_allclose(kernel.diag(x), np.diagonal(kernel(x, x)), rtol=1e-13)


def test_matern_kernel_matches_its_closed_form() -> None:
    x, y = _points(6, 2, 2), _points(5, 2, 3)
    r = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)) / 0.4
    want = 2.0 * (1 + math.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-math.sqrt(5) * r)
    np.testing.assert_allclose(Matern(0.4, 2.0, 2.5)(x, y), want, rtol=1e-13)


def test_composition_is_pointwise_sum_product_and_scale_on_any_points() -> None:
    x, y = _points(6, 3, 4), _points(4, 3, 5)
    a, b = Matern(0.3, 1.0, 1.5), SquaredExponential(0.5, 1.0)
    k = (a * b).scale(0.7) + a
    assert isinstance(k, Sum) and isinstance(k.a, Scaled) and isinstance(k.a.kernel, Product)
    np.testing.assert_allclose(k(x, y), 0.7 * a(x, y) * b(x, y) + a(x, y), rtol=1e-14)
    np.testing.assert_allclose(k.diag(x), 0.7 * a.diag(x) * b.diag(x) + a.diag(x), rtol=1e-14)
    np.testing.assert_allclose(
        k.pairs(x, y[:4].repeat(2, 0)[:6]), np.diagonal(k(x, y[:4].repeat(2, 0)[:6])), rtol=1e-13
    )


def test_the_spatio_temporal_kernel_is_a_scaled_product_of_matern_kernels_on_columns() -> None:
    """The BO time-varying kernel equals the composition ``lambda (k_S on space) (k_T on time)`` of the interface."""
    st = SpatioTemporalKernel(2.5, 1.5, signal=1.3, length_s=0.4, length_t=50.0)
    z = np.column_stack([_points(8, 2, 6), np.linspace(0.0, 200.0, 8)])
    w = np.column_stack([_points(5, 2, 7), np.linspace(10.0, 90.0, 5)])
    composed = (_Cols(Matern(0.4, 1.0, 2.5), slice(0, 2)) * _Cols(Matern(50.0, 1.0, 1.5), slice(2, 3))).scale(1.3)
    np.testing.assert_allclose(st(z, w), composed(z, w), rtol=1e-12)
    np.testing.assert_allclose(st.pairs(z[:5], w), composed.pairs(z[:5], w), rtol=1e-12)
    np.testing.assert_allclose(st.diag(z), composed.diag(z), rtol=1e-14)


def test_the_edge_kernel_composes_through_the_same_interface() -> None:
    rng = np.random.default_rng(8)
    g = rng.standard_normal((6, 6))
    g = g @ g.T / 6 + np.eye(6)
    ctx = rng.standard_normal((6, 2))
    k = edge_kernel(GraphKernel(g), 0.6, 0.4, 1.2, 0.8)
    assert isinstance(k, Kernel)
    p = Points(None, ctx)
    kf, kf2 = ContextMatern(1.2)(p, p), ContextMatern(0.8)(p, p)
    np.testing.assert_allclose(k(p, p), 0.6 * g * kf + 0.4 * kf2, rtol=1e-14)
    np.testing.assert_allclose(Matern(1.2, 1.0, 2.5)(ctx, ctx), kf, rtol=1e-12)  # one Matérn for both stacks


def test_arm_kernel_pairs_and_diag() -> None:
    c = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.5]])
    k = ArmKernel(c)
    np.testing.assert_array_equal(k.pairs([0, 2], [1, 2]), [0.5, 1.5])
    np.testing.assert_array_equal(k.diag([2, 0]), [1.5, 2.0])
    np.testing.assert_array_equal((k + k)([0], [1]), [[1.0]])


def _gp_problem(n: int = 20, m: int = 9, seed: int = 9) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x, q = rng.random((n, 2)), rng.random((m, 2))
    kern = Matern(0.3, 1.0, 2.5)
    a = kern(x, x) + 0.05 * np.eye(n)
    r = np.sin(5 * x[:, 0]) + 0.1 * rng.standard_normal(n)
    return kern(q, x), kern(q, q), a, r


def test_condition_equals_the_textbook_posterior() -> None:
    k_qu, k_qq, a, r = _gp_problem()
    dmean, dvar, b = condition(jittered_cholesky(a), k_qu, r)
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(dmean, k_qu @ ainv @ r, rtol=REL, atol=REL)
    np.testing.assert_allclose(dvar, np.einsum("ij,jk,ik->i", k_qu, ainv, k_qu), rtol=REL)
    np.testing.assert_allclose(k_qq - b @ b.T, k_qq - k_qu @ ainv @ k_qu.T, rtol=REL, atol=REL)


def test_log_marginal_likelihood_and_its_weights_are_exact() -> None:
    _, _, a, r = _gp_problem()
    ll, alpha = log_marginal_likelihood(jittered_cholesky(a), r)
    assert ll == pytest.approx(multivariate_normal(np.zeros(len(r)), a).logpdf(r), rel=REL)
    np.testing.assert_allclose(alpha, np.linalg.solve(a, r), rtol=REL)
    q = likelihood_weights(jittered_cholesky(a), alpha)
    np.testing.assert_allclose(q, np.outer(alpha, alpha) - np.linalg.inv(a), rtol=REL, atol=REL)
    # d log p / d log s for A = s K + D: 1/2 <Q, s K>, against central differences
    k, d = a - 0.05 * np.eye(len(r)), 0.05 * np.eye(len(r))

    def f(theta: np.ndarray) -> float:
        return log_marginal_likelihood(jittered_cholesky(math.exp(theta[0]) * k + d), r)[0]

    fd = (f(np.array([1e-6])) - f(np.array([-1e-6]))) / 2e-6
    assert 0.5 * float(np.vdot(q, k)) == pytest.approx(fd, rel=1e-6)


def test_maximise_log_parameters_finds_a_concave_maximum_in_its_box() -> None:
    centre = np.array([0.3, -1.2])

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        return -float(((theta - centre) ** 2).sum()), -2.0 * (theta - centre)

    res = maximise_log_parameters(objective, np.zeros(2), [(-1.0, 1.0)] * 2, maxiter=50)
    np.testing.assert_allclose(res.x, [0.3, -1.0], atol=1e-6)  # the second coordinate stops at its bound
    assert res.fun == pytest.approx(0.04, abs=1e-9)  # SciPy's value is the negated maximum
    assert approx_fprime(res.x, lambda t: objective(t)[0], 1e-7)[0] == pytest.approx(0.0, abs=1e-5)


def test_index_sign_convention() -> None:
    rng = np.random.default_rng(10)
    mu, sd = 20 + 3 * rng.standard_normal(100), rng.uniform(0.1, 2.0, 100)
    np.testing.assert_array_equal(upper_confidence_index(mu, sd, 1.7), mu + 1.7 * sd)
    np.testing.assert_array_equal(lower_confidence_index(mu, sd, 1.7), mu - 1.7 * sd)  # bit for bit
    v, dm, ds = ucb_terms(mu, sd, 0.5)
    np.testing.assert_array_equal(v, mu + 0.5 * sd)
    assert np.all(dm == 1.0) and np.all(ds == 0.5)
    for eta in (1e-6, 0.01, 0.2, 0.49):
        assert bayes_ucb_width(eta) == pytest.approx(norm.isf(eta), rel=1e-12)  # the upper 1 - eta quantile
    assert bayes_ucb_width(0.5) == 0.0 and bayes_ucb_width(0.9) == 0.0


def test_thompson_sample_draws_from_the_posterior() -> None:
    """Independent draws have the marginal moments; joint draws the covariance (5000 draws: s.e. of a variance
    estimate ``sqrt(2 / 5000) ~ 2%``, of a correlation ``~ 1.4%``; tolerances 4 s.e.)."""
    cov = np.array([[1.0, 0.9], [0.9, 1.0]])
    post = GaussianPosterior(np.array([1.0, -2.0]), np.diag(cov), cov)
    rng = np.random.default_rng(11)
    ind = np.stack([thompson_sample(post, rng, joint=False) for _ in range(5000)])
    jnt = np.stack([thompson_sample(post, rng, 2.0) for _ in range(5000)])
    np.testing.assert_allclose(ind.var(0), [1.0, 1.0], rtol=0.08)
    assert abs(np.corrcoef(ind.T)[0, 1]) < 0.06
    np.testing.assert_allclose(np.cov(jnt.T), 4.0 * cov, rtol=0.08)
    own = GaussianPosterior(np.zeros(2), np.ones(2), sampler=lambda r: np.array([5.0, 7.0]))
    np.testing.assert_array_equal(thompson_sample(own, rng, joint=False), [5.0, 7.0])
    np.testing.assert_array_equal(thompson_sample(own, rng, 2.0), [10.0, 14.0])


def test_the_torch_path_of_the_likelihood_equals_the_numpy_path() -> None:
    """The turn-arm GP's differentiable fit uses the same function (torch), equal to the NumPy value to round-off."""
    import torch

    _, _, a, r = _gp_problem()
    ll, alpha = log_marginal_likelihood(jittered_cholesky(a), r)
    ll_t, alpha_t = log_marginal_likelihood(torch.linalg.cholesky(torch.as_tensor(a)), torch.as_tensor(r))
    assert float(ll_t) == pytest.approx(ll, rel=REL)
    np.testing.assert_allclose(alpha_t.numpy(), alpha, rtol=REL)
