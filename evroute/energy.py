"""Physics energy model of an electric vehicle (paper Eq. 8), vectorised over edges.

    E_mech = m g l sin(a) + m g C_r l cos(a) + 0.5 C_d A rho l v^2          [J]
    E      = E_mech / (3600 eta+)   if E_mech >= 0   (propulsion losses)    [Wh]
    E      = E_mech * eta- / 3600   if E_mech <  0   (regenerative braking) [Wh]

``l`` is the edge length (m), ``v`` the driving speed (m/s, the speed limit by default) and
``sin(a)`` the incline (rise over length).  Downhill edges can have negative energy.

Two battery-side refinements of the vehicle profile (both off by default, so the numbers above are unchanged):

* auxiliary power ``P_aux`` (W; heating, air conditioning): ``+ P_aux l / v / 3600`` Wh on every edge (the
  auxiliaries run for the travel time ``l / v``);
* maximum regeneration power ``P_regen`` (kW): the recovered energy of an edge is at most what the motor can
  recover in its travel time, ``E >= -1000 P_regen l / v / 3600`` Wh.

A third refinement, also off by default, is a turn term: **cornering drag** ``radial_drag_m`` (SUMO's
``radialDragCoefficient`` ``c``, 0.1 m in SUMO's ``Energy`` model).  SUMO charges ``c m v^2 / r`` per 1 s
simulation step with the radius ``r = v dt / |d theta|`` of the step's heading change ``d theta``, i.e.
``c m v |d theta|`` (J) per step: a heading change ``theta`` (rad) driven at speed ``v`` costs ``c m v theta`` at
the wheels, whatever the radius.  Eq. 8 then adds ``c m v theta_e`` to the wheel work of edge ``e``, ``theta_e``
the total heading change along the edge's polyline (:func:`heading_change_rad`; :func:`network_energy_wh` computes
it from the network's geometry).  Measured against SUMO (``docs/results/sumo_live_routes.md``): the auxiliaries
(100 W, SUMO's default) bring Eq. 8 measurably closer to live route energies; the cornering drag at the speed
limit over-predicts them (a positive route bias on both networks); the regeneration cap moves Eq. 8 away from SUMO,
whose ``Energy`` model has no such limit.

All three keep ``E - k dz >= 0`` (:func:`elevation_potential_wh`): the auxiliaries and the cornering drag add
positive terms and the cap only raises negative energies.  The battery itself (capacity, usable window) does not
enter Eq. 8; it turns route energies into states of charge (:mod:`evroute.driver`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from evroute.errors import DataError, ParameterError, check_positive, check_range
from evroute.paths import resource

VEHICLE_DIR = resource("vehicles")


#: Physically possible ranges of the vehicle fields, ``name -> (low, high, low excluded)``, SI units.  Generous on
#: purpose (a profile is the user's), but a value outside is a typo, not a vehicle: mass up to 100 t (the heaviest
#: road-legal trucks are ~60 t), frontal area up to 15 m^2 (a bus or truck ~10 m^2), drag coefficient up to 2 (a flat
#: plate ~1.2), rolling resistance up to 0.5 (tyres in loose sand ~0.3), gravity up to 25 m/s^2 (Earth 9.78-9.83),
#: air density up to 3 kg/m^3 (1.2 at sea level, ~1.5 at -40 C), efficiencies at most 1.  Checked when a profile is
#: built, so absurd values (``mass_kg: 1e300``) are one-line errors before any energy is computed.
PHYSICAL_RANGES: dict[str, tuple[float, float, bool]] = {
    "mass_kg": (0.0, 100_000.0, True),
    "rolling_resistance": (0.0, 0.5, False),
    "front_area_m2": (0.0, 15.0, True),
    "drag_coefficient": (0.0, 2.0, False),
    "propulsion_efficiency": (0.0, 1.0, True),
    "recuperation_efficiency": (0.0, 1.0, False),
    "gravity_mps2": (0.0, 25.0, True),
    "air_density_kgpm3": (0.0, 3.0, False),
    "battery_capacity_wh": (0.0, 10_000_000.0, True),
}
#: ranges of the optional battery-side fields, checked when set: auxiliary power up to 50 kW, regeneration power up
#: to 1 MW
OPTIONAL_RANGES: dict[str, tuple[float, float]] = {
    "auxiliary_power_w": (0.0, 50_000.0),
    "max_regen_power_kw": (0.0, 1_000.0),
    "radial_drag_m": (0.0, 10.0),
}


@dataclass(frozen=True)
class VehicleProfile:
    """Vehicle and environment parameters of the energy model (SI units)."""

    name: str = "sumo_ev"
    mass_kg: float = 1830.0
    rolling_resistance: float = 0.01
    front_area_m2: float = 2.6
    drag_coefficient: float = 0.35
    propulsion_efficiency: float = 0.98
    recuperation_efficiency: float = 0.96
    gravity_mps2: float = 9.82
    air_density_kgpm3: float = 1.2
    description: str = ""
    #: battery capacity (Wh); default SUMO's battery device default (35 kWh)
    battery_capacity_wh: float = 35000.0
    #: usable window of the state of charge (fractions of the capacity): the battery management keeps the charge
    #: within ``[min_soc, max_soc]``
    min_soc: float = 0.0
    max_soc: float = 1.0
    #: constant auxiliary power (W); None: not modelled (Eq. 8 adds nothing, SUMO keeps its own 100 W default)
    auxiliary_power_w: float | None = None
    #: maximum regeneration power (kW) capping the recovered energy of an edge; None: no limit
    max_regen_power_kw: float | None = None
    #: cornering drag coefficient (m; SUMO's ``radialDragCoefficient``): ``c m v theta`` J per heading change
    #: ``theta`` at speed ``v`` (module doc); None: not modelled (Eq. 8 as in the paper)
    radial_drag_m: float | None = None

    def __post_init__(self) -> None:
        for f, (low, high, low_open) in PHYSICAL_RANGES.items():
            check_range(f, getattr(self, f), low, high, low_open=low_open)
        for f, (low, high) in OPTIONAL_RANGES.items():
            if getattr(self, f) is not None:
                check_range(f, getattr(self, f), low, high, low_open=False)
        check_positive("min_soc", self.min_soc, allow_zero=True)
        check_positive("max_soc", self.max_soc)
        if not self.min_soc < self.max_soc <= 1:
            raise ParameterError(
                f"need 0 <= min_soc < max_soc <= 1, got min_soc {self.min_soc}, max_soc {self.max_soc}"
            )

    @property
    def aux_w(self) -> float:
        """Auxiliary power used by Eq. 8 (W): ``auxiliary_power_w`` or 0."""
        return float(self.auxiliary_power_w or 0.0)

    @classmethod
    def load(cls, name_or_path: str | Path = "sumo_ev") -> VehicleProfile:
        """Load a profile by name (``evroute/resources/vehicles/NAME.json``) or from a JSON file path.

        The JSON object is checked against the fields of this class (strict types: ``"mass_kg": true`` is an
        error, unknown keys too), then their ranges.
        """
        from evroute.validation import call_checked, check_params

        p = Path(name_or_path)
        src = VEHICLE_DIR / f"{name_or_path}.json" if not p.suffix else p
        if not src.is_file():
            known = ", ".join(sorted(q.name[:-5] for q in VEHICLE_DIR.iterdir() if q.name.endswith(".json")))
            what = "is a directory" if p.suffix and p.is_dir() else "not found"
            raise DataError(f"vehicle profile {str(name_or_path)!r} {what} (known: {known})")
        try:
            raw = json.loads(src.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"cannot read vehicle profile {src}: {exc}") from None
        check_params(f"vehicle profile {src}: field", raw, [cls])
        try:
            return call_checked(f"vehicle profile {src}", cls, **raw)
        except ParameterError as exc:
            raise ParameterError(f"vehicle profile {src}: {exc}") from None

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)


def edge_energy_wh(
    length_m: np.ndarray,
    speed_mps: np.ndarray,
    incline: np.ndarray,
    vehicle: VehicleProfile | None = None,
    heading_change: np.ndarray | None = None,
) -> np.ndarray:
    """Deterministic energy to drive each edge at constant speed, in Wh (negative when recuperating).

    Args:
        length_m: ``(E,)`` edge lengths in m.
        speed_mps: ``(E,)`` driving speeds in m/s.
        incline: ``(E,)`` sine of the slope angle (dimensionless, in [-1, 1]).
        vehicle: vehicle profile (default: SUMO EV defaults of the reference paper).
        heading_change: ``(E,)`` total heading change along each edge (rad, >= 0; :func:`heading_change_rad`),
            used only when the profile sets ``radial_drag_m`` (then required).

    Returns:
        ``(E,)`` energy in Wh.
    """
    v = vehicle or VehicleProfile()
    length_m = np.asarray(length_m, dtype=np.float64)
    speed_mps = np.asarray(speed_mps, dtype=np.float64)
    sin_a = np.asarray(incline, dtype=np.float64)
    if not (np.all(np.isfinite(length_m)) and np.all(np.isfinite(speed_mps)) and np.all(np.isfinite(sin_a))):
        raise DataError("energy model input contains NaN or inf")
    if np.any(np.abs(sin_a) > 1):
        raise ParameterError("incline must be in [-1, 1] (sine of the slope angle)")
    cos_a = np.sqrt(1.0 - sin_a**2)
    mg = v.mass_kg * v.gravity_mps2
    mech_j = (
        mg * length_m * sin_a
        + mg * v.rolling_resistance * length_m * cos_a
        + 0.5 * v.drag_coefficient * v.front_area_m2 * v.air_density_kgpm3 * length_m * speed_mps**2
    )
    if v.radial_drag_m is not None:
        if heading_change is None:
            raise ParameterError("radial_drag_m needs each edge's heading change (heading_change_rad)")
        theta = np.asarray(heading_change, dtype=np.float64)
        if theta.shape != length_m.shape or not np.all(np.isfinite(theta)) or np.any(theta < 0):
            raise DataError("heading changes must be finite, >= 0 and one per edge")
        mech_j = mech_j + v.radial_drag_m * v.mass_kg * speed_mps * theta
    if (v.auxiliary_power_w is not None or v.max_regen_power_kw is not None) and np.any(speed_mps <= 0):
        raise ParameterError("speeds must be > 0 with auxiliary power or a regeneration limit (travel time l / v)")
    return battery_energy_wh(mech_j, length_m / speed_mps, v)


def battery_energy_wh(wheel_j: np.ndarray, duration_s: np.ndarray, vehicle: VehicleProfile) -> np.ndarray:
    """Battery energy (Wh) that pays for work ``wheel_j`` at the wheels over ``duration_s``: the battery side of
    Eq. 8, shared by the edge model (:func:`edge_energy_wh`) and the trace model (:mod:`evroute.traces.energy`).

    ``W / eta+`` when ``W >= 0``, ``W eta-`` when recuperating, the latter capped at ``max_regen_power_kw`` over the
    duration, plus ``auxiliary_power_w`` over the duration.

    Args:
        wheel_j: ``(n,)`` work at the wheels (J).
        duration_s: ``(n,)`` durations (s); used only with auxiliary power or a regeneration limit.
        vehicle: the profile (efficiencies, ``auxiliary_power_w``, ``max_regen_power_kw``).
    """
    v = vehicle
    wh = np.where(wheel_j >= 0, wheel_j / v.propulsion_efficiency, wheel_j * v.recuperation_efficiency) / 3600.0
    if v.auxiliary_power_w is None and v.max_regen_power_kw is None:
        return wh
    hours = np.asarray(duration_s, dtype=np.float64) / 3600.0
    if v.max_regen_power_kw is not None:
        wh = np.maximum(wh, -1000.0 * v.max_regen_power_kw * hours)
    return wh + v.aux_w * hours


def network_energy_wh(network, vehicle: VehicleProfile | None = None) -> np.ndarray:  # network: RoadNetwork
    """``(E,)`` deterministic energy (Wh) of every edge of a :class:`RoadNetwork` at its speed limit (with the
    cornering drag of the edges' polylines when the profile sets ``radial_drag_m``)."""
    v = vehicle or VehicleProfile()
    theta = heading_change_rad(network.geometry) if v.radial_drag_m is not None else None
    return edge_energy_wh(network.length_m, network.speed_mps, network.incline, v, theta)


def heading_change_rad(geometry: list[np.ndarray]) -> np.ndarray:
    """``(E,)`` total heading change along each polyline (rad): the sum of the absolute turns between consecutive
    segments, each in ``[0, pi]``.

    Args:
        geometry: ``E`` arrays of shape ``(k_i, 2)``, (lon, lat) in degrees (a local equirectangular projection,
            longitudes scaled by the cosine of the polyline's mean latitude: exact angles for city-sized edges).
            Repeated points are skipped; a polyline of fewer than three distinct points has no turn (0).
    """
    out = np.zeros(len(geometry))
    for i, g in enumerate(geometry):
        p = np.asarray(g, dtype=np.float64).reshape(-1, 2)
        if len(p) < 3:
            continue
        x = p[:, 0] * np.cos(np.deg2rad(p[:, 1].mean()))
        dx, dy = np.diff(x), np.diff(p[:, 1])
        keep = (dx != 0) | (dy != 0)
        h = np.arctan2(dy[keep], dx[keep])
        if len(h) > 1:
            out[i] = float(np.abs((np.diff(h) + np.pi) % (2 * np.pi) - np.pi).sum())
    return out


def elevation_potential_wh(network, vehicle: VehicleProfile | None = None) -> np.ndarray:
    """``(E,)`` Johnson-style potential difference along each edge: ``m g eta- (z_to - z_from) / 3600`` (Wh).

    With ``k = m g eta- / 3600``, ``E_det(e) - k dz(e) >= 0`` for every edge (uphill: the propulsion losses
    ``(1/eta+ - eta-) m g dz`` and the resistances are positive; downhill with recuperation: only the
    recuperated resistances remain; downhill without recuperation: ``E >= m g |dz| eta-``), so the physics
    energies are non-negative reduced costs.  Along a route the potential telescopes to
    ``k (z_end(goal) - z_start(start))``, a constant, so shifting edge costs by it keeps the best route.

    Both statements need consistent networks, which every loader produces (:mod:`evroute.network.elevation`):
    ``|dz| <= length`` on every edge (no clipped incline) and consecutive edges sharing their junction's elevation.
    """
    v = vehicle or VehicleProfile()
    return v.mass_kg * v.gravity_mps2 * v.recuperation_efficiency * (network.z_to_m - network.z_from_m) / 3600.0


def reduced_cost_wh(network, vehicle: VehicleProfile | None = None) -> np.ndarray:  # network: RoadNetwork
    """``(E,)`` physics energy minus the elevation potential, ``E_det(e) - k dz(e)`` (Wh): the dissipated energy
    (losses and resistances), ``>= 0`` on every edge of a consistent network (see :func:`elevation_potential_wh`)."""
    return network_energy_wh(network, vehicle) - elevation_potential_wh(network, vehicle)


def travel_time_s(length_m: np.ndarray, speed_mps: np.ndarray) -> np.ndarray:
    """``(E,)`` free-flow travel time in s."""
    return np.asarray(length_m, dtype=np.float64) / np.asarray(speed_mps, dtype=np.float64)


__all__ = [
    "VehicleProfile",
    "battery_energy_wh",
    "edge_energy_wh",
    "elevation_potential_wh",
    "heading_change_rad",
    "network_energy_wh",
    "reduced_cost_wh",
    "travel_time_s",
]
