"""GP policies: IGP-UCB, GP-UCB (Srinivas et al.), GP-TS, GP-EI and GP-PI.

All of them read the posterior of one model, an :class:`~evroute.bo.gp.ExactGP` (or any model with its interface,
e.g. a GPyTorch / BoTorch model through :class:`~evroute.bo.adapters.TorchModel`): on a :class:`FiniteDomain` its
``O(N^2)`` rank-one posterior over the arms (:class:`~evroute.kernels.stationary.ArmKernel`); on a
:class:`BoxDomain` its incremental Cholesky factor in unit-cube coordinates, with acquisitions maximised by the shared
:class:`~evroute.bo.optim.AcquisitionOptimizer`.  Widths follow Chowdhury & Gopalan (2017):

* IGP-UCB (Alg. 1): ``beta_t = B + R sqrt(2 (gamma_{t-1} + 1 + ln(1/delta)))``,  ``x_t = argmax mu + beta_t sigma``.
* GP-UCB (Srinivas et al., as quoted in Sec. 3): ``beta_t = sqrt(2 B^2 + 300 gamma_{t-1} ln^3(t / delta))``.
* GP-TS (Alg. 2): ``v_t = B + R sqrt(2 (gamma_{t-1} + 1 + ln(2/delta)))``, ``f_t ~ GP(mu_{t-1}, v_t^2 k_{t-1})``.
* GP-EI / GP-PI (not specified by the paper; standard forms): ``z = (mu - f+ - xi) / sigma``,
  ``EI = (mu - f+ - xi) Phi(z) + sigma phi(z)``, ``PI = Phi(z)``.

``t`` is the index of the round being chosen (``n_obs + 1``).  ``gamma_t`` (maximum information gain) is, by default,
the theoretical bound with unit constant that the paper's experiments use: SE ``(ln t)^{d+1}``, Matérn
``t^{d(d+1)/(2 nu + d(d+1))} ln t`` (``gamma_0 = 0``); pass a number for a constant ``gamma`` (the sensor experiments
use 1) or ``"empirical"`` for ``1/2 sum_s ln(1 + sigma_{s-1}^2(x_s) / lambda)`` of the points actually queried.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evroute.bo.acquisition import ei_terms, log_pi_terms, thompson_sample, ucb_terms
from evroute.bo.base import BoxDomain, Domain, FiniteDomain, FloatArray, Policy, SeedLike
from evroute.bo.gp import ExactGP
from evroute.bo.optim import AcquisitionOptimizer, acquisition_value_and_grad
from evroute.errors import ParameterError, check_positive
from evroute.kernels.posterior import GaussianPosterior
from evroute.kernels.stationary import ArmKernel, Matern, SquaredExponential, Stationary

__all__ = ["GPEI", "GPPI", "GPTS", "GPUCB", "IGPUCB", "GPPolicy", "SrinivasGPUCB", "info_gain_bound"]


def info_gain_bound(t: int, kernel: Stationary, dim: int) -> float:
    """Order of the maximum information gain ``gamma_t`` with unit constant (Srinivas et al. bounds).

    SE: ``(ln t)^{d+1}``; Matérn-``nu``: ``t^{d(d+1)/(2 nu + d(d+1))} ln t``; 0 for ``t <= 1``.
    """
    if t <= 1:
        return 0.0
    if isinstance(kernel, Matern):
        e = dim * (dim + 1) / (2 * kernel.nu + dim * (dim + 1))
        return t**e * math.log(t)
    return math.log(t) ** (dim + 1)


_JITTER = 1e-10  # relative to the kernel variance, on the diagonal of K + lambda I (box domains)


def _argmax_random_tie(values: FloatArray, rng: np.random.Generator) -> int:
    best = np.flatnonzero(values >= np.max(values) - 1e-12 * max(1.0, float(np.max(np.abs(values)))))
    return int(best[rng.integers(best.size)]) if best.size > 1 else int(best[0])


class GPPolicy(Policy):
    """Base class of the GP policies: an :class:`~evroute.bo.gp.ExactGP` (zero-mean prior ``GP(0, k)``, noise
    variance ``lam``) or any model with the same interface (e.g. :class:`~evroute.bo.adapters.TorchModel`).

    Args:
        domain: finite arm set or box.  On a box, the model acts on unit-cube coordinates.
        kernel: prior covariance (default SE with lengthscale 0.2, as in the kernelized-bandits experiments).
        lam: regulariser ``lambda`` = noise variance of the Gaussian likelihood (paper's experiments: ``R^2``).
        prior_cov: on a finite domain, an ``(N, N)`` prior covariance used instead of ``kernel`` (e.g. an empirical
            covariance of sensor readings).
        prior_mean: on a finite domain, an optional ``(N,)`` prior mean (default 0).
        normalize_y: standardise the observations before conditioning (box domains only; default False).
        fit_every: on a box, refit the kernel variance, lengthscale and noise by maximum marginal likelihood (with a
            log-normal lengthscale prior) every this many observations (default 0: fixed, as in the papers).
        model: a model to use instead of the ExactGP built from the arguments above (``posterior``,
            ``condition_on_observation``, ``mean_var_grad``, ``fit_hyperparameters``); it sees unit-cube coordinates
            on a box and arm coordinates on a finite domain.
        optimizer: acquisition optimiser for box domains.
        seed: random seed.
    """

    def __init__(
        self,
        domain: Domain,
        *,
        kernel: Stationary | None = None,
        lam: float = 0.01,
        prior_cov: ArrayLike | None = None,
        prior_mean: ArrayLike | None = None,
        normalize_y: bool = False,
        fit_every: int = 0,
        model: Any = None,
        optimizer: AcquisitionOptimizer | None = None,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(domain, seed=seed)
        self.kernel = kernel if kernel is not None else SquaredExponential(0.2)
        self.lam = check_positive("lam", lam, allow_zero=True)
        self.optimizer = optimizer if optimizer is not None else AcquisitionOptimizer()
        self.normalize_y = bool(normalize_y)
        if isinstance(fit_every, bool) or int(fit_every) < 0:
            raise ParameterError(f"fit_every must be an int >= 0, got {fit_every!r}")
        self.fit_every = int(fit_every)
        self.finite = isinstance(domain, FiniteDomain)
        if not (self.finite or isinstance(domain, BoxDomain)):
            raise ParameterError(f"unsupported domain {domain!r}")
        if self.finite:
            self.observed_arms = np.zeros(self.finite_domain.n_arms, dtype=np.bool_)
            if normalize_y or self.fit_every:
                raise ParameterError("normalize_y and fit_every are only supported on box domains")
        elif prior_cov is not None or prior_mean is not None:
            raise ParameterError("prior_cov and prior_mean are only supported on finite domains")
        self.arm_model = model is None and self.finite  # our model indexes the arms; others see coordinates
        self.model = model if model is not None else self._default_model(prior_cov, prior_mean)

    def _default_model(self, prior_cov: ArrayLike | None, prior_mean: ArrayLike | None) -> ExactGP:
        if self.finite:
            pts = self.finite_domain.points
            cov = self.kernel(pts, pts) if prior_cov is None else np.asarray(prior_cov, float)
            if cov.shape != (pts.shape[0], pts.shape[0]):
                raise ParameterError(f"prior_cov must be ({pts.shape[0]}, {pts.shape[0]}), got {cov.shape}")
            return ExactGP(ArmKernel(cov), self.lam, prior_mean=None if prior_mean is None else np.asarray(prior_mean))
        return ExactGP(
            self.kernel,
            self.lam,
            jitter=_JITTER * self.kernel.variance,
            standardize=self.normalize_y,
            fit_iters=20 if self.fit_every else 0,
        )

    # ---------------------------------------------------------------- model inputs and posterior
    def _inputs(self, x: ArrayLike) -> FloatArray:
        """Model inputs of the points ``x`` ``(m, d)``: arm indices, unit-cube or arm coordinates."""
        rows = np.atleast_2d(np.asarray(x, dtype=float))
        if self.arm_model:
            return np.array([[self.finite_domain.index_of(r)] for r in rows], dtype=np.float64)
        return self.box_domain.to_unit(rows) if not self.finite else rows

    @property
    def info_gain(self) -> float:
        """``1/2 sum_s ln(1 + sigma_{s-1}^2(x_s) / lambda)`` over the observations so far (Lemma 3)."""
        if not hasattr(self.model, "info_gain"):
            raise ParameterError(f"{type(self.model).__name__} does not track the information gain")
        return float(self.model.info_gain)

    def _update(self, x: FloatArray, y: float, t: float | None) -> None:
        self.model.condition_on_observation(self._inputs(x)[0], y)
        if self.finite:
            self.observed_arms[self.finite_domain.index_of(x)] = True
        if self.fit_every and self.n_obs % self.fit_every == 0:
            self.model.fit_hyperparameters()

    def posterior(self, x: ArrayLike | None = None) -> tuple[FloatArray, FloatArray]:
        """Posterior mean and standard deviation ``(m,)`` at ``x`` ``(m, d)`` (all arms if ``x`` is None)."""
        post = self.posterior_at(x)
        return post.mean.copy(), post.std

    def posterior_at(self, x: ArrayLike | None = None, *, unit: bool = False) -> GaussianPosterior:
        """The model's posterior at ``x`` ``(m, d)`` (all arms if None), observation units, joint covariance lazily.

        ``unit=True``: ``x`` is in unit-cube coordinates (box domains).
        """
        if x is None:
            if not self.finite:
                raise ParameterError("posterior on a box domain needs query points x")
            return self.model.all_arms() if self.arm_model else self.model.posterior(self.finite_domain.points)
        return self.model.posterior(np.atleast_2d(np.asarray(x, dtype=float)) if unit else self._inputs(x))

    # ---------------------------------------------------------------- acquisition
    @abstractmethod
    def acquisition(self, mean: FloatArray, std: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Acquisition values ``(m,)`` and their partial derivatives w.r.t. ``mean`` and ``std`` (each ``(m,)``).

        Called once per round on a finite domain and many times on a box (in normalised-``y`` units there).
        """

    def _prepare(self) -> None:  # noqa: B027 - optional hook
        """Per-round set-up before the acquisition is evaluated (e.g. computing ``beta_t``)."""

    def _ask(self, t: float | None) -> FloatArray:
        self._prepare()
        if self.finite:
            post = self.posterior_at()
            vals, _, _ = self.acquisition(post.mean, post.std)
            return self.finite_domain.points[_argmax_random_tie(vals, self.rng)]
        model = self.model

        def batch(u: FloatArray) -> FloatArray:
            post = model.posterior(u, standardized=True)
            return self.acquisition(post.mean, post.std)[0]

        def single(u: FloatArray) -> tuple[float, FloatArray]:
            return acquisition_value_and_grad(model, u, self.acquisition)

        extra = self._local_starts()
        return self.box_domain.from_unit(self.optimizer.maximize(batch, single, self.domain.dim, self.rng, extra))

    def _local_starts(self) -> FloatArray | None:
        """Perturbations of the best observed points, as extra raw candidates for the box optimiser."""
        if self.n_obs == 0:
            return None
        best = self.box_domain.to_unit(self.X[np.argsort(-self.y)[:5]])
        return best + 0.01 * self.rng.standard_normal(best.shape)


class GPUCB(GPPolicy):
    """GP-UCB with a fixed width: ``x_t = argmax mu_{t-1}(x) + beta sigma_{t-1}(x)`` (BOKE paper's Alg. 4 baseline).

    ``beta`` multiplies the standard deviation (it is ``sqrt(beta)`` in the BOKE paper's notation).  Subclasses
    override :meth:`width` for schedules.  Keyword arguments as in :class:`GPPolicy`.
    """

    def __init__(self, domain: Domain, *, beta: float = 2.0, **kwargs: Any) -> None:
        super().__init__(domain, **kwargs)
        self.beta = check_positive("beta", beta, allow_zero=True)
        self.current_width = self.beta

    def width(self, t: int) -> float:
        """Width multiplier of ``sigma`` in round ``t``."""
        return self.beta

    def _prepare(self) -> None:
        self.current_width = self.width(self.n_obs + 1)

    def acquisition(self, mean: FloatArray, std: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        return ucb_terms(mean, std, self.current_width)


class IGPUCB(GPUCB):
    """IGP-UCB (Chowdhury & Gopalan, Alg. 1): width ``B + R sqrt(2 (gamma_{t-1} + 1 + ln(1/delta)))``.

    Args:
        B: RKHS-norm bound (default 1).
        R: sub-Gaussian noise constant (default ``sqrt(lam)``, matching the experiments' ``lambda = R^2``).
        delta: confidence (default 0.1, as in the experiments).
        gamma: ``"bound"`` (default), ``"empirical"`` or a constant.
        lam: regulariser; ``"theory"`` sets ``lambda = 1 + 2/horizon`` (Thm 2), which needs ``horizon``.
        horizon: ``T`` (only used by ``lam="theory"``).
        Other keyword arguments as in :class:`GPPolicy`.
    """

    _log_term = staticmethod(lambda delta: math.log(1.0 / delta))

    def __init__(
        self,
        domain: Domain,
        *,
        B: float = 1.0,  # noqa: N803
        R: float | None = None,  # noqa: N803
        delta: float = 0.1,
        gamma: str | float = "bound",
        lam: float | str = 0.01,
        horizon: int | None = None,
        **kwargs: Any,
    ) -> None:
        if lam == "theory":
            if horizon is None or int(horizon) < 1:
                raise ParameterError("lam='theory' needs horizon >= 1")
            lam = 1.0 + 2.0 / int(horizon)
        elif isinstance(lam, str):
            raise ParameterError(f"lam must be a number or 'theory', got {lam!r}")
        super().__init__(domain, lam=float(lam), **kwargs)
        self.B = check_positive("B", B, allow_zero=True)
        self.R = math.sqrt(self.lam) if R is None else check_positive("R", R, allow_zero=True)
        self.delta = check_positive("delta", delta)
        if not self.delta < 1:
            raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
        if not (gamma in ("bound", "empirical") or isinstance(gamma, int | float)):
            raise ParameterError(f"gamma must be 'bound', 'empirical' or a number, got {gamma!r}")
        self.gamma_spec = gamma

    def gamma(self, t: int) -> float:
        """``gamma_t`` as configured: the unit-constant bound, the empirical information gain, or a constant."""
        if self.gamma_spec == "bound":
            return info_gain_bound(t, self.kernel, self.domain.dim)
        if self.gamma_spec == "empirical":
            return self.info_gain
        return float(self.gamma_spec)

    def width(self, t: int) -> float:
        return self.B + self.R * math.sqrt(2.0 * (self.gamma(t - 1) + 1.0 + self._log_term(self.delta)))


class SrinivasGPUCB(IGPUCB):
    """Srinivas et al.'s GP-UCB: width ``sqrt(2 B^2 + 300 gamma_{t-1} ln^3(t/delta))``.

    ``lam`` plays the role of the noise variance ``sigma^2``; ``R`` is unused.  Arguments as in :class:`IGPUCB`.
    """

    def width(self, t: int) -> float:
        return math.sqrt(2.0 * self.B**2 + 300.0 * self.gamma(t - 1) * math.log(t / self.delta) ** 3)


class GPTS(IGPUCB):
    """GP-TS (Chowdhury & Gopalan, Alg. 2): ``x_t = argmax_{D_t} f_t``, ``f_t ~ GP(mu_{t-1}, v_t^2 k_{t-1})``.

    ``v_t = B + R sqrt(2 (gamma_{t-1} + 1 + ln(2/delta)))``.  On a finite domain ``D_t = D`` and ``f_t`` is one joint
    draw over all arms; on a box ``D_t`` is a fresh set of ``n_candidates`` uniform points (footnote 7's
    discretisation) plus the best observed point, sampled jointly.  Arguments as in :class:`IGPUCB`, plus
    ``n_candidates`` (default 1000).
    """

    _log_term = staticmethod(lambda delta: math.log(2.0 / delta))

    def __init__(self, domain: Domain, *, n_candidates: int = 1000, **kwargs: Any) -> None:
        super().__init__(domain, **kwargs)
        if int(n_candidates) < 1:
            raise ParameterError(f"n_candidates must be >= 1, got {n_candidates!r}")
        self.n_candidates = int(n_candidates)

    def _ask(self, t: float | None) -> FloatArray:
        v = self.width(self.n_obs + 1)
        if self.finite:
            draw = thompson_sample(self.posterior_at(), self.rng, scale=v)
            return self.finite_domain.points[_argmax_random_tie(draw, self.rng)]
        u = self.rng.random((self.n_candidates, self.domain.dim))
        if self.n_obs:
            u = np.vstack([u, self.box_domain.to_unit(self.X[np.argmax(self.y)])])
        draw = thompson_sample(self.posterior_at(u, unit=True), self.rng, scale=v)
        return self.box_domain.from_unit(u[int(np.argmax(draw))])


class _ImprovementPolicy(GPPolicy):
    """Shared incumbent logic of GP-EI and GP-PI: ``f+ = max_s mu_{t-1}(x_s)`` (noise-robust), margin ``xi``."""

    def __init__(self, domain: Domain, *, xi: float = 0.0, **kwargs: Any) -> None:
        super().__init__(domain, **kwargs)
        self.xi = check_positive("xi", xi, allow_zero=True)
        self.incumbent = 0.0

    def _prepare(self) -> None:
        if self.n_obs == 0:
            self.incumbent = 0.0
        elif self.finite:
            self.incumbent = float(np.max(self.posterior_at().mean[self.observed_arms]))
        else:
            self.incumbent = float(np.max(self.model.posterior(self._inputs(self.X), standardized=True).mean))


class GPEI(_ImprovementPolicy):
    """GP-EI: ``EI = (mu - f+ - xi) Phi(z) + sigma phi(z)``, ``z = (mu - f+ - xi) / sigma`` (default ``xi = 0``)."""

    def acquisition(self, mean: FloatArray, std: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        return ei_terms(mean, std, self.incumbent, self.xi)


class GPPI(_ImprovementPolicy):
    """GP-PI: ``PI = Phi(z)``, ``z = (mu - f+ - xi) / sigma`` (default ``xi = 0``).

    Maximised through ``log Phi(z)`` on a box (same argmax, better conditioned gradients).
    """

    def acquisition(self, mean: FloatArray, std: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        return log_pi_terms(mean, std, self.incumbent, self.xi)
