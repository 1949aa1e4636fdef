"""Route oracles on the line graph: minimum-weight routes from a start edge to a goal edge.

A route is a path ``start = e_0, e_1, ..., e_k = goal`` in the line graph (each step a legal turn);
its cost is the sum of the node weights ``w[e_0] + ... + w[e_k]`` (the start and goal edges are driven).

* :class:`RouteOracle` is the bandit's hot path: non-negative weights, Dijkstra in compiled code
  (``scipy.sparse.csgraph``) on a CSR matrix whose arc ``e1 -> e2`` carries ``w[e2]``; the sparsity
  structure is built once and only the data array is refreshed per call.
* :func:`optimal_route` is the regret reference: the TRUE expected energies may be negative
  (regenerative braking).  Without a reachable negative cycle it is exact by Bellman-Ford/Johnson
  (``scipy.sparse.csgraph.johnson``).  If a negative-energy cycle is reachable, a "shortest walk" does
  not exist (driving the cycle forever lowers the energy without bound), so routes are what the
  bandit can choose: simple paths in the line graph (no road edge driven twice).  The best simple path
  is then found exactly by an integer program (``scipy.optimize.milp``/HiGHS) with lazily added cycle
  elimination constraints (``on_negative_cycle="exact"``; NP-hard in general: fine on small graphs, it
  can take hours on the paper's Monaco environment, which holds hundreds of negative cycles), or a
  :class:`NegativeCycleError` is raised (``"raise"``), or (``"rectified"``) the reference is the route the
  index oracle itself converges to with perfect knowledge: Dijkstra on the rectified true energies
  ``E[max(0, N(f_e, varsigma^2))]`` (the rectification of Algorithm 2 applied to the truth).  See
  ``docs/regret.md`` for how often each case occurs on our networks.
* :func:`best_known_route` is the reference when no exact optimum can be certified: the cheapest route, by TRUE
  energy, among the rectified references and the ``k`` shortest simple routes under the clipped reduced costs.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse.csgraph import NegativeCycleError as _ScipyNegativeCycle
from scipy.sparse.csgraph import dijkstra, johnson
from scipy.special import erfcx, ndtr

from evroute.errors import DataError, NegativeCycleError, ParameterError, UnreachableError
from evroute.linegraph import LineGraph

#: route methods that certify the minimum-energy route (the others are the best route known)
EXACT_METHODS = frozenset({"dijkstra", "johnson", "milp", "dijkstra-reduced"})


#: Smallest oracle weight (Wh): keeps weights strictly positive when the rectified mean underflows.
MIN_WEIGHT_WH = 1e-12


#: from here on ``scipy.special.ndtr`` returns exactly 1.0 in float64 (``1 - erfc(9 / sqrt 2) / 2`` rounds to 1;
#: checked in tests/test_oracle.py)
_NDTR_ONE = 9.0


def rectified_gaussian_mean(mean: np.ndarray, var: np.ndarray | float) -> np.ndarray:
    """``E[max(0, X)]`` for ``X ~ N(mean, var)``, elementwise, stable for very negative ``mean / std``.

    ``E[max(0, X)] = s (phi(a) + a Phi(a))`` with ``a = mean / s``; for ``a < 0`` it is evaluated as
    ``s exp(-a^2/2) (1/sqrt(2 pi) + a/2 erfcx(-a/sqrt(2)))`` to avoid cancellation.
    ``var = 0`` gives ``max(0, mean)``.
    """
    mean = np.asarray(mean, dtype=np.float64)
    s = np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))
    shape = np.broadcast_shapes(mean.shape, s.shape)
    mean, s = np.broadcast_to(mean, shape), np.broadcast_to(s, shape)
    out = np.maximum(mean, 0.0)  # the value where s == 0
    live = s > 0
    a = mean[live] / s[live]
    sd = s[live]
    pos = a >= 0
    res = np.empty_like(a)
    # each formula only on its own half (elementwise, so the same numbers as on the whole array; half the work)
    ap, sp_ = a[pos], sd[pos]
    cdf = np.ones_like(ap)  # ndtr(a) is exactly 1.0 from a = 9 (float64); the slowest call here, skipped there
    small = ap < _NDTR_ONE
    cdf[small] = ndtr(ap[small])
    res[pos] = sp_ * (np.exp(-0.5 * ap**2) / math.sqrt(2 * math.pi) + ap * cdf)
    neg = ~pos
    an, sn = a[neg], sd[neg]
    res[neg] = sn * np.exp(-0.5 * an**2) * (1 / math.sqrt(2 * math.pi) + 0.5 * an * erfcx(-an / math.sqrt(2)))
    out[live] = np.maximum(res, 0.0)
    return out


@dataclass(frozen=True)
class Route:
    """A route as line-graph node (= road edge) indices, with its cost under the weights used."""

    edges: np.ndarray
    cost: float
    method: str = "dijkstra"  # dijkstra | johnson | milp | dijkstra-reduced | rectified | best-known

    @property
    def exact(self) -> bool:
        """Whether the route is a certified minimum-energy route (else the best route known)."""
        return self.method in EXACT_METHODS

    def __len__(self) -> int:
        return len(self.edges)


def _check_node(lg: LineGraph, idx: int, what: str) -> int:
    if not 0 <= int(idx) < lg.n_nodes:
        raise ParameterError(f"{what} edge index {idx} is outside 0..{lg.n_nodes - 1}")
    return int(idx)


def _backtrack(pred: np.ndarray, start: int, goal: int) -> np.ndarray:
    path = [goal]
    node = goal
    while node != start:
        node = int(pred[node])
        if node < 0:  # pragma: no cover - guarded by the distance check
            raise UnreachableError("route reconstruction failed")
        path.append(node)
    return np.asarray(path[::-1], dtype=np.int64)


class RouteOracle:
    """Dijkstra shortest routes with non-negative edge weights on a fixed line graph.

    Args:
        linegraph: the line graph; its adjacency structure is reused for every query.
    """

    def __init__(self, linegraph: LineGraph) -> None:
        self.linegraph = linegraph
        # the line graph's sorted CSR pattern, shared by every oracle on it (read-only; no copy of the turns per oracle)
        indptr, heads, tails = linegraph.arc_pattern()
        n = linegraph.n_nodes
        self._graph = sp.csr_matrix((np.ones(len(heads)), heads, indptr), shape=(n, n))
        self._heads = heads
        #: ``(C,)`` tail edge of every arc (turn), in the order :meth:`shortest_route_arcs` reads its weights
        self.arc_tails = tails

    @functools.cached_property
    def arc_heads(self) -> np.ndarray:
        """``(C,)`` head edge of every arc (turn), int64, in the order of :attr:`arc_tails` (made on first use)."""
        return self._heads.astype(np.int64)

    def shortest_route(self, weights: np.ndarray, start: int, goal: int) -> Route:
        """Minimum-weight route from ``start`` to ``goal`` for non-negative node ``weights`` ``(E,)``.

        Raises:
            ParameterError: a weight is negative or not finite, or an index is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        lg = self.linegraph
        start, goal = _check_node(lg, start, "start"), _check_node(lg, goal, "goal")
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (lg.n_nodes,):
            raise ParameterError(f"weights must have shape ({lg.n_nodes},), got {w.shape}")
        if not np.all(np.isfinite(w)) or w.min() < 0:
            raise ParameterError("oracle weights must be finite and non-negative")
        if start == goal:
            return Route(np.asarray([start]), float(w[start]))
        self._graph.data = w[self._heads]
        dist, pred = dijkstra(self._graph, directed=True, indices=start, return_predecessors=True)
        if not np.isfinite(dist[goal]):
            raise UnreachableError(
                f"goal edge {lg.network.edge_ids[goal]!r} is unreachable from start edge {lg.network.edge_ids[start]!r}"
            )
        return Route(_backtrack(pred, start, goal), float(w[start] + dist[goal]))

    def shortest_route_arcs(self, arc_weights: np.ndarray, start: int, goal: int) -> Route:
        """Minimum-weight route from ``start`` to ``goal`` for non-negative ARC weights ``(C,)``: the weight of turn
        ``c`` is charged when the route takes it (arcs in the order of :attr:`arc_tails` / :attr:`arc_heads`).

        ``cost`` is the sum of the weights of the route's ``len(edges) - 1`` turns (0 when ``start == goal``).

        Raises:
            ParameterError: a weight is negative or not finite, or an index is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        lg = self.linegraph
        start, goal = _check_node(lg, start, "start"), _check_node(lg, goal, "goal")
        w = np.asarray(arc_weights, dtype=np.float64)
        if w.shape != (len(self._heads),):
            raise ParameterError(f"arc weights must have shape ({len(self._heads)},), got {w.shape}")
        if not np.all(np.isfinite(w)) or (len(w) and w.min() < 0):
            raise ParameterError("oracle weights must be finite and non-negative")
        if start == goal:
            return Route(np.asarray([start]), 0.0)
        self._graph.data = w
        dist, pred = dijkstra(self._graph, directed=True, indices=start, return_predecessors=True)
        if not np.isfinite(dist[goal]):
            raise UnreachableError(
                f"goal edge {lg.network.edge_ids[goal]!r} is unreachable from start edge {lg.network.edge_ids[start]!r}"
            )
        return Route(_backtrack(pred, start, goal), float(dist[goal]))


def route_cost(weights: np.ndarray, edges: np.ndarray) -> float:
    """Sum of node ``weights`` over a route's ``edges``."""
    return float(np.asarray(weights)[np.asarray(edges, dtype=np.int64)].sum())


