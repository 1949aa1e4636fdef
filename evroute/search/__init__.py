"""Compiled searches on the line graph for the country scale (issue 39): lazily sampled Thompson rounds and reach.

Two engines, compiled with numba (``cache=True``: the first call in a fresh environment compiles them,
:data:`COMPILE_NOTE`):

* :class:`LazyThompsonEngine`: one Thompson-sampling round of the independent conjugate Gaussian model
  (:class:`ConjugateNormalState`, the BI model) by a **bidirectional Dijkstra** that draws the sample of an edge only
  when the search first touches it.  The posterior of edge ``e`` is ``N(m_e, v_e)`` with ``v_e = 1 / (1/s0_e^2 +
  n_e/s_n,e^2)`` and ``m_e = v_e (mu0_e/s0_e^2 + S_e/s_n,e^2)``; its Thompson draw ``m_e + sqrt(v_e) z_e`` minus the
  potential ``p_e`` is rectified into the oracle weight ``w_e = max(E[max(0, N(m_e + sqrt(v_e) z_e - p_e,
  s_n,e^2))], MIN_WEIGHT_WH)`` exactly as :meth:`evroute.policies.IndexPolicy.weights` does.  The standard normal
  ``z_e`` is a *counter-based* number of ``(round key, e)`` (:func:`standard_normals`: splitmix64 hashing and
  Box-Muller), so it does not depend on the order in which the search visits edges: the lazily drawn weights are the
  weights of all edges (:func:`thompson_weights`) read where the search needs them, each drawn once per round and
  reused, and the route is the one a full Dijkstra finds on those weights.  The posteriors are independent, so the
  weights the search never reads need never be drawn: the round is exact.
  The bandit uses it for BI Thompson rounds from :data:`evroute.bandit.LAZY_TS_MIN_ARMS` edges and leaves it for the
  full draw when a round's two searches would settle more than :data:`evroute.bandit.LAZY_TS_MAX_SHARE` of the nodes:
  a settled node costs about 0.4 us at a million edges on an idle core (each draw and both searches' labels read
  scattered memory: 3.6 ms per 1% of the nodes), against 23-48 ms for a round that draws every edge
  (:mod:`evroute.search.full_draw`), so the lazy search wins on trips whose two balls of half the route's cost are
  small (below about 6% of the nodes: 5 of 10 random trips at a million edges) and loses on cross-city routes
  (``docs/scale_rounds.md``).
* :func:`one_to_all`: Dijkstra from one node to every node (or until a target is final) on a CSR graph with
  non-negative arc weights, by buckets: Dial's algorithm where every arc is at least twice the bucket width, label
  correcting inside a bucket otherwise; the same labels as SciPy's, bit for bit.  :func:`reduced_one_to_all` runs it
  on the line graph renamed in a cache-friendly order (:mod:`evroute.search.order`), the arcs computed in compiled
  code: at a million edges about twice as many arcs per millisecond as SciPy's Dijkstra (``docs/scale_rounds.md``).
  Reach splits it: :func:`reduced_arcs` once per belief (in the spatial order), then :func:`ordered_one_to_all` per
  start (``docs/reach_profile.md``).

Rounds that draw every edge (cross-city routes, where both balls of the lazy search would cover most of the graph)
run in compiled passes from the posterior to the route: :mod:`evroute.search.full_draw`, whose route is searched on
the hybrid junction graph from several sources (:mod:`evroute.search.junction`: a third of the line graph's arcs),
or by the line graph's node-weight bucket search :func:`ordered_node_route` where that graph does not exist or its
least walk is not a legal route (the bucket kernels are in :mod:`evroute.search.bucket_kernels`).

Without numba (:func:`numba_available` False) neither engine exists and the callers keep SciPy's Dijkstra.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import LineGraph
from evroute.oracle import Route

if TYPE_CHECKING:
    from evroute.search.order import SearchOrder

#: what the first call costs when numba's cache is empty (measured on the 2-core benchmark machine, CPU time)
COMPILE_NOTE = (
    "about 17 s of CPU for all kernels on the loaded 2-core benchmark machine (14 s the bidirectional search), once "
    "per installation; later processes load them from numba's cache in about 1 s (mostly importing numba)"
)


def numba_available() -> bool:
    """Whether the compiled engines exist (numba installed; importing it costs about a second, so it is imported
    only by the first engine built)."""
    return importlib.util.find_spec("numba") is not None


@functools.cache
def _kernels() -> Any:
    """The compiled kernels' module (imports numba)."""
    if not numba_available():
        raise ParameterError("the compiled search engines need numba (pip install numba)")
    from evroute.search import kernels

    return kernels


