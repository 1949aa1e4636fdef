"""The compiled kernels of the conjugate-gradient sampler (:mod:`evroute.kernels.cg_matern`; numba, ``cache=True``).

Each kernel is one pass over the ``(E, m)`` block arrays (``m`` right-hand sides, C order) that fuses what NumPy does
in several: the sparse product with its dot product, the solution and residual updates with the residual's norm,
the new search direction.  The iteration is memory-bound (about 0.3 s per iteration of eight columns at a million
edges with NumPy's separate passes), so fewer passes is what it gains.  Serial loops in row order: a fixed operation
order, so a seed's draw is reproducible.  Imported only when numba is installed
(:func:`evroute.kernels.cg_matern.compiled_available`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.compiled import njit_cached

__all__ = ["direction", "matdot", "step"]


@njit_cached
def matdot(indptr: Any, indices: Any, data: Any, v: Any, out: Any) -> Any:
    """``out = M v`` for the CSR matrix ``(indptr, indices, data)`` ``(E, E)`` and ``v`` ``(E, m)``; returns the
    ``(m,)`` column dot products ``v . out`` (``p^T A p``, or ``r^T M^-1 r`` with ``M^-1`` as the matrix)."""
    n, m = v.shape
    dots = np.zeros(m)
    for i in range(n):
        row = out[i]
        row[:] = 0.0
        for jj in range(indptr[i], indptr[i + 1]):
            a = data[jj]
            vj = v[indices[jj]]
            for k in range(m):
                row[k] += a * vj[k]
        vi = v[i]
        for k in range(m):
            dots[k] += vi[k] * row[k]
    return dots


@njit_cached
def step(x: Any, r: Any, p: Any, ap: Any, alpha: Any) -> Any:
    """``x += alpha p``, ``r -= alpha ap`` (all ``(E, m)``, ``alpha`` ``(m,)``, in place); returns ``(m,)``
    ``r . r`` of the new residual."""
    n, m = x.shape
    rr = np.zeros(m)
    for i in range(n):
        for k in range(m):
            x[i, k] += alpha[k] * p[i, k]
            rik = r[i, k] - alpha[k] * ap[i, k]
            r[i, k] = rik
            rr[k] += rik * rik
    return rr


@njit_cached
def direction(p: Any, z: Any, beta: Any) -> None:
    """``p = z + beta p`` in place (``(E, m)``, ``beta`` ``(m,)``)."""
    n, m = p.shape
    for i in range(n):
        for k in range(m):
            p[i, k] = z[i, k] + beta[k] * p[i, k]
