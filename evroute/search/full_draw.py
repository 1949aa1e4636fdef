"""Compiled Thompson rounds that draw every edge (issue 39, item 3): the BI model's posterior, one draw per edge, the
rectified oracle weights and the route, in three compiled passes and one bucket search instead of a dozen NumPy/SciPy
passes and SciPy's Dijkstra.

A round of :class:`evroute.bandit.RoutingBandit` with the BI model (:class:`ConjugateNormalState`) and plain
Thompson sampling computes, for every edge ``e`` (``(E,)`` arrays, Wh and Wh^2)::

    prec_e = 1 / s0_e^2 + n_e / s_n,e^2,   m_e = (mu0_e / s0_e^2 + S_e / s_n,e^2) / prec_e,   sd_e = sqrt(1 / prec_e)
    x_e = m_e + sd_e z_e - p_e,            w_e = max(E[max(0, N(x_e, s_n,e^2))], MIN_WEIGHT_WH)

with ``z`` the round's ``E`` standard normals from the policy's stream (``rng.standard_normal(E)``, the very numbers
:meth:`evroute.policies.ThompsonSampling.estimates` draws, so a round uses the same draws either way), ``p`` the
potential, then the route of least ``sum w``.  In NumPy (``evroute.models.bi``, ``evroute.policies.index``,
``evroute.oracle``) that is a pass over ``E``-arrays per operator and SciPy's ``ndtr``/``erfcx`` on every edge: at a
million edges the posterior took 21 ms, the weights 105 ms and the arc gather of the search 17 ms of a 222 ms round
(measured side by side on the benchmark's route A).  Here:

* :func:`draw_kernel`: the posterior and draw in NumPy's order of operations, so ``x`` is the same float, and ``a =
  x / s_n``; compiled with IEEE division (:func:`evroute.compiled.njit_ieee`) the loop vectorizes (2.5-3.5 ms at a
  million edges against 10.7 ms with numba's checked division);
* :func:`rectify_kernel`: the rectified mean is ``x`` itself where ``a >= 8.5`` (the exact value is within half an
  ulp of it there, :data:`FAST_A`; about a third of the edges at a million); ``s_n g(a)``, ``g(a) = a Phi(a) +
  phi(a)``, by cubic Hermite interpolation of a table where ``0 <= a < 8.5`` (:func:`_rect_interp`: within 6.1e-13
  relative, against 25 ns of ``erfc`` and ``exp`` per edge; about two thirds of the edges); the compiled ``erfc``
  form of :func:`evroute.search.rectified_mean` below 0 (within 1e-12 relative of the oracle's for ``a >= -8`` and
  1e-9 down to -38, ``tests/test_search.py``);
* :func:`gather_kernel` lays the weights out as the search reads them: per arc of the hybrid junction graph
  (:mod:`evroute.search.junction`, the default: a third of the line graph's arcs to scan), or, where that graph does
  not exist or its least walk is not a legal route, per node of the line graph in its cache-friendly search order
  (:mod:`evroute.search.order`; the bucket search of :func:`evroute.search.ordered_node_route` reads node weights,
  an arc weighing its head).

Why the round is exact: the weights are a deterministic function of the posterior statistics and ``z`` (the policy's
independent standard normals, so ``m_e + sd_e z_e`` are independent exact posterior draws), and the route is the
minimum of ``sum w`` over routes (:func:`evroute.search.one_to_all`'s labels are SciPy's Dijkstra labels on the
same weights, bit for bit; the junction graph's least legal walk costs the same float, :mod:`evroute.search.junction`).
:attr:`FullDrawThompson.last_weights` exposes the weights a round used, so that the tests compare its route with
SciPy's Dijkstra on exactly them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evroute.compiled import inline_cached, njit_cached, njit_ieee
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.oracle import MIN_WEIGHT_WH, Route
from evroute.search import ConjugateNormalState, ordered_node_route
from evroute.search.junction import JunctionGraph, junction_graph, junction_route
from evroute.search.kernels import rectified_mean_scalar
from evroute.search.order import search_order

#: ``a = x / s_n`` from which the rectified mean is ``x`` to half an ulp (:func:`rectify_kernel`)
FAST_A = 8.5
#: grid points per unit of ``a = x / s_n`` of the rectified mean's table on ``[0, 8.5]`` (:func:`rectify_kernel`)
TABLE_STEPS = 256


def _rect_table() -> tuple[np.ndarray, np.ndarray]:
    """``g(a) = a Phi(a) + phi(a)`` and ``g'(a) = Phi(a)`` on ``a = k / TABLE_STEPS``, ``k = 0 .. 8.5 TABLE_STEPS +
    1`` (both terms positive there: no cancellation, each value to a few ulps)."""
    from scipy.special import ndtr

    a = np.arange(int(8.5 * TABLE_STEPS) + 2) / TABLE_STEPS
    cdf = ndtr(a)
    return a * cdf + np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi), cdf


#: the table of :func:`_rect_interp`: ``g`` and ``g'`` at the grid points
RECT_G, RECT_DG = _rect_table()


@inline_cached
def _rect_interp(a: float, g: Any, dg: Any) -> float:
    """``g(a)`` for ``0 <= a < 8.5`` by cubic Hermite interpolation of the table (exact values and slopes at the grid
    points): the error is at most ``h^4 max|g^(4)| / 384`` with ``h = 1 / TABLE_STEPS`` and ``g^(4)(a) = (a^2 - 1)
    phi(a)``, ``|g^(4)| <= phi(0) <= g(a)``, so at most ``h^4 / 384 = 6.1e-13`` relative."""
    u = a * TABLE_STEPS
    i = int(u)
    t = u - i
    t2 = t * t
    t3 = t2 * t
    h = 1.0 / TABLE_STEPS
    return (
        (2.0 * t3 - 3.0 * t2 + 1.0) * g[i]
        + (t3 - 2.0 * t2 + t) * h * dg[i]
        + (3.0 * t2 - 2.0 * t3) * g[i + 1]
        + (t3 - t2) * h * dg[i + 1]
    )


@njit_ieee
def draw_kernel(m0: Any, v0: Any, cnt: Any, tot: Any, nv: Any, pot: Any, z: Any, w: Any, a: Any) -> None:  # noqa: PLR0913
    """``w (E,)``: every edge's posterior draw minus its potential, ``x = m + sd z - p`` (``pot`` empty: no
    potential), in NumPy's order of operations (``evroute.models.bi``, ``thompson_sample``), so the same floats; ``a
    (E,)``: ``x / s_n``.  IEEE division lets the loop vectorize (the square roots and divisions of
    :func:`rectify_kernel`'s branches are done here, four at a time; the loop-invariant test of the potential is
    hoisted out by the compiler: 3.4 ms at a million edges either way)."""
    has_pot = pot.shape[0] > 0
    for e in range(w.shape[0]):
        prec = 1.0 / v0[e] + cnt[e] / nv[e]
        x = (m0[e] / v0[e] + tot[e] / nv[e]) / prec + math.sqrt(1.0 / prec) * z[e]
        if has_pot:
            x = x - pot[e]
        w[e] = x
        a[e] = x / math.sqrt(nv[e])


@njit_ieee
def rectify_kernel(w: Any, a: Any, nv: Any, g: Any, dg: Any, stats: Any) -> None:  # noqa: PLR0913
    """``w (E,)`` in place: each draw ``x`` (with ``a = x / s_n`` of :func:`draw_kernel`) becomes its oracle weight
    ``max(E[max(0, N(x, s_n^2))], MIN_WEIGHT_WH)``, and ``stats = [least, largest, sum]`` of the weights (a NaN
    anywhere makes the sum NaN): ``x`` itself where ``a >= 8.5`` (module doc), ``s_n g(a)`` from the table where
    ``0 <= a < 8.5`` (:func:`_rect_interp`), the compiled ``erfc`` form below 0."""
    lo, hi, total = np.inf, 0.0, 0.0
    for e in range(w.shape[0]):
        x = w[e]
        ae = a[e]
        if ae >= FAST_A:
            r = x
        elif ae >= 0.0:
            r = math.sqrt(nv[e]) * _rect_interp(ae, g, dg)
        else:
            v = nv[e]
            r = max(rectified_mean_scalar(x, v), MIN_WEIGHT_WH)
            if r != r or v != v:  # NaN: keep it visible to the caller's check
                r = np.nan
        w[e] = r
        lo = min(lo, r)
        hi = max(hi, r)
        total += r
    stats[0] = lo
    stats[1] = hi
    stats[2] = total


@njit_cached
def gather_kernel(perm: Any, w: Any, out: Any) -> None:
    """``out[i] = w[perm[i]]``."""
    for i in range(perm.shape[0]):
        out[i] = w[perm[i]]


class FullDrawThompson:
    """Thompson rounds of a :class:`ConjugateNormalState` on one line graph that draw every edge (module doc).

    Per round nothing of size ``E`` is allocated but the search's labels (the weights and their copy in the search's
    order are kept and rewritten).  The junction graph or the search order is built on first use and kept with the
    line graph.

    Args:
        linegraph: the line graph whose nodes are the edges (arms) and whose turns are the arcs.
        graph: ``"junction"`` (default): search the hybrid junction graph (:mod:`evroute.search.junction`), the line
            graph where it does not exist or the least walk is not a legal route (:attr:`fallbacks`);
            ``"line"``: always the line graph (the bucket search of :func:`evroute.search.ordered_node_route`).

    Raises:
        ParameterError: an unknown ``graph``.
    """

    def __init__(self, linegraph: LineGraph, graph: str = "junction") -> None:
        if graph not in ("junction", "line"):
            raise ParameterError(f"unknown search graph {graph!r}; valid: junction, line")
        self.linegraph = linegraph
        self.n = int(linegraph.n_nodes)
        self.graph = graph
        self._w = np.empty(self.n)
        self._wp = np.empty(self.n)  # the draws' a = x / s_n, then (on demand) the weights in the line's search order
        self._wa = np.empty(0)
        self._fresh = ""  # which copy of the last weights is up to date: "junction", "line" or none
        self._stats = np.zeros(3)
        self._drawn = False
        self._goal_arcs: tuple[int, np.ndarray] = (-1, np.zeros(0, dtype=np.int64))  # the last goal's arcs
        #: searches answered on the line graph because the junction graph's least walk was not a legal route
        self.fallbacks = 0

    @property
    def last_weights(self) -> np.ndarray:
        """``(E,)`` the weights (Wh) of the last :meth:`route` or :meth:`weights` call (a view; the next call
        overwrites it)."""
        return self._w

    def _junction(self) -> JunctionGraph | None:
        return junction_graph(self.linegraph) if self.graph == "junction" else None

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
        self._drawn, self._fresh = False, ""
        draw_kernel(*arrs[:5], pot, arrs[5], self._w, self._wp)
        rectify_kernel(self._w, self._wp, arrs[4], RECT_G, RECT_DG, self._stats)
        if not math.isfinite(float(self._stats[2])):
            raise ParameterError("a Thompson weight is not finite (check the posterior statistics and the potential)")
        self._drawn = True
        jg = self._junction()
        if jg is not None:  # the arcs' weights in the junction graph's CSR order
            if len(self._wa) != len(jg.arc_edge):
                self._wa = np.empty(len(jg.arc_edge))
            gather_kernel(jg.arc_edge, self._w, self._wa)
            self._fresh = "junction"
        else:
            self._line_weights()
        return self._w

    def _line_weights(self) -> np.ndarray:
        """The last weights in the line graph's search order (gathered once per draw)."""
        if self._fresh != "line":
            gather_kernel(search_order(self.linegraph).perm, self._w, self._wp)
            self._fresh = "line"
        return self._wp

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
        stats = (float(st[0]), float(st[1]), float(st[2]) / self.n)
        jg = self._junction()
        if jg is not None:
            if self._goal_arcs[0] != goal:
                self._goal_arcs = (goal, jg.edge_arcs(goal))
            got = junction_route(jg, self.linegraph, self._w, self._wa, start, goal, stats, self._goal_arcs[1])
            if got is not None:
                return got
            self.fallbacks += 1
        order = search_order(self.linegraph)
        return ordered_node_route(self.linegraph, order, self._line_weights(), start, goal, stats)


__all__ = ["FullDrawThompson", "draw_kernel", "gather_kernel", "rectify_kernel"]
