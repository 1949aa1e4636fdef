"""Exact GP posterior updated at the cost of what the index policies read (``--model gp-exact``, ``method="auto"``).

UCB, BayesUCB and (marginal) Thompson sampling read the posterior means and marginal variances of all ``E`` edges.
Round ``t + 1`` conditions on the ``k`` observations ``y_R`` of the driven route ``R`` (sequential Bayes, exact)::

    C = Sigma_t[:, R],  L_R = chol(C[R] + s^2 I),  W_{t+1} = C L_R^-T,
    mu += W_{t+1} L_R^-1 (y_R - mu_R),  var -= rowsum(W_{t+1} o W_{t+1}),  Sigma_{t+1} = Sigma_t - W_{t+1} W_{t+1}^T

which costs ``E k^2`` once ``C`` is known.  ``C`` is where the time goes; :class:`IncrementalPosterior` gets it from

* a **snapshot** at round ``t0``: ``chol(A0)`` of the visited block ``A0 = K_{U0 U0} + diag(s^2 / n_U0)`` over the
  ``m_0`` edges ``U0`` visited then, and the **history** ``H = [W_{t0+1}, ..., W_t]`` (``E x h``) of the updates
  since, so that for any edge ``j``::

      Sigma_t[:, j] = K[:, j] - K_{.U0} A0^-1 K_{U0 j} - H H[j]^T        (a *fresh* column: E (m_0 + h) + m_0^2)

* a **cache of covariance columns** ``Sigma_{t_c}[:, j]`` of edges driven before, each brought up to date *lazily*
  when its edge is driven again by the updates it missed (``Sigma_t[:, j] = Sigma_{t_c}[:, j] - sum_{s > t_c} W_s
  W_s[j]^T``: ``E k`` per missed round, never more than a fresh column).  A route that repeats the previous one pays
  ``E k`` per edge; only newly visited edges (and cached ones dropped at a snapshot or for memory) pay ``E |U|``;
* a **re-snapshot** (``chol(A)`` from the statistics, ``|U|^3 / 3``, and the exact mean, ``E |U|``) once the history
  has cost fresh columns as much since the last one (``E h`` each; the rent-or-buy rule: within 2x of the best
  fixed schedule), or once ``H`` holds ``history_max`` entries.  Older update factors stay as long as a cached
  column needs them; a cached column is dropped once its catch-up would cost more than a fresh column (or the
  factors kept exceed ``history_max`` entries, oldest columns first).  The default ``history_max`` is ``2^25``
  entries (256 MB) or 1024 columns, whichever is more, as for the cache: a fixed ``2^25`` would hold fewer columns
  than one round's update on large networks (333 at ``E`` = 100k, against ``k`` = 335 route edges), so every
  cached column would be dropped after each round and every route edge would pay ``E |U|`` again.

Everything is exact in exact arithmetic; :meth:`refresh` recomputes the means and variances from the per-edge
statistics (``E |U|^2``) and empties the cache and the history, bounding the round-off of the updates.  No ``E x E``
matrix: ``K_{.U}`` (``E |U|``, kept by :class:`~evroute.models.exact_posterior.LowRankPosterior`), the cache (at most
``cache_max`` entries) and ``H``.

Model units (the caller scales by ``sigma0``), NumPy float64, CPU.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import blas

from evroute.kernels.linalg import jittered_cholesky, solve_lower
from evroute.models.exact_posterior import KernelSource, LowRankPosterior

__all__ = ["IncrementalPosterior"]


class IncrementalPosterior(LowRankPosterior):
    """Exact means and marginal variances by rank-``k`` updates with lazily updated cached covariance columns.

    Args:
        kernel: the prior covariance (columns and diagonal, model units); prior_mean: ``(E,)``; noise: ``s^2``.
        history_max: most entries (``E x h``) of the update factors kept and of the history before a re-snapshot
            (default ``None``: ``2^25`` (256 MB) or ``1024 E``, whichever is more).
        cache_max: most entries of the column cache (default ``2^25``; at least 1024 columns).
    """

    def __init__(
        self,
        kernel: KernelSource,
        prior_mean: np.ndarray,
        noise: float,
        history_max: int | None = None,
        cache_max: int = 2**25,
    ) -> None:
        super().__init__(kernel, prior_mean, noise)
        self.history_max = max(2**25, 1024 * self.n) if history_max is None else int(history_max)
        self.cache_columns = max(1024, int(cache_max) // max(self.n, 1))
        self.t = 0  # rounds conditioned on: the posterior is Sigma_t
        self._t0 = 0  # round of the snapshot
        self._hs = 0  # _hist[i] is W_{_hs + 1 + i} (_hs <= _t0: older factors kept for cached columns)
        self._hist: list[np.ndarray] = []
        self._kc: list[int] = [0]  # cumulative columns: W_{_hs + 1 .. _hs + i} have _kc[i] - _kc[0]
        self._debt = 0.0  # multiply-adds fresh columns spent on the history since the snapshot
        self._cache = np.empty((self.n, 0), order="F")  # Sigma_{t_c}[:, S], S = _cedge[:_nc]
        self._cedge = np.zeros(0, np.int64)
        self._ctime = np.zeros(0, np.int64)  # t_c of each cached column
        self._cslot = np.full(self.n, -1, np.int64)
        self._nc = 0
        # work done: columns computed fresh, found cached, caught up (per missed round), snapshots, dropped columns,
        # and the multiply-adds of the dense kernels (BLAS / LAPACK) of all of it
        self.counters = {"fresh": 0, "hits": 0, "catch_up": 0, "snapshots": 0, "dropped": 0, "madds": 0.0}
        # the multiply-adds by kind of work (they sum to "madds"): snapshots, fresh columns, catch-ups, rank-k steps
        self.madds_by = {"snapshot": 0.0, "fresh_solve": 0.0, "fresh": 0.0, "catch_up": 0.0, "step": 0.0}
        # CPU seconds by the same kinds, and of whole conditioning steps (benchmarks: the rate each kind ran at)
        self.cpu_by = {
            "snapshot": 0.0,
            "fresh_solve": 0.0,
            "fresh": 0.0,
            "catch_up": 0.0,
            "step": 0.0,
            "copies": 0.0,  # gathering / scattering covariance columns (cache, K_(.U), the route's C)
            "kernel": 0.0,  # prior kernel columns of newly visited edges
            "condition": 0.0,
        }

    def _count(self, kind: str, madds: float, cpu0: float) -> None:
        """Count ``madds`` multiply-adds of ``kind`` and the CPU time since ``cpu0`` (``time.process_time``)."""
        self.counters["madds"] += madds
        self.madds_by[kind] += madds
        self.cpu_by[kind] += time.process_time() - cpu0

    def _spent(self, kind: str, cpu0: float) -> float:
        """Add the CPU time since ``cpu0`` to ``kind`` (work without multiply-adds); returns the time now."""
        now = time.process_time()
        self.cpu_by[kind] += now - cpu0
        return now

    # ----------------------------------------------------------------------------------------- snapshot
    @property
    def m0(self) -> int:
        """Edges covered by the snapshot factor ``chol(A0)`` (a prefix of ``U``)."""
        return 0 if self._l is None else len(self._l)

    @property
    def _h(self) -> int:
        """Columns of the history since the snapshot (what a fresh column pays ``E`` each for)."""
        return self._kc[-1] - self._kc[self._t0 - self._hs]

    def _w(self, s: int) -> np.ndarray:
        return self._hist[s - self._hs - 1]

    def _snapshot(self) -> None:
        """``chol(A)`` and the exact mean from the statistics; the history restarts for fresh columns."""
        cpu0 = time.process_time()
        self._factor()
        self._t0, self._debt = self.t, 0.0
        m = len(self.edges)
        self.counters["snapshots"] += 1
        self._count("snapshot", m**3 / 3.0 + 2.0 * m * m + self.n * m, cpu0)

    def _trim(self) -> None:
        """Drop cached columns whose catch-up would cost more than a fresh column (or over ``history_max``), then
        the history factors no cached column and no fresh column needs."""
        nc = self._nc
        lag = self._kc[-1] - np.asarray(self._kc)[self._ctime[:nc] - self._hs]  # columns of W each would apply
        stale = (lag > self.m0 + self._h) | (lag > self.history_max // self.n)  # fresh is cheaper | memory
        self._drop(np.flatnonzero(stale))
        oldest = min(self._t0, int(self._ctime[: self._nc].min()) if self._nc else self._t0)
        cut = oldest - self._hs
        if cut > 0:
            del self._hist[:cut]
            del self._kc[:cut]
            self._hs = oldest

    def refresh(self, edges: np.ndarray, counts: np.ndarray, means: np.ndarray, chunk: int = 4096) -> None:
        """Exact means and variances from the statistics (``E |U|^2``); empties the cache and the history."""
        super().refresh(edges, counts, means, chunk)
        self._t0 = self._hs = self.t
        self._hist, self._kc, self._debt = [], [0], 0.0
        self._cslot[self._cedge[: self._nc]] = -1
        self._nc = 0

    def _fresh(self, f: np.ndarray) -> np.ndarray:
        """``Sigma_t[:, f]`` ``(E, len(f))`` (Fortran) from the snapshot and the history (edges already in ``U``)."""
        cpu0 = time.process_time()
        c = self._kxu_cols(self._slot[f])
        cpu0 = self._spent("copies", cpu0)
        m0 = self.m0
        if m0:
            assert self._l is not None
            z = solve_lower(self._l, solve_lower(self._l, c[self.edges[:m0]]), trans=1)
            self._count("fresh_solve", float(len(f)) * m0 * m0, cpu0)  # two triangular solves, m0^2 / 2 each
            cpu0 = time.process_time()
            c = self._kxu_matmul(z, m0, c=c, alpha=-1.0)
        for s in range(self._t0 + 1, self.t + 1):
            w = self._w(s)
            c = blas.dgemm(-1.0, w, w[f], trans_b=1, beta=1.0, c=c, overwrite_c=1)
        self._debt += float(len(f)) * self.n * self._h
        self.counters["fresh"] += len(f)
        self._count("fresh", float(len(f)) * self.n * (m0 + self._h), cpu0)
        return c

    # -------------------------------------------------------------------------------------------- cache
    def _catch_up(self, slots: np.ndarray) -> None:
        """Bring the cached columns at ``slots`` to ``Sigma_t`` (the updates each missed, oldest first).

        The columns are gathered once, oldest first, so that the columns ``W_s`` applies to (those cached before
        round ``s``) are a prefix of the gathered block: each ``W_s`` is one ``dgemm`` into that prefix in place,
        and the block is written back once.  Each column gets the same updates, in the same order and by the same
        ``dgemm`` shapes along ``k``, as when it is updated alone."""
        if not len(slots):
            return
        cpu0 = time.process_time()
        times = self._ctime[slots]
        order = np.argsort(times, kind="stable")
        slots, times = slots[order], times[order]
        edges = self._cedge[slots]
        sub = np.asfortranarray(self._cache[:, slots])
        cpu0 = self._spent("copies", cpu0)
        for s in range(int(times[0]) + 1, self.t + 1):  # W_s applies to columns older than s: a prefix of sub
            p = int(np.searchsorted(times, s))
            w = self._w(s)
            out = blas.dgemm(-1.0, w, w[edges[:p]], trans_b=1, beta=1.0, c=sub[:, :p], overwrite_c=1)
            if not np.shares_memory(out, sub):  # (never: an F-contiguous prefix is updated in place)
                sub[:, :p] = out
            self.counters["catch_up"] += p
            self._count("catch_up", float(p) * self.n * w.shape[1], cpu0)
            cpu0 = time.process_time()
        self._cache[:, slots] = sub
        self._ctime[slots] = self.t
        self._spent("copies", cpu0)

    def _drop(self, slots: np.ndarray) -> None:
        """Remove the cached columns at ``slots``, moving the last ones into the holes."""
        for s in np.sort(slots)[::-1]:  # highest slot first: the last column is never a hole still to fill
            last = self._nc - 1
            self._cslot[self._cedge[s]] = -1
            if s != last:
                self._cache[:, s] = self._cache[:, last]
                self._cedge[s], self._ctime[s] = self._cedge[last], self._ctime[last]
                self._cslot[self._cedge[s]] = s
            self._nc = last
        self.counters["dropped"] += len(slots)

    def _insert(self, f: np.ndarray, cols: np.ndarray) -> None:
        cpu0 = time.process_time()
        over = self._nc + len(f) - self.cache_columns
        if over > 0:  # memory: drop the least recently used columns not needed now
            lru = np.argsort(self._ctime[: self._nc], kind="stable")
            self._drop(lru[~np.isin(self._cedge[lru], f)][:over])
        need = self._nc + len(f)
        if need > self._cache.shape[1]:  # grow (doubling: amortised E per column)
            cap = max(need, 2 * self._cache.shape[1], 64)
            grown = np.empty((self.n, cap), order="F")
            grown[:, : self._nc] = self._cache[:, : self._nc]
            self._cache = grown
            self._cedge = np.concatenate([self._cedge[: self._nc], np.zeros(cap - self._nc, np.int64)])
            self._ctime = np.concatenate([self._ctime[: self._nc], np.zeros(cap - self._nc, np.int64)])
        sl = slice(self._nc, need)
        self._cache[:, sl] = cols
        self._cedge[sl] = f
        self._ctime[sl] = self.t
        self._cslot[f] = np.arange(self._nc, need)
        self._nc = need
        self._spent("copies", cpu0)

    def _ensure_current(self, d: np.ndarray) -> None:
        """Cached, up-to-date columns ``Sigma_t[:, d]`` for distinct edges ``d`` already in ``U``."""
        slots = self._cslot[d]
        hit = slots >= 0
        self.counters["hits"] += int(hit.sum())
        self._catch_up(slots[hit])
        miss = d[~hit]
        if len(miss):
            self._insert(miss, self._fresh(miss))

    @property
    def cached(self) -> np.ndarray:
        """The edges whose covariance columns are cached (each as of its own round, see :meth:`columns`)."""
        return self._cedge[: self._nc].copy()

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``Sigma_t[:, idx]`` ``(E, k)`` (edges already in ``U``; cached ones brought up to date)."""
        idx = np.asarray(idx, np.int64)
        self._ensure_current(np.unique(idx))
        cpu0 = time.process_time()
        out = np.asfortranarray(self._cache[:, self._cslot[idx]])
        self._spent("copies", cpu0)
        return out

    # ------------------------------------------------------------------------------------------- update
    def condition(self, edges: np.ndarray, y: np.ndarray) -> None:
        """Condition on ``k`` observations ``y`` ``(k,)`` of ``edges`` ``(k,)`` (repeats allowed)."""
        cpu_in = time.process_time()
        edges = np.asarray(edges, np.int64)
        self._add_edges(edges)
        self._spent("kernel", cpu_in)
        c = self.columns(edges)  # (E, k) = Sigma_t[:, R], Fortran (a copy)
        cpu0 = time.process_time()
        l_r = jittered_cholesky(c[edges] + self.noise * np.eye(len(edges)))
        w = blas.dtrsm(1.0, l_r, c, side=1, lower=1, trans_a=1, overwrite_b=1)  # C L_R^-T in place (E k^2)
        self.mu += w @ solve_lower(l_r, y - self.mu[edges])
        self.var -= np.einsum("ij,ij->i", w, w)
        k = w.shape[1]
        self._count("step", self.n * (k * k / 2.0 + 2.0 * k) + k**3 / 3.0, cpu0)
        self._hist.append(w)
        self._kc.append(self._kc[-1] + k)
        self.t += 1
        s = self._slot[edges]
        for si, yi in zip(s, y, strict=True):  # running means of the statistics
            self._counts[si] += 1.0
            self._means[si] += (yi - self._means[si]) / self._counts[si]
        m = len(self.edges)
        if self._debt >= m**3 / 3.0 + self.n * m or self.n * self._h > self.history_max:
            self._snapshot()
        self._trim()
        self.cpu_by["condition"] += time.process_time() - cpu_in
