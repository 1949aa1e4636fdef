"""Kernels and the ExactGP model against hand computations, full refits and removals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from evroute.bo import ArmKernel, ExactGP, Matern, SquaredExponential, make_kernel, sample_mvn
from evroute.errors import ParameterError


def _full_posterior(gram: np.ndarray, idx: list[int], y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (2)-(3) of Chowdhury & Gopalan with an explicit inverse."""
    kt = gram[:, idx]
    inv = np.linalg.inv(gram[np.ix_(idx, idx)] + lam * np.eye(len(idx)))
    return kt @ inv @ y, gram - kt @ inv @ kt.T


def test_kernel_values_by_hand() -> None:
    a, b = np.array([[0.0, 0.0]]), np.array([[0.3, 0.4]])  # distance 0.5
    assert SquaredExponential(0.2)(a, b)[0, 0] == pytest.approx(np.exp(-0.25 / (2 * 0.04)))
    s = np.sqrt(5) * 0.5 / 0.2
    assert Matern(0.2, nu=2.5)(a, b)[0, 0] == pytest.approx((1 + s + s**2 / 3) * np.exp(-s))
    assert Matern(0.2, nu=1.5)(a, b)[0, 0] == pytest.approx((1 + np.sqrt(3) * 2.5) * np.exp(-np.sqrt(3) * 2.5))
    assert Matern(0.2, nu=0.5)(a, b)[0, 0] == pytest.approx(np.exp(-2.5))
    assert make_kernel("se", 0.5, 2.0)(a, a)[0, 0] == pytest.approx(2.0)
    with pytest.raises(ParameterError):
        Matern(0.2, nu=2.0)
    with pytest.raises(ParameterError):
        SquaredExponential(-1.0)


@pytest.mark.parametrize("kern", [SquaredExponential(0.3, 1.5), Matern(0.3, nu=2.5), Matern(0.3, nu=1.5)])
def test_kernel_gradient_matches_finite_differences(kern) -> None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    x, pts = rng.random(3), rng.random((4, 3))
    _, grad = kern.grad_x(x, pts)
    for j in range(4):
        fd = approx_fprime(x, lambda z, j=j: kern(z[None], pts[j : j + 1])[0, 0], 1e-7)
        np.testing.assert_allclose(grad[j], fd, atol=1e-5)


@pytest.mark.parametrize("lam", [0.1, 0.0])
def test_rank_one_update_equals_full_refit(lam: float) -> None:
    rng = np.random.default_rng(1)
    pts = rng.random((30, 1))
    gram = SquaredExponential(0.2)(pts, pts)
    gp = ExactGP(ArmKernel(gram), lam)
    idx = [3, 7, 3, 12, 7, 7, 20]  # repeated arms
    ys = rng.standard_normal(len(idx))
    for i, y in zip(idx, ys, strict=True):
        gp.condition_on_observation([i], y)
    post = gp.all_arms()
    assert np.all(np.isfinite(post.mean)) and np.all(np.isfinite(post.covariance))
    if lam > 0:
        mean, cov = _full_posterior(gram, idx, ys, lam)
        np.testing.assert_allclose(post.mean, mean, atol=1e-8)
        np.testing.assert_allclose(post.covariance, cov, atol=1e-8)
        np.testing.assert_allclose(gp.posterior(np.arange(30)).variance, np.diag(cov), atol=1e-8)
        # information gain of Lemma 3: 1/2 ln det(I + K_A / lam)
        ka = gram[np.ix_(idx, idx)]
        assert gp.info_gain == pytest.approx(0.5 * np.linalg.slogdet(np.eye(len(idx)) + ka / lam)[1])
    else:
        assert np.all(post.variance >= 0)


def test_prior_mean_shifts_posterior() -> None:
    gram = np.eye(3) + 0.5
    gp = ExactGP(ArmKernel(gram), 0.1, prior_mean=np.array([1.0, 2.0, 3.0]))
    gp.condition_on_observation([0], 2.0)
    mean0, _ = _full_posterior(gram, [0], np.array([1.0]), 0.1)
    np.testing.assert_allclose(gp.posterior([0, 1, 2]).mean, np.array([1.0, 2.0, 3.0]) + mean0)


