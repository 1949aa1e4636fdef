"""Customizable contraction hierarchies (CCH) for route queries against fixed weights: a served model's means, road
lengths, travel times.

:class:`RouteOracle` runs a full single-source Dijkstra per query (milliseconds on a city, seconds on a country);
a CCH answers a point-to-point query in microseconds after two set-up phases (RoutingKit's CCH through the
``routingkit-cch`` bindings, Dibbelt, Strasser & Wagner, *Customizable Contraction Hierarchies*, JEA 2016):

1. **Preprocessing** (:class:`CCHIndex`, once per line graph, weights not needed): a nested-dissection order of the
   line-graph nodes (:func:`dissection_order`) and the contracted graph.  An edge cut of the road network is a node
   separator of its line graph (a turn joins two edges at a junction, so it never jumps a cut between junctions):
   the junctions of each cell are split by the straight line that the fewest road edges cross among four directions
   (as inertial flow projects, without its max-flow refinement) and nine positions from the 30 % to the 70 %
   quantile of the edges (:data:`CUT_QUANTILES`: a cut beside the median can pass between towns), and the road
   edges that cross it are the cell's separator, ranked above both halves.  Vectorised level by level: on the
   synthetic 1M-edge city the whole preprocessing took 16.7 s of CPU with the median cut (the order ~11 s), where
   RoutingKit's own inertial-flow order of the line graph took 266 s, and queries 9.4 ms instead of 13 ms; the
   orders are measured side by side in ``docs/benchmark_scale.md`` ("CCH orders").
2. **Customization** (:meth:`CCHIndex.customize`, once per weight vector, e.g. per model version): the shortcut
   weights, a few milliseconds on Luxembourg.
3. **Queries** (:meth:`CCHRouter.route`): ~0.05 ms on Luxembourg against ~1.6 ms for a Dijkstra.

RoutingKit's weights are integers (``< 2^31``).  Arc weights ``a >= 0`` (Wh, m, s: the line graph's turn costs) are
quantized as ``round(a / q)`` with ``q = sum(a) / 2^30``, so no route's integer length can overflow.  Each arc's
rounding error is at most ``q / 2``, so the route returned (optimal for the rounded weights) costs at most
``(|P| + |P*|) q / 2 <= n q`` more than the optimum ``P*`` under the real weights, with ``n`` the number of
line-graph nodes: :attr:`CCHRouter.error_bound` (about ``1e-6`` of the total weight on Luxembourg; on a
network of ``n`` nodes, ``n / 2^30`` of it).  Route costs are reported from the real weights.  Equal-cost routes
may differ from Dijkstra's choice; :class:`RouteOracle` stays the reference and the small-graph default
(``tests/test_cch.py`` checks both against each other on random graphs).

Weights without turn terms (lengths, times, the potential's reduced costs of edge means) are served on the smaller
junction graph instead (:mod:`evroute.cch_junction`, with this module's router as its fallback); this one keeps the
weights with turn terms.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import LineGraph
from evroute.network.polylines import as_polylines
from evroute.oracle import Route

#: line graphs with at least this many nodes use a CCH for served route queries by default (below it, a Dijkstra
#: over the whole graph costs about as much as customizing a CCH, and small test graphs keep Dijkstra's tie-breaks)
CCH_MIN_NODES = 2000
#: the integer weights' total (RoutingKit's infinity is 2^31 - 1: any route's length stays below it)
_TOTAL = 2**30


def _node(lg: LineGraph, idx: int, what: str) -> int:
    if not 0 <= int(idx) < lg.n_nodes:
        raise ParameterError(f"{what} edge index {idx} is outside 0..{lg.n_nodes - 1}")
    return int(idx)


#: where a cell's straight cut may lie: these quantiles of its edges' midpoints along the cut's normal (the median
#: and four positions to either side, down to a 30/70 split); the position and direction with the fewest crossing
#: edges win.  A cut away from the median can pass between towns instead of through one.  Measured against the median
#: alone at 100k edges (``docs/benchmark_scale.md``, "CCH orders", CPU): on the synthetic country the root separator
#: shrinks from 225 to 126 edges, customization from 600 to 308 ms and a query from 570 to 256 µs, for ~10 % more
#: ordering time; on the city customization from 2.37 to 1.31 s and a query from 1.27 ms to 660 µs.  At 1M edges:
#: the country's customization 16.0 -> 11.3 s, query 3.88 -> 2.71 ms; the city's customization 81 -> 45 s, query
#: unchanged (9.5-9.8 ms).  RoutingKit's inertial flow (``CCHIndex(order="inertial")``) answers the country's queries
#: faster still (123 µs at 100k, 651 µs at 1M, customization 3.4 s) but orders 6x slower (96 s of CPU at 1M), and the
#: city's 100k queries slower (1.33 ms).
CUT_QUANTILES: tuple[float, ...] = tuple(np.round(np.linspace(0.3, 0.7, 9), 6).tolist())


def dissection(
    from_idx: np.ndarray,
    to_idx: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    *,
    leaf: int = 32,
    directions: int = 4,
    quantiles: tuple[float, ...] = CUT_QUANTILES,
    below: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nested dissection of a line graph by straight cuts between the road network's junctions (module doc).

    Args:
        from_idx, to_idx: ``(E,)`` start and end junction of each road edge (line-graph node).
        x, y: ``(N,)`` junction positions in a planar frame (any unit).
        leaf: cells of at most this many edges are not split further.
        directions: cut directions tried per cell (evenly spaced over 180 degrees).
        quantiles: cut positions tried per direction (:data:`CUT_QUANTILES`; ``(0.5,)``: the median only); of all
            directions and positions, the fewest crossing edges win (ties: the first direction, the position
            nearest the median).
        below: if given, ``(E,)`` bool, set for each separator edge to whether its start junction lies below its
            cell's cut (the other end lies above; :func:`evroute.cch_junction.junction_order`).

    Returns:
        ``(depth, path, separator)``, each ``(E,)``: the level at which the edge left the recursion, the cell it was
        in then (its binary path from the root: child ``2 p + side`` of cell ``p``) and whether it was in that
        cell's separator (else it is in a leaf cell).  Two edges joined by a turn lie in nested cells: the shallower
        one's path is a prefix of the deeper one's (``tests/test_cch.py``).
    """
    n = len(from_idx)
    ang = np.arange(directions) * (np.pi / directions)
    depth, path, sep = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    idx, cell = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)  # active edges, sorted by cell
    level = 0
    while len(idx):
        first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        size = np.diff(np.r_[first, len(cell)])
        small = np.repeat(size <= leaf, size)
        if small.any():  # leaves leave the recursion
            depth[idx[small]], path[idx[small]] = level, cell[small]
            idx, cell = idx[~small], cell[~small]
            if not len(idx):
                break
            first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
            size = np.diff(np.r_[first, len(cell)])
        side_a, side_b = _best_cuts(from_idx[idx], to_idx[idx], x, y, first, size, ang, quantiles)
        seg = np.repeat(np.arange(len(first)), size)
        cut = side_a != side_b
        stuck = np.repeat(np.bincount(seg, weights=side_a | cut, minlength=len(first)) == 0, size)
        stuck |= np.repeat(np.bincount(seg, weights=~side_a | cut, minlength=len(first)) == 0, size)
        depth[idx[stuck]], path[idx[stuck]] = level, cell[stuck]  # no cut splits it (coincident junctions): a leaf
        cut &= ~stuck
        depth[idx[cut]], path[idx[cut]], sep[idx[cut]] = level, cell[cut], True
        if below is not None:
            below[idx[cut]] = side_a[cut]
        cut |= stuck
        idx, cell = idx[~cut], 2 * cell[~cut] + side_a[~cut]
        o = np.argsort(cell, kind="stable")
        idx, cell = idx[o], cell[o]
        level += 1
    return depth, path, sep


