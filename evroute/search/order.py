"""A cache-friendly node order of a line graph for the compiled searches (issue 39: reach and Thompson rounds).

A search touches, for every node it settles, the labels of its turns' heads.  In the order the network's edges are
stored the two ends of a turn lie far apart in memory (a median of half a million slots on the synthetic million-edge
city), so nearly every label read misses the cache.  Renaming the nodes in breadth-first order from one node puts
the heads of a node's turns a few slots from it (median 9), and Dijkstra's frontier, a ring like the breadth-first
one's, sweeps memory in long runs: the same search costs 25-30% less CPU (``docs/scale_rounds.md``).

:func:`search_order` computes the order and the relabelled CSR once per line graph (0.2-0.3 s of CPU at a
million edges on the loaded 2-core machine) and keeps them for the line graph's life (a weak reference: nothing
outlives it).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from evroute.linegraph import LineGraph

_ORDERS: weakref.WeakKeyDictionary[LineGraph, SearchOrder] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class SearchOrder:
    """A line graph's nodes renamed for locality.

    Attributes:
        perm: ``(N,)`` int64, the original node of each new name (``perm[i]`` is renamed ``i``).
        inv: ``(N,)`` int64, the new name of each original node (``inv[perm] = arange(N)``).
        indptr: ``(N + 1,)`` int64 and ``heads``: ``(C,)`` int32, the turns in the new names (sorted CSR).
    """

    perm: np.ndarray
    inv: np.ndarray
    indptr: np.ndarray
    heads: np.ndarray

    def to_original(self, dist: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels ``(N,)`` and predecessors ``(N,)`` (negative: none) of a search in the new names, in the original
        ones."""
        from evroute.search import kernels as K

        d, p = np.empty_like(dist), np.empty_like(pred)
        K.unpermute_kernel(self.perm, dist, pred, d, p)
        return d, p

    def route_costs(
        self, dist: np.ndarray, pred: np.ndarray, w: np.ndarray, h: np.ndarray, start: int, budget: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """From labels ``dist (N,)`` and predecessors ``pred (N,)`` of a search in the new names from original node
        ``start`` over the arcs ``max(w[v] + h[u] - h[v], 0)`` (``w, h (N,)`` float64 in the original names): in
        the original names, ``(cost (N,), cost <= budget (N,) bool, pred (N,))``, the node-weighted route cost
        ``w[start] + dist - h[start] + h[v]`` (:mod:`evroute.driver.paths`; numpy's numbers bit for bit, ``inf``
        where unreached) in one pass."""
        from evroute.search import kernels as K

        n = len(self.perm)
        cost, within, p = np.empty(n), np.empty(n, dtype=bool), np.empty_like(pred)
        K.reach_costs_kernel(self.perm, dist, pred, w, h, int(start), float(budget), cost, within, p)
        return cost, within, p

    def gather(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Two ``(N,)`` float node arrays in the new names."""
        from evroute.search import kernels as K

        ap, bp = np.empty(len(self.perm)), np.empty(len(self.perm))
        K.gather2_kernel(self.perm, np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), ap, bp)
        return ap, bp


def search_order(linegraph: LineGraph) -> SearchOrder:
    """The :class:`SearchOrder` of ``linegraph`` (computed on first use, then kept with it; needs numba)."""
    got = _ORDERS.get(linegraph)
    if got is None:
        got = _compute(linegraph)
        _ORDERS[linegraph] = got
    return got


def _compute(linegraph: LineGraph) -> SearchOrder:
    from evroute.search import kernels as K

    indptr, heads, _ = linegraph.arc_pattern()
    n, c = linegraph.n_nodes, len(heads)
    ip = np.ascontiguousarray(indptr, dtype=np.int64)
    hd = np.ascontiguousarray(heads, dtype=np.int32)
    perm = np.empty(n, dtype=np.int64)
    K.bfs_order_kernel(ip, hd, perm, np.zeros(n, dtype=np.uint8))
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n, dtype=np.int64)
    pindptr, pheads = np.empty(n + 1, dtype=np.int64), np.empty(c, dtype=np.int32)
    K.relabel_kernel(ip, hd, perm, inv, pindptr, pheads)
    return SearchOrder(perm, inv, pindptr, pheads)


__all__ = ["SearchOrder", "search_order"]
