"""Isotropic stationary kernels ``k(x, x') = variance * kappa(||x - x'|| / lengthscale)`` with input gradients.

The kernelized-bandits paper uses the squared-exponential kernel ``exp(-s^2 / (2 l^2))`` and the Matérn kernel with
``nu = 5/2``: ``(1 + sqrt(5) s / l + 5 s^2 / (3 l^2)) exp(-sqrt(5) s / l)``; Matérn 1/2 and 3/2 are offered as well.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError, check_positive
from evroute.kernels.matern import matern, matern_grad_factor

__all__ = ["Kernel", "Matern", "SquaredExponential", "make_kernel"]


class Kernel(ABC):
    """Isotropic stationary kernel.

    Args:
        lengthscale: ``l > 0``.
        variance: ``k(x, x) > 0`` (the papers use 1).
    """

    def __init__(self, lengthscale: float = 0.2, variance: float = 1.0) -> None:
        self.lengthscale = check_positive("lengthscale", lengthscale)
        self.variance = check_positive("variance", variance)

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

    def grad_x(self, x: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Values ``k(x, b_j)`` ``(m,)`` and gradients ``d k(x, b_j) / d x`` ``(m, d)`` at one point ``x`` ``(d,)``."""
        diff = x[None, :] - b
        r = np.sqrt(np.sum(diff**2, axis=1)) / self.lengthscale
        k = self.variance * self._kappa(r)
        g = (self.variance * self._dkappa_over_r(r) / self.lengthscale**2)[:, None] * diff
        return k, g

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lengthscale={self.lengthscale}, variance={self.variance})"


class SquaredExponential(Kernel):
    """``k = variance * exp(-s^2 / (2 l^2))`` (Gaussian / RBF kernel)."""

    def _kappa(self, r: FloatArray) -> FloatArray:
        return np.exp(-0.5 * r**2)

    def _dkappa_over_r(self, r: FloatArray) -> FloatArray:
        return -np.exp(-0.5 * r**2)


class Matern(Kernel):
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


def make_kernel(name: str, lengthscale: float = 0.2, variance: float = 1.0) -> Kernel:
    """Kernel by name: ``"se"`` (alias ``"rbf"``), ``"matern12"``, ``"matern32"``, ``"matern52"``."""
    key = name.lower()
    if key in ("se", "rbf", "gaussian"):
        return SquaredExponential(lengthscale, variance)
    nus = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}
    if key in nus:
        return Matern(lengthscale, variance, nus[key])
    raise ParameterError(f"unknown kernel {name!r}; known: se, matern12, matern32, matern52")
