"""Compiled Thompson rounds that draw every edge (issue 39, item 3): the BI model's posterior, one draw per edge, the
rectified oracle weights and the route, in two compiled passes instead of a dozen NumPy/SciPy ones.

A round of :class:`evroute.bandit.RoutingBandit` with the BI model (:class:`ConjugateNormalState`) and plain
Thompson sampling computes, for every edge ``e`` (``(E,)`` arrays, Wh and Wh^2)::

    prec_e = 1 / s0_e^2 + n_e / s_n,e^2,   m_e = (mu0_e / s0_e^2 + S_e / s_n,e^2) / prec_e,   sd_e = sqrt(1 / prec_e)
    x_e = m_e + sd_e z_e - p_e,            w_e = max(E[max(0, N(x_e, s_n,e^2))], MIN_WEIGHT_WH)

with ``z`` the round's ``E`` standard normals from the policy's stream (``rng.standard_normal(E)``, the very numbers
:meth:`evroute.policies.ThompsonSampling.estimates` draws, so a round uses the same draws either way), ``p`` the
potential, then the route of least ``sum w`` by :func:`evroute.search.node_weighted_route`'s bucket search.  In
NumPy (``evroute.models.bi``, ``evroute.policies.index``, ``evroute.oracle``) that is a pass over ``E``-arrays per
operator and SciPy's ``ndtr``/``erfcx`` on every edge: at a million edges the posterior took 21 ms, the weights 105 ms
and the arc gather of the search 17 ms of a 222 ms round (measured side by side on the benchmark's route A).
:func:`full_draw_kernel` computes ``w`` in compiled passes over the edges: the posterior and draw in the same order of
operations as NumPy's, so ``x`` is the same float; the rectified mean is ``x`` itself where ``x / s_n >= 8.5`` (the
exact value is within half an ulp of it there, :data:`FAST_A2`; about a third of the edges at a million, each sparing
an ``erfc``), else the compiled ``erfc`` form of :func:`evroute.search.rectified_mean` (within 1e-12 relative of the
oracle's for ``x / s_n >= -8`` and 1e-9 down to -38, ``tests/test_search.py``); the last pass lays the weights out
in the cache-friendly search order (:mod:`evroute.search.order`), which the bucket search then reads as node weights
(an arc weighs its head) without a per-arc array.

Why the round is exact: the weights are a deterministic function of the posterior statistics and ``z`` (the policy's
independent standard normals, so ``m_e + sd_e z_e`` are independent exact posterior draws), and the route is the
minimum of ``sum w`` over routes (:func:`evroute.search.one_to_all`'s labels are SciPy's Dijkstra labels on the
same weights, bit for bit).  :attr:`FullDrawThompson.last_weights` exposes the weights a round used, so that the
tests compare its route with SciPy's Dijkstra on exactly them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.oracle import MIN_WEIGHT_WH, Route
from evroute.search import ConjugateNormalState, ordered_node_route
from evroute.search.kernels import njit_cached, rectified_mean_scalar
from evroute.search.order import search_order

#: ``(x / s_n)^2`` from which the rectified mean is ``x`` to half an ulp (:func:`full_draw_kernel`)
FAST_A2 = 8.5**2


@njit_cached
def full_draw_kernel(  # noqa: PLR0913 - flat arrays of one compiled loop
    perm: Any, m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any, z: Any, w: Any, wp: Any, stats: Any
) -> None:
    """``w (E,)``: every edge's weight (module doc; ``pot`` empty: no potential), ``wp[i] = w[perm[i]]``, and
    ``stats = [least, largest, sum]`` of ``w`` (a NaN anywhere makes the sum NaN)."""
    n = w.shape[0]
    has_pot = pot.shape[0] > 0
    for e in range(n):  # posterior and draw, in NumPy's order of operations (evroute.models.bi, thompson_sample)
        prec = 1.0 / v0[e] + cnt[e] / nv[e]
        x = (m0[e] / v0[e] + tot[e] / nv[e]) / prec + math.sqrt(1.0 / prec) * z[e]
        w[e] = x - pot[e] if has_pot else x
    lo, hi, total = np.inf, 0.0, 0.0
    for e in range(n):
        x = w[e]
        # x / s_n >= 8.5: E[max(0, N(x, s_n^2))] = x (1 + d) with 0 < d < phi(8.5) / 8.5^3 = 1.3e-19, below half an
        # ulp (Mills's ratio), so x itself; erfc's 25 ns skipped on about a third of the edges at a million
        r = x if x > 0.0 and x * x >= FAST_A2 * nv[e] else max(rectified_mean_scalar(x, nv[e]), MIN_WEIGHT_WH)
        if r != r or nv[e] != nv[e]:  # NaN: keep it visible to the caller's check
            r = np.nan
        w[e] = r
        lo = min(lo, r)
        hi = max(hi, r)
        total += r
    for i in range(n):
        wp[i] = w[perm[i]]
    stats[0] = lo
    stats[1] = hi
    stats[2] = total


class FullDrawThompson:
    """Thompson rounds of a :class:`ConjugateNormalState` on one line graph that draw every edge (module doc).

    Per round nothing of size ``E`` is allocated but the search's labels (the weights' two arrays, 16 bytes per edge,
    are kept and rewritten).  The search order is built on first use and kept with the line graph.

    Args:
        linegraph: the line graph whose nodes are the edges (arms) and whose turns are the arcs.
    """

    def __init__(self, linegraph: LineGraph) -> None:
        self.linegraph = linegraph
        self.n = int(linegraph.n_nodes)
        self._w = np.empty(self.n)
        self._wp = np.empty(self.n)
        self._stats = np.zeros(3)
        self._drawn = False

    @property
    def last_weights(self) -> np.ndarray:
        """``(E,)`` the weights (Wh) of the last :meth:`route` or :meth:`weights` call (a view; the next call
        overwrites it)."""
        return self._w

    def weights(self, state: ConjugateNormalState, z: np.ndarray, potential_wh: np.ndarray | None = None) -> np.ndarray:
        """``(E,)`` every edge's oracle weight (Wh) for the standard normals ``z (E,)`` (module doc): the numbers
        :meth:`evroute.policies.IndexPolicy.weights` gives for the posterior of ``state`` and the draw ``mean + std
        z``, to the compiled rectified mean's precision.

        Raises:
            ParameterError: a shape is not ``(E,)`` or a weight is not finite.
        """
        n = self.n
        arrs = [np.ascontiguousarray(a, dtype=np.float64) for a in (*state.arrays(), z)]
        if any(a.shape != (n,) for a in arrs):
            raise ParameterError(f"the posterior statistics and the normals must have shape ({n},)")
        pot = np.zeros(0) if potential_wh is None else np.ascontiguousarray(potential_wh, dtype=np.float64)
        if potential_wh is not None and pot.shape != (n,):
            raise ParameterError(f"the potential must have shape ({n},), got {pot.shape}")
        perm = search_order(self.linegraph).perm
        full_draw_kernel(perm, *arrs[:5], pot, arrs[5], self._w, self._wp, self._stats)
        self._drawn = math.isfinite(float(self._stats[2]))
        if not self._drawn:
            raise ParameterError("a Thompson weight is not finite (check the posterior statistics and the potential)")
        return self._w

    def route(
        self,
        state: ConjugateNormalState,
        z: np.ndarray,
        start: int,
        goal: int,
        potential_wh: np.ndarray | None = None,
    ) -> Route:
        """The minimum-weight route (``cost`` in Wh, start and goal included) under the weights of :meth:`weights`,
        as :meth:`evroute.oracle.RouteOracle.shortest_route` finds it on them (the same cost, bit for bit; the same
        route unless two cost exactly the same).

        Raises:
            ParameterError: an index or a shape is out of range, or a weight is not finite.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        self._check_ends(start, goal)
        self.weights(state, z, potential_wh)
        return self.search(start, goal)

    def _check_ends(self, start: int, goal: int) -> None:
        for what, idx in (("start", start), ("goal", goal)):
            if not 0 <= int(idx) < self.n:
                raise ParameterError(f"{what} edge index {idx} is outside 0..{self.n - 1}")

    def search(self, start: int, goal: int) -> Route:
        """The route of :meth:`route` on the weights of the last :meth:`weights` call (the search alone).

        Raises:
            ParameterError: an index is out of range.
            UnreachableError: ``goal`` cannot be reached from ``start``.
        """
        start, goal = int(start), int(goal)
        self._check_ends(start, goal)
        if not self._drawn:
            raise ParameterError("no weights drawn yet: call weights() or route() first")
        if start == goal:
            return Route(np.asarray([start]), float(self._w[start]))
        st = self._stats
        order = search_order(self.linegraph)
        return ordered_node_route(
            self.linegraph, order, self._wp, start, goal, (float(st[0]), float(st[1]), float(st[2]) / self.n)
        )


__all__ = ["FullDrawThompson", "full_draw_kernel"]
