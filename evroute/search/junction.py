"""Node-weighted line-graph routes searched on the junction graph (issue 39, item 3: a Thompson round at scale).

A Thompson round (:mod:`evroute.search.full_draw`) weighs every turn ``e -> f`` of the line graph by its head's weight
``w_f``, so a route ``s, f_1, ..., f_k = g`` costs ``w_s + w_{f_1} + ... + w_g``: a walk in the *hybrid junction
graph* of :func:`evroute.cch_junction.hybrid_graph` (nodes: the junctions, turn-expanded only where the line graph has
a turn restriction; arcs: the road edges, each weighing its ``w``).  On the million-edge city that graph has 294,136
nodes and 1,012,093 arcs against the line graph's 1,012,093 nodes and 2,757,523 turns, so the same bucket search
(:func:`evroute.search.bucket_kernels.sources_buckets_kernel`) scans about a third as many arcs.

**Exactness.**  The search starts from the head nodes of the edges ``f`` the line graph lets a route take right after
``s`` (label ``w_f``: the first turn is legal by construction, whatever the U-turn rule) and ends at the tail nodes of
the goal's arcs.  Every legal route from ``s`` to ``g`` is such a walk, of the same cost (the hybrid graph's walks
are the line graph's routes up to U-turns at junctions without restrictions), so the least walk costs at most the
least route.  When the walk found is itself a legal route (each consecutive pair a turn: checked, O(route)) it is a
least route, and its cost is the same float as the line graph's label (the same weights added in the same order).  A
walk of Dijkstra's tree visits each node once, so an illegal U-turn can only appear where the walk turns back onto
its first edge's reverse, next to a junction with restrictions, or into ``g`` from ``g``'s reverse; then
:func:`junction_route` returns ``None`` and the caller searches the line graph
(:class:`~evroute.search.full_draw.FullDrawThompson` counts these rounds).  The graph exists only where every turn
joins its two edges at a junction (``to(e) == from(f)``), as on every network :func:`evroute.linegraph.
build_line_graph` makes from a road network; :func:`junction_graph` is ``None`` otherwise.

Needs numba (imported with this module); the graph is built once per line graph (about 1 s of CPU at a million edges)
and kept with it.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import UnreachableError
from evroute.linegraph import LineGraph
from evroute.oracle import Route
from evroute.search.kernels import njit_cached

_GRAPHS: weakref.WeakKeyDictionary[LineGraph, JunctionGraph | None] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class JunctionGraph:
    """A line graph's hybrid junction graph, its nodes renamed in breadth-first order (module doc).

    Attributes:
        indptr: ``(N_H + 1,)`` int64 and ``heads``: ``(A,)`` int32, the arcs sorted by tail (CSR).
        arc_tail: ``(A,)`` int32, each arc's tail node.
        arc_edge: ``(A,)`` int32, the road edge (line-graph node) each arc takes: the arcs' weights are
            ``w[arc_edge]``.
        head_node: ``(E,)`` int32, the node each road edge arrives at.
    """

    indptr: np.ndarray
    heads: np.ndarray
    arc_tail: np.ndarray
    arc_edge: np.ndarray
    head_node: np.ndarray

    @property
    def n_nodes(self) -> int:
        """``N_H``: junctions plus the turn-expanded nodes."""
        return len(self.indptr) - 1

    def edge_arcs(self, e: int) -> np.ndarray:
        """``(k,)`` int64, the arcs that take road edge ``e`` (one scan of :attr:`arc_edge`: O(A), about 0.5 ms at a
        million edges; :class:`~evroute.search.full_draw.FullDrawThompson` keeps its goal's)."""
        return np.flatnonzero(self.arc_edge == e)


def junction_graph(linegraph: LineGraph) -> JunctionGraph | None:
    """The :class:`JunctionGraph` of ``linegraph``, or ``None`` where some turn does not join its edges at a junction
    (computed on first use, then kept with the line graph)."""
    if linegraph in _GRAPHS:
        return _GRAPHS[linegraph]
    got = _GRAPHS[linegraph] = _build(linegraph)
    return got


def _build(linegraph: LineGraph) -> JunctionGraph | None:
    from evroute.cch_junction import hybrid_graph
    from evroute.search import kernels as K

    n = linegraph.n_nodes
    fi, ti, ids = linegraph.network.junction_codes()
    fi, ti = np.asarray(fi, dtype=np.int64), np.asarray(ti, dtype=np.int64)
    indptr, heads, tails = linegraph.arc_pattern()
    heads = np.asarray(heads, dtype=np.int64)
    if len(heads) and not np.array_equal(ti[tails], fi[heads]):
        return None
    _, head_node, arc_tail, arc_head, arc_edge = hybrid_graph(fi, ti, len(ids), tails, heads, tails * n + heads)
    nh = max(len(ids), int(head_node.max(initial=-1)) + 1, int(arc_tail.max(initial=-1)) + 1)
    o = np.argsort(arc_tail, kind="stable")
    ip = np.searchsorted(arc_tail[o], np.arange(nh + 1)).astype(np.int64)
    order = np.empty(nh, dtype=np.int64)
    K.bfs_order_kernel(ip, arc_head[o].astype(np.int32), order, np.zeros(nh, dtype=np.uint8))
    inv = np.empty(nh, dtype=np.int64)
    inv[order] = np.arange(nh, dtype=np.int64)
    t, h = inv[arc_tail], inv[arc_head]
    o = np.argsort(t, kind="stable")
    arc_tail, arc_edge, heads_new = t[o], np.asarray(arc_edge)[o].astype(np.int32), h[o].astype(np.int32)
    return JunctionGraph(  # int32 but the CSR's offsets: 4 bytes an index (about 20 bytes per edge in all)
        indptr=np.searchsorted(arc_tail, np.arange(nh + 1)).astype(np.int64),
        heads=heads_new,
        arc_tail=arc_tail.astype(np.int32),
        arc_edge=arc_edge,
        head_node=inv[head_node].astype(np.int32),
    )


@njit_cached
def _legal_kernel(indptr: Any, heads: Any, path: Any) -> bool:
    """Whether each consecutive pair of ``path`` is a turn of the CSR ``indptr``, ``heads`` (a scan of each row)."""
    for i in range(path.shape[0] - 1):
        a, b = path[i], path[i + 1]
        found = False
        for j in range(indptr[a], indptr[a + 1]):
            if heads[j] == b:
                found = True
                break
        if not found:
            return False
    return True


def junction_route(
    jg: JunctionGraph,
    linegraph: LineGraph,
    w: np.ndarray,
    wa: np.ndarray,
    start: int,
    goal: int,
    stats: tuple[float, float, float],
    goal_arcs: np.ndarray | None = None,
) -> Route | None:
    """The least route from edge ``start`` to edge ``goal != start`` under node weights ``w (E,)`` (checked, finite,
    non-negative; ``wa = w[jg.arc_edge]``, ``stats`` the least, largest and mean of ``w``), searched on ``jg``, with
    the line graph's cost bit for bit; ``None`` when the least walk is not a legal route (module doc: search the line
    graph then).  ``goal_arcs``: ``jg.edge_arcs(goal)`` when the caller keeps it.

    Raises:
        UnreachableError: ``goal`` cannot be reached from ``start``.
    """
    from evroute.search import bucket_search

    lip, lheads, _ = linegraph.arc_pattern()
    first = np.asarray(lheads[lip[start] : lip[start + 1]], dtype=np.int64)
    goal_arcs = jg.edge_arcs(goal) if goal_arcs is None else goal_arcs
    tails = jg.arc_tail[goal_arcs]
    best, via = math.inf, -1
    if len(first):
        target = int(tails[0]) if len(np.unique(tails)) == 1 else -1
        sources = (jg.head_node[first], w[first].astype(np.float64), -(first + 2))
        dist, pred = bucket_search(jg.indptr, jg.heads, wa, 0, target, *stats, sources=sources)
        if np.any(first == goal):  # straight from the start: the line graph's label 0 + w[goal]
            best = float(w[goal])
        for j in goal_arcs.tolist():
            c = float(dist[jg.arc_tail[j]] + w[goal])
            if c < best:
                best, via = c, j
    if not math.isfinite(best):
        ids = linegraph.network.edge_ids
        raise UnreachableError(f"goal edge {ids[goal]!r} is unreachable from start edge {ids[start]!r}")
    path = [goal]
    if via >= 0:
        v = int(jg.arc_tail[via])
        while True:
            p = int(pred[v])
            if p <= -2:  # a source: the first edge after the start
                path.append(-p - 2)
                break
            path.append(int(jg.arc_edge[p]))
            v = int(jg.arc_tail[p])
    path.append(start)
    edges = np.asarray(path[::-1], dtype=np.int64)
    if not _legal_kernel(np.asarray(lip), np.asarray(lheads), edges):
        return None
    return Route(edges, float(w[start] + best))


__all__ = ["JunctionGraph", "junction_graph", "junction_route"]
