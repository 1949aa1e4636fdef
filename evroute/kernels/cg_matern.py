"""Graph Matérn draws without a factorization: preconditioned conjugate gradients, for even integer ``nu``.

``K = A^-nu`` with the SPD precision root ``A = 2 nu / kappa^2 I + Delta`` (as in
:mod:`evroute.kernels.sparse_cholesky`).  For even ``nu`` a draw is ``A^-(nu/2) z``, ``z ~ N(0, I)``.  The sparse
Cholesky factor of ``A`` on a million-edge line graph costs minutes and gigabytes (its fill-in grows faster than the
graph), while ``A`` itself is well conditioned: its spectrum lies in ``[2 nu / kappa^2, 2 nu / kappa^2 + g]`` with
``g`` the Gershgorin bound of the Laplacian (at most twice its largest diagonal entry), so a few dozen preconditioned
conjugate-gradient iterations solve it.  Memory is ``O(nnz(A) + E m)`` for ``m`` right-hand sides at a time (five
``(E, m)`` arrays); time ``O(iterations nnz(A) m)``.

Preconditioners (``precond``):

* ``"jacobi"``: the diagonal of ``A``.
* ``"block"``: block Jacobi on the clusters of strongly coupled edges (:func:`strong_block_inverse`): nodes ``i, j``
  are strongly coupled when ``|a_ij| >= theta sqrt(a_ii a_jj)`` (the "symmetric strength of connection" with which
  smoothed-aggregation multigrid forms its aggregates); each connected cluster's block of ``A`` is inverted exactly
  (dense, the clusters are small), every other node keeps ``1 / a_ii``.  Short edges (motorway ramps, junction stubs)
  carry turn weights ``mean_length / length`` two orders of magnitude above the rest, so a few groups of nodes are
  coupled far more tightly to each other than to the graph; their near-constant modes are the small eigenvalues of
  the Jacobi-scaled ``A``, and the block solve removes them.  On the 1,015,190-edge synthetic country (diagonal up to
  1,378) eight columns to ``rtol = 1e-5`` take 19 iterations instead of Jacobi's 45 at the default ``theta``
  (0.25: 18, 0.4: 21), for 0.5-1.6 s of set-up (the strength test on every entry and the batched inverses of the
  189k nodes in clusters, at most 16 nodes each); ``tests/test_cg_matern.py`` checks the count falls on a small
  country.  ``M^-1`` is block diagonal with SPD blocks (principal sub-matrices of SPD ``A``), so it is SPD and the
  iteration is ordinary preconditioned CG; applying it is one sparse product with about ``1.4 E`` non-zeros.

Passes: each iteration is a product with ``A`` (and its dot product), the solution and residual updates, a product
with ``M^-1`` (and its dot product) and the new direction.  ``compiled=True`` runs each as one fused pass
(:mod:`evroute.kernels.cg_compiled`, numba; 180 ms per iteration of eight columns at a million edges against NumPy's
306 ms in the same process, the same iterates); without numba, NumPy's.

Tried for the same solve and not adopted (one process, CPU seconds, 8 columns, ``rtol = 1e-5``, 1M-edge country):
PyAMG's smoothed aggregation as the whole solver, 10.8 s of set-up and 3.4 s per column (5 iterations); its plain
aggregation, 0.5 s of set-up and 2.3 s per column (6 iterations, 0.29 s per V-cycle of one column): eight columns
cost more than this block-Jacobi CG does for all eight together, because its cycles run column by column.  Float32
search directions in the compiled product: 124 ms against 107 ms per product (the conversions cost more than the
halved gathers).  Reverse Cuthill-McKee ordering: 1.2 s to compute and permute, for about 25 ms per product.

Accuracy (stated, tested): whatever the preconditioner, every solve stops when each column's residual satisfies
``||A x - b|| <= rtol ||b||`` (the recurrence's residual ``r = b - A x``), so the relative error of each solve is at
most ``rtol cond(A)`` (:attr:`CGMaternSampler.cond_bound`), and of the draw (``nu / 2`` solves) at most
``(nu / 2) rtol cond(A)`` to first order.  The result depends only on the inputs (fixed operation order, no threads),
so a seed's draw is reproducible.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from typing import Protocol

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = ["BLOCK_THETA", "CGMaternSampler", "compiled_available", "strong_block_inverse"]

#: strength-of-connection threshold of the ``"block"`` preconditioner (module doc)
BLOCK_THETA = 0.3
#: rows per chunk of the strength test in :func:`strong_block_inverse` (its temporaries stay a few MB)
_STRENGTH_ROWS = 1 << 16
#: clusters larger than this keep the Jacobi diagonal (dense inverses stay small; none reach it on the country)
BLOCK_MAX_SIZE = 64


def compiled_available() -> bool:
    """Whether the compiled kernels (:mod:`evroute.kernels.cg_compiled`) can run: numba is installed."""
    return importlib.util.find_spec("numba") is not None


class _Ops(Protocol):
    """The three passes of one iteration (:mod:`evroute.kernels.cg_compiled` documents each)."""

    def matdot(self, mat: sp.csr_matrix, v: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def step(self, x: np.ndarray, r: np.ndarray, p: np.ndarray, ap: np.ndarray, alpha: np.ndarray) -> np.ndarray: ...

    def direction(self, p: np.ndarray, z: np.ndarray, beta: np.ndarray) -> None: ...


class _NumpyOps:
    """The passes by NumPy and SciPy (several passes each; ``out`` of :meth:`matdot` is not used)."""

    @staticmethod
    def matdot(mat: sp.csr_matrix, v: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mat v, v . mat v)``: ``(E, m)`` and ``(m,)``."""
        mv = mat @ v
        return mv, np.einsum("ij,ij->j", v, mv)

    @staticmethod
    def step(x: np.ndarray, r: np.ndarray, p: np.ndarray, ap: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """``x += alpha p``, ``r -= alpha ap`` in place (``ap`` is overwritten); the new ``r . r`` ``(m,)``."""
        r -= np.multiply(ap, alpha, out=ap)
        x += np.multiply(p, alpha, out=ap)
        return np.einsum("ij,ij->j", r, r)

    @staticmethod
    def direction(p: np.ndarray, z: np.ndarray, beta: np.ndarray) -> None:
        """``p = z + beta p`` in place."""
        p *= beta
        p += z


class _CompiledOps:
    """The passes by the fused kernels of :mod:`evroute.kernels.cg_compiled` (one pass each)."""

    def __init__(self) -> None:
        from evroute.kernels import cg_compiled

        self._k = cg_compiled

    def matdot(self, mat: sp.csr_matrix, v: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return out, self._k.matdot(mat.indptr, mat.indices, mat.data, v, out)

    def step(self, x: np.ndarray, r: np.ndarray, p: np.ndarray, ap: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        return self._k.step(x, r, p, ap, alpha)

    def direction(self, p: np.ndarray, z: np.ndarray, beta: np.ndarray) -> None:
        self._k.direction(p, z, beta)


_NUMPY_OPS: _Ops = _NumpyOps()


@functools.cache
def _compiled_ops() -> _Ops:
    """The compiled passes (imports numba on first use)."""
    return _CompiledOps()


def strong_block_inverse(a: sp.csr_matrix, theta: float = BLOCK_THETA) -> sp.csr_matrix:
    """``(E, E)`` block-diagonal ``M^-1`` of SPD ``a`` (CSR, ``(E, E)``): the exact inverse of ``a``'s block on each
    cluster of strongly coupled nodes (``|a_ij| >= theta sqrt(a_ii a_jj)``, connected components; at most
    :data:`BLOCK_MAX_SIZE` nodes, larger ones are left as single nodes) and ``1 / a_ii`` on every other node."""
    n = a.shape[0]
    d = a.diagonal()
    isd = 1.0 / np.sqrt(d)
    strong_rows, strong_cols = [], []
    for lo in range(0, n, _STRENGTH_ROWS):  # row chunks: no (nnz,) temporaries
        hi = min(lo + _STRENGTH_ROWS, n)
        part = slice(a.indptr[lo], a.indptr[hi])
        row = np.repeat(np.arange(lo, hi, dtype=a.indices.dtype), np.diff(a.indptr[lo : hi + 1]))
        col = a.indices[part]
        scaled = np.abs(a.data[part]) * isd[col]
        scaled *= isd[row]  # |a_ij| / sqrt(a_ii a_jj)
        strong = (scaled >= theta) & (row != col)
        strong_rows.append(row[strong])
        strong_cols.append(col[strong])
    rows_s, cols_s = np.concatenate(strong_rows), np.concatenate(strong_cols)
    pairs = sp.csr_matrix((np.ones(len(rows_s), dtype=np.int8), (rows_s, cols_s)), shape=(n, n))
    _, label = connected_components(pairs, directed=False)
    size = np.bincount(label)
    blocked = (size[label] > 1) & (size[label] <= BLOCK_MAX_SIZE)
    rows, cols, vals = [np.flatnonzero(~blocked)], [np.flatnonzero(~blocked)], [1.0 / d[~blocked]]
    order = np.flatnonzero(blocked)
    order = order[np.argsort(label[order], kind="stable")]  # the blocked nodes, cluster by cluster
    pos = np.zeros(n, dtype=np.int64)  # each blocked node's place in its cluster
    starts = np.flatnonzero(np.r_[True, label[order][1:] != label[order][:-1]])
    pos[order] = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    sub = a[order].tocoo()  # the blocked nodes' rows
    row, col, val = order[sub.row], sub.col, sub.data
    inside = label[row] == label[col]  # the entries of the clusters' blocks
    row, col, val = row[inside], col[inside], val[inside]
    entry_size, order_size = size[label[row]], size[label[order]]
    slot = np.empty(len(size), dtype=np.int64)  # each cluster's place among the clusters of its size
    for s in np.unique(order_size):
        members = order[order_size == s].reshape(-1, s)  # (k, s) nodes of the clusters of size s
        slot[label[members[:, 0]]] = np.arange(len(members))
        here = entry_size == s
        blocks = np.zeros((len(members), s, s))
        blocks[slot[label[row[here]]], pos[row[here]], pos[col[here]]] = val[here]
        inv = np.linalg.inv(blocks)  # (k, s, s)
        rows.append(np.repeat(members, s, axis=1).ravel())
        cols.append(np.tile(members, (1, s)).ravel())
        vals.append(inv.ravel())
    m = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    m.sort_indices()
    return m


class CGMaternSampler:
    """Draws from the unnormalised graph Matérn ``N(0, A^-nu)`` for an even integer ``nu`` by conjugate gradients.

    Args:
        laplacian: ``(E, E)`` sparse symmetric PSD line-graph Laplacian.
        nu: smoothness, an even integer ``>= 2``.
        kappa: lengthscale ``> 0``.
        rtol: relative residual at which each solve stops (module docstring: the draw's error bound).
        max_iter: iteration cap (``RuntimeError`` if a column has not converged by then).
        precond: ``"jacobi"`` or ``"block"`` (module docstring).
        theta: strength threshold of ``"block"``.
        compiled: iterate with the fused numba kernels (:mod:`evroute.kernels.cg_compiled`) when numba is installed
            (:attr:`compiled` says whether it is), else NumPy's operations (the same iterates to rounding).
    """

    def __init__(
        self,
        laplacian: sp.spmatrix,
        nu: float,
        kappa: float,
        rtol: float = 1e-8,
        max_iter: int = 1000,
        *,
        precond: str = "jacobi",
        theta: float = BLOCK_THETA,
        compiled: bool = False,
    ) -> None:
        if not float(nu).is_integer() or int(nu) % 2 or nu < 2:
            raise ValueError(f"CGMaternSampler needs an even integer nu >= 2, got {nu}")
        if precond not in ("jacobi", "block"):
            raise ValueError(f"unknown preconditioner {precond!r} (use jacobi or block)")
        self.power = int(nu) // 2
        self.rtol, self.max_iter = float(rtol), int(max_iter)
        lap = sp.csr_matrix(laplacian, dtype=np.float64)
        self.n = lap.shape[0]
        shift = 2.0 * nu / kappa**2
        self._a = (lap + shift * sp.identity(self.n, format="csr")).tocsr()
        #: ``M^-1`` (CSR): the preconditioner's inverse (Jacobi: ``1 / a_ii`` on the diagonal)
        self._minv = (
            strong_block_inverse(self._a, theta) if precond == "block" else sp.diags(1.0 / self._a.diagonal()).tocsr()
        )
        self.compiled = bool(compiled) and compiled_available()
        # Gershgorin: a Laplacian's off-diagonal entries of a row sum in absolute value to at most its diagonal entry
        # (D - W, or B B^T with two entries per column of B), so every eigenvalue is below twice the largest diagonal
        gersh = 2.0 * float(lap.diagonal().max()) if lap.nnz else 0.0
        #: upper bound of ``cond(A)``: (shift + Gershgorin bound of the Laplacian) / shift
        self.cond_bound = (shift + gersh) / shift
        #: iterations of the last :meth:`solve`
        self.iterations = 0

    def solve(self, b: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``(E, m)`` right-hand sides ``b`` -> ``A^-1 b`` (float64), each column to :attr:`rtol` (module doc).

        Five ``(E, m)`` float64 arrays at a time (``overwrite=True``: ``b`` itself, float64 C-contiguous, becomes the
        residual, one array fewer; NumPy's products allocate a sixth while they run)."""
        ops = _compiled_ops() if self.compiled else _NUMPY_OPS
        b = np.asarray(b, dtype=np.float64)
        stop = self.rtol**2 * np.einsum("ij,ij->j", b, b)
        r = b if overwrite and b.flags.c_contiguous else np.array(b, order="C")
        del b
        x = np.zeros_like(r)
        z, rz = ops.matdot(self._minv, r, np.empty_like(r))  # the preconditioned residual and r . z
        p, ap = z.copy(), np.empty_like(r)
        for k in range(1, self.max_iter + 1):
            ap, pap = ops.matdot(self._a, p, ap)
            rr = ops.step(x, r, p, ap, rz / pap)
            if np.all(rr <= stop):
                self.iterations = k
                return x
            z, rz_new = ops.matdot(self._minv, r, z)
            ops.direction(p, z, rz_new / rz)
            rz = rz_new
        raise RuntimeError(f"conjugate gradients did not reach rtol {self.rtol:g} in {self.max_iter} iterations")

    def colour(self, z: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``(E, m)`` standard normals ``z`` -> ``A^-(nu/2) z``, draws from ``N(0, A^-nu)`` (float64); ``overwrite``:
        ``z`` may be used as scratch space."""
        out = np.asarray(z, dtype=np.float64)
        for k in range(self.power):
            out = self.solve(out, overwrite=overwrite or k > 0)
        return out

    def sample_blocks(self, n_samples: int, block: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Successive ``(E, <= block)`` draws, each block's normals drawn from ``rng`` just before its solves."""
        for j in range(0, n_samples, block):
            yield self.colour(rng.standard_normal((self.n, min(block, n_samples - j))), overwrite=True)