def is_valid_route(linegraph: LineGraph, edges: np.ndarray) -> bool:
    """True if consecutive edges of ``edges`` are legal turns and no edge repeats."""
    e = np.asarray(edges, dtype=np.int64)
    if len(np.unique(e)) != len(e):
        return False
    adj = linegraph.adjacency
    return all(adj[int(a), int(b)] != 0 for a, b in zip(e[:-1], e[1:], strict=True))


def optimal_route(
    linegraph: LineGraph,
    energies_wh: np.ndarray,
    start: int,
    goal: int,
    *,
    on_negative_cycle: str = "exact",
    noise_var: float | np.ndarray | None = None,
    potential_wh: np.ndarray | None = None,
    max_cut_rounds: int = 500,
    time_limit_s: float = 600.0,
    node_limit: int | None = None,
) -> Route:
    """Exact minimum-energy route for real-valued (possibly negative) edge energies ``(E,)`` in Wh.

    Args:
        on_negative_cycle: what to do when a negative cycle is reachable from ``start``: ``"exact"``
            (default) the best simple route by integer programming; ``"raise"``: raise
            :class:`NegativeCycleError`; ``"rectified"``: Dijkstra on ``E[max(0, N(f, noise_var))]``.
        noise_var: observation-noise variance (Wh^2), scalar or ``(E,)``, for ``"rectified"``.
        potential_wh: potential subtracted before rectification (``"rectified"`` only), as the learner's.
        max_cut_rounds, time_limit_s, node_limit: bounds on the integer program (it raises
            :class:`NegativeCycleError` when they are exhausted: optimality could not be certified);
            ``node_limit`` caps the branch-and-bound nodes of each solve.  Cut rounds and nodes are
            deterministic budgets (same result on any machine); the wall-clock limit is not.
    """
    if on_negative_cycle not in ("exact", "raise", "rectified"):
        raise ParameterError(f"on_negative_cycle must be 'exact', 'raise' or 'rectified', got {on_negative_cycle!r}")
    if on_negative_cycle == "rectified" and noise_var is None:
        raise ParameterError("on_negative_cycle='rectified' needs the observation-noise variance")
    lg = linegraph
    w = np.asarray(energies_wh, dtype=np.float64)
    if w.shape != (lg.n_nodes,) or not np.all(np.isfinite(w)):
        raise DataError(f"energies must be {lg.n_nodes} finite values")
    start, goal = _check_node(lg, start, "start"), _check_node(lg, goal, "goal")
    if w.min() >= 0:
        return RouteOracle(lg).shortest_route(w, start, goal)
    if start == goal:
        return Route(np.asarray([start]), float(w[start]))
    adj = lg.adjacency.tocsr()
    g = sp.csr_matrix((w[adj.indices], adj.indices, adj.indptr), shape=adj.shape)
    try:
        dist, pred = johnson(g, directed=True, indices=start, return_predecessors=True)
    except _ScipyNegativeCycle:
        if on_negative_cycle == "raise":
            raise NegativeCycleError(
                "a negative-energy cycle is reachable from the start edge: no minimum-energy walk exists "
                "(use on_negative_cycle='exact' for the best simple route)"
            ) from None
        if on_negative_cycle == "rectified":
            assert noise_var is not None  # checked on entry
            return rectified_reference_route(lg, w, noise_var, start, goal, potential_wh)
        return best_simple_route(
            lg, w, start, goal, max_cut_rounds=max_cut_rounds, time_limit_s=time_limit_s, node_limit=node_limit
        )
    if not np.isfinite(dist[goal]):
        raise UnreachableError(f"goal edge {lg.network.edge_ids[goal]!r} is unreachable from the start edge")
    return Route(_backtrack(pred, start, goal), float(w[start] + dist[goal]), "johnson")


