"""Reachable area: the road segments a driver reaches from a start edge, keeping the reserve with probability at
least ``1 - delta``.

What is computed.  Edge ``v`` is reported reachable when the route ``R_v`` found by ONE Dijkstra from the start on
the per-edge quantiles

    q_e = m_e + z sd_e,    sd_e = sqrt(var_e + s_e^2),    z = Phi^-1(1 - delta)

(posterior mean, posterior variance and one traversal's noise of edge ``e``) has ``Q(R_v) = sum_{e in R_v} q_e <= B``
with the energy budget ``B = (c0 - r) C``.

Why this is conservative, for ANY posterior correlation.  The trip energy of a route has standard deviation
``s(R) = sqrt(1^T S 1)`` with ``S = Sigma_RR + diag(s^2)`` a covariance matrix; by Cauchy-Schwarz
``S_ij <= sd_i sd_j``, so ``s(R)^2 <= (sum_i sd_i)^2`` and

    mu(R) + z s(R) <= sum_e (m_e + z sd_e) = Q(R).

So ``Q(R_v) <= B`` implies ``mu(R_v) + z s(R_v) <= B``, i.e. ``P(arrival charge >= reserve) >= 1 - delta`` on route
``R_v`` (Gaussian trip energy, :mod:`evroute.driver.answers`): every reported edge is truly reachable with that
probability.  The converse fails: an edge can be reachable by a route whose edges' errors partly cancel
(``s(R) < sum sd``), which the bound misses; it is tight for perfectly correlated edges and loosest for independent
ones (``sqrt(k)`` vs ``k`` for ``k`` equal edges).  :func:`reachable` also returns ``p_route``, the exact
probability on ``R_v`` under the joint posterior, for the edges asked for (it costs one route covariance each).

Negative quantiles (recuperation) are handled by the reweighting of :mod:`evroute.driver.paths` with the elevation
potential; the quantile route cost of every edge is exact (one Dijkstra over the reweighted arcs) unless some
quantile falls below its edge's potential (noisy learned means on flat roads), where the reduced quantile is
clipped at 0: costs then only over-estimate, so what is reported stays reachable (:attr:`ReachResult.exact`).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse.csgraph import dijkstra
from scipy.special import ndtr, ndtri  # not scipy.stats: its import costs ~0.6 s

from evroute.driver.answers import BatteryState
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import PathEnumerator
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.search import numba_available, ordered_one_to_all

if TYPE_CHECKING:
    from evroute.search.order import SearchOrder

#: From this many edges :func:`reachable` runs its Dijkstra compiled by default (when numba is installed): below it
#: SciPy's is as fast and a one-off query would pay about a second for importing numba.
REACH_COMPILED_MIN_EDGES = 100_000

#: The node order of the compiled reach's search (:mod:`evroute.search.order`): the spatial one, where every node's
#: turns lie a few slots away (15-20% less CPU for a search over every node than the breadth-first order at a
#: million edges)
REACH_ORDER = "spatial"


@dataclass(frozen=True)
class ReachResult:
    """Result of :func:`reachable`.

    Attributes:
        reachable: ``(E,)`` bool, edge reachable with probability ``>= 1 - delta`` (conservative, module doc).
        quantile_wh: ``(E,)`` ``Q(R_v)``, the sum of per-edge quantiles on the best route to each edge (Wh; inf if
            unreachable in the graph).
        pred: ``(E,)`` Dijkstra predecessors (line-graph indices, -9999 at the start / unreached).
        budget_wh: the energy budget ``B`` (Wh).
        edge_mean_wh: ``(E,)`` posterior mean energy of every edge (Wh), summed along the tree by :attr:`mean_wh`.
    """

    reachable: np.ndarray
    quantile_wh: np.ndarray
    pred: np.ndarray
    budget_wh: float
    start: int
    exact: bool = True
    edge_mean_wh: np.ndarray | None = None

    @functools.cached_property
    def mean_wh(self) -> np.ndarray:
        """``(E,)`` posterior mean energy of the quantile route to each edge (Wh; inf if unreached), summed along the
        shortest-path tree on first access (:func:`tree_path_sums`: a third of a reach on a million edges, and most
        callers read a few edges or none)."""
        if self.edge_mean_wh is None:
            raise ParameterError("this reach result was built without the edge means")
        return tree_path_sums(self.pred, self.start, self.edge_mean_wh, np.isfinite(self.quantile_wh))

    def route_to(self, v: int) -> np.ndarray:
        """The quantile route from the start to edge ``v`` (line-graph indices)."""
        out = [int(v)]
        while out[-1] != self.start:
            p = int(self.pred[out[-1]])
            if p < 0:
                raise ParameterError(f"edge index {v} is not reached from the start")
            out.append(p)
        return np.asarray(out[::-1], dtype=np.int64)


def reachable(
    lg: LineGraph,
    belief: RouteBelief,
    start: int,
    battery: BatteryState,
    delta: float = 0.05,
    *,
    h0: np.ndarray | None = None,
    compiled: bool | None = None,
) -> ReachResult:
    """Edges reachable from ``start`` keeping the reserve with probability ``>= 1 - delta`` (module doc).

    ``compiled``: the one Dijkstra by the compiled search (:func:`evroute.search.ordered_one_to_all` over the arcs
    of :func:`reach_arcs`, computed in compiled code once per belief and kept with it; the nodes in a cache-friendly
    order, Dial's buckets; the same distances bit for bit, among equal-cost routes it may keep another predecessor;
    the route costs in the original names in one compiled pass) instead of SciPy's.  ``None`` (default): compiled from
    :data:`REACH_COMPILED_MIN_EDGES` edges when numba is installed (at a million edges ~2.5 times faster than
    SciPy's, ``docs/scale_rounds.md``); smaller networks keep SciPy's (and never import numba).
    """
    if not 0 < delta < 0.5:
        raise ParameterError(f"delta must be in (0, 0.5), got {delta}")
    start = int(start)
    if not 0 <= start < lg.n_nodes:
        raise ParameterError(f"start edge index {start} is outside 0..{lg.n_nodes - 1}")
    if compiled is None:
        compiled = lg.n_nodes >= REACH_COMPILED_MIN_EDGES and numba_available()
    if compiled:  # the arcs of reweight(q, h0, bellman_ford_first=False), computed once per belief in compiled code
        arcs = reach_arcs(lg, belief, delta, h0)
        dist, pred = ordered_one_to_all(arcs.order, arcs.arcs, arcs.stats, start)
        qv, ok, pred = arcs.order.route_costs(dist, pred, arcs.q, arcs.h, start, battery.budget_wh)
        exact = arcs.exact
    else:
        q = _quantiles(belief, delta)
        enum = PathEnumerator(lg, q, h0, exact=False)  # non-negative arcs: clipped quantiles only over-estimate
        dist, pred = dijkstra(enum.graph, directed=True, indices=start, return_predecessors=True)
        h, exact = enum.h, enum.exact
        # node-weighted route cost to v: q[start] + dist(v) - h[start] + h[v]
        qv = np.where(np.isfinite(dist), q[start] + dist - h[start] + h, np.inf)
        ok = qv <= battery.budget_wh
    return ReachResult(ok, qv, pred, battery.budget_wh, start, exact, np.asarray(belief.mean, dtype=np.float64))


def _quantiles(belief: RouteBelief, delta: float) -> np.ndarray:
    """``(E,)`` the per-edge quantiles ``m_e + z sd_e`` (Wh, module doc)."""
    return belief.mean + float(ndtri(1.0 - delta)) * belief.edge_sd()


@dataclass(frozen=True)
class ReachArcs:
    """What every compiled reach on one belief shares (:func:`reach_arcs`).

    Attributes:
        q: ``(E,)`` the per-edge quantiles (Wh); h: ``(E,)`` the node potential of the reweighting (Wh).
        order: the line graph's :class:`~evroute.search.order.SearchOrder`.
        arcs: ``(C,)`` the reduced quantile arcs ``max(q[v] + h[u] - h[v], 0)`` in the order's CSR (Wh).
        stats: ``(4,)`` the least arc before clipping, the clipped arcs' least, largest and sum.
        exact: no arc was clipped (beyond rounding), so every quantile route cost is exact.
        key: the objects they were computed from (line graph, ``h0``, the belief's arrays) and ``(delta, tau^2)``.
    """

    q: np.ndarray
    h: np.ndarray
    order: SearchOrder
    arcs: np.ndarray
    stats: np.ndarray
    exact: bool
    key: tuple[tuple[Any, ...], tuple[float, ...]]


#: the :class:`ReachArcs` last computed for each belief (dropped with it)
_REACH_ARCS: weakref.WeakKeyDictionary[RouteBelief, ReachArcs] = weakref.WeakKeyDictionary()


def reach_arcs(lg: LineGraph, belief: RouteBelief, delta: float, h0: np.ndarray | None) -> ReachArcs:
    """The quantiles and reduced arcs of the compiled :func:`reachable`, computed once per belief, ``delta`` and
    ``h0`` and kept with the belief (45-55 ms of CPU on a million edges; 8 bytes per turn and 8-16 per edge).

    A kept result is reused while the belief holds the very same arrays (``mean``, ``var``, ``noise_var``,
    ``effect_mean``: compared by identity, as a served model's belief replaces them, never writes into them), the
    same ``trip_rel_var`` and the same line graph and ``h0`` objects."""
    from evroute.search import reduced_arcs

    objs = (lg, h0, belief.mean, belief.var, belief.noise_var, belief.effect_mean)
    vals = (float(delta), float(belief.trip_rel_var))
    got = _REACH_ARCS.get(belief)
    if got is not None and got.key[1] == vals and all(a is b for a, b in zip(got.key[0], objs, strict=True)):
        return got
    q = np.ascontiguousarray(_quantiles(belief, delta), dtype=np.float64)
    h = np.zeros_like(q) if h0 is None else np.ascontiguousarray(h0, dtype=np.float64)
    order, arcs, stats = reduced_arcs(lg, q, h, REACH_ORDER)
    exact = not stats[0] < -1e-9 * max(1.0, float(np.abs(q).max()))  # reweight's rounding tolerance
    got = ReachArcs(q, h, order, arcs, stats, exact, (objs, vals))
    _REACH_ARCS[belief] = got
    return got


def reach_phases(
    lg: LineGraph,
    belief: RouteBelief,
    start: int,
    battery: BatteryState,
    delta: float = 0.05,
    *,
    h0: np.ndarray | None = None,
    clock: Callable[[], tuple[float, ...]],
) -> dict[str, dict[str, float]]:
    """The compiled :func:`reachable`'s phases run one by one, each between two readings of ``clock`` (a tuple of
    counters: CPU seconds, system seconds, page faults): ``{phase: {"cpu_s", "sys_s", "faults"}}`` of the differences
    (``studies/bench/reach_profile.py``).  ``quantiles`` and ``reduced arcs`` are what :func:`reach_arcs` keeps per
    belief (computed here afresh every time)."""
    from evroute.search import reduced_arcs

    keys = ("cpu_s", "sys_s", "faults")
    out: dict[str, dict[str, float]] = {}
    last = clock()

    def lap(name: str) -> None:
        nonlocal last
        now = clock()
        out[name] = {k: float(b - a) for k, a, b in zip(keys, last, now, strict=True)}
        last = now

    q = np.ascontiguousarray(_quantiles(belief, delta), dtype=np.float64)
    h = np.zeros_like(q) if h0 is None else np.ascontiguousarray(h0, dtype=np.float64)
    lap("quantiles")
    o, arcs, st = reduced_arcs(lg, q, h, REACH_ORDER)
    lap("reduced arcs")
    dist, pred = ordered_one_to_all(o, arcs, st, start)
    lap("one-to-all")
    cost, ok, pred = o.route_costs(dist, pred, q, h, start, battery.budget_wh)
    ReachResult(ok, cost, pred, battery.budget_wh, start, True, np.asarray(belief.mean, dtype=np.float64))
    lap("costs in the original names")
    return out


def tree_path_sums(pred: np.ndarray, root: int, values: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """``(E,)`` the sum of ``values`` along the tree path from ``root`` to each reached node (``inf`` elsewhere).

    Args:
        pred: ``(E,)`` predecessors of a shortest-path tree (scipy's, negative at the root and unreached nodes).
        root: the tree's root; values: ``(E,)`` per-node values; reached: ``(E,)`` bool, the nodes in the tree.

    Pointer jumping: every reached node holds the sum over its path up to (excluding) its current ancestor and jumps
    to the ancestor's ancestor, so ``ceil(log2(depth))`` vectorized passes of ``O(E)`` replace a walk per node
    (31 ms -> a few ms per reach on Luxembourg; a walk per node is seconds at a million edges).
    """
    n = len(values)
    acc = np.where(reached, np.asarray(values, dtype=np.float64), np.inf)
    anc = np.where(reached, pred, -1).astype(np.int64)
    anc[root] = -1
    live = np.flatnonzero(anc >= 0)
    while len(live):
        a = anc[live]
        acc[live] += acc[a]  # reads the ancestors' sums before this pass writes (fancy indexing copies)
        anc[live] = anc[a]
        live = live[anc[live] >= 0]
    out = np.full(n, np.inf)
    out[reached] = acc[reached]
    return out


def route_probability(belief: RouteBelief, route: np.ndarray, battery: BatteryState) -> float:
    """``P(arrival charge >= reserve)`` on ``route`` under the joint posterior (exact, Gaussian)."""
    mean, var = belief.route_moments(route)
    sd = float(np.sqrt(var))
    if sd == 0:
        return float(mean <= battery.budget_wh)
    return float(ndtr((battery.budget_wh - mean) / sd))


__all__ = [
    "REACH_COMPILED_MIN_EDGES",
    "REACH_ORDER",
    "ReachArcs",
    "ReachResult",
    "reach_arcs",
    "reach_phases",
    "reachable",
    "route_probability",
    "tree_path_sums",
]
