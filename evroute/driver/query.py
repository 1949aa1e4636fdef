"""The driver queries shared by the command line (``evroute route`` / ``reach``) and the server (``evroute serve``).

A query takes what is loaded once -- the line graph, a :class:`~evroute.driver.belief.RouteBelief` and the vehicle,
bundled in :class:`QueryContext` -- and answers one request in memory:

* :func:`route_query` -- the energy-optimal (least posterior mean), shortest, fastest and, with a start charge, the
  risk-aware route, each with energy +- sd, travel time, arrival charge with its 90 % interval and
  ``P(arrival >= reserve)`` (:func:`evroute.driver.answers.answer_route`);
* :func:`evroute.driver.reach.reachable` -- the reachable area, called with the context's ``h0``;
* :func:`make_belief` -- the served belief of a loaded model (models learned on reduced energies get their full
  elevation potential back), used by both sides so that they give the same numbers.

Nothing here loads files; :mod:`evroute.cli.driver` (cli) and :mod:`evroute.service` (server) do.  No
``scipy.stats`` import on this path (normal CDF and quantile come from ``scipy.special``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.driver.answers import BatteryState, RouteAnswer, answer_route
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import potential_h, reweight
from evroute.driver.risk import RiskRoute, risk_aware_route
from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel
from evroute.models.predictive_noise import PredictiveNoise

#: names of the routes :func:`route_query` answers, in order
ROUTE_KINDS = ("energy-optimal", "shortest", "fastest", "risk-aware")
#: route engines of :class:`QueryContext`
ENGINES = ("auto", "dijkstra", "cch", "cch-line")


def make_belief(
    lg: LineGraph, model: EdgeModel, vehicle: VehicleProfile, header: dict[str, Any] | None = None
) -> RouteBelief:
    """The :class:`RouteBelief` served for ``model`` (``header``: its model-file header, or None for a prior).

    Means are floored at the elevation potential (reduced costs ``>= 0``).  A model learned on reduced energies
    (battery energy minus kinetic and potential energy; ``header["meta"]["energies"]["kind"] == "reduced"``) is
    served with each edge's full potential added back: the battery pays the reduced sum plus ``m g dz`` along the
    route (the kinetic part telescopes from rest to rest); variances are unchanged (a constant per edge).  The
    trip-level effect and the whole-trip noise learned from logs (:func:`trip_noise`) enter every route's variance;
    with their out-of-fold mixture (:func:`predictive_noise`) every route's interval is the mixture's.  A file with
    the in-sample point fit is served with one warning line (:func:`interval_note`).
    """
    from evroute.energy import elevation_potential_wh

    meta = (header or {}).get("meta", {})
    reduced = meta.get("energies", {})
    tau2, mult = trip_noise(header)  # learned from trip logs (evroute learn)
    pn = predictive_noise(header)
    note = interval_note(header)
    if note is not None:
        import warnings

        from evroute.errors import DataWarning

        warnings.warn(note, DataWarning, stacklevel=2)
    if reduced.get("kind") != "reduced":
        return RouteBelief(model, elevation_potential_wh(lg.network, vehicle), tau2, mult, pn)
    belief = RouteBelief(model, np.zeros(lg.n_nodes), tau2, mult, pn)  # reduced energies are >= 0 (dissipated)
    belief.mean = belief.mean + reduced_offset_wh(lg, vehicle, header)
    return belief


def trip_noise(header: dict[str, Any] | None) -> tuple[float, float]:
    """``(tau^2, k)`` of a model file's header: the trip-level effect's relative variance and the multiplier of the
    model's traversal noise within a whole trip, both learned from the logs by ``evroute learn``
    (``meta["trip_effect"]``: the posterior means of the out-of-fold mixture, :func:`predictive_noise`, or in files
    before it the in-sample point fit of :func:`evroute.models.trip_effect.fit_route_noise`); ``(0, 1)`` for a model
    without (a prior, a model not learned from logs), ``k = 1`` for files written before the multiplier was learned.
    The loader has checked both values (:mod:`evroute.models.store_schema`)."""
    effect = (header or {}).get("meta", {}).get("trip_effect", {})
    return float(effect.get("rel_var", 0.0)), float(effect.get("noise_mult", 1.0))


def predictive_noise(header: dict[str, Any] | None) -> PredictiveNoise | None:
    """The mixture over ``(k, tau^2)`` a model file's header stores (``meta["trip_effect"]["mixture"]``, written by
    ``evroute learn`` from out-of-fold trip residuals: :meth:`~evroute.models.predictive_noise.PredictiveNoise.
    to_dict`), or None (a prior, a model not learned from logs, a file with the in-sample point fit).  The loader
    has checked it (:mod:`evroute.models.store_schema`)."""
    effect = (header or {}).get("meta", {}).get("trip_effect")
    return PredictiveNoise.from_dict(effect) if isinstance(effect, dict) else None


def interval_note(header: dict[str, Any] | None) -> str | None:
    """One line for a model file whose route intervals rest on the whole-trip noise fitted to in-sample residuals
    (``meta["trip_effect"]`` without a mixture: files written before format version 2, or learned from traces none
    of which kept its readings), which are too narrow where a trip's own edges absorbed its trip effect; None
    otherwise."""
    effect = (header or {}).get("meta", {}).get("trip_effect")
    if not isinstance(effect, dict) or "mixture" in effect:
        return None
    version = (header or {}).get("format_version")
    return (
        f"model (format version {version}) serves route intervals from the noise fitted to in-sample trip residuals,"
        " which can be too narrow; learn its logs into a new model file for intervals from out-of-fold residuals"
    )


def reduced_offset_wh(lg: LineGraph, vehicle: VehicleProfile, header: dict[str, Any] | None) -> np.ndarray:
    """``(E,)`` what a model learned on reduced energies lacks per edge (Wh): the full elevation potential; zeros
    for a model of battery energies (see :func:`make_belief`)."""
    reduced = (header or {}).get("meta", {}).get("energies", {})
    if reduced.get("kind") != "reduced":
        return np.zeros(lg.n_nodes)
    from evroute.environments.sumo_replay import full_potential_wh

    return np.asarray(full_potential_wh(lg.network, vehicle, float(reduced["gravity_mps2"])), dtype=np.float64)


class QueryContext:
    """What every query shares, computed once: the line graph, the belief, the vehicle and the route searches'
    fixed inputs.  Safe to share between threads (each thread gets its own :class:`~evroute.oracle.RouteOracle`,
    whose searches reuse one graph object).

    Attributes:
        lg: the line graph (its ``network`` gives lengths, speed limits, ids and geometry).
        belief: the served posterior.
        vehicle: the vehicle profile (battery capacity and usable window for :class:`BatteryState`).
        h0: ``(E,)`` the first reweighting of the route listings (:func:`evroute.driver.paths.potential_h`).
        time_s: ``(E,)`` expected travel time of each edge (s): by default the default prior's
            (:func:`evroute.energy.edge_prior`: speed limit capped at the vehicle's top speed, junction stops).
        engine: the point-to-point searches' engine: ``"dijkstra"`` (:class:`~evroute.oracle.RouteOracle`),
            ``"cch"`` (customized once per weight vector, microsecond queries, routes optimal within a stated
            quantization bound: weights without turn terms, which are lengths, times and the potential's reduced
            costs of edge means, on the junction graph from :data:`evroute.cch_junction.JUNCTION_MIN_NODES` nodes,
            :mod:`evroute.cch_junction`, falling back to a Dijkstra for the few queries it cannot certify; other
            weights and smaller graphs on the line graph, :mod:`evroute.cch`),
            ``"cch-line"`` (every query on the line-graph CCH) or ``"auto"`` (``"cch"`` on line graphs of at least
            :data:`evroute.cch.CCH_MIN_NODES` nodes when ``routingkit-cch`` is installed, else Dijkstra).
    """

    def __init__(
        self,
        lg: LineGraph,
        belief: RouteBelief,
        vehicle: VehicleProfile,
        h0: np.ndarray | None = None,
        time_s: np.ndarray | None = None,
        engine: str = "auto",
        *,
        _shared: dict[str, Any] | None = None,
    ) -> None:
        if engine not in ENGINES:
            raise ParameterError(f"unknown route engine {engine!r}; valid: {', '.join(ENGINES)}")
        net = lg.network
        self.lg, self.belief, self.vehicle = lg, belief, vehicle
        self.h0 = potential_h(net, vehicle) if h0 is None else h0
        if time_s is None:
            from evroute.energy import edge_prior

            time_s = edge_prior(net, vehicle).time_s
        self.time_s = np.asarray(time_s, dtype=np.float64)
        self._local = threading.local()
        self._least: np.ndarray | None = None
        self._least_exact = True
        if engine == "auto":
            from evroute.cch import CCH_MIN_NODES, available

            engine = "cch" if lg.n_nodes >= CCH_MIN_NODES and available() else "dijkstra"
        self.engine = engine
        # what every version of a served model shares: the CCH indexes and the length / time routers (built on
        # first use, under the lock); the least-mean routers belong to this belief
        self._shared: dict[str, Any] = {"lock": threading.RLock()} if _shared is None else _shared
        self._least_router: Any = None

    def _cch(self, key: str, make: Callable[[], Any]) -> Any:
        """The shared CCH object ``key``, made by ``make()`` once: ``"index"`` (:class:`evroute.cch.CCHIndex`),
        ``"junction"`` (:class:`evroute.cch_junction.JunctionCCHIndex`), the routers ``"shortest"``, ``"fastest"``
        (junction graph) and ``"shortest/line"``, ``"fastest/line"`` (engine ``"cch-line"``)."""
        sh = self._shared
        with sh["lock"]:
            if key not in sh:
                sh[key] = make()
            return sh[key]

    def _index(self, kind: str) -> Any:
        """The shared line-graph (``"index"``) or junction-graph (``"junction"``) CCH index, built on first use."""
        if kind == "index":
            from evroute.cch import CCHIndex

            return self._cch(kind, lambda: CCHIndex(self.lg))
        from evroute.cch_junction import JunctionCCHIndex

        return self._cch(kind, lambda: JunctionCCHIndex(self.lg))

    def _use_junction(self) -> bool:
        """Whether turn-free weights go to the junction graph: engine ``"cch"`` on a line graph of at least
        :data:`evroute.cch_junction.JUNCTION_MIN_NODES` nodes."""
        from evroute.cch_junction import JUNCTION_MIN_NODES

        return self.engine == "cch" and self.lg.n_nodes >= JUNCTION_MIN_NODES

    def node_router(self, kind: str) -> Any:
        """The shared CCH router of the ``"shortest"`` (length) or ``"fastest"`` (:attr:`time_s`) node weights
        (engine ``"cch"``: on the junction graph; ``"cch-line"``: on the line graph)."""
        w = self.lg.network.length_m if kind == "shortest" else self.time_s
        if not self._use_junction():
            return self._cch(kind + "/line", lambda: self._index("index").customize_nodes(w))
        fallback = lambda: _DijkstraFallback(self, node_weights=w)  # noqa: E731
        return self._cch(kind, lambda: self._index("junction").customize_nodes(w, fallback))

    def fixed_route(self, kind: str, start: int, goal: int) -> np.ndarray:
        """The ``"shortest"`` (length) or ``"fastest"`` (:attr:`time_s`) route's ``(k,)`` line-graph indices.

        Raises:
            UnreachableError: ``goal`` is not reachable from ``start``.
        """
        if self.engine in ("cch", "cch-line"):
            return self.node_router(kind).route(start, goal).edges
        w = self.lg.network.length_m if kind == "shortest" else self.time_s
        return self.oracle().shortest_route(w, start, goal).edges

    def oracle(self) -> Any:
        """This thread's :class:`~evroute.oracle.RouteOracle` of the line graph."""
        o = getattr(self._local, "oracle", None)
        if o is None:
            from evroute.oracle import RouteOracle

            o = self._local.oracle = RouteOracle(self.lg)
        return o

    def least_mean_arcs(self) -> np.ndarray:
        """``(C,)`` the turn weights whose shortest route is the least posterior-mean route: the reduced costs
        ``m_v + h_u - h_v >= 0`` of :func:`evroute.driver.paths.reweight` (clipped at 0 where a learned mean falls
        below the potential), as the first route of :class:`~evroute.driver.paths.PathEnumerator` uses; computed
        once per belief."""
        if self._least is None:
            _, self._least, self._least_exact = reweight(
                self.lg, self.belief.mean, self.h0, clip_on_cycle=True, bellman_ford_first=False
            )
        return self._least

    def least_mean_route(self, start: int, goal: int) -> tuple[float, np.ndarray, bool]:
        """``(mu_min, route, exact)``: the least posterior-mean route from ``start`` to ``goal`` (one Dijkstra on
        :meth:`least_mean_arcs`), its listing cost in Wh (the route's mean when ``exact``; an over-estimate where
        reduced costs were clipped) and whether no reduced cost was clipped: the first route of
        :class:`~evroute.driver.paths.PathEnumerator` with the same reweighting, which
        :func:`~evroute.driver.risk.risk_aware_route` takes as ``least_route``.

        Raises:
            UnreachableError: ``goal`` is not reachable from ``start``.
        """
        arcs = self.least_mean_arcs()
        if self.engine in ("cch", "cch-line"):
            r = self.least_router().route(start, goal)
        else:
            r = self.oracle().shortest_route_arcs(arcs, start, goal)
        m, h = self.belief.mean, self.h0
        offset = float(m[start]) if start == goal else float(m[start] - h[start] + h[goal])
        return offset + r.cost, r.edges, self._least_exact

    def least_router(self) -> Any:
        """The CCH router of :meth:`least_mean_arcs`, customized once per belief (a benign race: two threads may both
        customize once): on the junction graph when they have no turn terms and the engine is ``"cch"``, else on the
        line graph."""
        if self._least_router is None:
            arcs = self.least_mean_arcs()
            junction = self._index("junction") if self._use_junction() else None
            if junction is not None and junction.turn_free(arcs):
                self._least_router = junction.customize(arcs, lambda: _DijkstraFallback(self, arc_weights=arcs))
            else:
                self._least_router = self._index("index").customize(arcs)
        return self._least_router

    def with_belief(self, belief: RouteBelief) -> QueryContext:
        """The same context serving another belief (a new model version); the fixed parts are shared."""
        return QueryContext(self.lg, belief, self.vehicle, self.h0, self.time_s, self.engine, _shared=self._shared)


class _DijkstraFallback:
    """The fallback of a junction-graph router (:mod:`evroute.cch_junction`): the few queries it cannot certify go to
    this thread's Dijkstra on the line graph (exact: ``error_bound`` 0).  Nothing to build, where customizing the
    line graph's CCH costs as much as ~200 Dijkstras at a million edges (``docs/benchmark_scale.md``)."""

    error_bound = 0.0

    def __init__(
        self, ctx: QueryContext, node_weights: np.ndarray | None = None, arc_weights: np.ndarray | None = None
    ) -> None:
        self.ctx, self.node_weights, self.arc_weights = ctx, node_weights, arc_weights

    def route(self, start: int, goal: int) -> Any:
        o = self.ctx.oracle()
        if self.node_weights is not None:
            return o.shortest_route(self.node_weights, start, goal)
        return o.shortest_route_arcs(self.arc_weights, start, goal)


@dataclass(frozen=True)
class RouteQueryResult:
    """Answer of :func:`route_query`: ``routes`` and ``answers`` keyed by :data:`ROUTE_KINDS` (the risk-aware
    route only when a charge was given; then ``risk`` holds its search result)."""

    routes: dict[str, np.ndarray]
    answers: dict[str, RouteAnswer]
    risk: RiskRoute | None


def route_query(
    ctx: QueryContext,
    start: int,
    goal: int,
    battery: BatteryState,
    delta: float = 0.05,
    *,
    risk_aware: bool = True,
    max_paths: int = 200,
    kinds: tuple[str, ...] = ROUTE_KINDS,
) -> RouteQueryResult:
    """The driver's routes from line-graph index ``start`` to ``goal`` and their answers.

    Args:
        battery: start charge and reserve.
        delta: risk-aware route: allowed probability of arriving below the reserve, ``(0, 0.5)``.
        risk_aware: also search the risk-aware route (:func:`evroute.driver.risk.risk_aware_route`).
        max_paths: most routes the risk-aware search lists before giving up its certificate.
        kinds: which of :data:`ROUTE_KINDS` to answer (the risk-aware one also needs ``risk_aware``).

    Raises:
        UnreachableError: ``goal`` is not reachable from ``start``.

    The energy-optimal route is the first route of :class:`~evroute.driver.paths.PathEnumerator` on the posterior
    means (the same reduced costs and Dijkstra), found without building the enumerator per query.
    """
    net = ctx.lg.network
    routes: dict[str, np.ndarray] = {}
    least = None
    if "energy-optimal" in kinds or (risk_aware and "risk-aware" in kinds):
        # least posterior-mean route: Dijkstra on the reduced costs (reduced costs a learned model pushes below zero
        # are clipped, as the bandit's rectification does, see evroute.driver.paths); the risk-aware search starts
        # from it
        least = ctx.least_mean_route(start, goal)
    if "energy-optimal" in kinds and least is not None:
        routes["energy-optimal"] = least[1]
    for kind in ("shortest", "fastest"):
        if kind in kinds:
            routes[kind] = ctx.fixed_route(kind, start, goal)
    risk = None
    if risk_aware and "risk-aware" in kinds:
        risk = risk_aware_route(
            ctx.lg, ctx.belief, start, goal, battery, delta, h0=ctx.h0, max_paths=max_paths, least_route=least
        )
        routes["risk-aware"] = risk.edges
    answers = {k: answer_route(k, e, ctx.belief, net, battery, ctx.time_s) for k, e in routes.items()}
    return RouteQueryResult(routes, answers, risk)


__all__ = [
    "ENGINES",
    "ROUTE_KINDS",
    "QueryContext",
    "RouteQueryResult",
    "interval_note",
    "make_belief",
    "predictive_noise",
    "trip_noise",
    "reduced_offset_wh",
    "route_query",
]
