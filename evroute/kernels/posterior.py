"""The project's one posterior type: a Gaussian over ``f`` at ``m`` points (edges of the road network, or query points).

:class:`GaussianPosterior` holds marginal means ``(m,)`` and variances ``(m,)`` and, on demand, the joint covariance
``(m, m)`` or that of a subset of the points, and joint samples.  The routing edge models
(:mod:`evroute.models`; ``m = E`` edges, Wh, with the observation-noise variance ``noise_var`` that the index
policies rectify with, and optionally a model-specific joint ``sampler``) and the GP models of :mod:`evroute.bo`
(BoTorch's split of model, posterior and acquisition) all return it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evroute.errors import ParameterError
from evroute.kernels.linalg import jittered_cholesky

__all__ = ["GaussianPosterior", "sample_mvn"]

FloatArray = np.ndarray
Sampler = Callable[[np.random.Generator], FloatArray]


def sample_mvn(mean: FloatArray, cov: FloatArray, rng: np.random.Generator, scale: float = 1.0) -> FloatArray:
    """One draw from ``N(mean, scale^2 cov)`` (``(N,)``), robust to a singular ``cov``.

    Cholesky of ``cov + j I`` with ``j = 1e-10, 1e-8, 1e-6`` times the mean diagonal
    (:func:`~evroute.kernels.linalg.jittered_cholesky`), else an eigendecomposition with the negative eigenvalues
    clipped to zero.
    """
    n = mean.shape[0]
    z = rng.standard_normal(n)
    cov = 0.5 * (cov + cov.T)
    base = max(float(np.mean(np.diag(cov))), 1e-300)
    try:
        chol = jittered_cholesky(
            cov, [jit * base for jit in (1e-10, 1e-8, 1e-6)], relative=False, plain_first=False, layout="C"
        )
    except np.linalg.LinAlgError:
        w, q = np.linalg.eigh(cov)
        return mean + scale * (q @ (np.sqrt(np.clip(w, 0.0, None)) * z))
    return mean + scale * (chol @ z)


class GaussianPosterior:
    """Gaussian posterior of ``f`` at ``m`` points.

    Args:
        mean: ``(m,)`` posterior means.
        variance: ``(m,)`` posterior variances (clipped at 0).
        covariance: the ``(m, m)`` joint covariance, or a function computing it on demand, or None (then only
            marginal quantities, and :meth:`covariance_of` / :meth:`sample` through ``subset_covariance`` or
            ``sampler``, are available).
        noise_var: optional ``(m,)`` observation-noise variances (the routing models: Wh^2; the index policies
            rectify with it).
        sampler: optional ``rng -> (m,)`` joint draw by a model-specific method (e.g. Matheron's rule of the exact
            GP edge model); Thompson sampling uses it instead of independent per-point draws when present.
        subset_covariance: optional ``idx -> (k, k)`` joint covariance of the points ``idx`` (without forming the
            ``(m, m)`` matrix).
    """

    def __init__(
        self,
        mean: FloatArray,
        variance: FloatArray,
        covariance: FloatArray | Callable[[], FloatArray] | None = None,
        *,
        noise_var: FloatArray | None = None,
        sampler: Sampler | None = None,
        subset_covariance: Callable[[np.ndarray], FloatArray] | None = None,
    ) -> None:
        self.mean = np.asarray(mean, dtype=float).reshape(-1)
        self.variance = np.clip(np.asarray(variance, dtype=float).reshape(-1), 0.0, None)
        if self.mean.shape != self.variance.shape:
            raise ParameterError(f"mean and variance shapes differ: {self.mean.shape}, {self.variance.shape}")
        self.noise_var = None if noise_var is None else np.asarray(noise_var, dtype=float).reshape(-1)
        self.sampler = sampler
        self._cov: FloatArray | Callable[[], FloatArray] | None = covariance
        self._subset_cov = subset_covariance

    @property
    def var(self) -> FloatArray:
        """``(m,)`` posterior variances (the same array as :attr:`variance`)."""
        return self.variance

    @property
    def std(self) -> FloatArray:
        """``(m,)`` posterior standard deviations."""
        return np.sqrt(self.variance)

    @property
    def has_covariance(self) -> bool:
        """Whether a joint covariance (full or of subsets) is available."""
        return self._cov is not None or self._subset_cov is not None

    @property
    def covariance(self) -> FloatArray:
        """``(m, m)`` joint posterior covariance (computed on first access)."""
        if self._cov is None:
            raise ParameterError("this posterior has no joint covariance (built from marginals only)")
        if callable(self._cov):
            self._cov = np.asarray(self._cov(), dtype=float)
        return self._cov

    def covariance_of(self, idx: np.ndarray) -> FloatArray:
        """``(k, k)`` joint covariance of the points ``idx`` ``(k,)``."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        if self._subset_cov is not None:
            return np.asarray(self._subset_cov(idx), dtype=float)
        return self.covariance[np.ix_(idx, idx)]

    def quad_of(self, idx: np.ndarray, w: np.ndarray) -> float:
        """``w^T Sigma_II w`` for the points ``idx`` ``(k,)`` and weights ``w`` ``(k,)``: by ``subset_covariance.quad``
        when it has one (no ``(k, k)`` matrix formed), else from :meth:`covariance_of`."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        ww = np.asarray(w, dtype=float).reshape(-1)
        quad = getattr(self._subset_cov, "quad", None)
        if quad is not None:
            return float(quad(idx, ww))
        return float(ww @ self.covariance_of(idx) @ ww)

    def sample(self, rng: np.random.Generator, n_samples: int = 1, scale: float = 1.0) -> FloatArray:
        """``(n_samples, m)`` joint draws from ``N(mean, scale^2 covariance)`` (by ``sampler`` when given)."""
        if self.sampler is not None:
            return np.stack([self.mean + scale * (self.sampler(rng) - self.mean) for _ in range(int(n_samples))])
        cov = self.covariance
        return np.stack([sample_mvn(self.mean, cov, rng, scale) for _ in range(int(n_samples))])

    def affine(self, shift: float, scale: float) -> GaussianPosterior:
        """The posterior of ``shift + scale f`` (e.g. from standardised to observation units)."""
        cov, sub, draw = self._cov, self._subset_cov, self.sampler
        new_cov: FloatArray | Callable[[], FloatArray] | None
        if cov is None:
            new_cov = None
        elif callable(cov):
            new_cov = lambda: scale**2 * np.asarray(cov(), dtype=float)  # noqa: E731
        else:
            new_cov = scale**2 * cov
        return GaussianPosterior(
            shift + scale * self.mean,
            scale**2 * self.variance,
            new_cov,
            noise_var=None if self.noise_var is None else scale**2 * self.noise_var,
            sampler=None if draw is None else (lambda rng: shift + scale * draw(rng)),
            subset_covariance=None if sub is None else (lambda idx: scale**2 * np.asarray(sub(idx), dtype=float)),
        )
