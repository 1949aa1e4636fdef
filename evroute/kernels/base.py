"""The project's one kernel interface: :class:`Kernel`, and its GPyTorch-style composition (``*``, ``+``, ``scale``).

A :class:`Kernel` maps two sets of points to their covariance block (``__call__``), one set to its prior variances
(:meth:`Kernel.diag`) and two paired sets to the covariances of the pairs (:meth:`Kernel.pairs`).  What a *point*
is belongs to the kernel:

* edge kernels (:mod:`evroute.kernels.edge`, :mod:`evroute.kernels.arcs`) read :class:`~evroute.kernels.edge.Points`
  (edge indices and their ``(k, d)`` contexts), NumPy or torch: the routing exact GP, the SVGP, the environments;
* stationary kernels on ``(n, d)`` arrays (:mod:`evroute.kernels.stationary`: Matérn, squared exponential) and the
  arm kernel (``(n, 1)`` arm indices): the BO GP (IGP-UCB, GP-TS, GP-UCB, EI/PI);
* the spatio-temporal kernel on ``[x, t]`` rows (:class:`evroute.bo.timevarying.kernels.SpatioTemporalKernel`,
  ``k_S k_T`` scaled): BOLT, W-DBO and the other time-varying policies.

Every one of them composes with every other kernel on the same points: ``k1 * k2`` (:class:`Product`),
``k1 + k2`` (:class:`Sum`), ``k.scale(s)`` (:class:`Scaled`; ``s`` a float or a scalar tensor).  A sparse block
(SciPy, from truncated graph-kernel columns) keeps its sparsity through a product (the other factor is evaluated only
at its non-zeros through :meth:`Kernel.pairs`) and is added into the dense block of a sum.

Both exact GPs condition on a kernel through the one exact-GP core (:mod:`evroute.kernels.exact`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Array", "Kernel", "Product", "Scaled", "Sum", "take_points"]

Array = Any  # numpy.ndarray | torch.Tensor | scipy.sparse matrix


def take_points(p: Any, rows: np.ndarray) -> Any:
    """The points at positions ``rows`` ``(m,)`` of ``p`` (``p.take(rows)`` for structured points, else ``p[rows]``)."""
    take = getattr(p, "take", None)
    return take(rows) if take is not None and not isinstance(p, np.ndarray) else p[rows]


class Kernel(ABC):
    """A positive semi-definite covariance function ``k(p, q)`` on the points of its kind (see the module doc)."""

    @abstractmethod
    def __call__(self, p: Any, q: Any) -> Array:
        """``(len(p), len(q))`` covariance block."""

    @abstractmethod
    def diag(self, p: Any) -> Array:
        """``(len(p),)`` prior variances ``k(p_i, p_i)``."""

    @abstractmethod
    def pairs(self, p: Any, q: Any) -> Array:
        """``(k,)`` entries ``k(p_m, q_m)`` of paired points (``len(p) == len(q) == k``)."""

    def __mul__(self, other: Kernel) -> Product:
        return Product(self, other)

    def __add__(self, other: Kernel) -> Sum:
        return Sum(self, other)

    def scale(self, s: Any) -> Scaled:
        """``s k`` (``s`` a float or a scalar tensor)."""
        return Scaled(self, s)


class Scaled(Kernel):
    """``s k`` for a scalar ``s`` (float or tensor)."""

    def __init__(self, kernel: Kernel, s: Any) -> None:
        self.kernel, self.s = kernel, s

    def __call__(self, p: Any, q: Any) -> Array:
        v = self.kernel(p, q)
        return v * float(self.s) if sp.issparse(v) else self.s * v

    def diag(self, p: Any) -> Array:
        return self.s * self.kernel.diag(p)

    def pairs(self, p: Any, q: Any) -> Array:
        return self.s * self.kernel.pairs(p, q)


class Product(Kernel):
    """Pointwise product ``k_a k_b`` (a sparse block of ``k_a`` keeps its sparsity)."""

    def __init__(self, a: Kernel, b: Kernel) -> None:
        self.a, self.b = a, b

    def __call__(self, p: Any, q: Any) -> Array:
        va = self.a(p, q)
        if sp.issparse(va):
            c = va.tocoo()
            vals = c.data * self.b.pairs(take_points(p, c.row), take_points(q, c.col))
            return sp.coo_matrix((vals, (c.row, c.col)), shape=c.shape)
        return va * self.b(p, q)

    def diag(self, p: Any) -> Array:
        return self.a.diag(p) * self.b.diag(p)

    def pairs(self, p: Any, q: Any) -> Array:
        return self.a.pairs(p, q) * self.b.pairs(p, q)


class Sum(Kernel):
    """Sum ``k_a + k_b`` (a sparse block is added into the other, dense, one)."""

    def __init__(self, a: Kernel, b: Kernel) -> None:
        self.a, self.b = a, b

    def __call__(self, p: Any, q: Any) -> Array:
        va, vb = self.a(p, q), self.b(p, q)
        if sp.issparse(va) or sp.issparse(vb):
            dense, sparse = (vb, va) if sp.issparse(va) else (va, vb)
            out = np.asfortranarray(dense)
            c = sparse.tocoo()
            out[c.row, c.col] += c.data
            return out
        return va + vb

    def diag(self, p: Any) -> Array:
        return self.a.diag(p) + self.b.diag(p)

    def pairs(self, p: Any, q: Any) -> Array:
        return self.a.pairs(p, q) + self.b.pairs(p, q)
