"""Graph Matérn kernel columns from local solves with an a-posteriori error bound (:class:`LocalGraphMatern`), for
line graphs too large for a global factorisation; the global backends are in :mod:`evroute.kernels.graph_matern`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from cholespy import CholeskySolverD, MatrixType

from evroute.errors import ParameterError, check_positive


class LocalGraphMatern:
    """Graph Matérn columns and prior variances from *local* solves, with an a-posteriori error bound.

    ``K = c A^-nu`` (integer ``nu``, ``A = 2 nu / kappa^2 I + Delta``) decays geometrically with line-graph hops, so a
    column ``A^-nu e_i`` is computed on the ``h``-hop neighbourhood ``S`` of ``i`` only: ``x_j = A_SS^-1 x_{j-1}``,
    ``x_0 = e_i`` (zero outside ``S``; one sparse Cholesky factor of ``A_SS`` serves a whole batch of columns, ``S``
    being the union of their neighbourhoods).  **Bound.**  ``A`` is an M-matrix with row sums ``s = 2 nu / kappa^2``
    (``Delta`` is a Laplacian: ``Delta 1 = 0``), so ``A^-1 >= 0`` and ``||A^-1||_inf = 1 / s``; and
    ``lambda_min(A) >= s``, so ``||A^-1||_2 <= 1 / s``.  The truncated ``x_j`` satisfies ``A x_j = x_{j-1} + r_j``
    with the residual ``r_j = A_BS x_j`` on the outer boundary layer ``B`` of ``S``, hence, entry-wise::

        |A^-nu e_i - x_nu| <= e_nu,   e_j = (e_{j-1} + ||r_j||_inf) / s,   e_0 = 0

    (``c e_nu`` in kernel units).  The neighbourhood grows until ``c e_nu <= tol / 2``; entries below ``tol / 2``
    are dropped (so every entry of a returned column is within ``tol`` of the exact kernel, and the columns are
    sparse).  Prior variances use one solve: ``(A^-2)_ii = ||A^-1 e_i||^2`` (``nu = 2``; for other ``nu`` the
    ``i``-th entry of the column), with ``||x - x_1||_2 <= ||r_1||_2 / s``, grown until the relative error of every
    variance is ``<= tol``; the normaliser ``c`` is the mean of these variances (the dense kernel's normalisation,
    exact to ``tol``).  No global factorisation and no ``E x E`` matrix.

    Args:
        laplacian: ``(E, E)`` line-graph Laplacian; nu: integer smoothness; kappa: lengthscale.
        tol: entry-wise error of the columns in units of the average prior variance, and relative error of the
            prior variances.
        hops: initial neighbourhood radius (grown by half per column until the bound holds).
        block: columns per local solve when computing all prior variances.
        chunk: consecutive columns per local solve in :meth:`sparse_columns`.
    """

    def __init__(
        self,
        laplacian: sp.spmatrix,
        nu: float = 2.0,
        kappa: float = 1.0,
        *,
        tol: float = 1e-6,
        hops: int = 12,
        block: int = 256,
        chunk: int = 16,
        normalise: bool = True,
    ) -> None:
        self.nu, self.kappa = check_positive("nu", nu), check_positive("kappa", kappa)
        if float(nu) != int(nu):
            raise ParameterError(f"local graph Matérn columns need an integer nu, got {nu}")
        self.tol, self.hops, self.chunk = check_positive("tol", tol), max(1, int(hops)), max(1, int(chunk))
        lap = sp.csr_matrix(laplacian, dtype=np.float64)
        self.n = lap.shape[0]
        self.shift = 2.0 * self.nu / self.kappa**2
        self.a = (lap + self.shift * sp.identity(self.n, format="csr")).tocsr()
        self._mark = np.zeros(self.n, dtype=bool)
        self._pos = np.full(self.n, -1, dtype=np.int64)
        self.scale = 1.0
        raw, self.n_solves = self._raw_diag(block)
        if normalise:
            self.scale = 1.0 / float(np.mean(raw))
        self._diag = self.scale * raw

    # ---------------------------------------------------------------------------------------------- local solves
    def _gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR entries of ``A[rows]``: ``(row position, column, value)`` (plain index arithmetic, no SciPy slicing)."""
        start, stop = self.a.indptr[rows], self.a.indptr[rows + 1]
        lens = stop - start
        flat = np.repeat(start - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))
        return np.repeat(np.arange(len(rows)), lens), self.a.indices[flat], self.a.data[flat]

    def _ball(self, seeds: np.ndarray, hops: int) -> tuple[np.ndarray, np.ndarray]:
        """``(S, B)``: the nodes within ``hops`` of ``seeds`` (sorted) and the outer boundary layer of ``S``."""
        mark = self._mark
        front = np.unique(seeds)
        mark[front] = True
        parts = [front]
        for _ in range(hops + 1):
            nb = self._gather(front)[1]
            front = np.unique(nb[~mark[nb]])
            if not len(front):
                break
            mark[front] = True
            parts.append(front)
        mark[np.concatenate(parts)] = False
        layer = parts.pop() if len(parts) > hops + 1 else np.zeros(0, np.int64)
        return np.sort(np.concatenate(parts)), layer

    def _solve(self, cols: np.ndarray, hops: int, powers: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """Local solves of ``A^-j e_i`` (``j = 1..powers``) on the ``hops``-neighbourhood of ``cols``.

        Returns ``(S, [X_1 .. X_powers] each (|S|, k), R (powers, k, 2))``: the residual norms (inf, 2) per power.
        """
        s_nodes, layer = self._ball(cols, hops)
        pos = self._pos
        pos[s_nodes] = np.arange(len(s_nodes))
        r, c, v = self._gather(s_nodes)
        keep = pos[c] >= 0
        chol = CholeskySolverD(  # A_SS is SPD (a principal block of A); cholespy: 2.3x less CPU than SuperLU's LU
            len(s_nodes), pos[c[keep]].astype(np.int32), r[keep].astype(np.int32), v[keep], MatrixType.COO
        )
        x = np.zeros((len(s_nodes), len(cols)))
        x[pos[cols], np.arange(len(cols))] = 1.0
        a_bs = None
        if len(layer):
            r, c, v = self._gather(layer)
            keep = pos[c] >= 0
            a_bs = sp.csr_matrix((v[keep], (r[keep], pos[c[keep]])), shape=(len(layer), len(s_nodes)))
        pos[s_nodes] = -1
        out, res = [], np.zeros((powers, len(cols), 2))
        for j in range(powers):
            b, x = x, np.zeros_like(x)
            chol.solve(b, x)
            out.append(x)
            if a_bs is not None:
                rx = np.abs(a_bs @ x)
                res[j, :, 0], res[j, :, 1] = rx.max(axis=0), np.sqrt(np.einsum("ij,ij->j", rx, rx))
        return s_nodes, out, res

    def _blocks(self, size: int) -> list[np.ndarray]:
        """All nodes in compact blocks of about ``size`` (breadth-first growth over unassigned nodes)."""
        free = np.ones(self.n, dtype=bool)
        blocks = []
        for seed in range(self.n):
            if not free[seed]:
                continue
            got, front, seen = [np.array([seed])], np.array([seed]), {seed}
            free[seed] = False
            count = 1
            while count < size and len(front):
                nb = np.unique(self._gather(front)[1])
                nb = nb[[v not in seen for v in nb.tolist()]]
                seen.update(nb.tolist())
                take = nb[free[nb]][: size - count]
                free[take] = False
                got.append(take)
                count += len(take)
                front = nb
            blocks.append(np.concatenate(got))
        return blocks

    def _raw_diag(self, block: int) -> tuple[np.ndarray, int]:
        """Unnormalised prior variances ``(A^-nu)_ii`` to relative error ``tol``, and the number of local solves."""
        nu = int(self.nu)
        out = np.empty(self.n)
        todo = [(b, self.hops) for b in self._blocks(block)]
        n_solves = 0
        while todo:
            cols, hops = todo.pop()
            n_solves += 1
            s_nodes, xs, res = self._solve(cols, hops, 1 if nu == 2 else nu)
            pos = np.searchsorted(s_nodes, cols)
            if nu == 2:  # ||A^-1 e_i||^2, error from the 2-norm residual bound
                x = xs[0]
                val = np.einsum("ij,ij->j", x, x)
                d2 = res[0, :, 1] / self.shift
                err = d2 * (2.0 * np.sqrt(val) + d2)
            else:
                val = xs[-1][pos, np.arange(len(cols))]
                err = self._inf_bound(res)
            out[cols] = val
            bad = err > self.tol * val
            if bad.any():
                todo.append((cols[bad], hops + max(2, hops // 2)))
        return out, n_solves

    def _inf_bound(self, res: np.ndarray) -> np.ndarray:
        e = np.zeros(res.shape[1])
        for j in range(res.shape[0]):
            e = (e + res[j, :, 0]) / self.shift
        return e

    # ------------------------------------------------------------------------------------------------- public
    def diag(self) -> np.ndarray:
        """``(E,)`` prior variances (relative error ``<= tol``)."""
        return self._diag.copy()

    def sparse_columns(self, idx: np.ndarray) -> tuple[sp.csc_matrix, np.ndarray]:
        """``(E, k)`` sparse columns ``K[:, idx]`` (entry-wise error ``<= tol``) and ``(k,)`` truncation bounds."""
        idx = np.asarray(idx, dtype=np.int64)
        cols: list[sp.csc_matrix | None] = [None] * len(idx)
        bound = np.zeros(len(idx))
        # chunks of consecutive columns (route order: neighbours) share one local solve; a union of the
        # neighbourhoods of scattered columns would make every right-hand side as long as the union
        if not len(idx):
            return sp.csc_matrix((self.n, 0)), np.zeros(0)
        todo = [(c, self.hops) for c in np.array_split(np.arange(len(idx)), -(-len(idx) // self.chunk))]
        while todo:
            sel, hops = todo.pop()
            s_nodes, xs, res = self._solve(idx[sel], hops, int(self.nu))
            e = self.scale * self._inf_bound(res)
            ok = e <= 0.5 * self.tol
            x = self.scale * xs[-1][:, ok]
            x[x < 0.5 * self.tol] = 0.0  # A^-nu >= 0 (M-matrix): dropping small entries only lowers them
            block = sp.csc_matrix(x)
            rows = s_nodes[block.indices]
            for j, c in enumerate(np.flatnonzero(ok)):
                lo, hi = block.indptr[j], block.indptr[j + 1]
                cols[sel[c]] = sp.csc_matrix((block.data[lo:hi], rows[lo:hi], [0, hi - lo]), shape=(self.n, 1))
                bound[sel[c]] = e[c]
            if not ok.all():
                todo.append((sel[~ok], hops + max(2, hops // 2)))
        return sp.hstack(cols, format="csc"), bound

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``(E, k)`` dense columns ``K[:, idx]`` (entry-wise error ``<= tol``)."""
        return self.sparse_columns(idx)[0].toarray()
