"""Served route queries on the junction graph when the weights have no turn terms (issue 39: a CCH query at 1M edges).

:mod:`evroute.cch` contracts the turn-expanded line graph (one node per road edge, one arc per legal turn).  When
every arc ``e -> f`` weighs what its head alone weighs, ``a(e -> f) = c_f`` (edge weights: lengths, times; the
potential's reduced costs ``m_f + h_e - h_f`` of edge means with ``h = k z_to``, :func:`evroute.driver.paths.
potential_h`, which depend on ``f`` only since ``z_to(e) = z_from(f)`` at the shared junction), a route's cost is a sum
over its edges, which is a walk in the **junction graph** (nodes = junctions, arcs = road edges weighing ``c``): about
a quarter of the line graph's nodes on a grid city, with separators about half as large, so its CCH answers faster.
Where the line graph forbids a turn other than a U-turn (a turn restriction) the junction is turn-expanded, one node
per incoming edge (:func:`hybrid_graph`; none on the synthetic networks, 12 of 995 junctions on Monaco); the
*hybrid graph*'s walks are then the line graph's routes except for U-turns at the other junctions.

Every route from start edge ``s`` to goal edge ``t != s`` is, for any sets ``X`` (settled by a Dijkstra from ``s``)
and ``Y`` (settled by a backward Dijkstra from ``t``), either a *meet* (an ``X``-path from ``s`` then a ``Y``-path to
``t``, exact labels) or ``[X-path to e, e, W, g, Y-path from g]`` with ``e`` on the forward frontier, ``g`` on the
backward one and ``W`` a hybrid-graph walk from ``e``'s head to ``g``'s tail.  A query (:meth:`JunctionRouter.route`)
starts with ``X = {s}``, ``Y = {t}`` and loops:

1. the best meet ``M`` (exact, a legal route);
2. one hybrid-graph CCH query with multiple sources and targets: a source at each forward frontier edge's head node
   (initial distance its label), a target at each backward frontier edge's tail nodes (final distance its label plus
   its own ``c``).  Its optimum ``L`` is a **lower bound** on every route of the second form, since every turn weighs
   at least its head's ``c`` (``c_f`` is the least weight of any turn into ``f``, :meth:`JunctionCCHIndex.
   head_weights`), so ``min(M, L)`` bounds every route;
3. the **check**: the walk found is a line-graph route when each consecutive pair is a turn; then its real cost
   ``R = L + slack`` (``slack >= 0`` the turns' excess over their heads' ``c``: 0 without turn terms) and, with
   ``slack <= q``, the cheaper of it and the meet is optimal up to the quantization bound below.  If the walk turns
   illegally out of its first edge ``e`` (a U-turn the line graph bans next to the start) ``e`` is settled (the
   forward Dijkstra runs until it is) and the loop repeats; likewise at its last edge ``g`` backwards.  A forbidden
   turn inside the walk cannot be an interior U-turn at an unrestricted junction (cutting out the 2-cycle would cost
   less: its two edges' reduced costs sum to their means, positive unless both sit at their floor) nor a turn
   restriction (expanded), so it arises only from ties or U-turns next to a restricted junction; such queries, or
   those still unresolved after :data:`MAX_REPAIRS` repairs (each settles at least twice as many edges as before),
   **fall back** to the router made by the ``fallback`` factory given at customization
   (:class:`~evroute.driver.query.QueryContext`: a Dijkstra on the line graph; the benchmarks: the line graph's CCH),
   unless a meet is already certified below ``L``; :attr:`JunctionRouter.fallbacks` counts them.

Quantization: RoutingKit's weights are integers.  The hybrid arcs' weights ``c`` and the sources' and targets'
offsets are rounded as ``round(x / q)`` with ``q = (sum(c) + 3 max(a, c)) / 2^30``, so no distance overflows
``2^31``; each rounded term errs by at most ``q / 2`` and a certified walk has at most ``N_H - 1`` hybrid arcs (a
longer one is not certified: fallback), so the returned route costs at most ``(N_H + 2) q`` more than the optimum
(``N_H + 1`` from rounding the returned and the optimal walk's at most ``N_H + 1`` terms each, one more ``q`` for the
slack tolerated): :attr:`JunctionRouter.junction_bound`, ``N_H`` the hybrid graph's nodes; a fallback route is within
its own engine's bound (:attr:`JunctionRouter.error_bound` takes the larger once one happened).  Route costs are
reported from the real weights; ``tests/test_cch_junction.py`` checks routes, legality and costs against
:class:`~evroute.oracle.RouteOracle` on random graphs with turn restrictions and U-turn bans.

Ordering: :func:`junction_order` turns :func:`evroute.cch.dissection`'s edge cuts into junction separators.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from evroute.cch import CUT_QUANTILES, dissection, junction_frame, thread_query
from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import LineGraph
from evroute.oracle import Route
from evroute.search.kernels import njit_cached

#: ``QueryContext(engine="cch")`` routes turn-free weights on the junction graph from this many line-graph nodes (on
#: small graphs the line graph's query is faster: the junction graph's Python-level end searches and check cost
#: ~0.1-0.2 ms).  Median query, line graph -> junction graph (``docs/benchmark_scale.md``, ``docs/junction_cch.md``,
#: CPU): Luxembourg's 5,644 edges 63 -> 104 µs, the 10k-edge city 132 -> 137 µs, the 100k-edge city 1.26 ms ->
#: 792 µs but the 100k-edge country 373 -> 537 µs, at 1M edges the city 7.13 -> 2.97 ms and the country 3.54 ->
#: 1.82 ms; customization is cheaper at every size (1M city: 44.5 -> 6.25 s)
JUNCTION_MIN_NODES = 30_000
#: the integer weights' total (RoutingKit's infinity is 2^31 - 1)
_TOTAL = 2**30
#: arc weights count as turn-free when no arc exceeds its head's least incoming arc by more than this share of the
#: largest arc weight (float rounding of the potential's reduced costs; they are bit-identical on every network here)
TURN_FREE_RTOL = 1e-12


def junction_order(
    from_idx: np.ndarray,
    to_idx: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    *,
    leaf: int = 32,
    quantiles: tuple[float, ...] = CUT_QUANTILES,
) -> np.ndarray:
    """``(N,)`` contraction order of the junctions, least important first (RoutingKit's ``order``).

    The road edges are cut as for the line graph (:func:`evroute.cch.dissection`); a cell's junction separator is
    the ends of the edges its cut crosses on one side of the cut, the side with fewer distinct junctions (a
    vertex cover of the crossing edges), each junction placed at the shallowest cut that picks it.  Every other
    junction goes with the cell of its deepest incident edge.  As in :func:`evroute.cch.dissection_order`: leaf
    cells first, then separators from the deepest level up to the root's.  Any order gives exact CCH queries; this
    one only makes them fast (against one end of every crossing edge picked by index, 15 % faster queries on the
    100k-edge city).

    Args:
        from_idx, to_idx: ``(E,)`` start and end junction of each road edge.
        x, y: ``(N,)`` junction positions in a planar frame.
    """
    n = len(x)
    below = np.zeros(len(from_idx), bool)
    depth, path, sep = dissection(from_idx, to_idx, x, y, leaf=leaf, quantiles=quantiles, below=below)
    jsep = np.zeros(n, bool)
    jdepth, jpath = np.zeros(n, np.int64), np.zeros(n, np.int64)
    e = np.flatnonzero(sep)
    if len(e):
        lo = np.where(below[e], from_idx[e], to_idx[e])  # each crossing edge's end below its cell's cut
        hi = np.where(below[e], to_idx[e], from_idx[e])
        cell = depth[e] * (int(path.max()) + 1) + path[e]  # one key per (level, cell)
        ucell, inv = np.unique(cell, return_inverse=True)
        n_lo = np.bincount(inv[_first(cell * n + lo)], minlength=len(ucell))  # distinct junctions per side
        n_hi = np.bincount(inv[_first(cell * n + hi)], minlength=len(ucell))
        j = np.where((n_lo <= n_hi)[inv], lo, hi)  # the smaller side's ends cover every crossing edge
        o = np.lexsort((depth[e], j))  # by junction, then depth: the first of each junction is its shallowest cut
        first = o[np.r_[True, j[o][1:] != j[o][:-1]]]
        jsep[j[first]], jdepth[j[first]], jpath[j[first]] = True, depth[e][first], path[e][first]
    ends = np.concatenate([from_idx, to_idx])
    ed, ep = np.concatenate([depth, depth]), np.concatenate([path, path])
    o = np.lexsort((-ed, ends))  # by junction, then deepest edge first
    first = o[np.r_[True, ends[o][1:] != ends[o][:-1]]]
    other = ~jsep[ends[first]]
    jpath[ends[first][other]] = ep[first][other]
    return np.lexsort((jpath, np.where(jsep, -jdepth, np.iinfo(np.int64).min)))


@njit_cached
def _turn_positions_kernel(indptr: Any, heads: Any, path: Any, pos: Any) -> None:
    """``pos[i]``: the CSR slot of the turn ``path[i] -> path[i + 1]``, -1 where there is none."""
    for i in range(path.shape[0] - 1):
        pos[i] = -1
        for j in range(indptr[path[i]], indptr[path[i] + 1]):
            if heads[j] == path[i + 1]:
                pos[i] = j
                break


def hybrid_graph(
    from_idx: np.ndarray, to_idx: np.ndarray, n_junctions: int, tails: np.ndarray, heads: np.ndarray, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The junction graph, turn-expanded only where the line graph forbids a turn that is not a U-turn.

    A junction is *restricted* when some pair of an edge into it and an edge out of it (not back to the first edge's
    start) is not a turn.  Node ``j < N`` is junction ``j``; an edge ``e`` into a restricted junction gets its own
    node, ``N + i`` for the ``i``-th such edge ("arrived by ``e``").  Each road edge ``f`` is an arc into its head's
    node (:func:`head_node`) from its start junction, or, where that is restricted, one arc from the node of every
    edge with a turn into ``f``.  Its walks are the line graph's routes up to U-turns at unrestricted junctions.

    Args:
        from_idx, to_idx: ``(E,)`` start and end junction of each road edge.
        n_junctions: ``N``.
        tails, heads: ``(C,)`` the turns, sorted by ``tails * E + heads`` (``keys``).

    Returns:
        ``(restricted (N,) bool, head_node (E,), arc_tail (A,), arc_head (A,), arc_edge (A,))``: each edge's head
        node and the arcs with the road edge each one takes.
    """
    n = len(from_idx)
    out_order = np.argsort(from_idx, kind="stable")
    start = np.searchsorted(from_idx[out_order], np.arange(n_junctions + 1))
    cnt = start[to_idx + 1] - start[to_idx]  # candidate pairs (e, f): f leaves the junction e enters
    e = np.repeat(np.arange(n, dtype=np.int64), cnt)
    off = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    f = out_order[start[to_idx][e] + off]
    want = e * n + f
    pos = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    turn = keys[pos] == want if len(keys) else np.zeros(len(want), bool)
    restricted = np.zeros(n_junctions, bool)
    restricted[to_idx[e[~turn & (from_idx[e] != to_idx[f])]]] = True
    into = restricted[to_idx]
    head_node = to_idx.astype(np.int64).copy()
    head_node[into] = n_junctions + np.arange(int(into.sum()))
    plain = ~restricted[from_idx[heads]]  # turns into an edge whose start junction is restricted become arcs
    free = np.flatnonzero(~restricted[from_idx])
    arc_tail = np.concatenate([from_idx[free], head_node[tails[~plain]]])
    arc_edge = np.concatenate([free, heads[~plain]])
    return restricted, head_node, arc_tail, head_node[arc_edge], arc_edge


def _first(key: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct value of ``key``."""
    return np.unique(key, return_index=True)[1]


class JunctionCCHIndex:
    """The weight-independent part of a junction-graph CCH over a line graph's road network (module doc).  Immutable
    and safe to share between threads.

    Raises:
        ParameterError: ``routingkit-cch`` is not installed.
    """

    def __init__(self, linegraph: LineGraph) -> None:
        try:
            import routingkit_cch as rk
        except ImportError:
            raise ParameterError("the CCH route engine needs routingkit-cch: pip install routingkit-cch") from None
        fi, ti, x, y = junction_frame(linegraph)
        self.linegraph = linegraph
        self.from_junction, self.to_junction = np.asarray(fi, np.int64), np.asarray(ti, np.int64)
        self.n_junctions = len(x)
        indptr, heads, tails = linegraph.arc_pattern()
        n = linegraph.n_nodes
        self.indptr, self.heads, self.tails = indptr, np.asarray(heads, np.int64), tails
        #: ``tail * E + head`` of every turn, sorted (CSR order), so a turn is found by one binary search
        self.arc_keys = self.tails * n + self.heads
        #: the turns into each edge: ``in_arcs[in_ptr[f]:in_ptr[f + 1]]`` are the arc positions with head ``f``
        self.in_arcs = np.argsort(self.heads, kind="stable")
        self.in_ptr = np.searchsorted(self.heads[self.in_arcs], np.arange(n + 1))
        self.restricted, self.head_node, self.arc_tail, self.arc_head, self.arc_edge = hybrid_graph(
            self.from_junction, self.to_junction, len(x), self.tails, self.heads, self.arc_keys
        )
        #: nodes of the hybrid graph ``N_H``: the junctions, then one per edge into a junction with turn restrictions
        self.n_hybrid = self.n_junctions + int(np.count_nonzero(self.restricted[self.to_junction]))
        rank = np.empty(self.n_junctions, np.int64)
        rank[junction_order(self.from_junction, self.to_junction, x, y)] = np.arange(self.n_junctions)
        split = np.flatnonzero(self.restricted[self.to_junction])  # an edge's own node sits where its junction does
        key = np.concatenate([rank, rank[self.to_junction[split]]])
        order = np.argsort(key, kind="stable")
        self._cch = rk.CCH(order.tolist(), self.arc_tail.tolist(), self.arc_head.tolist(), False)

    def turn_positions(self, path: np.ndarray) -> np.ndarray:
        """``(k - 1,)`` the CSR position of each turn of the ``(k,)`` edge sequence ``path``, -1 where two consecutive
        edges are not joined by a turn (a scan of each row, a handful of turns, instead of a binary search)."""
        pos = np.empty(max(len(path) - 1, 0), dtype=np.int64)
        _turn_positions_kernel(self.indptr, self.heads, np.ascontiguousarray(path, dtype=np.int64), pos)
        return pos

    def tail_nodes(self, g: int) -> list[int]:
        """The hybrid-graph nodes a walk may reach just before it takes edge ``g``: its start junction, or where
        that junction has turn restrictions, the nodes of the edges with a turn into ``g``."""
        j = int(self.from_junction[g])
        if not self.restricted[j]:
            return [j]
        return self.head_node[self.tails[self.in_arcs[self.in_ptr[g] : self.in_ptr[g + 1]]]].tolist()

    @property
    def n_arcs(self) -> int:
        """The line graph's turns ``C`` (the arc weights' length)."""
        return len(self.heads)

    def head_weights(self, arc_weights: np.ndarray) -> np.ndarray:
        """``(E,)`` ``c_f``: the least weight of any turn into edge ``f`` (0 for an edge no turn enters)."""
        a = np.asarray(arc_weights, dtype=np.float64)[self.in_arcs]
        c = np.zeros(self.linegraph.n_nodes)
        has = np.diff(self.in_ptr) > 0
        if has.any():
            c[has] = np.minimum.reduceat(a, self.in_ptr[:-1][has])
        return c

    def turn_free(self, arc_weights: np.ndarray) -> bool:
        """Whether ``(C,)`` arc weights have no turn terms: every turn weighs its head's :meth:`head_weights`
        within :data:`TURN_FREE_RTOL` of the largest weight."""
        a = np.asarray(arc_weights, dtype=np.float64)
        if not len(a):
            return True
        slack = a - self.head_weights(a)[self.heads]
        return bool(slack.max() <= TURN_FREE_RTOL * max(1.0, float(np.abs(a).max())))

    def customize(self, arc_weights: np.ndarray, fallback: Callable[[], Any]) -> JunctionRouter:
        """A router for non-negative ``(C,)`` turn-free arc weights in the line graph's CSR order; ``fallback()`` makes
        (on the first query the junction graph cannot certify, module doc) the router that answers those.

        Raises:
            ParameterError: a weight is negative or not finite, the shape is wrong, or the weights have turn terms
                (:meth:`turn_free`; route them on the line graph).
        """
        a = _checked(arc_weights, self.n_arcs, "arc weights")
        if not self.turn_free(a):
            raise ParameterError("these arc weights have turn terms: route them on the line-graph CCH")
        return JunctionRouter(self, a, self.head_weights(a), fallback)

    def customize_nodes(self, node_weights: np.ndarray, fallback: Callable[[], Any]) -> JunctionRouter:
        """A router for non-negative ``(E,)`` node weights (a route costs the sum over its edges, start included,
        as :meth:`RouteOracle.shortest_route`): turn ``u -> v`` weighs ``w[v]``."""
        w = _checked(node_weights, self.linegraph.n_nodes, "weights")
        return JunctionRouter(self, w[self.heads], w, fallback, node_weights=w)


def _checked(w: np.ndarray, n: int, what: str) -> np.ndarray:
    a = np.asarray(w, dtype=np.float64)
    if a.shape != (n,):
        raise ParameterError(f"{what} must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or (len(a) and a.min() < 0):
        raise ParameterError("CCH weights must be finite and non-negative")
    return a


class JunctionRouter:
    """A customized junction-graph CCH: point-to-point routes for one turn-free weight vector (module doc).  Safe to
    share between threads (each thread gets its own query object; the counters may then miss a concurrent count).

    Attributes:
        quantum: ``q``, the real weight of one integer unit.
        junction_bound: ``(N_H + 2) q`` (weight units, module doc).
        queries, fallbacks: queries answered and how many of them went to the fallback engine.
    """

    def __init__(
        self,
        index: JunctionCCHIndex,
        arc_weights: np.ndarray,
        edge_weights: np.ndarray,
        fallback: Callable[[], Any],
        node_weights: np.ndarray | None = None,
    ) -> None:
        import routingkit_cch as rk

        self.index, self.arc_weights, self.edge_weights = index, arc_weights, edge_weights
        self.node_weights, self.fallback = node_weights, fallback
        top = max(float(arc_weights.max()) if len(arc_weights) else 0.0, float(edge_weights.max()))
        total = float(edge_weights.sum()) + 3.0 * top
        self.quantum = total / _TOTAL if total > 0 else 1.0
        ints = np.rint(edge_weights[index.arc_edge] / self.quantum).astype(np.int64)
        self._metric = rk.CCHMetric(index._cch, ints.tolist())
        #: the junction graph's own bound ``(N_H + 2) q``
        self.junction_bound = (index.n_hybrid + 2) * self.quantum
        self._fallback_router: Any = None
        self.queries = self.fallbacks = 0
        self._local = threading.local()

    def _query(self) -> Any:
        return thread_query(self._local, self._metric)

    def route(self, start: int, goal: int) -> Route:
        """The least-cost route from line-graph node ``start`` to ``goal``; ``cost`` under the real weights, within
        :attr:`error_bound` of the optimum; ``method == "cch"``.

        Raises:
            ParameterError: an index is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        ix, lg = self.index, self.index.linegraph
        n = lg.n_nodes
        for v, what in ((start, "start"), (goal, "goal")):
            if not 0 <= int(v) < n:
                raise ParameterError(f"{what} edge index {v} is outside 0..{n - 1}")
        s, t = int(start), int(goal)
        self.queries += 1
        if s == t:
            return Route(np.asarray([s]), float(self.node_weights[s]) if self.node_weights is not None else 0.0, "cch")
        a, c, q = self.arc_weights, self.edge_weights, self.quantum
        fw = _EndSearch(s, lambda u: (ix.heads[ix.indptr[u] : ix.indptr[u + 1]], a[ix.indptr[u] : ix.indptr[u + 1]]))
        bw = _EndSearch(
            t,
            lambda u: (
                ix.tails[ix.in_arcs[ix.in_ptr[u] : ix.in_ptr[u + 1]]],
                a[ix.in_arcs[ix.in_ptr[u] : ix.in_ptr[u + 1]]],
            ),
        )
        slack_err = (ix.n_hybrid + 1) * q
        for _ in range(MAX_REPAIRS + 1):
            meet, via = min(((fw.label[v] + b, v) for v, b in bw.label.items() if v in fw.label), default=(np.inf, -1))
            src = _by_node(fw.frontier(), lambda e: [int(ix.head_node[e])], lambda e, d: d, q)
            tgt = _by_node(bw.frontier(), ix.tail_nodes, lambda g, b: float(c[g]) + b, q)
            found = None
            if src and tgt:
                res = self._query().run_multi(
                    [(j, d) for j, (d, _) in src.items()], [(j, d) for j, (d, _) in tgt.items()]
                )
                try:  # the walk's hybrid arcs; its end nodes from them (a path's list is built on each access)
                    if res.distance is not None:
                        arcs = np.asarray(res.arc_path, dtype=np.int64)
                        ends = (ix.arc_tail[arcs[0]], ix.arc_head[arcs[-1]]) if len(arcs) else (res.node_path[0],) * 2
                        found = (ends[0], ends[1], arcs)
                finally:
                    del res
            if found is None:  # no junction walk joins the two ends: only the exact meets remain
                if via < 0:
                    ids = lg.network.edge_ids
                    raise UnreachableError(f"goal edge {ids[t]!r} is unreachable from start edge {ids[s]!r}")
                return self._finish(fw.chain(via) + bw.chain(via)[-2::-1])
            e, g = src[int(found[0])][1], tgt[int(found[1])][1]
            walk = ix.arc_edge[found[2]]
            lower = fw.label[e] + float(c[walk].sum()) + float(c[g]) + bw.label[g]
            if meet <= lower - slack_err:  # an exact meet is certified below every walk between the frontiers
                return self._finish(fw.chain(via) + bw.chain(via)[-2::-1])
            mid = np.concatenate([[e], walk, [g]]).astype(np.int64)
            k = ix.turn_positions(mid)
            bad = np.flatnonzero(k < 0)
            if not len(bad) and len(walk) < ix.n_hybrid:
                real = fw.label[e] + float(a[k].sum()) + bw.label[g]
                if real - lower > q:  # turn terms along the walk: not certified
                    break
                if meet <= real:
                    return self._finish(fw.chain(via) + bw.chain(via)[-2::-1])
                return self._finish(fw.chain(e)[:-1] + mid.tolist() + bw.chain(g)[-2::-1])
            if not len(bad) or 0 < bad[0] < len(k) - 1:  # a forbidden turn inside the walk (or a non-simple walk)
                break
            if bad[0] == 0:  # the walk turns illegally out of a start-side frontier edge: settle it
                fw.settle_until(e, 2 * len(fw.settled))
            else:
                bw.settle_until(g, 2 * len(bw.settled))
        self.fallbacks += 1
        if self._fallback_router is None:
            self._fallback_router = self.fallback()
        route: Route = self._fallback_router.route(s, t)
        return route

    @property
    def error_bound(self) -> float:
        """How much more than the optimum a returned route may cost: :attr:`junction_bound`, or the fallback
        router's bound where larger once it has answered a query."""
        fb = self._fallback_router
        return self.junction_bound if fb is None else max(self.junction_bound, float(fb.error_bound))

    def _finish(self, path_list: list[int]) -> Route:
        path = np.asarray(path_list, dtype=np.int64)
        if self.node_weights is not None:
            return Route(path, float(self.node_weights[path].sum()), "cch")
        return Route(path, float(self.arc_weights[self.index.turn_positions(path)].sum()), "cch")


#: how many times a query settles a frontier edge at either end to repair a forbidden turn next to it before it
#: falls back (module doc)
MAX_REPAIRS = 12


class _EndSearch:
    """A Dijkstra on the line graph from one end of a query, forward from the start over the turns or backward from
    the goal over the reversed turns (``step(u)``: the neighbours of ``u`` and the turns' weights), settled only as
    far as :meth:`settle_until` asks.  Settled labels are exact; a frontier edge's label is its least cost over a
    path whose other edges are all settled."""

    def __init__(self, root: int, step: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> None:
        self.step = step
        self.label: dict[int, float] = {root: 0.0}
        self.pred: dict[int, int] = {root: -1}
        self.settled: set[int] = set()
        self.heap: list[tuple[float, int]] = [(0.0, root)]
        self.settle_until(root)

    def settle_until(self, v: int, at_least: int = 0) -> None:
        """Settle edges in label order until ``v`` is settled and at least ``at_least`` are (or nothing is left):
        doubling the settled set per repair, a U-turn ban that forces a long way round (a motorway carriageway to
        its next interchange) takes a logarithmic number of repairs."""
        import heapq

        while self.heap:
            d, u = heapq.heappop(self.heap)
            if u in self.settled or d > self.label[u]:
                continue
            self.settled.add(u)
            nbrs, ws = self.step(u)
            for x, w in zip(nbrs.tolist(), ws.tolist(), strict=True):
                nd = d + w
                if nd < self.label.get(x, np.inf):
                    self.label[x], self.pred[x] = nd, u
                    heapq.heappush(self.heap, (nd, x))
            if v in self.settled and len(self.settled) >= at_least:
                return

    def frontier(self) -> list[tuple[int, float]]:
        """``(edge, label)`` of every labelled edge not settled."""
        return [(u, d) for u, d in self.label.items() if u not in self.settled]

    def chain(self, v: int) -> list[int]:
        """The edges from the root to ``v`` along the search's predecessors (root first)."""
        out = [v]
        while self.pred[out[-1]] >= 0:
            out.append(self.pred[out[-1]])
        return out[::-1]


def _by_node(
    frontier: list[tuple[int, float]],
    nodes: Callable[[int], list[int]],
    offset: Callable[[int, float], float],
    q: float,
) -> dict[int, tuple[int, int]]:
    """Frontier edges as CCH sources or targets: hybrid-graph node -> (least integer distance ``round(offset / q)``
    of the edges at it, that edge)."""
    out: dict[int, tuple[int, int]] = {}
    for e, d in frontier:
        k = int(round(offset(e, d) / q))
        for j in nodes(e):
            if j not in out or k < out[j][0]:
                out[j] = (k, e)
    return out


__all__ = ["JUNCTION_MIN_NODES", "TURN_FREE_RTOL", "JunctionCCHIndex", "JunctionRouter", "junction_order"]
