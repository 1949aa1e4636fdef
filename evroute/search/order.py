"""Cache-friendly node orders of a line graph for the compiled searches (issue 39: reach and Thompson rounds).

A search touches, for every node it settles, the labels of its turns' heads.  In the order the network's edges are
stored the two ends of a turn lie far apart in memory (a median of half a million slots on the synthetic million-edge
city), so nearly every label read misses the cache.  Two orders put them close:

* ``"bfs"`` (the default): breadth-first from node 0.  The heads of a node's turns lie one breadth-first ring further
  (a median of 1,449 slots on the million-edge city, 3,468 on the country), and Dijkstra's frontier, a ring like the
  breadth-first one's, sweeps memory in long runs: the same search costs 25-30% less CPU (``docs/scale_rounds.md``).
* ``"spatial"``: the edges sorted by the Z-order (Morton) code of their first polyline point, each coordinate
  quantized to 16 bits over its range.  Nearby edges share cache lines at every scale (a median of 10 slots between
  a turn's ends on the city, 9 on the country), so a frontier from any start finds its neighbours' labels in the
  lines it just read: reach's one-to-all over every node costs 15-20% less CPU than in the breadth-first order
  (``studies/bench/reach_profile.py``).  Falls back to the breadth-first order where an edge has no geometry or a
  coordinate is not finite.

:func:`search_order` computes an order and the relabelled CSR once per line graph (0.2-0.5 s of CPU at a million
edges on the loaded 2-core machine) and keeps them for the line graph's life (a weak reference: nothing outlives
it).  The order changes only which of several equal-cost predecessors a search keeps, never a label.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph

_ORDERS: weakref.WeakKeyDictionary[LineGraph, dict[str, SearchOrder]] = weakref.WeakKeyDictionary()

#: the orders :func:`search_order` knows (module doc)
ORDER_KINDS = ("bfs", "spatial")


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


def search_order(linegraph: LineGraph, kind: str = "bfs") -> SearchOrder:
    """The :class:`SearchOrder` of ``linegraph`` of ``kind`` (:data:`ORDER_KINDS`, module doc; computed on first
    use, then kept with it; needs numba)."""
    if kind not in ORDER_KINDS:
        raise ParameterError(f"unknown search order {kind!r}; valid: {', '.join(ORDER_KINDS)}")
    kept = _ORDERS.get(linegraph)
    if kept is None:
        kept = _ORDERS[linegraph] = {}
    got = kept.get(kind)
    if got is None:
        got = kept[kind] = _compute(linegraph, kind)
    return got


def spatial_perm(linegraph: LineGraph) -> np.ndarray | None:
    """``(N,)`` int64, the line-graph nodes sorted by the Z-order code of their edge's first polyline point (each
    coordinate quantized to 16 bits over its range; ties in node order), or ``None`` where an edge has no point or
    a coordinate is not finite."""
    from evroute.network.polylines import as_polylines

    lines = as_polylines(linegraph.network.geometry)
    n = linegraph.n_nodes
    if len(lines.offsets) != n + 1 or np.any(np.diff(lines.offsets) < 1):
        return None
    xy = lines.xy[lines.offsets[:-1]]
    if not np.all(np.isfinite(xy)):
        return None
    code = np.zeros(n, dtype=np.uint64)
    for axis in (0, 1):
        a = xy[:, axis]
        span = float(a.max() - a.min()) if n else 0.0
        v = ((a - a.min()) * (65535.0 / span) if span > 0 else np.zeros(n)).astype(np.uint64)
        for shift, mask in ((8, 0x00FF00FF), (4, 0x0F0F0F0F), (2, 0x33333333), (1, 0x55555555)):
            v = (v | (v << np.uint64(shift))) & np.uint64(mask)  # spread the 16 bits to the even positions
        code |= v << np.uint64(axis)
    return np.argsort(code, kind="stable").astype(np.int64)


def _compute(linegraph: LineGraph, kind: str) -> SearchOrder:
    from evroute.search import kernels as K

    indptr, heads, _ = linegraph.arc_pattern()
    n, c = linegraph.n_nodes, len(heads)
    ip = np.ascontiguousarray(indptr, dtype=np.int64)
    hd = np.ascontiguousarray(heads, dtype=np.int32)
    perm = spatial_perm(linegraph) if kind == "spatial" else None
    if perm is None:
        perm = np.empty(n, dtype=np.int64)
        K.bfs_order_kernel(ip, hd, perm, np.zeros(n, dtype=np.uint8))
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n, dtype=np.int64)
    pindptr, pheads = np.empty(n + 1, dtype=np.int64), np.empty(c, dtype=np.int32)
    K.relabel_kernel(ip, hd, perm, inv, pindptr, pheads)
    return SearchOrder(perm, inv, pindptr, pheads)


__all__ = ["ORDER_KINDS", "SearchOrder", "search_order", "spatial_perm"]
