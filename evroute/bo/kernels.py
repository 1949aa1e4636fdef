"""Deprecated location of the BO kernels: they are defined once in :mod:`evroute.kernels.stationary` (on the
project's one kernel interface, :class:`evroute.kernels.base.Kernel`); this module re-exports them for one release.

``Kernel`` here is the isotropic stationary base class, :class:`evroute.kernels.stationary.Stationary`.
"""

from __future__ import annotations

from evroute.kernels.stationary import ArmKernel, Matern, SquaredExponential, Stationary, make_kernel

#: deprecated alias of :class:`evroute.kernels.stationary.Stationary`
Kernel = Stationary

__all__ = ["ArmKernel", "Kernel", "Matern", "SquaredExponential", "Stationary", "make_kernel"]
