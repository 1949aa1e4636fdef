"""The posterior object every model returns and every acquisition reads (BoTorch's ``Model.posterior`` split).

A :class:`GaussianPosterior` describes ``f`` at ``m`` query points: marginal means ``(m,)`` and variances ``(m,)``,
the joint covariance ``(m, m)`` on demand (computed only when asked, e.g. for joint samples) and joint samples.
Models: :meth:`evroute.bo.gp.ExactGP.posterior` (the one GP model of the static and time-varying policies) and
:meth:`evroute.bo.adapters.TorchModel.posterior` (a GPyTorch ``ExactGP`` or BoTorch ``Model``).  Acquisitions:
:mod:`evroute.bo.acquisition`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError

__all__ = ["GaussianPosterior", "sample_mvn"]


def sample_mvn(mean: FloatArray, cov: FloatArray, rng: np.random.Generator, scale: float = 1.0) -> FloatArray:
    """One draw from ``N(mean, scale^2 cov)`` (``(N,)``), robust to a singular ``cov``.

    Tries a Cholesky factorisation with growing jitter, then falls back to an eigendecomposition with the negative
    eigenvalues clipped to zero.
    """
    n = mean.shape[0]
    z = rng.standard_normal(n)
    cov = 0.5 * (cov + cov.T)
    base = max(float(np.mean(np.diag(cov))), 1e-300)
    for jit in (1e-10, 1e-8, 1e-6):
        try:
            chol = np.linalg.cholesky(cov + jit * base * np.eye(n))
        except np.linalg.LinAlgError:
            continue
        return mean + scale * (chol @ z)
    w, q = np.linalg.eigh(cov)
    return mean + scale * (q @ (np.sqrt(np.clip(w, 0.0, None)) * z))


class GaussianPosterior:
    """Gaussian posterior of ``f`` at ``m`` points.

    Args:
        mean: ``(m,)`` posterior means.
        variance: ``(m,)`` posterior variances (clipped at 0).
        covariance: the ``(m, m)`` joint covariance, or a function computing it on demand, or None (then only
            marginal quantities are available).
    """

    def __init__(
        self,
        mean: FloatArray,
        variance: FloatArray,
        covariance: FloatArray | Callable[[], FloatArray] | None = None,
    ) -> None:
        self.mean = np.asarray(mean, dtype=float).reshape(-1)
        self.variance = np.clip(np.asarray(variance, dtype=float).reshape(-1), 0.0, None)
        if self.mean.shape != self.variance.shape:
            raise ParameterError(f"mean and variance shapes differ: {self.mean.shape}, {self.variance.shape}")
        self._cov = covariance

    @property
    def std(self) -> FloatArray:
        """``(m,)`` posterior standard deviations."""
        return np.sqrt(self.variance)

    @property
    def covariance(self) -> FloatArray:
        """``(m, m)`` joint posterior covariance (computed on first access)."""
        if self._cov is None:
            raise ParameterError("this posterior has no joint covariance (built from marginals only)")
        if callable(self._cov):
            self._cov = np.asarray(self._cov(), dtype=float)
        return self._cov

    def sample(self, rng: np.random.Generator, n_samples: int = 1, scale: float = 1.0) -> FloatArray:
        """``(n_samples, m)`` joint draws from ``N(mean, scale^2 covariance)``."""
        cov = self.covariance
        return np.stack([sample_mvn(self.mean, cov, rng, scale) for _ in range(int(n_samples))])

    def affine(self, shift: float, scale: float) -> GaussianPosterior:
        """The posterior of ``shift + scale f`` (e.g. from standardised to observation units)."""
        cov = self._cov
        if cov is None:
            new_cov = None
        elif callable(cov):
            new_cov = lambda: scale**2 * np.asarray(cov(), dtype=float)  # noqa: E731
        else:
            new_cov = scale**2 * cov
        return GaussianPosterior(shift + scale * self.mean, scale**2 * self.variance, new_cov)
