"""Kernels and GP posteriors against hand computations and full refits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from evroute.bo import FiniteArmGP, GPRegressor, Matern, SquaredExponential, make_kernel, sample_mvn
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
    gp = FiniteArmGP(gram, lam)
    idx = [3, 7, 3, 12, 7, 7, 20]  # repeated arms
    ys = rng.standard_normal(len(idx))
    for i, y in zip(idx, ys, strict=True):
        gp.update(i, y)
    assert np.all(np.isfinite(gp.mean)) and np.all(np.isfinite(gp.cov))
    if lam > 0:
        mean, cov = _full_posterior(gram, idx, ys, lam)
        np.testing.assert_allclose(gp.mean, mean, atol=1e-8)
        np.testing.assert_allclose(gp.cov, cov, atol=1e-8)
        np.testing.assert_allclose(gp.var, np.diag(cov), atol=1e-8)
        # information gain of Lemma 3: 1/2 ln det(I + K_A / lam)
        ka = gram[np.ix_(idx, idx)]
        assert gp.info_gain == pytest.approx(0.5 * np.linalg.slogdet(np.eye(len(idx)) + ka / lam)[1])
    else:
        assert np.all(gp.var >= 0)


def test_prior_mean_shifts_posterior() -> None:
    gram = np.eye(3) + 0.5
    gp = FiniteArmGP(gram, 0.1, prior_mean=np.array([1.0, 2.0, 3.0]))
    gp.update(0, 2.0)
    mean0, _ = _full_posterior(gram, [0], np.array([1.0]), 0.1)
    np.testing.assert_allclose(gp.mean, np.array([1.0, 2.0, 3.0]) + mean0)


def test_gp_regressor_incremental_matches_refit_and_formula() -> None:
    rng = np.random.default_rng(2)
    kern = Matern(0.3, nu=2.5)
    x = rng.random((12, 2))
    x[5] = x[2]  # a duplicate input
    y = rng.standard_normal(12)
    gp = GPRegressor(kern, 0.05, 2)
    for row in x:
        gp.add(row)
    chol_inc = gp.chol.copy()
    gp.refit()
    np.testing.assert_allclose(chol_inc, gp.chol, atol=1e-10)
    xq = rng.random((5, 2))
    mean, var = gp.predict(xq, gp.alpha(y))
    inv = np.linalg.inv(kern(x, x) + (0.05 + 1e-10) * np.eye(12))
    kq = kern(xq, x)
    np.testing.assert_allclose(mean, kq @ inv @ y, atol=1e-8)
    np.testing.assert_allclose(var, 1.0 - np.sum((kq @ inv) * kq, axis=1), atol=1e-8)
    np.testing.assert_allclose(gp.posterior_cov(xq), kern(xq, xq) - kq @ inv @ kq.T, atol=1e-8)
    # gradients of mean and variance
    alpha = gp.alpha(y)
    m0, v0, dm, dv = gp.predict_grad(xq[0], alpha)
    assert m0 == pytest.approx(mean[0]) and v0 == pytest.approx(var[0])
    np.testing.assert_allclose(dm, approx_fprime(xq[0], lambda z: gp.predict(z[None], alpha)[0][0], 1e-7), atol=1e-5)
    np.testing.assert_allclose(dv, approx_fprime(xq[0], lambda z: gp.predict(z[None], alpha)[1][0], 1e-7), atol=1e-5)


def test_gp_regressor_noise_free_duplicates_stay_finite() -> None:
    gp = GPRegressor(SquaredExponential(0.2), 0.0, 1)
    for _ in range(5):
        gp.add(np.array([0.5]))
    mean, var = gp.predict(np.array([[0.5], [0.9]]), gp.alpha(np.ones(5)))
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var >= 0)
    assert mean[0] == pytest.approx(1.0, abs=1e-3)


def test_sample_mvn_singular_and_moments() -> None:
    rng = np.random.default_rng(3)
    v = rng.standard_normal((4, 1))
    cov = v @ v.T  # rank one
    draws = np.array([sample_mvn(np.zeros(4), cov, rng, scale=2.0) for _ in range(4000)])
    assert np.all(np.isfinite(draws))
    np.testing.assert_allclose(np.cov(draws, rowvar=False), 4.0 * cov, atol=0.25 * np.max(4.0 * cov))
