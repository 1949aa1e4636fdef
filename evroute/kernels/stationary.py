"""Stationary kernels on points ``(n, d)`` and the kernel of a finite arm set: the BO GP's kernels.

* Isotropic stationary kernels ``k(x, x') = variance * kappa(||x - x'|| / lengthscale)`` (:class:`Stationary`) with
  input gradients and log-parameter gradients (for the marginal-likelihood fit).  The kernelized-bandits paper uses
  the squared-exponential kernel ``exp(-s^2 / (2 l^2))`` and the Matérn kernel with ``nu = 5/2``:
  ``(1 + sqrt(5) s / l + 5 s^2 / (3 l^2)) exp(-sqrt(5) s / l)``; Matérn 1/2 and 3/2 are offered as well.  The Matérn
  correlation is the project's one (:func:`evroute.kernels.matern.matern`).
* :class:`ArmKernel`: a given ``(N, N)`` prior covariance of ``N`` arms, indexed by arm number (e.g. a Gram matrix
  or the empirical covariance of sensor readings).

All are :class:`~evroute.kernels.base.Kernel` s (the project's one kernel interface: ``__call__``, ``diag``,
``pairs``; they compose with ``*``, ``+`` and ``scale``).  A kernel used with hyperparameter fitting by the exact-GP
core (:mod:`evroute.kernels.exact`, through :class:`evroute.bo.gp.ExactGP`) offers ``fit_layout`` (names of the
log-parameters, ``"noise"`` marking where the model's noise variance goes), ``lengthscale_names``, ``bounds``,
``get`` / ``set``, ``fit_cache(Z)`` and ``gram_and_grads(cache, params)``; the spatio-temporal kernel of the
time-varying policies (:class:`evroute.bo.timevarying.kernels.SpatioTemporalKernel`) offers the same.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from evroute.errors import ParameterError, check_positive
from evroute.kernels.base import Kernel
from evroute.kernels.matern import matern, matern_grad_factor

__all__ = ["ArmKernel", "Matern", "SquaredExponential", "Stationary", "make_kernel"]

FloatArray = np.ndarray


class Stationary(Kernel):
    """Isotropic stationary kernel ``k(x, x') = variance * kappa(||x - x'|| / lengthscale)`` on ``(n, d)`` points.

    Args:
        lengthscale: ``l > 0``.
        variance: ``k(x, x) > 0`` (the papers use 1).
    """

    fit_layout: tuple[str, ...] = ("variance", "lengthscale", "noise")
    lengthscale_names: tuple[str, ...] = ("lengthscale",)

    def __init__(
        self,
        lengthscale: float = 0.2,
        variance: float = 1.0,
        bounds: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.lengthscale = check_positive("lengthscale", lengthscale)
        self.variance = check_positive("variance", variance)
        #: box bounds of the fitted parameters
        self.bounds = {"variance": (1e-3, 1e3), "lengthscale": (1e-3, 1e2)} | dict(bounds or {})

    def get(self, name: str) -> float:
        """Current value of the parameter ``name``."""
        return float(getattr(self, name))

    def set(self, name: str, value: float) -> None:
        """Set the parameter ``name`` (``"variance"`` or ``"lengthscale"``)."""
        if name not in ("variance", "lengthscale"):
            raise ParameterError(f"unknown kernel parameter {name!r}")
        setattr(self, name, check_positive(name, value))

    def fit_cache(self, a: ArrayLike) -> FloatArray:
        """Pairwise distances ``(n, n)`` of the training inputs, reused by every :meth:`gram_and_grads` of a fit."""
        a2 = np.atleast_2d(np.asarray(a, dtype=float))
        return cdist(a2, a2)

    def gram_and_grads(self, dist: FloatArray, params: dict[str, float]) -> tuple[FloatArray, dict[str, FloatArray]]:
        """Gram matrix at ``params`` and its derivatives with respect to ``log variance`` and ``log lengthscale``.

        ``d k / d log l = -variance r kappa'(r) = -variance r^2 (kappa'(r) / r)``, ``r = s / l``.
        """
        r = dist / params["lengthscale"]
        kern = params["variance"] * self._kappa(r)
        return kern, {"variance": kern, "lengthscale": -params["variance"] * r**2 * self._dkappa_over_r(r)}

    @abstractmethod
    def _kappa(self, r: FloatArray) -> FloatArray:
        """Correlation as a function of the scaled distance ``r = s / l``."""

    @abstractmethod
    def _dkappa_over_r(self, r: FloatArray) -> FloatArray:
        """``kappa'(r) / r`` (finite at ``r = 0`` for differentiable kernels)."""

    def __call__(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """Gram matrix ``(n, m)`` between ``a`` ``(n, d)`` and ``b`` ``(m, d)``."""
        a2, b2 = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
        r = cdist(a2, b2) / self.lengthscale
        return self.variance * self._kappa(r)

    def diag(self, a: ArrayLike) -> FloatArray:
        """``k(a_i, a_i)`` for ``a`` ``(n, d)``: ``(n,)``."""
        return np.full(np.atleast_2d(np.asarray(a)).shape[0], self.variance)

    def pairs(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """``k(a_m, b_m)`` for paired points ``a``, ``b`` ``(k, d)``: ``(k,)``."""
        diff = np.atleast_2d(np.asarray(a, dtype=float)) - np.atleast_2d(np.asarray(b, dtype=float))
        return self.variance * self._kappa(np.sqrt(np.sum(diff**2, axis=1)) / self.lengthscale)

    def grad_x(self, x: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Values ``k(x, b_j)`` ``(m,)`` and gradients ``d k(x, b_j) / d x`` ``(m, d)`` at one point ``x`` ``(d,)``."""
        diff = x[None, :] - b
        r = np.sqrt(np.sum(diff**2, axis=1)) / self.lengthscale
        k = self.variance * self._kappa(r)
        g = (self.variance * self._dkappa_over_r(r) / self.lengthscale**2)[:, None] * diff
        return k, g

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lengthscale={self.lengthscale}, variance={self.variance})"


class SquaredExponential(Stationary):
    """``k = variance * exp(-s^2 / (2 l^2))`` (Gaussian / RBF kernel)."""

    def _kappa(self, r: FloatArray) -> FloatArray:
        return np.exp(-0.5 * r**2)

    def _dkappa_over_r(self, r: FloatArray) -> FloatArray:
        return -np.exp(-0.5 * r**2)


class Matern(Stationary):
    """Matérn kernel with smoothness ``nu`` in {0.5, 1.5, 2.5}: :func:`evroute.kernels.matern.matern` (the one
    implementation) at ``r = s / l``; its gradient factor is ``0`` at ``r = 0`` for ``nu = 1/2`` (subgradient)."""

    def __init__(self, lengthscale: float = 0.2, variance: float = 1.0, nu: float = 2.5) -> None:
        super().__init__(lengthscale, variance)
        if nu not in (0.5, 1.5, 2.5):
            raise ParameterError(f"Matern nu must be 0.5, 1.5 or 2.5, got {nu!r}")
        self.nu = float(nu)

    def _kappa(self, r: FloatArray) -> FloatArray:
        return matern(r, 1.0, self.nu)

    def _dkappa_over_r(self, r: FloatArray) -> FloatArray:
        return matern_grad_factor(r, 1.0, self.nu)

    def __repr__(self) -> str:
        return f"Matern(lengthscale={self.lengthscale}, variance={self.variance}, nu={self.nu})"


class ArmKernel(Kernel):
    """Prior covariance of ``N`` arms given as a matrix; inputs are arm indices ``(n, 1)`` (or ``(n,)``).

    Args:
        cov: ``(N, N)`` finite prior covariance (symmetrised).
    """

    def __init__(self, cov: ArrayLike) -> None:
        k = np.array(cov, dtype=float)
        if k.ndim != 2 or k.shape[0] != k.shape[1] or not np.all(np.isfinite(k)):
            raise ParameterError(f"prior_cov must be a finite square matrix, got shape {k.shape}")
        self.cov: FloatArray = 0.5 * (k + k.T)

    @property
    def n_arms(self) -> int:
        """Number of arms ``N``."""
        return int(self.cov.shape[0])

    def __call__(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """``(n, m)`` covariances between the arms ``a`` and ``b``."""
        return self.cov[np.ix_(np.asarray(a, dtype=int).reshape(-1), np.asarray(b, dtype=int).reshape(-1))]

    def diag(self, a: ArrayLike) -> FloatArray:
        """``(n,)`` prior variances of the arms ``a``."""
        return np.diag(self.cov)[np.asarray(a, dtype=int).reshape(-1)]

    def pairs(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """``(k,)`` covariances of the paired arms ``a``, ``b``."""
        return self.cov[np.asarray(a, dtype=int).reshape(-1), np.asarray(b, dtype=int).reshape(-1)]


def make_kernel(name: str, lengthscale: float = 0.2, variance: float = 1.0) -> Stationary:
    """Kernel by name: ``"se"`` (alias ``"rbf"``), ``"matern12"``, ``"matern32"``, ``"matern52"``."""
    key = name.lower()
    if key in ("se", "rbf", "gaussian"):
        return SquaredExponential(lengthscale, variance)
    nus = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}
    if key in nus:
        return Matern(lengthscale, variance, nus[key])
    raise ParameterError(f"unknown kernel {name!r}; known: se, matern12, matern32, matern52")
