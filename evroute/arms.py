"""Arms of the bandit: road edges (``--arms edge``) or turns (``--arms turn``).

A route is a path ``e_0, e_1, ..., e_k`` of road edges in the line graph; the bandit's feedback is one energy per
*arm* the route plays, and a route's expected energy is the sum of its arms' truths.

* **Edge arms** (the paper's): arm ``e`` = driving edge ``e``; a route plays its ``k + 1`` edges.  ``A = E`` arms.
* **Turn arms**: arm ``(e, e')`` = driving edge ``e`` *when leaving it into* ``e'``, one arm per legal turn
  (line-graph arc), plus one *terminal* arm ``(e, end)`` per edge for the last edge of a route, whose exit is the
  trip's end rather than a turn.  A route plays its ``k`` turns ``(e_0, e_1), ..., (e_{k-1}, e_k)`` and the
  terminal arm of ``e_k``: ``k + 1`` arms, one per driven edge, as with edge arms.  The *origin* edge ``e_0`` is
  driven in full and is charged through its outgoing turn ``(e_0, e_1)`` (no arm depends on how ``e_0`` was
  entered); a one-edge route (``start == goal``) plays only the terminal arm of its edge.  ``A = C + E`` arms:
  turns ``0 .. C-1`` in the oracle's arc order (sorted by ``e``, then ``e'``), terminal arm of edge ``e`` at
  ``C + e``.

  Why the *outgoing* turn: a traversal's energy depends on how the vehicle leaves the edge (it slows down before
  turning, queues at a stop line or a light, and its kinetic energy at the exit is what the next edge inherits);
  the recorded SUMO traversals know the edge driven next (:mod:`evroute.sumo.record`), so the truth of ``(e, e')``
  is the mean reduced energy of the traversals of ``e`` that continued into ``e'``
  (:meth:`evroute.environments.sumo_replay.SumoReplayEnvironment.arm_truth`).  The terminal arm's truth is the
  edge's own truth (the mean over all its traversals): SUMO recordings drop the partial last edge of each trip, so
  no traversal "ends on ``e``" exists to measure it.

The route oracle for turn arms is one Dijkstra on the line graph with *arc* weights
(:meth:`evroute.oracle.RouteOracle.shortest_route_arcs`) plus the goal's terminal weight.  Non-negative weights give
a simple path, so the turn-arm oracle returns a valid route.

An environment without a turn term gives every turn arm its edge's truth (:meth:`ArmSpace.lift`), so turn-arm routes
cost exactly what edge-arm routes cost there and the exact optimum is the same route.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.csgraph import NegativeCycleError as _ScipyNegativeCycle
from scipy.sparse.csgraph import johnson

from evroute.errors import NegativeCycleError, ParameterError, UnreachableError
from evroute.linegraph import LineGraph
from evroute.oracle import Route, RouteOracle

__all__ = ["ARM_KINDS", "ArmSpace", "make_arms"]

#: ``--arms`` values
ARM_KINDS: tuple[str, ...] = ("edge", "turn")


@dataclass(eq=False)
class ArmSpace:
    """The arms of a line graph and how a route maps to them.

    Attributes:
        kind: ``"edge"`` or ``"turn"``.
        linegraph: the line graph.
        tail: ``(A,)`` the edge each arm drives (edge arms: ``0 .. E-1``).
        head: ``(A,)`` the edge each turn arm leaves into; ``-1`` for terminal arms and for edge arms.
    """

    kind: str
    linegraph: LineGraph
    tail: np.ndarray
    head: np.ndarray
    oracle: RouteOracle = field(repr=False)

    @functools.cached_property
    def _keys(self) -> np.ndarray:
        """``(C,)`` int64 ``tail * E + head`` of every turn, sorted (the oracle's CSR order); made on first use."""
        n = self.linegraph.n_nodes
        return self.oracle.arc_tails * n + self.oracle.arc_heads

    @property
    def n_arms(self) -> int:
        """Number of arms ``A``."""
        return len(self.tail)

    @property
    def n_turns(self) -> int:
        """Number of turn arms ``C`` (0 for edge arms)."""
        return 0 if self.kind == "edge" else len(self.oracle.arc_heads)

    @property
    def terminal(self) -> np.ndarray:
        """``(A,)`` bool: terminal arms (every edge arm counts as one: no turn attached)."""
        return self.head < 0

    def lift(self, edge_values: np.ndarray) -> np.ndarray:
        """``(A,)`` values of arms from ``(E,)`` values of their edges (``edge_values[tail]``)."""
        v = np.asarray(edge_values)
        return v if self.kind == "edge" else v[self.tail]

    def turn_index(self, tails: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """``(k,)`` turn-arm indices of the turns ``tails[i] -> heads[i]`` (:class:`ParameterError` if not legal)."""
        if self.kind == "edge":
            raise ParameterError("edge arms have no turn arms")
        n = self.linegraph.n_nodes
        key = np.asarray(tails, dtype=np.int64) * n + np.asarray(heads, dtype=np.int64)
        keys = self._keys
        pos = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        if len(key) and not np.array_equal(keys[pos], key):
            bad = int(np.flatnonzero(keys[pos] != key)[0])
            a, b = int(np.asarray(tails)[bad]), int(np.asarray(heads)[bad])
            raise ParameterError(f"no legal turn from edge {a} into {b}")
        return pos

    def turn_features(self) -> np.ndarray:
        """``(C, f)`` standardised features of the turn arms in arm order
        (:meth:`evroute.linegraph.LineGraph.turn_features`)."""
        lg = self.linegraph
        t = lg.turns
        feats = lg.turn_features()
        out = np.empty_like(feats)
        out[self.turn_index(t[:, 0], t[:, 1])] = feats
        return out

    def route_arms(self, edges: np.ndarray) -> np.ndarray:
        """``(k + 1,)`` arms a route ``edges`` ``(k + 1,)`` plays (module doc), in driving order."""
        e = np.asarray(edges, dtype=np.int64)
        if self.kind == "edge":
            return e
        return np.concatenate([self.turn_index(e[:-1], e[1:]), [self.n_turns + int(e[-1])]])

    def route_cost(self, arm_values: np.ndarray, edges: np.ndarray) -> float:
        """Sum of ``(A,)`` arm values over the arms route ``edges`` plays."""
        return float(np.asarray(arm_values)[self.route_arms(edges)].sum())

    def shortest_route(self, weights: np.ndarray, start: int, goal: int) -> Route:
        """Minimum-weight route for non-negative ``(A,)`` arm weights: Dijkstra on the line graph (node weights
        for edge arms, arc weights for turn arms, plus the goal's terminal weight); ``cost`` in the weights' units."""
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self.n_arms,):
            raise ParameterError(f"arm weights must have shape ({self.n_arms},), got {w.shape}")
        if self.kind == "edge":
            return self.oracle.shortest_route(w, start, goal)
        c = self.n_turns
        r = self.oracle.shortest_route_arcs(w[:c], start, goal)
        return Route(r.edges, r.cost + float(w[c + int(goal)]))

    def optimal_route(self, truth: np.ndarray, start: int, goal: int) -> Route:
        """The exact minimum-energy route under ``(A,)`` true arm energies (Wh), ``cost`` its energy.

        Non-negative truths: one Dijkstra (method ``dijkstra``).  Negative ones: Johnson's algorithm on the arc
        weights (``johnson``); a reachable negative cycle raises :class:`NegativeCycleError` (no exact optimum).
        """
        w = np.asarray(truth, dtype=np.float64)
        if w.min() >= 0:
            r = self.shortest_route(w, start, goal)
            return Route(r.edges, self.route_cost(w, r.edges), "dijkstra")
        if self.kind == "edge":
            from evroute.oracle import optimal_route

            return optimal_route(self.linegraph, w, start, goal, on_negative_cycle="raise")
        import scipy.sparse as sp

        c = self.n_turns
        n = self.linegraph.n_nodes
        g = sp.csr_matrix((w[:c], (self.oracle.arc_tails, self.oracle.arc_heads)), shape=(n, n))
        try:
            dist, pred = johnson(g, directed=True, indices=int(start), return_predecessors=True)
        except _ScipyNegativeCycle:
            raise NegativeCycleError("a negative-energy cycle of turns is reachable from the start edge") from None
        if not np.isfinite(dist[goal]):
            raise UnreachableError(f"goal edge {int(goal)} is unreachable from the start edge")
        path = [int(goal)]
        while path[-1] != int(start):
            path.append(int(pred[path[-1]]))
        edges = np.asarray(path[::-1], dtype=np.int64)
        return Route(edges, self.route_cost(w, edges), "johnson")


def make_arms(linegraph: LineGraph, kind: str = "edge", oracle: RouteOracle | None = None) -> ArmSpace:
    """The :class:`ArmSpace` of ``kind`` (``edge`` or ``turn``) on ``linegraph`` (:class:`ParameterError` otherwise)."""
    if kind not in ARM_KINDS:
        raise ParameterError(f"arms must be one of {', '.join(ARM_KINDS)}, got {kind!r}")
    oracle = oracle or RouteOracle(linegraph)
    n = linegraph.n_nodes
    if kind == "edge":
        return ArmSpace("edge", linegraph, np.arange(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), oracle)
    tail = np.concatenate([oracle.arc_tails, np.arange(n, dtype=np.int64)])
    head = np.concatenate([oracle.arc_heads, np.full(n, -1, dtype=np.int64)])
    return ArmSpace("turn", linegraph, tail, head, oracle)