def _best_cuts(
    fa: np.ndarray,
    fb: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    first: np.ndarray,
    size: np.ndarray,
    angles: np.ndarray,
    quantiles: tuple[float, ...],
) -> tuple[np.ndarray, np.ndarray]:
    """Per active edge (sorted by cell; cells start at ``first`` with ``size`` edges), whether its start and its end
    junction lie below the best straight cut of its cell (:func:`dissection`).  An edge crosses the cut at ``c``
    when ``min(pa, pb) < c <= max(pa, pb)`` (``pa, pb`` its junctions' projections), so a cell's crossing count at
    any ``c`` is ``#(min < c) - #(max < c)``: two sorted key arrays and a binary search per candidate."""
    k = len(first)
    seg = np.repeat(np.arange(k), size)
    best = np.full(k, np.inf)
    side_a, side_b = np.zeros(len(fa), bool), np.zeros(len(fa), bool)
    order = np.argsort(np.abs(np.asarray(quantiles) - 0.5), kind="stable")  # the median first: it wins ties
    for t in angles:
        proj = x * np.cos(t) + y * np.sin(t)
        pa, pb = proj[fa], proj[fb]
        lo_e, hi_e, mid = np.minimum(pa, pb), np.maximum(pa, pb), 0.5 * (pa + pb)
        low = np.minimum.reduceat(lo_e, first)[seg]
        scale = 0.5 / np.maximum(np.maximum.reduceat(hi_e, first) - np.minimum.reduceat(lo_e, first), 1e-300)[seg]
        # keys sort by cell, then position (each cell's keys in [cell, cell + 0.5])
        k_lo, k_hi, k_mid = (
            np.sort(seg + (lo_e - low) * scale),
            np.sort(seg + (hi_e - low) * scale),
            seg + (mid - low) * scale,
        )
        by_mid = np.argsort(k_mid)
        cut_at = np.zeros(k)
        won_here = np.zeros(k, bool)
        for q in np.asarray(quantiles)[order]:
            at = by_mid[first + np.minimum((q * size).astype(np.int64), size - 1)]
            cross = np.searchsorted(k_lo, k_mid[at]) - np.searchsorted(k_hi, k_mid[at])
            won = cross < best
            best = np.where(won, cross, best)
            cut_at = np.where(won, mid[at], cut_at)
            won_here |= won
        w = won_here[seg]
        c = cut_at[seg]
        side_a, side_b = np.where(w, pa < c, side_a), np.where(w, pb < c, side_b)
    return side_a, side_b


