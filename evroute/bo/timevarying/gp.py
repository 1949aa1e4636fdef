"""Spatio-temporal GP regression, product kernel ``lambda k_S(||x - x'||) k_T(|t - t'|)``, learnt hyperparameters.

Inputs are points ``x`` ``(n, d)`` (the policies pass unit-cube coordinates) and times ``t`` ``(n,)`` (seconds, or an
iteration index for TV-GP-UCB).  A *static* GP (``nu_t=None``) has ``k_T = 1`` and ignores ``t``.  Observations are
standardised (zero mean, unit variance) before fitting, so every quantity below (``alpha``, ``Kinv``, posterior mean
and standard deviation) is in standardised units unless a method says otherwise.

Hyperparameters (signal variance ``lambda``, lengthscales ``l_S``, ``l_T``, noise variance ``sigma0^2``) are fitted by
maximising the exact log marginal likelihood (plus weak log-normal lengthscale priors) with L-BFGS-B on their
logarithms, using the analytic gradient ``0.5 tr((alpha alpha^T - K^-1) dK/dtheta)``, warm-started from the last fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize

from evroute.bo.base import FloatArray
from evroute.bo.posterior import GaussianPosterior
from evroute.bo.timevarying.kernels import check_nu, matern, matern_dlog_lengthscale, matern_grad_factor
from evroute.errors import ParameterError

__all__ = ["GPHyper", "HyperBounds", "SpatioTemporalGP", "pairwise_distances"]

_JITTER = 1e-8


@dataclass(frozen=True)
class GPHyper:
    """Kernel hyperparameters (standardised-output units): ``signal`` = lambda, lengthscales, ``noise`` = sigma0^2."""

    signal: float = 1.0
    length_s: float = 0.3
    length_t: float = 100.0
    noise: float = 0.01


@dataclass(frozen=True)
class HyperBounds:
    """Box bounds ``(low, high)`` of each hyperparameter for the marginal-likelihood fit."""

    signal: tuple[float, float] = (0.05, 20.0)
    length_s: tuple[float, float] = (0.01, 5.0)
    length_t: tuple[float, float] = (1.0, 1e4)
    noise: tuple[float, float] = (1e-5, 1.0)


class SpatioTemporalGP:
    """Exact GP with product Matérn kernel; refit with :meth:`fit`, query with :meth:`predict` / :meth:`ucb`.

    Args:
        nu_s: smoothness of ``k_S`` (0.5, 1.5 or 2.5; default Matérn-5/2).
        nu_t: smoothness of ``k_T`` (default Matérn-3/2), or ``None`` for a static (time-invariant) GP.
        bounds: hyperparameter bounds of the fit.
        init: initial hyperparameters (the first fit starts here, later fits from the previous optimum).
        fit_iters: maximum L-BFGS-B iterations per fit.
        prior_sd: standard deviation of the weak log-normal priors on ``l_S`` and ``l_T`` (centred on ``init``), so
            the fit is a MAP estimate that stays away from degenerate lengthscales when data are few; ``None``: plain
            maximum likelihood.
    """

    def __init__(
        self,
        nu_s: float = 2.5,
        nu_t: float | None = 1.5,
        *,
        bounds: HyperBounds | None = None,
        init: GPHyper | None = None,
        fit_iters: int = 20,
        prior_sd: float | None = 1.5,
    ) -> None:
        self.nu_s = check_nu(nu_s)
        self.nu_t = None if nu_t is None else check_nu(nu_t)
        self.bounds = bounds or HyperBounds()
        self.hyper = init or GPHyper()
        if int(fit_iters) < 0:
            raise ParameterError(f"fit_iters must be >= 0, got {fit_iters!r}")
        self.fit_iters = int(fit_iters)
        if prior_sd is not None and not prior_sd > 0:
            raise ParameterError(f"prior_sd must be > 0 or None, got {prior_sd!r}")
        self.prior_sd = prior_sd
        self._prior_centre = np.log([self.hyper.length_s, self.hyper.length_t])
        self.X: FloatArray = np.zeros((0, 0))
        self.t: FloatArray = np.zeros(0)
        self.y_mean, self.y_std = 0.0, 1.0
        self._chol: FloatArray = np.zeros((0, 0))
        self.alpha: FloatArray = np.zeros(0)
        self._z: FloatArray = np.zeros(0)
        self._kinv: FloatArray | None = None

    @property
    def temporal(self) -> bool:
        """Whether the kernel has a temporal factor."""
        return self.nu_t is not None

    @property
    def n(self) -> int:
        """Number of training points."""
        return int(self.alpha.size)

    # ------------------------------------------------------------------ kernel matrices
    def correlations(self, X1: FloatArray, t1: FloatArray, X2: FloatArray, t2: FloatArray) -> FloatArray:  # noqa: N803
        """``k_S k_T`` between ``(n, d)``/``(n,)`` and ``(m, d)``/``(m,)`` inputs -> ``(n, m)`` (without lambda)."""
        h = self.hyper
        ks = matern(pairwise_distances(X1, X2), h.length_s, self.nu_s)
        if self.nu_t is None:
            return ks
        return ks * matern(np.abs(t1[:, None] - t2[None, :]), h.length_t, self.nu_t)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: ArrayLike, t: ArrayLike, y: ArrayLike, *, optimise: bool = True) -> None:  # noqa: N803
        """Condition on ``X`` ``(n, d)``, ``t`` ``(n,)``, ``y`` ``(n,)``; re-optimise hyperparameters if asked."""
        X = np.asarray(X, dtype=float)  # noqa: N806
        y = np.asarray(y, dtype=float).reshape(-1)
        t = np.asarray(t, dtype=float).reshape(-1)
        if X.ndim != 2 or X.shape[0] != y.size or t.size != y.size or y.size == 0:
            raise ParameterError(f"fit needs X (n, d), t (n,), y (n,) with n >= 1, got {X.shape}, {t.shape}, {y.shape}")
        self.X, self.t = X, t
        self.y_mean = float(np.mean(y))
        if y.size >= 2 and np.std(y) > 1e-12:
            self.y_std = float(np.std(y))
        z = (y - self.y_mean) / self.y_std
        if optimise and self.fit_iters > 0 and y.size >= 3:
            self._optimise(z)
        self._condition(z)

    def _log_params(self) -> tuple[FloatArray, list[tuple[float, float]]]:
        h, b = self.hyper, self.bounds
        names = ["signal", "length_s", "noise"] + (["length_t"] if self.temporal else [])
        theta = np.log([getattr(h, k) for k in names])
        lb = [(np.log(getattr(b, k)[0]), np.log(getattr(b, k)[1])) for k in names]
        return np.clip(theta, [lo for lo, _ in lb], [hi for _, hi in lb]), lb

    def _set_log_params(self, theta: FloatArray) -> None:
        v = np.exp(theta)
        kw = {"signal": v[0], "length_s": v[1], "noise": v[2]}
        if self.temporal:
            kw["length_t"] = v[3]
        self.hyper = replace(self.hyper, **{k: float(x) for k, x in kw.items()})

    def _optimise(self, z: FloatArray) -> None:
        theta0, lb = self._log_params()
        rs = pairwise_distances(self.X, self.X)
        rt = np.abs(self.t[:, None] - self.t[None, :])

        def nll(theta: FloatArray) -> tuple[float, FloatArray]:
            lam, ls, noise = np.exp(theta[:3])
            ks = matern(rs, ls, self.nu_s)
            kt = matern(rt, np.exp(theta[3]), self.nu_t) if self.temporal else np.ones_like(ks)
            kern = lam * ks * kt
            cov = kern + (noise + _JITTER) * np.eye(z.size)
            try:
                chol = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                return 1e10, np.zeros_like(theta)
            alpha = cho_solve((chol, True), z)
            val = 0.5 * z @ alpha + np.sum(np.log(np.diag(chol)))
            w = cho_solve((chol, True), np.eye(z.size)) - np.outer(alpha, alpha)
            grads = [kern, lam * matern_dlog_lengthscale(rs, ls, self.nu_s) * kt, noise * np.eye(z.size)]
            if self.temporal:
                grads.append(lam * ks * matern_dlog_lengthscale(rt, np.exp(theta[3]), self.nu_t))
            grad = np.array([0.5 * np.sum(w * g) for g in grads])
            if self.prior_sd is not None:  # log-normal priors on the lengthscales (indices 1 and 3)
                for j, centre in zip((1, 3), self._prior_centre, strict=False):
                    if j < theta.size:
                        val += 0.5 * ((theta[j] - centre) / self.prior_sd) ** 2
                        grad[j] += (theta[j] - centre) / self.prior_sd**2
            return float(val), grad

        res = minimize(nll, theta0, jac=True, method="L-BFGS-B", bounds=lb, options={"maxiter": self.fit_iters})
        if np.all(np.isfinite(res.x)) and res.fun < 1e10:
            self._set_log_params(res.x)

    def _condition(self, z: FloatArray) -> None:
        h = self.hyper
        cov = h.signal * self.correlations(self.X, self.t, self.X, self.t) + (h.noise + _JITTER) * np.eye(z.size)
        jit = 0.0
        while True:
            try:
                self._chol = np.linalg.cholesky(cov + jit * np.eye(z.size))
                break
            except np.linalg.LinAlgError:
                jit = max(10 * jit, 1e-6)
        self._z = z
        self.alpha = cho_solve((self._chol, True), z)
        self._kinv = None

    def refit_subset(self, keep: ArrayLike) -> None:
        """Condition on the subset ``keep`` (indices into the current training set) without changing hyperparameters."""
        idx = np.asarray(keep, dtype=int)
        z = (self.y_train[idx] - self.y_mean) / self.y_std
        self.X, self.t = self.X[idx], self.t[idx]
        self._condition(z)

    @property
    def y_train(self) -> FloatArray:
        """``(n,)`` training observations in original units."""
        return self._z * self.y_std + self.y_mean

    @property
    def Kinv(self) -> FloatArray:  # noqa: N802 - matrix name
        """``(n, n)`` inverse of ``lambda K + sigma0^2 I`` (standardised units), cached."""
        if self._kinv is None:
            self._kinv = cho_solve((self._chol, True), np.eye(self.n))
        return self._kinv

    # ------------------------------------------------------------------ prediction
    def predict(self, Xq: ArrayLike, tq: ArrayLike | float) -> tuple[FloatArray, FloatArray]:  # noqa: N803
        """Posterior mean and standard deviation of the latent f at ``(m, d)`` points and times -> ``(m,)``, ``(m,)``.

        Standardised units; an empty training set returns the prior ``(0, sqrt(lambda))``.
        """
        Xq = np.atleast_2d(np.asarray(Xq, dtype=float))  # noqa: N806
        tq = np.broadcast_to(np.asarray(tq, dtype=float), (Xq.shape[0],))
        lam = self.hyper.signal
        if self.n == 0:
            return np.zeros(Xq.shape[0]), np.full(Xq.shape[0], np.sqrt(lam))
        kq = lam * self.correlations(Xq, tq, self.X, self.t)
        v = solve_triangular(self._chol, kq.T, lower=True)
        var = np.maximum(lam - np.sum(v * v, axis=0), 1e-12)
        return kq @ self.alpha, np.sqrt(var)

    def posterior(self, Xq: ArrayLike, tq: ArrayLike | float, *, original_units: bool = False) -> GaussianPosterior:  # noqa: N803
        """The :class:`~evroute.bo.posterior.GaussianPosterior` of the latent ``f`` at ``(m, d)`` points and times.

        Standardised units unless ``original_units``; the joint covariance is computed on first access.
        """
        Xq = np.atleast_2d(np.asarray(Xq, dtype=float))  # noqa: N806
        tq = np.broadcast_to(np.asarray(tq, dtype=float), (Xq.shape[0],))
        mu, sd = self.predict(Xq, tq)
        lam = self.hyper.signal

        def cov() -> FloatArray:
            prior = lam * self.correlations(Xq, tq, Xq, tq)
            if self.n == 0:
                return prior
            v = solve_triangular(self._chol, lam * self.correlations(Xq, tq, self.X, self.t).T, lower=True)
            return prior - v.T @ v

        post = GaussianPosterior(mu, sd**2, cov)
        return post.affine(self.y_mean, self.y_std) if original_units else post

    def predict_original(self, Xq: ArrayLike, tq: ArrayLike | float) -> tuple[FloatArray, FloatArray]:  # noqa: N803
        """:meth:`predict` in the units of the observations."""
        mu, sd = self.predict(Xq, tq)
        return mu * self.y_std + self.y_mean, sd * self.y_std

    def ucb(self, Xq: ArrayLike, tq: ArrayLike | float, beta: float) -> FloatArray:  # noqa: N803
        """GP-UCB ``mu + sqrt(beta) sigma`` at ``(m, d)`` points -> ``(m,)`` (standardised units)."""
        mu, sd = self.predict(Xq, tq)
        return mu + np.sqrt(beta) * sd

    def ucb_with_grad(self, x: FloatArray, tq: float, beta: float) -> tuple[float, FloatArray, float]:
        """UCB at one point ``x`` ``(d,)`` and time ``tq`` with its gradients: ``(value, d/dx (d,), d/dt)``."""
        h = self.hyper
        if self.n == 0:
            return float(np.sqrt(beta * h.signal)), np.zeros_like(x), 0.0
        dx = x[None, :] - self.X  # (n, d)
        rs = np.sqrt(np.sum(dx * dx, axis=1))
        ks = matern(rs, h.length_s, self.nu_s)
        gs = matern_grad_factor(rs, h.length_s, self.nu_s)[:, None] * dx  # (n, d)
        if self.temporal:
            dt = tq - self.t
            kt = matern(np.abs(dt), h.length_t, self.nu_t)
            gt = matern_grad_factor(np.abs(dt), h.length_t, self.nu_t) * dt
        else:
            kt, gt = np.ones_like(ks), np.zeros_like(ks)
        k = h.signal * ks * kt
        dk_dx = h.signal * gs * kt[:, None]
        dk_dt = h.signal * ks * gt
        kinv_k = cho_solve((self._chol, True), k)
        var = max(h.signal - float(k @ kinv_k), 1e-12)
        sd = np.sqrt(var)
        rb = np.sqrt(beta)
        val = float(k @ self.alpha) + rb * sd
        gx = dk_dx.T @ self.alpha - rb * (dk_dx.T @ kinv_k) / sd
        gtv = float(dk_dt @ self.alpha - rb * (dk_dt @ kinv_k) / sd)
        return val, gx, gtv


def pairwise_distances(a: FloatArray, b: FloatArray) -> FloatArray:
    """Euclidean distances between the rows of ``(n, d)`` and ``(m, d)`` -> ``(n, m)``."""
    sq = np.sum(a * a, 1)[:, None] + np.sum(b * b, 1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))