def test_incremental_cholesky_matches_refit_and_formula() -> None:
    rng = np.random.default_rng(2)
    kern = Matern(0.3, nu=2.5)
    x = rng.random((12, 2))
    x[5] = x[2]  # a duplicate input
    y = rng.standard_normal(12)
    gp = ExactGP(kern, 0.05, jitter=1e-10)
    for row, yi in zip(x, y, strict=True):
        gp.condition_on_observation(row, yi)
    chol_inc = gp.chol.copy()
    gp.recompute()
    np.testing.assert_allclose(chol_inc, gp.chol, atol=1e-10)
    xq = rng.random((5, 2))
    post = gp.posterior(xq)
    inv = np.linalg.inv(kern(x, x) + (0.05 + 1e-10) * np.eye(12))
    kq = kern(xq, x)
    np.testing.assert_allclose(post.mean, kq @ inv @ y, atol=1e-8)
    np.testing.assert_allclose(post.variance, 1.0 - np.sum((kq @ inv) * kq, axis=1), atol=1e-8)
    np.testing.assert_allclose(post.covariance, kern(xq, xq) - kq @ inv @ kq.T, atol=1e-8)
    # gradients of mean and variance
    m0, v0, dm, dv = gp.mean_var_grad(xq[0])
    assert m0 == pytest.approx(post.mean[0]) and v0 == pytest.approx(post.variance[0])
    np.testing.assert_allclose(dm, approx_fprime(xq[0], lambda z: gp.posterior(z[None]).mean[0], 1e-7), atol=1e-5)
    np.testing.assert_allclose(dv, approx_fprime(xq[0], lambda z: gp.posterior(z[None]).variance[0], 1e-7), atol=1e-5)


def test_noise_free_duplicates_stay_finite() -> None:
    gp = ExactGP(SquaredExponential(0.2), 0.0, jitter=1e-10)
    for _ in range(5):
        gp.condition_on_observation([0.5], 1.0)
    post = gp.posterior(np.array([[0.5], [0.9]]))
    assert np.all(np.isfinite(post.mean)) and np.all(np.isfinite(post.variance)) and np.all(post.variance >= 0)
    assert post.mean[0] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("standardize", [False, True])
def test_removal_equals_conditioning_from_scratch(standardize: bool) -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random((15, 2)), rng.standard_normal(15)
    gp = ExactGP(Matern(0.3, 1.3), 0.02, jitter=1e-10, standardize=standardize)
    gp.set_train_data(x, y)
    gp.remove([3, 9])
    keep = np.setdiff1d(np.arange(15), [3, 9])
    fresh = ExactGP(Matern(0.3, 1.3), 0.02, jitter=1e-10, standardize=standardize)
    fresh.set_train_data(x[keep], y[keep])
    if standardize:  # removal keeps the standardisation of the full data (the prior mean and scale)
        fresh.y_mean, fresh.y_std = float(np.mean(y)), float(np.std(y))
        fresh._alpha = None  # noqa: SLF001 - recompute alpha with the full data's standardisation
    xq = rng.random((6, 2))
    a, b = gp.posterior(xq), fresh.posterior(xq)
    np.testing.assert_allclose(a.mean, b.mean, atol=1e-12)
    np.testing.assert_allclose(a.covariance, b.covariance, atol=1e-12)
    np.testing.assert_array_equal(gp.train_inputs, x[keep])
    # arm models: removal replays the remaining observations
    gram = SquaredExponential(0.2)(x, x)
    arms = ExactGP(ArmKernel(gram), 0.1)
    for i in (0, 4, 4, 7):
        arms.condition_on_observation([i], float(y[i]))
    arms.remove([1])
    again = ExactGP(ArmKernel(gram), 0.1)
    for i in (0, 4, 7):
        again.condition_on_observation([i], float(y[i]))
    np.testing.assert_allclose(arms.all_arms().covariance, again.all_arms().covariance, atol=1e-14)
    np.testing.assert_allclose(arms.all_arms().mean, again.all_arms().mean, atol=1e-14)


def test_marginal_likelihood_fit_increases_evidence_and_gradient_is_exact() -> None:
    rng = np.random.default_rng(5)
    x = rng.random((25, 2))
    y = np.sin(6 * x[:, 0]) + 0.05 * rng.standard_normal(25)
    gp = ExactGP(Matern(1.0, 0.5), 0.5, jitter=1e-10, fit_iters=50, prior_sd=None, noise_bounds=(1e-6, 10.0))
    gp.set_train_data(x, y)
    before = gp.log_marginal_likelihood()
    names = list(gp.kernel.fit_layout)
    theta = np.log([gp.noise if k == "noise" else gp.kernel.get(k) for k in names])
    cache = gp.kernel.fit_cache(x)
    _, grad = gp._log_posterior(theta, names, cache, y, False)  # noqa: SLF001
    fd = approx_fprime(theta, lambda th: gp._log_posterior(th, names, cache, y, False)[0], 1e-7)  # noqa: SLF001
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)
    gp.fit_hyperparameters()
    assert gp.log_marginal_likelihood() > before + 5.0
    assert gp.kernel.lengthscale < 1.0 and gp.noise < 0.05


def test_sample_mvn_singular_and_moments() -> None:
    rng = np.random.default_rng(3)
    v = rng.standard_normal((4, 1))
    cov = v @ v.T  # rank one
    draws = np.array([sample_mvn(np.zeros(4), cov, rng, scale=2.0) for _ in range(4000)])
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(np.cov(draws, rowvar=False), 4.0 * cov, atol=0.25 * np.max(4.0 * cov))