def rectified_reference_route(
    linegraph: LineGraph,
    energies_wh: np.ndarray,
    noise_var: float | np.ndarray,
    start: int,
    goal: int,
    potential_wh: np.ndarray | None = None,
) -> Route:
    """The route the rectified index oracle picks with perfect knowledge; ``cost`` is its TRUE energy (Wh).

    ``potential_wh`` (optional, ``(E,)``) is subtracted before rectification, as in the learner's oracle.
    """
    w = np.asarray(energies_wh, dtype=np.float64)
    var = np.broadcast_to(np.asarray(noise_var, dtype=np.float64), w.shape)
    shifted = w if potential_wh is None else w - np.asarray(potential_wh, dtype=np.float64)
    rect = np.maximum(rectified_gaussian_mean(shifted, var), MIN_WEIGHT_WH)
    r = RouteOracle(linegraph).shortest_route(rect, start, goal)
    return Route(r.edges, route_cost(w, r.edges), "rectified")


def best_known_route(
    linegraph: LineGraph,
    energies_wh: np.ndarray,
    noise_var: float | np.ndarray,
    start: int,
    goal: int,
    potential_wh: np.ndarray | None = None,
    *,
    k: int = 20,
    time_limit_s: float | None = None,
) -> Route:
    """The cheapest route known by TRUE energy when negative cycles rule out an exact optimum; ``cost`` in Wh.

    Candidates: the rectified perfect-knowledge routes (:func:`rectified_reference_route`) without and with
    ``potential_wh``, and the ``k`` shortest simple routes (Yen's algorithm, ``networkx.shortest_simple_paths``)
    under the non-negative weights ``max(f - potential, 0)``, i.e. the true energy with the potential telescoped
    out and only the negative reduced costs clipped (the search stops early after ``time_limit_s`` when given:
    then the result may depend on the machine's speed).  Every candidate is a simple route; the lowest true energy
    wins (``method="best-known"``).
    """
    import networkx as nx

    w = np.asarray(energies_wh, dtype=np.float64)
    cands = [rectified_reference_route(linegraph, w, noise_var, start, goal)]
    if potential_wh is not None:
        cands.append(rectified_reference_route(linegraph, w, noise_var, start, goal, potential_wh))
    pot = np.zeros_like(w) if potential_wh is None else np.asarray(potential_wh, dtype=np.float64)
    clipped = np.maximum(w - pot, 0.0)
    adj = linegraph.adjacency.tocoo()
    g = nx.DiGraph()
    g.add_weighted_edges_from(zip(adj.row.tolist(), adj.col.tolist(), clipped[adj.col].tolist(), strict=True))
    deadline = math.inf if time_limit_s is None else time.monotonic() + time_limit_s
    if start != goal and start in g and goal in g:
        for i, path in enumerate(nx.shortest_simple_paths(g, start, goal, weight="weight")):
            edges = np.asarray(path, dtype=np.int64)
            cands.append(Route(edges, route_cost(w, edges), "yen"))
            if i + 1 >= k or time.monotonic() > deadline:
                break
    best = min(cands, key=lambda r: r.cost)
    return Route(best.edges, best.cost, "best-known")


