"""The reference paper's physics energy model (Eq. 8): every edge at constant speed, vectorised over edges.

    E_mech = m g l sin(a) + m g C_r l cos(a) + 0.5 C_d A rho l v^2          [J]
    E      = E_mech / (3600 eta+)   if E_mech >= 0   (propulsion losses)    [Wh]
    E      = E_mech * eta- / 3600   if E_mech <  0   (regenerative braking) [Wh]

``l`` is the edge length (m), ``v`` the driving speed (m/s, the speed limit by default) and
``sin(a)`` the incline (rise over length).  Downhill edges can have negative energy.

Two battery-side refinements of the vehicle profile (both off by default, so the numbers above are unchanged):

* auxiliary power ``P_aux`` (W: ``auxiliary_power_w`` plus the HVAC power at the profile's ambient temperature,
  :attr:`VehicleProfile.aux_w`): ``+ P_aux l / v / 3600`` Wh on every edge (the auxiliaries run for the travel time
  ``l / v``);
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

import numpy as np

from evroute.energy.vehicle import VehicleProfile
from evroute.errors import DataError, ParameterError


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
    timed = v.aux_w > 0 or v.auxiliary_power_w is not None or v.max_regen_power_kw is not None
    timed = timed or v.motor_efficiency_map is not None or v.battery_efficiency_map is not None
    if timed and np.any(speed_mps <= 0):
        raise ParameterError(
            "speeds must be > 0 with auxiliary power, a regeneration limit or a motor or battery map (time l / v)"
        )
    return battery_energy_wh(mech_j, length_m / speed_mps, v, speed_mps)


def regen_share(wheel: np.ndarray, vehicle: VehicleProfile, speed_mps: np.ndarray | float | None) -> np.ndarray:
    """``(n,)`` share of each braking work or power ``wheel`` (J or W, ``(n,)``) the motor recovers at ``speed_mps``
    (m/s, broadcast to ``(n,)``; :meth:`VehicleProfile.regen_fraction`), 1 where ``wheel >= 0``.  A profile whose
    share fades with speed needs the speeds (a one-line :class:`ParameterError` without them)."""
    if speed_mps is None:
        if vehicle.regen_fades:
            raise ParameterError(
                f"vehicle {vehicle.name!r}: its regeneration fades with speed, so the speeds are needed"
            )
        speed_mps = 0.0
    share = np.broadcast_to(vehicle.regen_fraction(speed_mps), wheel.shape)
    return np.where(wheel < 0, share, 1.0)


def battery_energy_wh(
    wheel_j: np.ndarray,
    duration_s: np.ndarray,
    vehicle: VehicleProfile,
    speed_mps: np.ndarray | float | None = None,
) -> np.ndarray:
    """Battery energy (Wh) that pays for work ``wheel_j`` at the wheels over ``duration_s``: the battery side of
    Eq. 8, shared by the edge models (:func:`edge_energy_wh`, :mod:`evroute.energy.profile`) and the trace model
    (:mod:`evroute.traces.energy`).

    ``W / eta+`` when ``W >= 0``, ``f W eta-`` when recuperating (``f``: the share of the braking work the motor
    takes, :meth:`VehicleProfile.regen_fraction` at the speed, 1 for a profile without brake blending; the friction
    brakes take the rest), the latter capped at ``max_regen_power_kw`` over the duration, plus ``auxiliary_power_w``
    over the duration.  With a motor efficiency map, ``eta+`` and ``eta-`` are multiplied by the motor's efficiency at
    its mean power, ``W / duration`` (``f W / duration`` when recuperating).  With a battery efficiency map the sum
    (the battery's terminal energy) is turned into chemical energy at its mean power
    (:meth:`VehicleProfile.chemical_power_w`).

    Args:
        wheel_j: ``(n,)`` work at the wheels (J).
        duration_s: ``(n,)`` durations (s, > 0 where used); used only with auxiliary power, a regeneration limit or
            a motor efficiency map.
        vehicle: the profile (efficiencies, ``auxiliary_power_w``, ``max_regen_power_kw``, the motor map, the brake
            blending).
        speed_mps: ``(n,)`` (or one) mean speed of each piece (m/s); needed only when the profile's regeneration
            fades with speed.
    """
    v = vehicle
    wheel_j = np.asarray(wheel_j, dtype=np.float64)
    motor_j = wheel_j * regen_share(wheel_j, v, speed_mps)
    if v.motor_efficiency_map is None:
        eta_m: np.ndarray | float = 1.0
    else:
        dt = np.asarray(duration_s, dtype=np.float64)
        eta_m = v.motor_efficiency(np.divide(motor_j, dt, out=np.zeros_like(motor_j), where=dt > 0))
    wh = (
        np.where(motor_j >= 0, motor_j / (v.propulsion_efficiency * eta_m), motor_j * v.recuperation_efficiency * eta_m)
        / 3600.0
    )
    if v.aux_w == 0 and v.max_regen_power_kw is None and v.battery_efficiency_map is None:
        return wh
    hours = np.asarray(duration_s, dtype=np.float64) / 3600.0
    if v.max_regen_power_kw is not None:
        wh = np.maximum(wh, -1000.0 * v.max_regen_power_kw * hours)
    wh = wh + v.aux_w * hours
    if v.battery_efficiency_map is None:
        return wh
    mean_w = np.divide(wh, hours, out=np.zeros_like(wh), where=hours > 0)
    return np.where(hours > 0, v.chemical_power_w(mean_w) * hours, wh)


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
    "battery_energy_wh",
    "edge_energy_wh",
    "elevation_potential_wh",
    "heading_change_rad",
    "network_energy_wh",
    "reduced_cost_wh",
    "regen_share",
    "travel_time_s",
]
