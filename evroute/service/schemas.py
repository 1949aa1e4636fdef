"""Requests and responses of the routing API: pydantic models, in the project's strict JSON mode.

Every request model uses :data:`evroute.validation.STRICT` (unknown keys refused; an ``int`` field takes ``3`` but
not ``3.5``, ``"3"`` or ``true``; a number is finite), so a bad request is a 422 whose ``detail[].loc`` names the
field.  States of charge are fractions of the battery capacity (``0.8`` = 80 %); energies are Wh, lengths m, times s.
Values that depend on the network or vehicle (an unknown edge id, a charge outside the vehicle's usable window, an
unreachable goal) are checked by the query and reported in the same 422 shape (:mod:`evroute.service.app`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evroute.validation import STRICT

RouteKind = Literal["energy-optimal", "shortest", "fastest", "risk-aware"]
ROUTE_KINDS: tuple[RouteKind, ...] = ("energy-optimal", "shortest", "fastest", "risk-aware")  # driver.query's order
#: an edge id of the network, or a point ``"LON,LAT"`` (WGS 84 degrees) snapped to the nearest edge
Endpoint = Field(min_length=1, max_length=200, description='edge id, or a point "LON,LAT" snapped to the nearest edge')
Fraction = Field(ge=0.0, le=1.0)
LonLat = tuple[float, float]


class _Request(BaseModel):
    model_config = STRICT


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RouteRequest(_Request):
    """``POST /route``: routes from ``origin`` to ``destination``; the risk-aware route needs ``charge``."""

    origin: str = Endpoint
    destination: str = Endpoint
    charge: float | None = Field(None, ge=0.0, le=1.0, description="start charge (fraction); adds the risk-aware route")
    reserve: float | None = Field(None, ge=0.0, le=1.0, description="charge to keep on arrival (default: min_soc)")
    delta: float = Field(0.05, gt=0.0, lt=0.5, description="allowed probability of arriving below the reserve")
    routes: list[RouteKind] = Field(default_factory=lambda: list(ROUTE_KINDS), min_length=1, max_length=4)
    max_snap_m: float = Field(250.0, gt=0.0, le=10_000.0, description="snapping limit of a LON,LAT point (m)")
    max_paths: int = Field(200, ge=1, le=2000, description="risk-aware search: most routes listed")
    edges: bool = Field(True, description="include each route's edge ids")
    geometry: bool = Field(False, description="include each route's polyline [[lon, lat], ...]")


class ReachRequest(_Request):
    """``POST /reach``: road segments reachable from ``origin`` keeping the reserve with probability 1 - delta."""

    origin: str = Endpoint
    charge: float = Field(ge=0.0, le=1.0, description="start charge (fraction of the battery capacity)")
    reserve: float | None = Field(None, ge=0.0, le=1.0)
    delta: float = Field(0.05, gt=0.0, lt=0.5)
    max_snap_m: float = Field(250.0, gt=0.0, le=10_000.0)
    edges: bool = Field(False, description="include the reachable edge ids")
    geometry: bool = Field(False, description="include the reachable segments as polylines (for a map)")


class TraceIn(_Request):
    """A GPS trace: ``lat`` and ``lon`` in WGS 84 degrees, one entry per sample, in driving order."""

    lat: list[float] = Field(min_length=2, max_length=100_000)
    lon: list[float] = Field(min_length=2, max_length=100_000)

    @model_validator(mode="after")
    def _same_length(self) -> TraceIn:
        if len(self.lat) != len(self.lon):
            raise ValueError(f"lat has {len(self.lat)} samples, lon {len(self.lon)}")
        if any(not -90.0 <= v <= 90.0 for v in self.lat) or any(not -180.0 <= v <= 180.0 for v in self.lon):
            raise ValueError("latitudes must lie in [-90, 90] and longitudes in [-180, 180] degrees")
        return self


class EnergyRequest(_Request):
    """``POST /energy``: the energy answer of a given path (``edges``, consecutive edges joined by legal turns) or
    of the path a GPS ``trace`` drove (map-matched); exactly one of the two."""

    edges: list[str] | None = Field(None, min_length=1, max_length=20_000)
    trace: TraceIn | None = None
    charge: float | None = Field(None, ge=0.0, le=1.0)
    reserve: float | None = Field(None, ge=0.0, le=1.0)
    geometry: bool = False

    @model_validator(mode="after")
    def _one_path(self) -> EnergyRequest:
        if (self.edges is None) == (self.trace is None):
            raise ValueError("give exactly one of edges (a path of edge ids) or trace (a GPS trace)")
        return self


class PlanRequest(_Request):
    """``POST /plan``: charging stops from ``origin`` to ``destination`` through the server's chargers (``evroute
    serve --chargers``), keeping the reserve at every stop and at the destination with probability ``1 - delta``
    (the fields mean what ``evroute plan``'s options do; docs/charging.md)."""

    origin: str = Endpoint
    destination: str = Endpoint
    charge: float = Field(ge=0.0, le=1.0, description="start charge (fraction of the battery capacity)")
    reserve: float | None = Field(None, ge=0.0, le=1.0, description="charge to keep on every arrival (default min_soc)")
    delta: float = Field(0.05, gt=0.0, lt=0.5, description="allowed P(some arrival below the reserve)")
    max_stops: int = Field(3, ge=0, le=10, description="most charging stops")
    step: float = Field(0.01, gt=0.0, le=0.5, description="grid of charge-to levels (fraction)")
    energy_weight: float = Field(0.0, ge=0.0, description="seconds one kWh is worth (0: least time)")
    stop_min: float = Field(3.0, ge=0.0, le=600.0, description="minutes a stop takes besides charging")
    trip_rho: float = Field(0.0, ge=0.0, le=1.0, description="trip-level correlation of traversal noise")
    min_availability: float = Field(0.0, ge=0.0, le=1.0, description="leave out chargers less likely to be free")
    max_snap_m: float = Field(250.0, gt=0.0, le=10_000.0, description="snapping limit of a LON,LAT point (m)")


class ObserveRequest(_Request):
    """``POST /observe``: driven edges and the battery energy each took (Wh; negative when recuperating)."""

    edges: list[str] = Field(min_length=1, max_length=10_000)
    energies_wh: list[float] = Field(min_length=1, max_length=10_000)

    @model_validator(mode="after")
    def _same_length(self) -> ObserveRequest:
        if len(self.edges) != len(self.energies_wh):
            raise ValueError(f"{len(self.edges)} edges but {len(self.energies_wh)} energies_wh")
        if any(abs(v) > 1e6 for v in self.energies_wh):
            raise ValueError("an edge energy beyond 1 MWh is no observation")
        return self


class Battery(_Response):
    capacity_wh: float
    charge: float
    reserve: float


class RouteOut(_Response):
    """One route's answer (see :class:`evroute.driver.answers.RouteAnswer`)."""

    route: str
    length_m: float
    time_s: float
    energy_wh: float = Field(description="posterior mean of the trip energy")
    energy_sd_wh: float = Field(description="sd of the expected energy (the model's uncertainty)")
    trip_sd_wh: float = Field(description="sd of one drive's energy (model and observation noise)")
    arrival_soc: float
    arrival_soc_90: tuple[float, float] = Field(description="5 % and 95 % quantiles of the arrival charge")
    p_arrival_above_reserve: float
    arrival_soc_capped: bool = Field(
        description="the charge reached the full battery on the way: regeneration beyond it is lost"
    )
    lost_to_full_battery_wh: float = Field(description="expected energy lost to a full battery (Wh)")
    n_edges: int
    edges: list[str] | None = None
    geometry: list[LonLat] | None = None


class RiskOut(_Response):
    delta: float
    feasible: bool
    certified: bool
    paths_listed: int


class _Answered(_Response):
    network: str
    model_version: int = Field(description="the model version that answered (one per request)")
    model_kind: str
    elapsed_ms: float = Field(description="time spent answering, in the server (ms)")


class RouteResponse(_Answered):
    start: str
    goal: str
    vehicle: str
    source: str
    battery: Battery
    routes: list[RouteOut]
    risk_aware: RiskOut | None = None


class ReachResponse(_Answered):
    start: str
    battery: Battery
    delta: float
    budget_wh: float
    n_reachable: int
    n_edges: int
    reachable_km: float
    exact: bool
    edges: list[str] | None = None
    geometry: list[list[LonLat]] | None = None


class PlanResponse(_Answered):
    """The plan of :func:`evroute.charging.answers.plan_dict` (``plan``: feasible, certified, legs, stops, arrival
    charges with 90 % intervals, ``p_all_reserve``, the charge along the route) and what answered it."""

    start: str
    goal: str
    vehicle: str
    source: str
    chargers_used: int
    plan: dict[str, object]


class MatchOut(_Response):
    samples: int
    matched: int
    pieces: int


class EnergyResponse(_Answered):
    battery: Battery
    answer: RouteOut
    match: MatchOut | None = None


class ModelInfo(_Response):
    version: int
    kind: str
    source: str
    observations: int
    created: float = Field(description="Unix time the version was published (s)")
    vehicle: str
    network: str
    n_edges: int
    header: dict[str, object] | None = Field(None, description="the model file's header (None for the prior)")


class ObserveResponse(_Response):
    model_version: int
    observations: int
    kind: str


class Health(_Response):
    status: Literal["ok"]
    network: str
    n_edges: int
    model_version: int
    uptime_s: float


class EndpointMetrics(_Response):
    requests: int
    errors: int = Field(description="responses with status >= 400")
    status: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mean_ms: float | None


class Metrics(_Response):
    uptime_s: float
    model_version: int
    rss_mb: float | None
    endpoints: dict[str, EndpointMetrics]


class NetworkInfo(_Response):
    name: str
    n_edges: int
    bounds: tuple[LonLat, LonLat] = Field(description="[[west, south], [east, north]]")
    segments: list[tuple[float, float, float, float]] = Field(
        description="every edge as a straight segment [lon0, lat0, lon1, lat1] (rounded to ~1 m), for a map"
    )
    vehicle: str
    min_soc: float
    max_soc: float
    capacity_wh: float


__all__ = [
    "EnergyRequest",
    "EnergyResponse",
    "Health",
    "Metrics",
    "ModelInfo",
    "NetworkInfo",
    "ObserveRequest",
    "ObserveResponse",
    "PlanRequest",
    "PlanResponse",
    "ReachRequest",
    "ReachResponse",
    "RouteRequest",
    "RouteResponse",
    "TraceIn",
]
