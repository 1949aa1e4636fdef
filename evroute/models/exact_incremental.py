"""Exact GP posterior updated at the cost of what the index policies read (``--model gp-exact``, ``method="auto"``).

UCB, BayesUCB and (marginal) Thompson sampling read the posterior means and marginal variances of all ``E`` edges.
One round conditions on the ``k`` observations ``y_R`` of the driven route ``R`` (sequential Bayes, exact)::

    C = Sigma[:, R],  L_R = chol(C[R] + s^2 I),  W = C L_R^-T,  mu += W L_R^-1 (y_R - mu_R),  var -= rowsum(W o W)

which costs ``E k^2`` once ``C`` is known.  ``C`` is where the time goes; :class:`IncrementalPosterior` gets it from

* a **cache of posterior covariance columns** ``Sigma[:, S]`` of recently driven edges ``S``, kept exact by the same
  rank-``k`` update every round (``E k |S|``); a column unused for ``tau = (m_0 + h) / k`` rounds is evicted (its
  upkeep since its last use then exceeds the cost of recomputing it, below);
* for an edge not in the cache (newly visited, or evicted), a **fresh column** from a *snapshot* of the posterior and
  the updates since::

      Sigma_t[:, j] = K[:, j] - K_{.U0} A0^-1 K_{U0 j} - H H[j]^T,    A0 = K_{U0 U0} + diag(s^2 / n_U0),

  where ``chol(A0)`` was factorised at the snapshot over the ``m_0`` edges ``U0`` visited then and
  ``H = [W_{t0+1}, ..., W_t]`` (``E x h``) holds the update factors since (``E (m_0 + h) + m_0^2`` per column: only
  new and evicted edges pay ``E |U|``);
* a **re-snapshot** (``chol(A)`` of the visited block from the statistics, ``|U|^3 / 3``, and the exact mean,
  ``E |U|``) when the history's extra work on fresh columns since the last one has reached that cost (the usual
  rent-or-buy rule: within 2x of the best fixed schedule), or ``H`` reaches ``history_max`` entries.

Everything is exact in exact arithmetic; :meth:`refresh` recomputes the means and variances from the per-edge
statistics (``E |U|^2``) and empties the cache and the history, bounding the round-off of the updates.  Work and
memory never involve an ``E x E`` matrix: ``K_{.U}`` (``E |U|``, from
:class:`~evroute.models.exact_posterior.LowRankPosterior`), the cache (``E |S|``) and ``H`` (``E h``).

Model units (the caller scales by ``sigma0``), NumPy float64, CPU.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import blas

from evroute.kernels.linalg import jittered_cholesky, solve_lower
from evroute.models.exact_posterior import KernelSource, LowRankPosterior

__all__ = ["IncrementalPosterior"]


class IncrementalPosterior(LowRankPosterior):
    """Exact means and marginal variances by rank-``k`` updates with cached covariance columns (module docstring).

    Args:
        kernel: the prior covariance (columns and diagonal, model units); prior_mean: ``(E,)``; noise: ``s^2``.
        history_max: most entries (``E x h``) of the update history ``H`` before a re-snapshot
            (default ``2^25``: 256 MB).
    """

    def __init__(self, kernel: KernelSource, prior_mean: np.ndarray, noise: float, history_max: int = 2**25) -> None:
        super().__init__(kernel, prior_mean, noise)
        self.history_max = int(history_max)
        self.t = 0  # rounds conditioned on
        self._hist: list[np.ndarray] = []  # W factors (E, k) since the snapshot
        self._h = 0  # columns of the history
        self._debt = 0.0  # multiply-adds fresh columns spent on the history since the snapshot
        self._cache = np.empty((self.n, 0), order="F")  # Sigma[:, S] (E, capacity); S = _cedge[:_nc]
        self._cedge = np.zeros(0, np.int64)
        self._cused = np.zeros(0, np.int64)  # round of last use
        self._cslot = np.full(self.n, -1, np.int64)
        self._nc = 0
        self.counters = {"fresh": 0, "hits": 0, "snapshots": 0, "evicted": 0}

    # ----------------------------------------------------------------------------------------- snapshot
    @property
    def m0(self) -> int:
        """Edges covered by the snapshot factor ``chol(A0)`` (a prefix of ``U``)."""
        return 0 if self._l is None else len(self._l)

    def _snapshot(self) -> None:
        """``chol(A)`` and the exact mean from the current statistics; the history restarts (the cache stays)."""
        self._factor()
        self._hist, self._h, self._debt = [], 0, 0.0
        self.counters["snapshots"] += 1

    def refresh(self, edges: np.ndarray, counts: np.ndarray, means: np.ndarray, chunk: int = 4096) -> None:
        """Exact means and variances from the statistics (``E |U|^2``); empties the cache and the history."""
        super().refresh(edges, counts, means, chunk)
        self._hist, self._h, self._debt = [], 0, 0.0
        self._cslot[self._cedge[: self._nc]] = -1
        self._nc = 0

    def _fresh(self, f: np.ndarray) -> np.ndarray:
        """``Sigma_t[:, f]`` ``(E, len(f))`` (Fortran) from the snapshot and the history (edges already in ``U``)."""
        c = self._kxu_cols(self._slot[f])
        m0 = self.m0
        if m0:
            assert self._l is not None
            z = solve_lower(self._l, solve_lower(self._l, c[self.edges[:m0]]), trans=1)
            c = self._kxu_matmul(z, m0, c=c, alpha=-1.0)
        for w in self._hist:
            c = blas.dgemm(-1.0, w, w[f], trans_b=1, beta=1.0, c=c, overwrite_c=1)
        self._debt += float(len(f)) * self.n * self._h
        self.counters["fresh"] += len(f)
        return c

    # -------------------------------------------------------------------------------------------- cache
    def _evict(self, keep: np.ndarray) -> None:
        """Drop cached columns unused for ``tau`` rounds (except ``keep``), moving the last ones into the holes."""
        k = max(len(keep), 1)
        tau = max(1.0, (self.m0 + self._h) / k)
        used = self._cused[: self._nc]
        stale = np.flatnonzero((self.t - used > tau) & ~np.isin(self._cedge[: self._nc], keep))
        for s in stale[::-1]:  # highest slot first: the last column is never a hole still to fill
            last = self._nc - 1
            e = self._cedge[s]
            self._cslot[e] = -1
            if s != last:
                self._cache[:, s] = self._cache[:, last]
                self._cedge[s], self._cused[s] = self._cedge[last], self._cused[last]
                self._cslot[self._cedge[s]] = s
            self._nc = last
        self.counters["evicted"] += len(stale)

    def _insert(self, f: np.ndarray, cols: np.ndarray) -> None:
        need = self._nc + len(f)
        if need > self._cache.shape[1]:  # grow (doubling: amortised E per column)
            cap = max(need, 2 * self._cache.shape[1], 64)
            grown = np.empty((self.n, cap), order="F")
            grown[:, : self._nc] = self._cache[:, : self._nc]
            self._cache = grown
            self._cedge = np.concatenate([self._cedge[: self._nc], np.zeros(cap - self._nc, np.int64)])
            self._cused = np.concatenate([self._cused[: self._nc], np.zeros(cap - self._nc, np.int64)])
        sl = slice(self._nc, need)
        self._cache[:, sl] = cols
        self._cedge[sl] = f
        self._cslot[f] = np.arange(self._nc, need)
        self._nc = need

    @property
    def cached(self) -> np.ndarray:
        """The edges ``S`` whose posterior covariance columns are cached."""
        return self._cedge[: self._nc].copy()

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``Sigma[:, idx]`` ``(E, k)`` (cached, else fresh; edges already in ``U``)."""
        idx = np.asarray(idx, np.int64)
        out = np.empty((self.n, len(idx)), order="F")
        hit = self._cslot[idx] >= 0
        out[:, hit] = self._cache[:, self._cslot[idx[hit]]]
        if not hit.all():
            out[:, ~hit] = self._fresh(idx[~hit])
        return out

    # ------------------------------------------------------------------------------------------- update
    def condition(self, edges: np.ndarray, y: np.ndarray) -> None:
        """Condition on ``k`` observations ``y`` ``(k,)`` of ``edges`` ``(k,)`` (repeats allowed)."""
        edges = np.asarray(edges, np.int64)
        self._add_edges(edges)
        self.t += 1
        d = np.unique(edges)
        miss = d[self._cslot[d] < 0]
        self.counters["hits"] += len(d) - len(miss)
        if len(miss):
            self._evict(d)
            self._insert(miss, self._fresh(miss))
        self._cused[self._cslot[d]] = self.t
        c = self._cache[:, self._cslot[edges]]  # (E, k) gather: Fortran, a copy
        c = np.asfortranarray(c)
        l_r = jittered_cholesky(c[edges] + self.noise * np.eye(len(edges)))
        w = blas.dtrsm(1.0, l_r, c, side=1, lower=1, trans_a=1, overwrite_b=1)  # C L_R^-T in place (E k^2)
        self.mu += w @ solve_lower(l_r, y - self.mu[edges])
        self.var -= np.einsum("ij,ij->i", w, w)
        nc = self._nc
        if nc:  # the cached columns stay exact: Sigma[:, S] -= W W[S]^T (E k |S|, in place)
            view = self._cache[:, :nc]
            out = blas.dgemm(-1.0, w, w[self._cedge[:nc]], trans_b=1, beta=1.0, c=view, overwrite_c=1)
            if not np.shares_memory(out, view):  # pragma: no cover - BLAS wrappers copy non-contiguous inputs
                self._cache[:, :nc] = out
        self._hist.append(w)
        self._h += w.shape[1]
        s = self._slot[edges]
        for si, yi in zip(s, y, strict=True):  # running means of the statistics
            self._counts[si] += 1.0
            self._means[si] += (yi - self._means[si]) / self._counts[si]
        m = len(self.edges)
        if self._debt >= m**3 / 3.0 + self.n * m or self.n * self._h > self.history_max:
            self._snapshot()
