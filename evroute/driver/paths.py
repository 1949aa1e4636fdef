"""Routes in increasing order of a node-weighted cost that may be negative: reweighting plus Yen's k shortest paths.

A route's cost is the sum of its line-graph node weights ``w`` (edge energies, Wh).  Energies can be negative
(recuperation), which Dijkstra cannot take.  With any node function ``h`` the arc weights

    a(u, v) = w[v] + h[u] - h[v]

give every route ``s = e_0 .. e_k = v`` the cost ``w[s] + sum a - h[s] + h[v]``: for a fixed start and goal the order
of routes is unchanged.  :func:`reweight` picks ``h``: first the caller's (``k z_to``, the elevation potential of
:func:`evroute.energy.elevation_potential_wh`, for which ``a(u, v) = w[v] - p_v`` is the reduced cost, ``>= 0`` for
physics energies), and if some ``a`` is still negative, Bellman-Ford distances from a virtual source (Johnson's
reweighting; :class:`~evroute.errors.NegativeCycleError` when a negative cycle exists).

:class:`PathEnumerator` lists simple routes (no edge twice) from ``start`` to ``goal`` in increasing cost: Yen's
algorithm with Lawler's refinement (a route's spur searches start at its deviation index), each spur search one
compiled Dijkstra (``scipy.sparse.csgraph``) with the removed arcs set to infinity and a ``limit`` from a cost
``bound``: routes costing more than ``bound`` are never produced (spur nodes whose root cost plus the
unrestricted distance to the goal already exceed it are skipped), so a caller that can bound the cost of any
better answer stops the enumeration early.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import NegativeCycleError as _ScipyNegativeCycle
from scipy.sparse.csgraph import bellman_ford, dijkstra

from evroute.errors import NegativeCycleError, UnreachableError
from evroute.linegraph import LineGraph


def potential_h(network, vehicle=None) -> np.ndarray:  # network: RoadNetwork, vehicle: VehicleProfile
    """``(E,)`` ``h = k z_to`` (Wh) with ``k = m g eta- / 3600``: :func:`reweight` then turns each arc ``u -> v``
    into the reduced cost ``w[v] + h[u] - h[v] = w[v] - k (z_to(v) - z_from(v)) = w[v] - p_v`` of its head
    (:func:`evroute.energy.elevation_potential_wh`; ``z_to(u) = z_from(v)`` at the shared junction)."""
    from evroute.energy import VehicleProfile

    v = vehicle or VehicleProfile()
    return v.mass_kg * v.gravity_mps2 * v.recuperation_efficiency * np.asarray(network.z_to_m) / 3600.0


def _csr(lg: LineGraph, data: np.ndarray | None = None) -> sp.csr_matrix:
    """The line graph's arcs as a CSR matrix with ``data`` ``(C,)`` (default ones) on the memoised sorted pattern."""
    indptr, heads, _ = lg.arc_pattern()
    n = lg.n_nodes
    return sp.csr_matrix((np.ones(len(heads)) if data is None else data, heads, indptr), shape=(n, n), copy=False)