def has_negative_cycle(linegraph: LineGraph, energies_wh: np.ndarray, start: int) -> bool:
    """Whether a cycle of negative total energy is reachable from edge ``start``."""
    w = np.asarray(energies_wh, dtype=np.float64)
    if w.min() >= 0:
        return False
    adj = linegraph.adjacency.tocsr()
    g = sp.csr_matrix((w[adj.indices], adj.indices, adj.indptr), shape=adj.shape)
    try:
        johnson(g, directed=True, indices=start)
    except _ScipyNegativeCycle:
        return True
    return False


def best_simple_route(
    linegraph: LineGraph,
    energies_wh: np.ndarray,
    start: int,
    goal: int,
    *,
    max_cut_rounds: int = 500,
    time_limit_s: float = 600.0,
    node_limit: int | None = None,
) -> Route:
    """Minimum-energy simple route by a binary integer program with lazy cycle elimination.

    Variables ``x_c`` in {0, 1} per turn ``c = (e1, e2)``; cost ``sum_c x_c w[e2] + w[start]``; flow
    conservation (one unit from ``start`` to ``goal``); at most one entering turn per edge and none
    into ``start`` or out of ``goal``.  Any solution is one route plus disjoint cycles; each cycle ``S``
    found gets the cut ``sum_{c inside S} x_c <= |S| - 1`` and the program is solved again.

    Budgets: at most ``max_cut_rounds`` solves of at most ``node_limit`` branch-and-bound nodes each (deterministic)
    and ``time_limit_s`` seconds of wall time in all (machine-dependent); :class:`NegativeCycleError` when one runs out.
    """
    lg = linegraph
    w = np.asarray(energies_wh, dtype=np.float64)
    t = lg.turns
    n, m = lg.n_nodes, len(t)
    tail, head = t[:, 0], t[:, 1]
    ar = np.arange(m)
    flow = sp.csr_matrix(
        (np.concatenate([np.ones(m), -np.ones(m)]), (np.concatenate([tail, head]), np.concatenate([ar, ar]))),
        shape=(n, m),
    )
    rhs = np.zeros(n)
    rhs[start], rhs[goal] = 1.0, -1.0
    indeg = sp.csr_matrix((np.ones(m), (head, ar)), shape=(n, m))
    upper = np.ones(m)
    upper[(head == start) | (tail == goal)] = 0.0
    constraints = [LinearConstraint(flow, rhs, rhs), LinearConstraint(indeg, 0.0, 1.0)]
    cuts_rows, cuts_ub = _short_negative_cycle_cuts(lg, w)
    cost = w[head]
    deadline = time.monotonic() + time_limit_s
    for _ in range(max_cut_rounds):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        cons = list(constraints)
        if cuts_rows:
            rows = np.concatenate([np.full(len(r), i) for i, r in enumerate(cuts_rows)])
            cols = np.concatenate(cuts_rows)
            cons.append(
                LinearConstraint(
                    sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(cuts_rows), m)),
                    -np.inf,
                    np.asarray(cuts_ub),
                )
            )
        res = milp(
            cost,
            constraints=cons,
            integrality=np.ones(m),
            bounds=Bounds(np.zeros(m), upper),
            options={"time_limit": left, **({} if node_limit is None else {"node_limit": int(node_limit)})},
        )
        if res.status == 2:
            raise UnreachableError(f"goal edge {lg.network.edge_ids[goal]!r} is unreachable from the start edge")
        if res.status != 0:  # a time or node limit inside HiGHS: the incumbent (if any) is not certified optimal
            break
        if res.x is None:
            raise NegativeCycleError(f"integer program for the best simple route failed: {res.message}")
        chosen = np.flatnonzero(res.x > 0.5)
        succ = dict(zip(tail[chosen].tolist(), head[chosen].tolist(), strict=True))
        path = [start]
        while path[-1] != goal:
            path.append(succ.pop(path[-1]))
        if not succ:
            edges = np.asarray(path, dtype=np.int64)
            return Route(edges, route_cost(w, edges), "milp")
        while succ:  # remaining arcs form disjoint cycles: cut each
            first = next(iter(succ))
            cyc = [first]
            nxt = succ.pop(first)
            while nxt != first:
                cyc.append(nxt)
                nxt = succ.pop(nxt)
            s = np.zeros(n, dtype=bool)
            s[cyc] = True
            cuts_rows.append(np.flatnonzero(s[tail] & s[head]))
            cuts_ub.append(len(cyc) - 1.0)
    raise NegativeCycleError(
        f"best simple route not certified within {max_cut_rounds} cycle-elimination rounds / {time_limit_s:g} s "
        "(many negative-energy cycles); use on_negative_cycle='rectified'"
    )


