"""The one Gaussian-process model of :mod:`evroute.bo`: exact GP regression with a kernel object.

Every static and time-varying policy conditions an :class:`ExactGP` and reads its :meth:`ExactGP.posterior`
(a :class:`~evroute.kernels.posterior.GaussianPosterior`, the project's one posterior type); acquisitions see only
that posterior (BoTorch's split of model, posterior and acquisition).  Notation of Chowdhury & Gopalan (2017,
Eqs. 2-4), with ``K_t = [k(z_i, z_j)]`` and the noise variance ``lambda``:

* ``mu_t(z) = m(z) + k_t(z)^T (K_t + lambda I)^{-1} (y_{1:t} - m)``,
* ``k_t(z, z') = k(z, z') - k_t(z)^T (K_t + lambda I)^{-1} k_t(z')``,  ``sigma_t^2(z) = k_t(z, z)``.

The kernel decides the inputs ``z``:

* :class:`~evroute.kernels.stationary.Matern` / :class:`~evroute.kernels.stationary.SquaredExponential`: points
  ``x`` ``(n, d)``;
* :class:`~evroute.bo.timevarying.kernels.SpatioTemporalKernel`: ``[x, t]`` rows ``(n, d + 1)``, product kernel
  ``lambda k_S(||x - x'||) k_T(|t - t'|)`` (``k_T = 1`` for a static one);
* :class:`~evroute.kernels.stationary.ArmKernel`: arm indices ``(n, 1)`` of a finite arm set with a given ``(N, N)``
  prior covariance (and optional prior mean).

Two exact conditioning algorithms, chosen by the kernel's domain:

* continuous inputs: a Cholesky factor of ``K_n + (lambda + jitter) I``, grown by one row per
  :meth:`~ExactGP.condition_on_observation` (``O(n^2)``) or recomputed by :meth:`~ExactGP.set_train_data`
  (``O(n^3)``);
* an :class:`~evroute.kernels.stationary.ArmKernel`: the posterior mean and ``N x N`` covariance of all arms, updated
  by the rank-one recursions of the paper's Appendix F (Eqs. 19-21, ``O(N^2)`` per observation, no jitter).

Both stay finite on repeated inputs (``lambda > 0``, or a jitter / a clipped denominator when ``lambda = 0``).
:meth:`~ExactGP.remove` drops observations (the resets and removals of BOLT, W-DBO, ET-GP-UCB and R-GP-UCB) by
conditioning from scratch on the rest, keeping the hyperparameters and the output standardisation.
The conditioning of continuous inputs, the log marginal likelihood, its gradient and the fit are the one exact-GP
core's (:mod:`evroute.kernels.exact`, shared with the routing edge model).  Hyperparameters are optionally fitted by
maximising the exact log marginal likelihood plus weak log-normal priors on the lengthscales (L-BFGS-B on their
logarithms, analytic gradient ``0.5 tr((alpha alpha^T - K^-1) dK/dtheta)``, warm-started from the current values);
:meth:`~ExactGP.log_marginal_likelihood` is the objective without priors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_solve, solve_triangular

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError, check_positive
from evroute.kernels.exact import condition, likelihood_weights, log_marginal_likelihood, maximise_log_parameters
from evroute.kernels.linalg import geometric_jitters, jittered_cholesky
from evroute.kernels.posterior import GaussianPosterior, sample_mvn
from evroute.kernels.stationary import ArmKernel

__all__ = ["ExactGP", "sample_mvn"]

_DENOM_FLOOR = 1e-10  # rank-one updates with lambda = 0 on an arm whose variance is already 0


class ExactGP:
    """Exact GP regression ``y = f(z) + N(0, noise)``, ``f ~ GP(m, k)``.

    Args:
        kernel: the prior covariance ``k`` (see the module doc for the kinds of inputs).
        noise: noise variance ``lambda >= 0`` (in standardised units when ``standardize``).
        jitter: added to the diagonal of ``K_n + lambda I`` (not to ``lambda`` in the information gain).
        min_variance: floor of the predictive variance of ``f``.
        standardize: condition on ``(y - mean(y)) / std(y)`` (the statistics of the data given to
            :meth:`set_train_data` or of all data so far; kept by :meth:`remove`); :meth:`posterior` returns
            observation units unless asked for the standardised ones.
        prior_mean: ``(N,)`` prior mean of the arms (only with an :class:`~evroute.kernels.stationary.ArmKernel`;
            default 0).
        fit_iters: L-BFGS-B iterations of :meth:`fit_hyperparameters` (0: hyperparameters fixed).
        prior_sd: standard deviation of the log-normal priors on the lengthscales, centred on their initial values
            (``None``: plain maximum likelihood).
        noise_bounds: ``(low, high)`` bounds of ``noise`` in the fit.
    """

    def __init__(
        self,
        kernel: Any,
        noise: float,
        *,
        jitter: float = 0.0,
        min_variance: float = 0.0,
        standardize: bool = False,
        prior_mean: ArrayLike | None = None,
        fit_iters: int = 0,
        prior_sd: float | None = 1.5,
        noise_bounds: tuple[float, float] = (1e-5, 1.0),
    ) -> None:
        self.kernel = kernel
        self.noise = check_positive("noise", noise, allow_zero=True)
        self.jitter = check_positive("jitter", jitter, allow_zero=True)
        self.min_variance = check_positive("min_variance", min_variance, allow_zero=True)
        self.standardize = bool(standardize)
        if int(fit_iters) < 0:
            raise ParameterError(f"fit_iters must be >= 0, got {fit_iters!r}")
        self.fit_iters = int(fit_iters)
        if prior_sd is not None and not prior_sd > 0:
            raise ParameterError(f"prior_sd must be > 0 or None, got {prior_sd!r}")
        self.prior_sd = prior_sd
        self.noise_bounds = (float(noise_bounds[0]), float(noise_bounds[1]))
        self.finite = isinstance(kernel, ArmKernel)
        if self.finite and (standardize or fit_iters):
            raise ParameterError("an ArmKernel model supports neither standardize nor hyperparameter fitting")
        if self.finite:
            self._arm_mean0 = np.zeros(kernel.n_arms)
            if prior_mean is not None:
                pm = np.asarray(prior_mean, dtype=float).reshape(-1)
                if pm.shape != (kernel.n_arms,) or not np.all(np.isfinite(pm)):
                    raise ParameterError(f"prior_mean must be finite with shape ({kernel.n_arms},), got {pm.shape}")
                self._arm_mean0 = pm.copy()
        elif prior_mean is not None:
            raise ParameterError("prior_mean is only supported with an ArmKernel (use standardize otherwise)")
        self._lengthscale_centre = {k: float(np.log(kernel.get(k))) for k in getattr(kernel, "lengthscale_names", ())}
        self.y_mean, self.y_std = 0.0, 1.0
        self._reset()

    # ------------------------------------------------------------------ data
    def _reset(self) -> None:
        self._zbuf: FloatArray = np.zeros((0, 0))  # (capacity, p) training inputs; the first n rows are used
        self._y: list[float] = []
        self.info_gain = 0.0  # 1/2 sum_s ln(1 + sigma_{s-1}^2(z_s) / lambda)  (Lemma 3)
        self._alpha: FloatArray | None = None
        self._kinv: FloatArray | None = None
        self._stale = False  # new data since the targets were last standardised
        if self.finite:
            self.arm_mean: FloatArray = self._arm_mean0.copy()
            self.arm_cov: FloatArray = self.kernel.cov.copy()
        else:
            self._chol = np.zeros((16, 16))
        self._chol_c: FloatArray | None = None  # C-contiguous copy of a grown factor's leading n x n block

    @property
    def n(self) -> int:
        """Number of training points."""
        return len(self._y)

    @property
    def train_inputs(self) -> FloatArray:
        """``(n, p)`` training inputs."""
        return self._zbuf[: self.n]

    @property
    def train_targets(self) -> FloatArray:
        """``(n,)`` training observations in observation units."""
        return np.array(self._y, dtype=float)

    def _restandardize(self, y: FloatArray) -> None:
        if self.standardize:
            self.y_mean = float(np.mean(y))
            if y.size >= 2 and np.std(y) > 1e-12:
                self.y_std = float(np.std(y))

    def standardized_targets(self) -> FloatArray:
        """``(n,)`` the targets the GP is conditioned on (``(y - y_mean) / y_std``, or ``y``)."""
        y = self.train_targets
        return (y - self.y_mean) / self.y_std if self.standardize else y

    def condition_on_observation(self, z: ArrayLike, y: float) -> None:
        """Add one observation ``y`` at ``z`` ``(p,)`` (arm index for an ArmKernel): ``O(n^2)`` or ``O(N^2)``."""
        zv = np.asarray(z, dtype=float).reshape(-1)
        n = self.n
        if self._zbuf.shape[0] == n:
            grown = np.zeros((max(16, 2 * n), zv.size))
            if n:
                grown[:n] = self._zbuf[:n]
            self._zbuf = grown
        if self.finite:
            self._rank_one(int(zv[0]), float(y))
        else:
            self._append_row(zv)
        self._zbuf[n] = zv
        self._y.append(float(y))
        self._alpha, self._kinv, self._stale = None, None, True

    def _rank_one(self, arm: int, y: float) -> None:
        """Eqs. 19-21 of Chowdhury & Gopalan: ``mu += c (y - mu_i) / d``, ``C -= c c^T / d``, ``d = lambda + C_ii``."""
        var_i = max(float(self.arm_cov[arm, arm]), 0.0)
        denom = max(self.noise + var_i, _DENOM_FLOOR)
        col = self.arm_cov[:, arm].copy()
        self.arm_mean += col * ((y - self.arm_mean[arm]) / denom)
        self.arm_cov -= np.outer(col, col) / denom
        if self.noise > 0:
            self.info_gain += 0.5 * np.log1p(var_i / self.noise)

    def _append_row(self, z: FloatArray) -> None:
        n = self.n
        if n == self._chol.shape[0]:
            grown = np.zeros((2 * n, 2 * n))
            grown[:n, :n] = self.chol
            self._chol = grown
        noise = self.noise + self.jitter
        prior = float(self.kernel.diag(z[None, :])[0])
        if n:
            kx = self.kernel(self.train_inputs, z[None, :])[:, 0]
            row = solve_triangular(self.chol, kx, lower=True, check_finite=False)
            var = prior - float(row @ row)
            c2 = max(prior + noise - float(row @ row), noise)
            self._chol[n, :n] = row
        else:
            var, c2 = prior, prior + noise
        self._chol[n, n] = np.sqrt(c2)
        self._chol[:n, n] = 0.0
        self._chol_c = None
        if self.noise > 0:
            self.info_gain += 0.5 * np.log1p(max(var, 0.0) / self.noise)

    def set_train_data(self, Z: ArrayLike, y: ArrayLike, *, fit: bool = False) -> None:  # noqa: N803
        """Condition on ``Z`` ``(n, p)``, ``y`` ``(n,)`` from scratch; with ``fit``, first fit the hyperparameters
        (when ``fit_iters > 0`` and ``n >= 3``).  Re-standardises the targets."""
        Z = np.asarray(Z, dtype=float)  # noqa: N806
        y = np.asarray(y, dtype=float).reshape(-1)
        if Z.ndim != 2 or Z.shape[0] != y.size or y.size == 0:
            raise ParameterError(f"set_train_data needs Z (n, p) and y (n,) with n >= 1, got {Z.shape}, {y.shape}")
        self._restandardize(y)
        if fit and self.fit_iters > 0 and y.size >= 3 and not self.finite:
            self._zbuf, self._y = Z.copy(), [float(v) for v in y]
            self._fit()
        self._load(Z, y)

    def _load(self, Z: FloatArray, y: FloatArray) -> None:  # noqa: N803
        """Condition from scratch on ``Z``, ``y`` with the current hyperparameters and standardisation."""
        if self.finite:
            self._reset()
            for zi, yi in zip(Z, y, strict=True):
                self.condition_on_observation(zi, float(yi))
            return
        self._zbuf, self._y = Z.copy(), [float(v) for v in y]
        self._alpha, self._kinv, self._stale = None, None, False
        self._chol, self._chol_c = self._cholesky(self.kernel(Z, Z)), None

    def _cholesky(self, gram: FloatArray) -> FloatArray:
        """Lower factor of ``K + (lambda + jitter) I``, adding ``1e-6, 1e-5, ...`` (absolute) if it is not PD."""
        cov = gram + (self.noise + self.jitter) * np.eye(gram.shape[0])
        return jittered_cholesky(cov, geometric_jitters(1e-6, 10.0, 40), relative=False, layout="C")

    def recompute(self) -> None:
        """Recompute the Cholesky factor from scratch (``O(n^3)``; the cost model of the BOKE paper's GP-UCB)."""
        if not self.finite and self.n:
            self._chol, self._chol_c = self._cholesky(self.kernel(self.train_inputs, self.train_inputs)), None
            self._alpha, self._kinv = None, None

    def remove(self, indices: ArrayLike) -> None:
        """Drop the training points ``indices`` and condition on the others from scratch (same hyperparameters and
        standardisation; equal to a new model given the remaining data)."""
        keep = np.setdiff1d(np.arange(self.n), np.asarray(indices, dtype=int).reshape(-1))
        Z, y = self.train_inputs[keep], self.train_targets[keep]  # noqa: N806
        if keep.size == 0:
            self._reset()
            return
        self._load(Z, y)

    # ------------------------------------------------------------------ linear algebra
    @property
    def chol(self) -> FloatArray:
        """Lower Cholesky factor ``(n, n)`` of ``K_n + (lambda + jitter) I`` (continuous inputs)."""
        if self.finite:
            raise ParameterError("an ArmKernel model keeps the arms' posterior, not a Cholesky factor")
        n = self.n
        if self._chol.shape[0] == n:
            return self._chol
        if self._chol_c is None:  # one copy per observation, not one per solve (scipy copies a strided view)
            self._chol_c = np.ascontiguousarray(self._chol[:n, :n])
        return self._chol_c

    @property
    def alpha(self) -> FloatArray:
        """``(K_n + (lambda + jitter) I)^{-1} z`` for the (standardised) targets ``z``, ``(n,)``; recomputed lazily
        after new data (the standardisation is refreshed then)."""
        if self._alpha is None:
            if self._stale:
                self._restandardize(self.train_targets)
                self._stale = False
            self._alpha = cho_solve((self.chol, True), self.standardized_targets(), check_finite=False)
        return self._alpha

    @property
    def Kinv(self) -> FloatArray:  # noqa: N802 - matrix name
        """``(n, n)`` inverse of ``K_n + (lambda + jitter) I``, cached."""
        if self._kinv is None:
            self._kinv = cho_solve((self.chol, True), np.eye(self.n))
        return self._kinv

    # ------------------------------------------------------------------ posterior
    def posterior(self, Zq: ArrayLike, *, standardized: bool = False) -> GaussianPosterior:  # noqa: N803
        """The posterior of the latent ``f`` at ``Zq`` ``(m, p)`` (arm indices ``(m,)`` or ``(m, 1)`` for an
        ArmKernel): means, variances and, lazily, the joint covariance.  Observation units unless ``standardized``."""
        if self.finite:
            idx = np.asarray(Zq, dtype=int).reshape(-1)
            var = np.clip(np.diag(self.arm_cov), 0.0, None)
            return GaussianPosterior(self.arm_mean[idx], var[idx], self.arm_cov[np.ix_(idx, idx)])
        zq = np.atleast_2d(np.asarray(Zq, dtype=float))
        prior = self.kernel.diag(zq)
        if self.n == 0:
            mean, var = np.zeros(zq.shape[0]), prior
        else:
            if self._stale:
                self._restandardize(self.train_targets)
                self._stale, self._alpha = False, None
            mean, dvar, b = condition(self.chol, self.kernel(zq, self.train_inputs), self.standardized_targets())
            var = np.maximum(prior - dvar, self.min_variance)

        def cov() -> FloatArray:
            full = self.kernel(zq, zq)
            return full if self.n == 0 else full - b @ b.T

        post = GaussianPosterior(mean, var, cov)
        return post.affine(self.y_mean, self.y_std) if self.standardize and not standardized else post

    def all_arms(self) -> GaussianPosterior:
        """The posterior of every arm of an ArmKernel model (no copies)."""
        return GaussianPosterior(self.arm_mean, np.clip(np.diag(self.arm_cov), 0.0, None), self.arm_cov)

    def mean_var_grad(self, z: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
        """Standardised mean, variance and their gradients ``(p,)`` at one input ``z`` ``(p,)`` (continuous inputs).

        Where the variance is at or below ``min_variance`` it is returned as ``min_variance`` with a zero gradient.
        A kernel with ``input_blocks(p)`` (column groups, e.g. space and time) has its gradients contracted block by
        block.
        """
        p = z.shape[0]
        prior = float(self.kernel.diag(z[None, :])[0])
        if self.n == 0:
            return 0.0, prior, np.zeros(p), np.zeros(p)
        kx, jac = self.kernel.grad_x(z, self.train_inputs)
        w = cho_solve((self.chol, True), kx, check_finite=False)
        var = prior - float(kx @ w)
        alpha = self.alpha
        blocks = self.kernel.input_blocks(p) if hasattr(self.kernel, "input_blocks") else [slice(0, p)]
        parts = [np.ascontiguousarray(jac[:, b]).T for b in blocks]
        dmean = np.concatenate([g @ alpha for g in parts])
        if var <= self.min_variance:
            return float(kx @ alpha), self.min_variance, dmean, np.zeros(p)
        return float(kx @ alpha), var, dmean, -2.0 * np.concatenate([g @ w for g in parts])

    # ------------------------------------------------------------------ hyperparameters
    def _layout(self) -> tuple[list[str], FloatArray, list[tuple[float, float]]]:
        names = list(self.kernel.fit_layout)
        bounds = {k: self.kernel.bounds[k] for k in names if k != "noise"} | {"noise": self.noise_bounds}
        theta = np.log([self.noise if k == "noise" else self.kernel.get(k) for k in names])
        lb = [(np.log(bounds[k][0]), np.log(bounds[k][1])) for k in names]
        return names, np.clip(theta, [lo for lo, _ in lb], [hi for _, hi in lb]), lb

    def _log_posterior(
        self, theta: FloatArray, names: list[str], cache: Any, z: FloatArray, priors: bool
    ) -> tuple[float, FloatArray]:
        """Log marginal likelihood of ``z`` (plus, with ``priors``, the log-normal lengthscale priors, up to their
        constants) at log-parameters ``theta`` and its gradient: the exact-GP core's (:mod:`evroute.kernels.exact`)."""
        params = dict(zip(names, np.exp(theta), strict=True))
        noise = params["noise"]
        kern, dk = self.kernel.gram_and_grads(cache, params)
        cov = kern + (noise + self.jitter) * np.eye(z.size)
        try:
            chol = jittered_cholesky(cov, ())
        except np.linalg.LinAlgError:
            return -1e10, np.zeros_like(theta)
        val, alpha = log_marginal_likelihood(chol, z)
        q = likelihood_weights(chol, alpha)
        grad = np.array(
            [0.5 * noise * float(np.trace(q)) if k == "noise" else 0.5 * float(np.vdot(q, dk[k])) for k in names]
        )
        if priors and self.prior_sd is not None:
            for j, k in enumerate(names):
                if k in self._lengthscale_centre:
                    val -= 0.5 * ((theta[j] - self._lengthscale_centre[k]) / self.prior_sd) ** 2
                    grad[j] -= (theta[j] - self._lengthscale_centre[k]) / self.prior_sd**2
        return float(val), grad

    def log_marginal_likelihood(self) -> float:
        """``log p(z | Z)`` of the (standardised) targets under the current hyperparameters (no priors)."""
        if self.finite or self.n == 0:
            raise ParameterError("log_marginal_likelihood needs a continuous-input model with data")
        names = list(self.kernel.fit_layout)
        theta = np.log([self.noise if k == "noise" else self.kernel.get(k) for k in names])
        z = self.standardized_targets()
        return self._log_posterior(theta, names, self.kernel.fit_cache(self.train_inputs), z, False)[0]

    def fit_hyperparameters(self) -> None:
        """Maximise the log marginal likelihood (plus the lengthscale priors) over the kernel's fitted parameters
        and the noise, starting from the current values; then condition on the data again."""
        if self.finite:
            raise ParameterError("an ArmKernel model has no hyperparameters to fit")
        if self.n == 0 or self.fit_iters == 0:
            return
        if self._stale:
            self._restandardize(self.train_targets)
        self._fit()
        self._load(self.train_inputs, self.train_targets)

    def _fit(self) -> None:
        names, theta0, lb = self._layout()
        cache, z = self.kernel.fit_cache(self.train_inputs), self.standardized_targets()
        # the objective without its constant -n/2 log(2 pi), as the fit always had: L-BFGS-B's relative-decrease
        # stopping test divides by the objective's magnitude, so a constant would move where the fit stops
        const = 0.5 * z.size * np.log(2.0 * np.pi)

        def objective(theta: FloatArray) -> tuple[float, FloatArray]:
            val, grad = self._log_posterior(theta, names, cache, z, True)
            return val + const, grad

        res = maximise_log_parameters(objective, theta0, lb, self.fit_iters)
        if np.all(np.isfinite(res.x)) and res.fun < 1e10:
            for k, v in zip(names, np.exp(res.x), strict=True):
                if k == "noise":
                    self.noise = float(v)
                else:
                    self.kernel.set(k, float(v))
