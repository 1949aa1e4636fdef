"""Small dense Gaussian-process posteriors in numpy (zero prior mean, fixed kernel).

Notation of the kernelized-bandits paper (Chowdhury & Gopalan 2017, Eqs. 2-4): with ``K_t = [k(x_i, x_j)]`` and
regulariser ``lambda`` (the noise variance of the Gaussian likelihood),

* ``mu_t(x) = k_t(x)^T (K_t + lambda I)^{-1} y_{1:t}``
* ``k_t(x, x') = k(x, x') - k_t(x)^T (K_t + lambda I)^{-1} k_t(x')``,  ``sigma_t^2(x) = k_t(x, x)``.

:class:`FiniteArmGP` keeps ``mu_t`` and the full ``N x N`` posterior covariance over a finite arm set and updates them
with the rank-one recursions of the paper's Appendix F (Eqs. 19-21), ``O(N^2)`` per observation.
:class:`GPRegressor` is for continuous domains: it grows a Cholesky factor of ``K_t + lambda I`` by one row per
observation (``O(t^2)``) and can also refit from scratch (``O(t^3)``, the cost model of the BOKE paper's GP-UCB).
Both stay finite on repeated inputs: ``lambda > 0`` makes ``K_t + lambda I`` positive definite, and with
``lambda = 0`` a jitter is added and negative variances are clipped at zero.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from evroute.bo.base import FloatArray
from evroute.bo.kernels import Kernel
from evroute.bo.posterior import sample_mvn
from evroute.errors import ParameterError, check_positive

__all__ = ["FiniteArmGP", "GPRegressor", "sample_mvn"]

_JITTER = 1e-10


class FiniteArmGP:
    """GP posterior over ``N`` arms with the ``O(N^2)`` rank-one update (Eqs. 19-21 of Chowdhury & Gopalan).

    Args:
        prior_cov: ``(N, N)`` prior covariance ``k(a_i, a_j)`` of the arms (a kernel Gram matrix or, e.g., an
            empirical covariance).
        lam: regulariser / noise variance ``lambda >= 0``.
        prior_mean: optional ``(N,)`` prior mean (default 0).
    """

    def __init__(self, prior_cov: FloatArray, lam: float, prior_mean: FloatArray | None = None) -> None:
        k = np.array(prior_cov, dtype=float)
        if k.ndim != 2 or k.shape[0] != k.shape[1] or not np.all(np.isfinite(k)):
            raise ParameterError(f"prior_cov must be a finite square matrix, got shape {k.shape}")
        self.lam = check_positive("lam", lam, allow_zero=True)
        self.cov: FloatArray = 0.5 * (k + k.T)
        self.mean: FloatArray = np.zeros(k.shape[0])
        if prior_mean is not None:
            pm = np.asarray(prior_mean, dtype=float).reshape(-1)
            if pm.shape != self.mean.shape or not np.all(np.isfinite(pm)):
                raise ParameterError(f"prior_mean must be finite with shape {self.mean.shape}, got {pm.shape}")
            self.mean = pm.copy()
        self.n_obs = 0
        self.info_gain = 0.0  # 1/2 sum_s ln(1 + sigma_{s-1}^2(x_s) / lambda)  (Lemma 3)

    @property
    def var(self) -> FloatArray:
        """``(N,)`` posterior variances ``sigma_t^2`` (clipped at 0)."""
        return np.clip(np.diag(self.cov), 0.0, None)

    def update(self, arm: int, y: float) -> None:
        """Condition on ``y`` observed at arm index ``arm`` (Eqs. 19-21)."""
        var_i = max(float(self.cov[arm, arm]), 0.0)
        denom = max(self.lam + var_i, _JITTER)
        col = self.cov[:, arm].copy()
        self.mean += col * ((y - self.mean[arm]) / denom)
        self.cov -= np.outer(col, col) / denom
        if self.lam > 0:
            self.info_gain += 0.5 * np.log1p(var_i / self.lam)
        self.n_obs += 1


class GPRegressor:
    """Exact GP regression with an incrementally grown Cholesky factor.

    Args:
        kernel: the prior covariance ``k``.
        lam: noise variance / regulariser ``lambda >= 0`` (a jitter of ``1e-10 k(x, x)`` is always added).
        dim: input dimension ``d``.
    """

    def __init__(self, kernel: Kernel, lam: float, dim: int) -> None:
        self.kernel = kernel
        self.lam = check_positive("lam", lam, allow_zero=True)
        self.dim = int(dim)
        self._x = np.empty((16, self.dim))
        self._chol = np.empty((16, 16))
        self.n = 0
        self.info_gain = 0.0

    @property
    def X(self) -> FloatArray:  # noqa: N802
        """``(n, d)`` training inputs."""
        return self._x[: self.n]

    @property
    def chol(self) -> FloatArray:
        """Lower Cholesky factor ``(n, n)`` of ``K_n + (lambda + jitter) I``."""
        return self._chol[: self.n, : self.n]

    def _noise(self) -> float:
        return self.lam + _JITTER * self.kernel.variance

    def _grow(self) -> None:
        cap = 2 * self._x.shape[0]
        x, c = np.empty((cap, self.dim)), np.zeros((cap, cap))
        x[: self.n], c[: self.n, : self.n] = self.X, self.chol
        self._x, self._chol = x, c

    def add(self, x: FloatArray) -> None:
        """Append one input, extending the Cholesky factor in ``O(n^2)``."""
        if self.n == self._x.shape[0]:
            self._grow()
        n = self.n
        kxx = self.kernel.variance + self._noise()
        if n:
            kx = self.kernel(self.X, x[None, :])[:, 0]
            row = solve_triangular(self.chol, kx, lower=True, check_finite=False)
            var = self.kernel.variance - float(row @ row)
            c2 = max(kxx - float(row @ row), self._noise())
            self._chol[n, :n] = row
        else:
            var, c2 = self.kernel.variance, kxx
        self._chol[n, n] = np.sqrt(c2)
        self._chol[:n, n] = 0.0
        self._x[n] = x
        if self.lam > 0:
            self.info_gain += 0.5 * np.log1p(max(var, 0.0) / self.lam)
        self.n += 1

    def refit(self) -> None:
        """Recompute the Cholesky factor from scratch (``O(n^3)``)."""
        if self.n == 0:
            return
        gram = self.kernel(self.X, self.X) + self._noise() * np.eye(self.n)
        self._chol[: self.n, : self.n] = np.linalg.cholesky(gram)

    def alpha(self, y: FloatArray) -> FloatArray:
        """``(K_n + lambda I)^{-1} y`` for targets ``y`` ``(n,)``."""
        return cho_solve((self.chol, True), y, check_finite=False)

    def predict(self, xq: FloatArray, alpha: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Posterior mean ``(m,)`` and variance ``(m,)`` at ``xq`` ``(m, d)`` given ``alpha`` from :meth:`alpha`."""
        prior = self.kernel.diag(xq)
        if self.n == 0:
            return np.zeros(xq.shape[0]), prior
        kq = self.kernel(xq, self.X)
        v = solve_triangular(self.chol, kq.T, lower=True, check_finite=False)
        return kq @ alpha, np.clip(prior - np.sum(v**2, axis=0), 0.0, None)

    def predict_grad(self, x: FloatArray, alpha: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
        """Mean, variance and their gradients ``(d,)`` at one point ``x`` ``(d,)``."""
        if self.n == 0:
            return 0.0, self.kernel.variance, np.zeros(self.dim), np.zeros(self.dim)
        kx, jac = self.kernel.grad_x(x, self.X)
        w = cho_solve((self.chol, True), kx, check_finite=False)
        var = self.kernel.variance - float(kx @ w)
        if var <= 0.0:
            return float(kx @ alpha), 0.0, jac.T @ alpha, np.zeros(self.dim)
        return float(kx @ alpha), var, jac.T @ alpha, -2.0 * (jac.T @ w)

    def posterior_cov(self, xq: FloatArray) -> FloatArray:
        """Posterior covariance ``k_n(xq, xq)`` ``(m, m)``."""
        prior = self.kernel(xq, xq)
        if self.n == 0:
            return prior
        v = solve_triangular(self.chol, self.kernel(xq, self.X).T, lower=True, check_finite=False)
        return prior - v.T @ v