def _short_negative_cycle_cuts(lg: LineGraph, w: np.ndarray) -> tuple[list[np.ndarray], list[float]]:
    """Cycle-elimination cuts for every negative 2-cycle (U-turn pair) and 3-cycle, added up front.

    Most negative cycles of the simulated environments are this short; cutting them before the first
    solve saves many rounds of the lazy loop.
    """
    t = lg.turns
    key = {(int(a), int(b)): i for i, (a, b) in enumerate(t.tolist())}
    rows: list[np.ndarray] = []
    ub: list[float] = []
    for (a, b), i in key.items():
        j = key.get((b, a))
        if j is not None and a < b and w[a] + w[b] < 0:
            rows.append(np.array([i, j]))
            ub.append(1.0)
    adj = lg.adjacency.tocsr()
    for a in map(int, np.flatnonzero(w < 0)):  # a negative 3-cycle contains a negative edge
        for b in adj.indices[adj.indptr[a] : adj.indptr[a + 1]]:
            for c in adj.indices[adj.indptr[b] : adj.indptr[b + 1]]:
                if c != a and b != a and (c, a) in key and w[a] + w[b] + w[c] < 0 and a == min(a, b, c):
                    rows.append(np.array([key[(a, b)], key[(b, c)], key[(c, a)]]))
                    ub.append(2.0)
    return rows, ub
