"""The ASGI app of ``evroute serve``: routes, reach, energy, model, health, metrics and the map page.

Handlers are plain functions (FastAPI runs them in its thread pool); each reads the current model version once
(:attr:`evroute.service.state.ServiceState.current`) and answers with it.  Errors a client can cause are 422 with
FastAPI's shape ``{"detail": [{"loc": ["body", FIELD], "msg": ..., "type": ...}]}``: pydantic's for the request's
form, and the same shape for what only the network or vehicle can check (:class:`FieldError`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from evroute.driver.answers import BatteryState, RouteAnswer
from evroute.errors import EvrouteError, ParameterError, UnreachableError
from evroute.service import schemas as S
from evroute.service.metrics import Metrics, MetricsMiddleware, rss_mb
from evroute.service.state import ModelVersion, ServiceState

#: the API's endpoints (``GET /metrics`` reports these; anything else is counted as ``other``)
PATHS = {
    "/",
    "/route",
    "/reach",
    "/plan",
    "/energy",
    "/observe",
    "/model",
    "/model/reload",
    "/health",
    "/metrics",
    "/network",
}


class FieldError(Exception):
    """A request value the network or vehicle refuses: reported as a 422 naming ``field``."""

    def __init__(self, field: str, message: str, kind: str = "value_error") -> None:
        super().__init__(message)
        self.field, self.message, self.kind = field, message, kind


@contextmanager
def field_errors(field: str) -> Iterator[None]:
    """Turn an :class:`~evroute.errors.EvrouteError` raised inside into a :class:`FieldError` of ``field``."""
    try:
        yield
    except EvrouteError as exc:
        raise FieldError(field, " ".join(str(exc).split())) from None


def _poly(geometry: Sequence[np.ndarray], edges: Any, digits: int = 6) -> list[tuple[float, float]]:
    """The polyline ``[(lon, lat), ...]`` of consecutive ``edges`` (rounded to ``digits`` decimals)."""
    pts = np.concatenate([np.asarray(geometry[int(e)], dtype=np.float64) for e in edges]).round(digits)
    return [(float(x), float(y)) for x, y in pts]


def _route_out(a: RouteAnswer, net: Any, edges: bool, geometry: bool) -> S.RouteOut:
    d = a.to_dict(net.edge_ids if edges else None)
    d["arrival_soc_90"] = tuple(d["arrival_soc_90"])
    if geometry:
        d["geometry"] = _poly(net.geometry, a.edges)
    return S.RouteOut(**d)


def _battery(state: ServiceState, charge: float | None, reserve: float | None) -> BatteryState:
    with field_errors("charge"):
        BatteryState.from_vehicle(state.vehicle, charge, None)
    with field_errors("reserve"):
        return BatteryState.from_vehicle(state.vehicle, charge, reserve)


def _battery_out(b: BatteryState) -> S.Battery:
    return S.Battery(capacity_wh=b.capacity_wh, charge=b.charge, reserve=b.reserve)


def _answered(v: ModelVersion, net: Any, t0: float) -> dict[str, Any]:
    return {
        "network": net.name,
        "model_version": v.version,
        "model_kind": v.kind,
        "elapsed_ms": 1000.0 * (time.perf_counter() - t0),
    }


def _endpoint(state: ServiceState, text: str, field: str, max_snap_m: float) -> int:
    from evroute.routes import resolve_endpoint

    with field_errors(field):
        return resolve_endpoint(state.lg, text, field, max_snap_m=max_snap_m)


def _path_indices(state: ServiceState, ids: list[str], field: str) -> np.ndarray:
    """Line-graph indices of edge ids; consecutive edges must be joined by a legal turn."""
    net = state.lg.network
    out = np.empty(len(ids), dtype=np.int64)
    for i, e in enumerate(ids):
        with field_errors(field):
            out[i] = net.index_of(e)
    if len(out) > 1:
        n = state.lg.n_nodes
        keys = state.turn_keys()
        pairs = out[:-1] * n + out[1:]
        pos = np.minimum(np.searchsorted(keys, pairs), len(keys) - 1)
        bad = np.flatnonzero(keys[pos] != pairs)
        if len(bad):
            i = int(bad[0])
            raise FieldError(field, f"no legal turn from edge {ids[i]!r} to edge {ids[i + 1]!r} (position {i})")
    return out


def create_app(state: ServiceState | None) -> FastAPI:
    """The app serving ``state`` (``None``: an app whose only use is its OpenAPI schema)."""
    from evroute.version import __version__

    app = FastAPI(
        title="evroute",
        version=__version__,
        description="Energy-aware EV routes with uncertainty, from a learned (or prior) edge-energy posterior. "
        "States of charge are fractions of the battery capacity, energies Wh, lengths m, times s.",
    )
    metrics = Metrics()

    def st() -> ServiceState:
        if state is None:
            raise RuntimeError("this app was made for its schema only")
        return state

    @app.exception_handler(FieldError)
    async def _field_error(request: Request, exc: FieldError) -> JSONResponse:
        return JSONResponse(
            status_code=422, content={"detail": [{"loc": ["body", exc.field], "msg": exc.message, "type": exc.kind}]}
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own handler, except that the echoed input may be NaN or infinity (JSON has neither)
        errors = [{k: _finite(v) for k, v in e.items() if k != "ctx"} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": jsonable_encoder(errors)})

    @app.exception_handler(EvrouteError)
    async def _evroute_error(request: Request, exc: EvrouteError) -> JSONResponse:
        msg = " ".join(str(exc).split())
        return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": msg, "type": "value_error"}]})

    @app.post("/route", response_model=S.RouteResponse, response_model_exclude_none=True)
    def route(req: S.RouteRequest) -> S.RouteResponse:
        """Energy-optimal, shortest, fastest and (with ``charge``) risk-aware routes with energy +- sd, time and
        arrival charge (90 % interval, ``P(>= reserve)``)."""
        from evroute.driver.query import route_query

        t0 = time.perf_counter()
        s = st()
        v = s.current  # one model version for the whole request
        s_idx = _endpoint(s, req.origin, "origin", req.max_snap_m)
        g_idx = _endpoint(s, req.destination, "destination", req.max_snap_m)
        battery = _battery(s, req.charge, req.reserve)
        try:
            res = route_query(
                v.ctx,
                s_idx,
                g_idx,
                battery,
                req.delta,
                risk_aware=req.charge is not None,
                max_paths=req.max_paths,
                kinds=tuple(dict.fromkeys(req.routes)),
            )
        except UnreachableError as exc:
            raise FieldError("destination", " ".join(str(exc).split())) from None
        net = s.lg.network
        risk = None
        if res.risk is not None:
            risk = S.RiskOut(
                delta=req.delta, feasible=res.risk.feasible, certified=res.risk.certified, paths_listed=res.risk.paths
            )
        return S.RouteResponse(
            start=str(net.edge_ids[s_idx]),
            goal=str(net.edge_ids[g_idx]),
            vehicle=s.vehicle.name,
            source=v.source,
            battery=_battery_out(battery),
            routes=[_route_out(a, net, req.edges, req.geometry) for a in res.answers.values()],
            risk_aware=risk,
            **_answered(v, net, t0),
        )

    @app.post("/reach", response_model=S.ReachResponse, response_model_exclude_none=True)
    def reach(req: S.ReachRequest) -> S.ReachResponse:
        """Road segments reachable from ``origin`` keeping the reserve with probability ``>= 1 - delta``
        (conservative: :mod:`evroute.driver.reach`)."""
        from evroute.driver.reach import reachable

        t0 = time.perf_counter()
        s = st()
        v = s.current
        s_idx = _endpoint(s, req.origin, "origin", req.max_snap_m)
        battery = _battery(s, req.charge, req.reserve)
        res = reachable(s.lg, v.ctx.belief, s_idx, battery, req.delta, h0=v.ctx.h0)
        net = s.lg.network
        idx = np.flatnonzero(res.reachable)
        return S.ReachResponse(
            start=str(net.edge_ids[s_idx]),
            battery=_battery_out(battery),
            delta=req.delta,
            budget_wh=res.budget_wh,
            n_reachable=len(idx),
            n_edges=s.lg.n_nodes,
            reachable_km=float(net.length_m[idx].sum() / 1000.0),
            exact=res.exact,
            edges=net.edge_ids[idx].tolist() if req.edges else None,
            geometry=[_poly(net.geometry, [e], 5) for e in idx] if req.geometry else None,
            **_answered(v, net, t0),
        )

    @app.post("/plan", response_model=S.PlanResponse, response_model_exclude_none=True)
    def plan(req: S.PlanRequest) -> S.PlanResponse:
        """Charging stops with ``P(every arrival >= reserve) >= 1 - delta`` (:mod:`evroute.charging`), through the
        chargers the server was started with (``--chargers``); ``plan.feasible`` is False when no plan keeps the
        reserve (the answer then says how far the charge lasts)."""
        from evroute.charging.answers import plan_dict
        from evroute.charging.planner import plan_trip
        from evroute.charging.search import PlanSettings

        t0 = time.perf_counter()
        s = st()
        if s.chargers is None:
            raise ParameterError("this server has no chargers: start it with evroute serve --chargers FILE")
        v = s.current
        s_idx = _endpoint(s, req.origin, "origin", req.max_snap_m)
        g_idx = _endpoint(s, req.destination, "destination", req.max_snap_m)
        battery = _battery(s, req.charge, req.reserve)
        chargers = s.chargers.subset(s.chargers.availability >= req.min_availability)
        settings = PlanSettings(
            capacity_wh=battery.capacity_wh,
            charge=battery.charge,
            reserve=battery.reserve,
            max_soc=s.vehicle.max_soc,
            delta=req.delta,
            max_stops=req.max_stops,
            step=req.step,
            energy_weight=req.energy_weight,
            stop_s=60.0 * req.stop_min,
        )
        try:
            problem, found = plan_trip(
                s.lg, v.ctx.belief, s.vehicle, s_idx, g_idx, chargers, settings, trip_rho=req.trip_rho
            )
        except UnreachableError as exc:
            raise FieldError("destination", " ".join(str(exc).split())) from None
        net = s.lg.network
        return S.PlanResponse(
            start=str(net.edge_ids[s_idx]),
            goal=str(net.edge_ids[g_idx]),
            vehicle=s.vehicle.name,
            source=v.source,
            chargers_used=len(chargers),
            plan=_finite(plan_dict(found, problem, v.ctx.belief, s.lg, chargers)),
            **_answered(v, net, t0),
        )

    @app.post("/energy", response_model=S.EnergyResponse, response_model_exclude_none=True)
    def energy(req: S.EnergyRequest) -> S.EnergyResponse:
        """Energy +- sd, time and arrival charge of a given path of edge ids, or of the path a GPS trace drove."""
        from evroute.driver.answers import answer_route

        t0 = time.perf_counter()
        s = st()
        v = s.current
        battery = _battery(s, req.charge, req.reserve)
        match = None
        if req.edges is not None:
            path = _path_indices(s, req.edges, "edges")
        else:
            assert req.trace is not None  # the request model requires one of the two
            m = s.matcher().match(np.asarray(req.trace.lat), np.asarray(req.trace.lon))
            if len(m.path) == 0:
                raise FieldError("trace", "no sample of the trace lies near a road of the network")
            if m.pieces > 1:
                raise FieldError("trace", f"the trace matches {m.pieces} disconnected pieces (a gap); send each alone")
            path = m.path
            match = S.MatchOut(samples=len(m.edge), matched=int((m.edge >= 0).sum()), pieces=m.pieces)
        net = s.lg.network
        a = answer_route("path", path, v.ctx.belief, net, battery, v.ctx.time_s)
        return S.EnergyResponse(
            battery=_battery_out(battery),
            answer=_route_out(a, net, True, req.geometry),
            match=match,
            **_answered(v, net, t0),
        )

    @app.post("/observe", response_model=S.ObserveResponse)
    def observe(req: S.ObserveRequest) -> S.ObserveResponse:
        """Condition the model on driven edges' battery energies (Wh) and publish the result as a new version."""
        s = st()
        idx = _path_indices_any(s, req.edges)
        new = s.observe(idx, np.asarray(req.energies_wh, dtype=np.float64))
        return S.ObserveResponse(model_version=new.version, observations=new.observations, kind=new.kind)

    @app.post("/model/reload", response_model=S.ModelInfo)
    def reload_model() -> S.ModelInfo:
        """Read the model file again (a model swapped on disk, e.g. by ``evroute learn``) and publish it."""
        s = st()
        with field_errors("model"):
            s.reload()
        return _model_info(s)

    @app.get("/model", response_model=S.ModelInfo)
    def model() -> S.ModelInfo:
        """The current model version."""
        return _model_info(st())

    @app.get("/health", response_model=S.Health)
    def health() -> S.Health:
        s = st()
        return S.Health(
            status="ok",
            network=s.lg.network.name,
            n_edges=s.lg.n_nodes,
            model_version=s.current.version,
            uptime_s=time.time() - s.started,
        )

    @app.get("/metrics", response_model=S.Metrics)
    def get_metrics() -> S.Metrics:
        """Requests, errors and latency percentiles per endpoint (the last 10,000 requests each), and memory."""
        s = st()
        snap = {k: S.EndpointMetrics(**d) for k, d in metrics.snapshot().items()}
        return S.Metrics(
            uptime_s=time.time() - s.started, model_version=s.current.version, rss_mb=rss_mb(), endpoints=snap
        )

    @app.get("/network", response_model=S.NetworkInfo)
    def network() -> Response:
        """The network's extent and every edge as a straight segment (for the map page), and the vehicle."""
        return Response(st().network_json(), media_type="application/json")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_asset("serve/index.html").decode())

    @app.get("/static/{name:path}", include_in_schema=False)
    def static(name: str) -> Response:
        allowed = {"leaflet.js": "text/javascript", "leaflet.css": "text/css"}
        if name.startswith("images/") and name.endswith(".png") and "/" not in name[7:] and ".." not in name:
            return Response(_asset(f"leaflet/{name}"), media_type="image/png")
        if name not in allowed:
            return JSONResponse({"detail": "not found"}, status_code=404)
        return Response(_asset(f"leaflet/{name}"), media_type=allowed[name])

    app.add_middleware(MetricsMiddleware, metrics=metrics, known=PATHS)
    return app


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by its text (``"nan"``, ``"inf"``), for a JSON reply."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _asset(rel: str) -> bytes:
    return (resources.files("evroute") / "resources" / rel).read_bytes()


def _path_indices_any(state: ServiceState, ids: list[str]) -> np.ndarray:
    """Line-graph indices of edge ids (any order: observations need not form a path)."""
    net = state.lg.network
    out = np.empty(len(ids), dtype=np.int64)
    for i, e in enumerate(ids):
        with field_errors("edges"):
            out[i] = net.index_of(e)
    return out


def _model_info(s: ServiceState) -> S.ModelInfo:
    v = s.current
    return S.ModelInfo(
        version=v.version,
        kind=v.kind,
        source=v.source,
        observations=v.observations,
        created=v.created,
        vehicle=s.vehicle.name,
        network=s.lg.network.name,
        n_edges=s.lg.n_nodes,
        header=v.header,
    )


def openapi_schema() -> dict[str, Any]:
    """The API's OpenAPI schema (what ``docs/api/openapi.json`` holds)."""
    return create_app(None).openapi()


__all__ = ["PATHS", "FieldError", "create_app", "field_errors", "openapi_schema"]