def reweight(
    lg: LineGraph,
    w: np.ndarray,
    h0: np.ndarray | None = None,
    *,
    clip_on_cycle: bool = False,
    bellman_ford_first: bool = True,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(h (E,), a (C,), exact)``: node function, non-negative arc weights in CSR order (module doc), and whether
    they are exact (False only after clipping).

    Arc weights within ``1e-9`` of the largest ``|w|`` below zero (rounding) are set to 0.  With a negative cycle and
    ``clip_on_cycle``, the arcs of the first reweighting are clipped at 0 (every route cost then over-estimates,
    as the bandit's rectification does) instead of raising.  ``bellman_ford_first=False`` clips at once, without
    Bellman-Ford (``O(E C)``: seconds on a city with a negative cycle, which noisy learned means on flat roads
    often hold).

    Raises:
        NegativeCycleError: some cycle of the line graph has negative total weight (and not ``clip_on_cycle``).
    """
    _, heads, tails = lg.arc_pattern()
    w = np.asarray(w, dtype=np.float64)
    tol = 1e-9 * max(1.0, float(np.abs(w).max()))
    h = np.zeros_like(w) if h0 is None else np.asarray(h0, dtype=np.float64)
    a = w[heads] + h[tails] - h[heads]
    if a.min() < -tol and not bellman_ford_first:
        return h, np.maximum(a, 0.0), False
    if a.min() < -tol:
        n = lg.n_nodes
        rows = np.concatenate([tails, np.full(n, n)])
        cols = np.concatenate([heads, np.arange(n)])
        aug = sp.csr_matrix((w[cols], (rows, cols)), shape=(n + 1, n + 1))  # virtual source n -> every node
        try:
            d = bellman_ford(aug, directed=True, indices=n)
        except _ScipyNegativeCycle:
            if clip_on_cycle:
                return h, np.maximum(a, 0.0), False
            raise NegativeCycleError("the route weights have a negative cycle: no cheapest route exists") from None
        h = d[:n]
        a = w[heads] + h[tails] - h[heads]
    return h, np.maximum(a, 0.0), True


class PathEnumerator:
    """Simple routes from ``start`` to ``goal`` in increasing node-weighted cost (module doc).

    Args:
        linegraph: the line graph.
        weights: ``(E,)`` node weights (Wh; may be negative).
        h0: ``(E,)`` first reweighting to try (e.g. :func:`potential_h`), default none.
        exact: when ``h0`` leaves negative arcs, try Bellman-Ford (else clip them at once).

    With a negative cycle (or negative arcs and ``exact=False``) the arcs are clipped at 0 (:func:`reweight`): route
    costs over-estimate, the order is approximate and :attr:`exact` is False.
    """

    def __init__(
        self, linegraph: LineGraph, weights: np.ndarray, h0: np.ndarray | None = None, *, exact: bool = True
    ) -> None:
        self.lg = linegraph
        self.w = np.asarray(weights, dtype=np.float64)
        self.h, arcs, self.exact = reweight(linegraph, self.w, h0, clip_on_cycle=True, bellman_ford_first=exact)
        self.graph = _csr(linegraph, arcs)
        g = self.graph
        self.base = arcs
        self.heads = g.indices
        self.indptr = g.indptr
        self.bound = np.inf  # callers may lower it while iterating (true cost units, Wh)
        self.spur_searches = 0

    def cost(self, path: np.ndarray) -> float:
        """True cost ``sum w`` (Wh) of a route."""
        return float(self.w[np.asarray(path, dtype=np.int64)].sum())

    def _arc(self, u: int, v: int) -> int:
        lo, hi = self.indptr[u], self.indptr[u + 1]
        return int(lo + np.searchsorted(self.heads[lo:hi], v))

    def _search(self, data: np.ndarray, src: int, limit: float) -> tuple[np.ndarray, np.ndarray]:
        self.graph.data = data
        self.spur_searches += 1
        return dijkstra(self.graph, directed=True, indices=src, return_predecessors=True, limit=limit)

    @staticmethod
    def _walk(pred: np.ndarray, src: int, dst: int) -> list[int]:
        out = [dst]
        while out[-1] != src:
            out.append(int(pred[out[-1]]))
        return out[::-1]

    def paths(self, start: int, goal: int) -> Iterator[tuple[float, np.ndarray]]:
        """Yield ``(cost, route)`` (Wh, ``(k,)`` indices) in increasing cost, while ``cost <= self.bound``."""
        start, goal = int(start), int(goal)
        if start == goal:
            yield float(self.w[start]), np.asarray([start])
            return
        # cost of a route = offset + sum of its arcs (the reweighted identity of the module doc)
        offset = float(self.w[start] - self.h[start] + self.h[goal])
        dist, pred = self._search(self.base.copy(), start, np.inf)
        if not np.isfinite(dist[goal]):
            ids = self.lg.network.edge_ids
            raise UnreachableError(f"goal edge {ids[goal]!r} is unreachable from start edge {ids[start]!r}")
        first = self._walk(pred, start, goal)
        found: list[list[int]] = [first]
        seen = {tuple(first)}
        heap: list[tuple[float, int, list[int], int]] = []
        counter = 0
        cur, dev = first, 0
        if offset + dist[goal] > self.bound:
            return
        yield offset + float(dist[goal]), np.asarray(first, dtype=np.int64)
        # lower bound on the rest of a route after any node: one reverse search, only once a second route is asked for
        # (a caller that stops after the first route, as the risk-aware search usually does, never pays for it)
        base = sp.csr_matrix((self.base, self.heads, self.indptr), shape=self.graph.shape)
        to_goal = dijkstra(base.T.tocsr(), directed=True, indices=goal)
        while True:
            arcs = [self._arc(u, v) for u, v in zip(cur[:-1], cur[1:], strict=True)]
            arc_cost = np.concatenate([[0.0], np.cumsum(self.base[arcs])])
            for i in range(dev, len(cur) - 1):
                spur, root_cost = cur[i], float(arc_cost[i])
                room = self.bound - offset - root_cost
                if to_goal[spur] > room:
                    continue
                data = self.base.copy()
                root = cur[: i + 1]
                for p in found:
                    if len(p) > i + 1 and p[: i + 1] == root:
                        data[self._arc(spur, p[i + 1])] = np.inf
                if i > 0:
                    removed = np.zeros(len(self.w), dtype=bool)
                    removed[root[:-1]] = True
                    data[removed[self.heads]] = np.inf
                d, pr = self._search(data, spur, room if np.isfinite(room) else np.inf)
                if not np.isfinite(d[goal]):
                    continue
                cand = root[:-1] + self._walk(pr, spur, goal)
                key = tuple(cand)
                if key in seen:
                    continue
                seen.add(key)
                counter += 1
                heapq.heappush(heap, (root_cost + float(d[goal]), counter, cand, i))
            if not heap:
                return
            c, _, cur, dev = heapq.heappop(heap)
            if offset + c > self.bound:
                return
            found.append(cur)
            yield offset + c, np.asarray(cur, dtype=np.int64)


__all__ = ["PathEnumerator", "potential_h", "reweight"]