def dissection_order(lg: LineGraph, *, leaf: int = 32, quantiles: tuple[float, ...] = CUT_QUANTILES) -> np.ndarray:
    """``(E,)`` contraction order of the line-graph nodes, least important first (RoutingKit's ``order``): the leaf
    cells of :func:`dissection` (cut positions ``quantiles``), then the separators from the deepest level up to the
    root's, each cell's together.  Junction positions are the mean of the edge end points there, in a local
    equirectangular frame."""
    depth, path, sep = dissection(*junction_frame(lg), leaf=leaf, quantiles=quantiles)
    return np.lexsort((path, np.where(sep, -depth, np.iinfo(np.int64).min)))


def junction_frame(lg: LineGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(from_idx (E,), to_idx (E,), x (N,), y (N,))``: each line-graph node's start and end junction and the
    junctions' positions (the mean of the edge end points there; lon/lat scaled to a local equirectangular frame)."""
    net = lg.network
    fi, ti, ids = net.junction_codes()
    lines = as_polylines(net.geometry)
    at, pts = np.concatenate([fi, ti]), np.concatenate([lines.first(), lines.last()])
    cnt = np.maximum(np.bincount(at, minlength=len(ids)), 1)
    x = np.bincount(at, weights=pts[:, 0], minlength=len(ids)) / cnt
    y = np.bincount(at, weights=pts[:, 1], minlength=len(ids)) / cnt
    if len(y) and abs(float(y.mean())) <= 90:  # lon/lat degrees (projected frames have |y| > 90)
        x = x * np.cos(np.radians(float(y.mean())))
    return fi, ti, x, y


def available() -> bool:
    """Whether ``routingkit-cch`` can be imported."""
    try:
        import routingkit_cch  # noqa: F401
    except ImportError:
        return False
    return True


def _arcs(lg: LineGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, tails, heads)`` of the line graph's arcs (turns) in the CSR order :class:`RouteOracle` uses."""
    adj = lg.adjacency.tocsr().copy()
    adj.sort_indices()
    tails = np.repeat(np.arange(adj.shape[0], dtype=np.int64), np.diff(adj.indptr))
    return adj.indptr.astype(np.int64), tails, adj.indices.astype(np.int64)


def thread_query(local: threading.local, metric: Any) -> Any:
    """The calling thread's RoutingKit query on ``metric``, made on its first use (a query object keeps its search's
    state, so threads that answer routes at once each need their own); kept in ``local.query``."""
    q = getattr(local, "query", None)
    if q is None:
        import routingkit_cch as rk

        q = local.query = rk.CCHQuery(metric)
    return q


class CCHIndex:
    """The weight-independent part of a CCH over a line graph (module doc, phase 1).  Immutable and safe to share
    between threads.

    Args:
        linegraph: the line graph.
        order: ``"dissection"`` (:func:`dissection_order`, the default) or ``"inertial"`` (RoutingKit's inertial-flow
            order of the line graph on the road edges' midpoints: much slower to compute at scale).

    Raises:
        ParameterError: ``routingkit-cch`` is not installed, or an unknown order.
    """

    def __init__(self, linegraph: LineGraph, order: str = "dissection") -> None:
        try:
            import routingkit_cch as rk
        except ImportError:
            raise ParameterError("the CCH route engine needs routingkit-cch: pip install routingkit-cch") from None
        from evroute.routes import edge_midpoints

        self.linegraph = linegraph
        self.indptr, self.tails, self.heads = _arcs(linegraph)
        #: ``tail * E + head`` of every arc: sorted (CSR order, sorted heads), so an arc is found by one search
        self.arc_keys = self.tails * linegraph.n_nodes + self.heads
        tails, heads = self.tails.tolist(), self.heads.tolist()
        if order == "dissection":
            rank = dissection_order(linegraph).tolist()
        elif order == "inertial":
            mid = edge_midpoints(linegraph.network.geometry)
            rank = rk.compute_order_inertial(linegraph.n_nodes, tails, heads, mid[:, 1].tolist(), mid[:, 0].tolist())
        else:
            raise ParameterError(f"unknown CCH order {order!r}: use 'dissection' or 'inertial'")
        self._cch = rk.CCH(rank, tails, heads, False)

    @property
    def n_arcs(self) -> int:
        return len(self.heads)

    def customize(self, arc_weights: np.ndarray) -> CCHRouter:
        """A router for non-negative ``(C,)`` arc (turn) weights in the order of :attr:`heads` (module doc, phase 2).

        Raises:
            ParameterError: a weight is negative or not finite, or the shape is wrong.
        """
        w = np.asarray(arc_weights, dtype=np.float64)
        if w.shape != (self.n_arcs,):
            raise ParameterError(f"arc weights must have shape ({self.n_arcs},), got {w.shape}")
        if not np.all(np.isfinite(w)) or (len(w) and w.min() < 0):
            raise ParameterError("CCH weights must be finite and non-negative")
        return CCHRouter(self, w)

    def customize_nodes(self, node_weights: np.ndarray) -> CCHRouter:
        """A router for non-negative ``(E,)`` node weights (a route costs the sum over its edges, start included,
        as :meth:`RouteOracle.shortest_route`): arc ``u -> v`` carries ``w[v]`` and the start's weight is added."""
        w = np.asarray(node_weights, dtype=np.float64)
        n = self.linegraph.n_nodes
        if w.shape != (n,):
            raise ParameterError(f"weights must have shape ({n},), got {w.shape}")
        if not np.all(np.isfinite(w)) or w.min() < 0:
            raise ParameterError("CCH weights must be finite and non-negative")
        return CCHRouter(self, w[self.heads], node_weights=w)


class CCHRouter:
    """A customized CCH: point-to-point routes for one weight vector (module doc, phase 3).  Safe to share between
    threads (each thread gets its own query object).

    Attributes:
        quantum: ``q``, the real weight of one integer unit.
        error_bound: how much more than the optimum a returned route may cost (``n q``, weight units).
    """

    def __init__(self, index: CCHIndex, arc_weights: np.ndarray, node_weights: np.ndarray | None = None) -> None:
        import routingkit_cch as rk

        self.index = index
        self.arc_weights = arc_weights
        self.node_weights = node_weights
        total = float(arc_weights.sum())
        self.quantum = total / _TOTAL if total > 0 else 1.0
        ints = np.rint(arc_weights / self.quantum).astype(np.int64)
        self._metric = rk.CCHMetric(index._cch, ints.tolist())
        self.error_bound = index.linegraph.n_nodes * self.quantum
        self._local = threading.local()

    def _query(self) -> Any:
        return thread_query(self._local, self._metric)

    def route(self, start: int, goal: int) -> Route:
        """The least-cost route from line-graph node ``start`` to ``goal``; ``cost`` under the real weights (the
        node weights' sum when customized from nodes, else the arcs' sum), within :attr:`error_bound` of the
        optimum; ``method == "cch"``.

        Raises:
            ParameterError: an index is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        lg = self.index.linegraph
        start, goal = _node(lg, start, "start"), _node(lg, goal, "goal")
        if start == goal:
            cost = float(self.node_weights[start]) if self.node_weights is not None else 0.0
            return Route(np.asarray([start]), cost, "cch")
        res = self._query().run(start, goal)
        try:  # the bindings refuse a new query while a result is alive: copy out, then drop it
            distance, path = res.distance, np.asarray(res.node_path, dtype=np.int64)
        finally:
            del res
        if distance is None:
            ids = lg.network.edge_ids
            raise UnreachableError(f"goal edge {ids[goal]!r} is unreachable from start edge {ids[start]!r}")
        if self.node_weights is not None:
            cost = float(self.node_weights[path].sum())
        else:
            cost = float(self._arc_cost(path))
        return Route(path, cost, "cch")

    def _arc_cost(self, path: np.ndarray) -> float:
        """Sum of the real arc weights along ``path`` (consecutive line-graph nodes)."""
        idx = self.index
        k = np.searchsorted(idx.arc_keys, path[:-1] * idx.linegraph.n_nodes + path[1:])
        return float(self.arc_weights[k].sum())


__all__ = [
    "CCH_MIN_NODES",
    "CCHIndex",
    "CCHRouter",
    "available",
    "dissection",
    "dissection_order",
    "junction_frame",
    "thread_query",
]