def _key(key: int) -> np.uint64:
    if not 0 <= int(key) < 2**64:
        raise ParameterError(f"a round key is an integer in [0, 2^64), got {key}")
    return np.uint64(int(key))


def standard_normals(key: int, idx: np.ndarray) -> np.ndarray:
    """``(k,)`` the counter-based standard normals of ``(key, idx[i])`` (the same number for the same pair, whatever
    else is drawn)."""
    K = _kernels()
    i = np.ascontiguousarray(idx, dtype=np.int64)
    out = np.empty(len(i))
    K.normals_kernel(_key(key), i, out)
    return out


def rectified_mean(mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``(k,)`` the compiled ``E[max(0, N(mu, var))]`` of the engines (agrees with
    :func:`evroute.oracle.rectified_gaussian_mean` to about ``a^2 eps`` relative, ``a = mu / sqrt(var)``)."""
    K = _kernels()
    m = np.ascontiguousarray(mu, dtype=np.float64)
    v = np.ascontiguousarray(np.broadcast_to(var, m.shape), dtype=np.float64)
    out = np.empty(len(m))
    K.rect_kernel(m, v, out)
    return out


@dataclass(frozen=True)
class ConjugateNormalState:
    """Independent conjugate Gaussian posteriors of ``E`` edges (all ``(E,)`` float64, Wh and Wh^2): prior mean and
    variance, observation count and sum, observation-noise variance (the BI model's statistics, read, never copied)."""

    prior_mean: np.ndarray
    prior_var: np.ndarray
    count: np.ndarray
    total: np.ndarray
    noise_var: np.ndarray

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.prior_mean, self.prior_var, self.count, self.total, self.noise_var)


def _potential(potential_wh: np.ndarray | None, n: int) -> np.ndarray:
    if potential_wh is None:
        return np.zeros(0)
    p = np.asarray(potential_wh, dtype=np.float64)
    if p.shape != (n,):
        raise ParameterError(f"the potential must have shape ({n},), got {p.shape}")
    return p


def thompson_weights(state: ConjugateNormalState, key: int, potential_wh: np.ndarray | None = None) -> np.ndarray:
    """``(E,)`` every edge's oracle weight in the round of ``key`` (Wh; module doc): the reference the lazy search
    reads from."""
    K = _kernels()
    arrs = state.arrays()
    out = np.empty(len(arrs[0]))
    K.weights_kernel(_key(key), *arrs, _potential(potential_wh, len(out)), out)
    return out


class LazyThompsonEngine:
    """Thompson-sampling rounds of a :class:`ConjugateNormalState` on one line graph by a bidirectional Dijkstra with
    lazily drawn weights (module doc).

    Why it is exact.  The forward search labels ``df(v)`` = the least sum of weights of a route's edges after the
    start up to and including ``v``; the backward search labels ``db(u)`` = the least sum of weights of the edges
    after ``u`` up to and including the goal, i.e. Dijkstra on the reversed turns with the weight of a turn's head.
    Every turn ``u -> v`` seen from a labelled end gives the candidate ``df(u) + w_v + db(v)``; ``mu`` is the least.
    With non-negative weights, once the two heaps' least keys sum to at least ``mu`` no route through an unsettled
    node can cost less (Goldberg & Harrelson's stopping rule for bidirectional Dijkstra), so ``w_start + mu`` is the
    minimum and the recorded turn joins the two halves into a minimum route.  A weight is the pure function of
    ``(round key, edge)`` and the posterior statistics, so whether it was drawn while searching or for all edges at
    once (:func:`thompson_weights`) it is the same number.

    Both searches keep their frontier in an indexed 4-ary heap (decrease-key, each node at most once).  Per round only
    the touched nodes are written and, at the end, reset (the search keeps a list of them), so nothing of size ``E``
    is cleared or allocated per round (state: about 70 bytes per edge and 4 per turn, allocated once).

    Args:
        linegraph: the line graph whose turns are the arcs (its sorted CSR pattern).
    """

    def __init__(self, linegraph: LineGraph) -> None:
        self._k = _kernels()
        self.linegraph = linegraph
        indptr, heads, _ = linegraph.arc_pattern()
        n, c = linegraph.n_nodes, len(heads)
        if c >= 2**31:
            raise ParameterError(f"{c} turns exceed the int32 indices of the compiled search")
        self.n = n
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.heads = np.ascontiguousarray(heads, dtype=np.int32)
        # reverse CSR (the turns grouped by head): SciPy's O(N + C) CSR -> CSC conversion
        rev = sp.csr_matrix((np.ones(c, dtype=np.int8), heads, indptr), shape=(n, n)).tocsc()
        self.rindptr = np.ascontiguousarray(rev.indptr, dtype=np.int64)
        self.rtails = np.ascontiguousarray(rev.indices, dtype=np.int32)
        self._wv = np.full(n, -1.0)  # this round's weights; -1: not drawn
        unseen = self._k.UNSEEN
        self._posf, self._posb = np.full(n, unseen, dtype=np.int32), np.full(n, unseen, dtype=np.int32)
        self._df, self._db = np.zeros(n), np.zeros(n)
        self._pf, self._pb = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
        self._hfk, self._hbk = np.empty(n), np.empty(n)  # an indexed heap holds each node at most once
        self._hfv, self._hbv = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        self._tf, self._tb = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        self._path = np.empty(n, dtype=np.int64)
        self._stats = np.zeros(6, dtype=np.int64)
        #: counters of the last :meth:`route`: ``settled_forward``, ``settled_backward``, ``arcs_scanned``, ``draws``
        self.last_stats: dict[str, int] = {}

    def route(
        self,
        state: ConjugateNormalState,
        key: int,
        start: int,
        goal: int,
        potential_wh: np.ndarray | None = None,
        *,
        max_settled: int | None = None,
    ) -> Route | None:
        """The minimum-weight route under the round-``key`` weights (``cost`` in Wh, start and goal included), or
        ``None`` when the two searches would settle more than ``max_settled`` nodes (default: no limit).

        Raises:
            ParameterError: an index or a statistic's shape is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        n = self.n
        start, goal = int(start), int(goal)
        for what, idx in (("start", start), ("goal", goal)):
            if not 0 <= idx < n:
                raise ParameterError(f"{what} edge index {idx} is outside 0..{n - 1}")
        arrs = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in state.arrays())
        if any(a.shape != (n,) for a in arrs):
            raise ParameterError(f"the posterior statistics must have shape ({n},)")
        pot = _potential(potential_wh, n)
        k = _key(key)
        w_start = float(self._k.weight_at(start, self._wv, k, *arrs, pot))
        if start == goal:
            self._wv[start] = -1.0
            self.last_stats = {"settled_forward": 0, "settled_backward": 0, "arcs_scanned": 0, "draws": 1}
            return Route(np.asarray([start]), w_start)
        cost = self._k.bidir_kernel(
            self.indptr, self.heads, self.rindptr, self.rtails, start, goal, k, *arrs, pot, self._wv,
            self._df, self._pf, self._posf, self._hfk, self._hfv, self._tf,
            self._db, self._pb, self._posb, self._hbk, self._hbv, self._tb,
            n + 1 if max_settled is None else int(max_settled), self._path, self._stats,
        )  # fmt: skip
        st = self._stats
        self.last_stats = {
            "settled_forward": int(st[1]),
            "settled_backward": int(st[2]),
            "arcs_scanned": int(st[3]),
            "draws": int(st[4]),
        }
        if st[5]:
            return None
        if not math.isfinite(cost):
            ids = self.linegraph.network.edge_ids
            raise UnreachableError(f"goal edge {ids[goal]!r} is unreachable from start edge {ids[start]!r}")
        return Route(self._path[: int(st[0])].copy(), w_start + float(cost))


#: Buckets of :func:`one_to_all`: width ``max(min arc / 2, mean arc / BUCKET_MEAN_PARTS)`` (arcs under twice the
#: width may lower a label inside the bucket being emptied and cost a second scan), at most ``BUCKET_RING`` of them
#: ahead of the current one (a label beyond waits in the farthest)
BUCKET_MEAN_PARTS = 16.0
BUCKET_RING = 1 << 14


def one_to_all(
    indptr: np.ndarray, heads: np.ndarray, data: np.ndarray, start: int, target: int = -1
) -> tuple[np.ndarray, np.ndarray]:
    """Dijkstra from ``start`` over a CSR graph (``indptr (N + 1,)``, ``heads (C,)``, non-negative ``data (C,)``):
    ``(dist (N,), pred (N,))``, ``inf`` and ``-9999`` (SciPy's marker) where unreached, ``pred[start] = -9999``;
    with ``target >= 0`` it may stop once ``target``'s label is final (only its label and route are then complete).

    Buckets (:func:`evroute.search.bucket_kernels.buckets_kernel`: Dial's algorithm where every arc is at least twice
    the width, label correcting inside a bucket otherwise).  Every label ends as the least over the node's in-arcs of
    ``dist[u] + a`` with ``dist[u]`` final, as in any Dijkstra: each label is the rounded sum along some walk and
    rounding is monotone, so that least fixed point is one set of floats and ``dist`` is SciPy's bit for bit; among
    equal-cost alternatives ``pred`` may differ."""
    n = len(indptr) - 1
    for what, idx in (("start", start), ("target", target)):
        if not -1 <= int(idx) < n or (what == "start" and int(idx) < 0):
            raise ParameterError(f"{what} index {idx} is outside 0..{n - 1}")
    data = np.ascontiguousarray(data, dtype=np.float64)
    if len(data) and not (np.all(np.isfinite(data)) and data.min() >= 0.0):
        raise ParameterError("arc weights must be finite and non-negative")
    stats = (float(data.min()), float(data.max()), float(data.mean())) if len(data) else (0.0, 0.0, 0.0)
    return bucket_search(indptr, heads, data, int(start), int(target), *stats)


def bucket_search(
    indptr: np.ndarray,
    heads: np.ndarray,
    data: np.ndarray,
    start: int,
    target: int,
    lo: float,
    hi: float,
    mean: float,
    *,
    node_weights: bool = False,
    sources: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`one_to_all` on checked arcs whose least, largest and mean weight are ``lo, hi, mean``: ``data`` holds
    the arcs' weights ``(C,)``, or with ``node_weights`` the nodes' ``(N,)`` (an arc weighs its head's).  With
    ``sources = (nodes (k,), labels (k,), preds (k,))`` (arc weights only; ``start`` ignored) the search starts from
    those nodes at those labels and ``pred`` holds the CSR slot of each label's arc, else the source's given pred
    (:func:`evroute.search.bucket_kernels.sources_buckets_kernel`)."""
    _kernels()  # numba is installed
    from evroute.search import bucket_kernels as BK

    n = len(indptr) - 1
    dist = np.full(n, np.inf)
    pred = np.full(n, -9999, dtype=np.int32)
    delta = max(0.5 * lo, mean / BUCKET_MEAN_PARTS)
    if delta <= 0.0:  # every arc is zero: one bucket
        delta = 1.0
    nring = min(int(hi / delta) + 3, BUCKET_RING)
    # one entry per arc and per source (Dial); label correcting may need more: then retry
    entries = len(heads) + 2 + (0 if sources is None else len(sources[0]))
    while True:
        ent = np.empty(2 * entries, dtype=np.int32 if entries < 2**30 else np.int64)
        done = np.zeros(n, dtype=np.uint8)
        ip, hd = np.asarray(indptr), np.asarray(heads)
        if sources is not None:
            scans = BK.sources_buckets_kernel(
                ip, hd, data, *sources, target, dist, pred, delta, nring, ent, done, 2.0 * delta > lo
            )
        else:
            scans = (BK.node_buckets_kernel if node_weights else BK.buckets_kernel)(
                ip, hd, data, start, target, dist, pred, delta, nring, ent, done, 2.0 * delta > lo
            )
        if scans >= 0:
            return dist, pred
        entries *= 2
        dist.fill(np.inf)
        pred.fill(-9999)


def reduced_arcs(
    linegraph: LineGraph, w: np.ndarray, h: np.ndarray, kind: str = "bfs"
) -> tuple[SearchOrder, np.ndarray, np.ndarray]:
    """``(order, arcs (C,), stats (4,))``: the line graph's turns weighted ``max(w[v] + h[u] - h[v], 0)`` (Wh) in the
    cache-friendly :func:`~evroute.search.order.search_order` of ``kind`` (``order``), and ``stats``: the least arc
    before clipping, the clipped arcs' least, largest and sum.

    Args:
        w: ``(E,)`` node weights; h: ``(E,)`` node potential (zeros for none); kind: the order's kind."""
    from evroute.search.order import search_order

    K = _kernels()
    n = linegraph.n_nodes
    if np.shape(w) != (n,) or np.shape(h) != (n,):
        raise ParameterError(f"the node weights and the potential must have shape ({n},)")
    o = search_order(linegraph, kind)
    arcs = np.empty(len(o.heads))
    wp, hp = o.gather(w, h)
    st = np.zeros(4)  # least before clipping, then the clipped arcs' least, largest and sum
    K.reduced_arcs_kernel(o.indptr, o.heads, wp, hp, arcs, st)
    if not np.all(np.isfinite(st)) and len(arcs):
        raise ParameterError("the node weights and the potential must be finite")
    return o, arcs, st


def reduced_one_to_all(
    linegraph: LineGraph, w: np.ndarray, h: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """One-to-all over the line graph's turns weighted ``max(w[v] + h[u] - h[v], 0)`` (Wh), in the cache-friendly
    :func:`~evroute.search.order.search_order`: ``(dist (E,), pred (E,), least)`` in the original node names, as
    :func:`one_to_all` gives them on the arcs of :func:`evroute.driver.paths.reweight` (the same numbers), and the
    least arc before clipping (the caller's test of exactness).

    Args:
        w: ``(E,)`` node weights; h: ``(E,)`` node potential (zeros for none); start: the source node."""
    n = linegraph.n_nodes
    if not 0 <= int(start) < n:
        raise ParameterError(f"start index {start} is outside 0..{n - 1}")
    o, arcs, st = reduced_arcs(linegraph, w, h)
    dist, pred = ordered_one_to_all(o, arcs, st, start)
    dist, pred = o.to_original(dist, pred)
    return dist, pred, float(st[0])


def ordered_one_to_all(
    order: SearchOrder, arcs: np.ndarray, stats: np.ndarray, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`one_to_all` from original node ``start`` over ``arcs`` and ``stats`` of :func:`reduced_arcs`:
    ``(dist (E,), pred (E,))`` in the NEW names of ``order``."""
    c = max(len(arcs), 1)
    s = int(order.inv[int(start)])
    return bucket_search(order.indptr, order.heads, arcs, s, -1, stats[1], stats[2], stats[3] / c)


def node_weighted_route(linegraph: LineGraph, weights: np.ndarray, start: int, goal: int) -> Route:
    """The minimum-weight route for non-negative node ``weights (E,)`` (Wh), as
    :meth:`evroute.oracle.RouteOracle.shortest_route` finds it: the same cost, bit for bit (:func:`one_to_all`'s
    labels, start's weight added last), and the same route unless two routes cost exactly the same; by the bucket
    search on the cache-friendly order, stopped once the goal is final.

    Raises:
        ParameterError: a weight is negative or not finite, or an index is out of range.
        UnreachableError: ``goal`` cannot be reached from ``start``.
    """
    from evroute.search.order import search_order

    n = linegraph.n_nodes
    start, goal = int(start), int(goal)
    for what, idx in (("start", start), ("goal", goal)):
        if not 0 <= idx < n:
            raise ParameterError(f"{what} edge index {idx} is outside 0..{n - 1}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ParameterError(f"weights must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or w.min() < 0:
        raise ParameterError("oracle weights must be finite and non-negative")
    if start == goal:
        return Route(np.asarray([start]), float(w[start]))
    o = search_order(linegraph)
    return ordered_node_route(linegraph, o, w[o.perm], start, goal, (float(w.min()), float(w.max()), float(w.mean())))


def ordered_node_route(
    linegraph: LineGraph, order: SearchOrder, wp: np.ndarray, start: int, goal: int, stats: tuple[float, float, float]
) -> Route:
    """:func:`node_weighted_route` on checked non-negative node weights ``wp (E,)`` already in the new names of
    ``order`` (``wp[i]`` weighs original node ``order.perm[i]``), whose least, largest and mean are ``stats``;
    ``start`` and ``goal`` are original names (checked, distinct).  The arcs carry their heads' weights, so the nodes'
    least and largest bound theirs (all the buckets need) and the search reads ``wp`` directly (no per-arc array)."""
    s, g = int(order.inv[start]), int(order.inv[goal])
    dist, pred = bucket_search(order.indptr, order.heads, wp, s, g, *stats, node_weights=True)
    if not math.isfinite(dist[g]):
        ids = linegraph.network.edge_ids
        raise UnreachableError(f"goal edge {ids[goal]!r} is unreachable from start edge {ids[start]!r}")
    path = [g]
    while path[-1] != s:
        path.append(int(pred[path[-1]]))
    return Route(order.perm[np.asarray(path[::-1], dtype=np.int64)], float(wp[s] + dist[g]))


def bidirectional_share(linegraph: LineGraph, start: int, goal: int) -> float:
    """Geometric estimate of the share of line-graph nodes that a bidirectional search from ``start`` to ``goal``
    settles: the nodes within half the straight-line distance between the two ends of either end, counted once per
    ball as the search counts them (so up to 2); a node is placed at its edge's first polyline point (lon/lat in an
    equirectangular projection: one gather, no per-edge work).

    Costs roughly proportional to length make each search's ball about a disc of half the route's length, so this
    approximates what :class:`LazyThompsonEngine` settles before the two searches meet: on the benchmark's
    cross-city route A, 0.784 estimated against 0.82 settled at 100k edges and 0.783 against 0.87 at a
    million (``docs/scale_rounds.md``).  It only chooses an engine (the bandit's cap on the lazy search stays the
    exact backstop)."""
    from evroute.network.polylines import as_polylines

    n = linegraph.n_nodes
    if not (0 <= start < n and 0 <= goal < n):
        raise ParameterError(f"start and goal must be line-graph nodes in [0, {n}), got {start} and {goal}")
    lines = as_polylines(linegraph.network.geometry)
    xy = lines.xy[lines.offsets[:-1]]
    x = xy[:, 0] * math.cos(math.radians(float(np.mean(xy[:, 1]))))
    y = xy[:, 1]
    r2 = 0.25 * ((x[start] - x[goal]) ** 2 + (y[start] - y[goal]) ** 2)
    near_s = (x - x[start]) ** 2 + (y - y[start]) ** 2 <= r2
    near_g = (x - x[goal]) ** 2 + (y - y[goal]) ** 2 <= r2
    return float((np.count_nonzero(near_s) + np.count_nonzero(near_g)) / n)
