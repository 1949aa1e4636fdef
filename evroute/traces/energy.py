"""The physics energy model applied along a logged trace, second by second.

Between two samples ``i`` and ``i + 1`` (time step ``dt``, mean speed ``v = (v_i + v_{i+1}) / 2``, distance
``ds = v dt``, smoothed altitude change ``dz``) the work at the wheels is

    W = 1/2 m_eff (v_{i+1}^2 - v_i^2) + m g dz + m g C_r ds + 1/2 rho C_d A v^2 ds          [J]

(kinetic, potential, rolling and aerodynamic terms; ``m_eff = m + m_rot`` adds the rotating masses' inertia;
``cos(a) ~ 1``), and the battery pays

    E = W / eta+                        if W >= 0          (propulsion losses)
    E = max(f W eta-, -P_regen dt)      if W <  0          (recuperation: the motor's share f(v) of the braking,
                                                            capped by the regeneration power)
    E += P_aux dt                                           (auxiliaries run whenever the log runs)

which is Eq. 8 of the reference paper (:mod:`evroute.energy`) plus the kinetic term that a constant-speed edge model
leaves out: summed over a trip that starts and ends at rest the kinetic term telescopes, but its losses (braking,
``1/eta+ - eta-`` per cycle) do not.  GPS altitude is noisy (metre-quantised, with spikes of tens of metres), so it is
smoothed along the distance driven before ``dz`` is taken (:func:`smooth_altitude`): at standstill the distance does
not change, so neither does the smoothed altitude, and no energy is charged for a car that is not moving.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import median_filter

from evroute.energy import VehicleProfile, battery_energy_wh
from evroute.errors import ParameterError, check_positive
from evroute.traces.reader import Trace


@dataclass(frozen=True)
class TraceModelOptions:
    """Options of the trace energy model that are not properties of the vehicle.

    Attributes:
        rotating_mass_kg: equivalent mass of the rotating parts (wheels, motor) added to the kinetic term (kg);
            None: the vehicle profile's ``rotating_mass_kg`` (0 when it has none).
        altitude_median_samples: width of the median filter that removes altitude spikes (samples, odd, 1 = off).
        altitude_window_m: width of the distance window over which altitude is averaged (m, 0 = off).
    """

    rotating_mass_kg: float | None = None
    altitude_median_samples: int = 5
    altitude_window_m: float = 100.0

    def __post_init__(self) -> None:
        if self.rotating_mass_kg is not None:
            check_positive("rotating_mass_kg", self.rotating_mass_kg, allow_zero=True)
        check_positive("altitude_window_m", self.altitude_window_m, allow_zero=True)
        if self.altitude_median_samples < 1 or self.altitude_median_samples % 2 == 0:
            raise ParameterError(
                f"altitude_median_samples must be an odd integer >= 1, got {self.altitude_median_samples}"
            )


def cumulative_distance_m(trace: Trace) -> np.ndarray:
    """``(N,)`` distance driven since the first sample (m), trapezoid rule on speed."""
    ds = 0.5 * (trace.speed_mps[1:] + trace.speed_mps[:-1]) * np.diff(trace.t_s)
    return np.concatenate([[0.0], np.cumsum(ds)])


def smooth_altitude(trace: Trace, options: TraceModelOptions | None = None) -> np.ndarray:
    """``(N,)`` altitude (m) with spikes removed (running median over samples) and averaged over a distance window.

    The window of sample ``i`` holds every sample whose distance driven lies within ``altitude_window_m / 2`` of
    sample ``i``'s; samples at the same distance (a stop) share one window and so one smoothed altitude.
    """
    opt = options or TraceModelOptions()
    z = np.asarray(trace.altitude_m, dtype=np.float64)
    if opt.altitude_median_samples > 1:
        z = median_filter(z, size=opt.altitude_median_samples, mode="nearest")
    if opt.altitude_window_m <= 0:
        return z
    s = cumulative_distance_m(trace)
    half = 0.5 * opt.altitude_window_m
    lo = np.searchsorted(s, s - half, side="left")
    hi = np.searchsorted(s, s + half, side="right")
    csum = np.concatenate([[0.0], np.cumsum(z)])
    return (csum[hi] - csum[lo]) / (hi - lo)


@dataclass(frozen=True)
class TraceEnergy:
    """Energy of every step of a trace (``N - 1`` steps between ``N`` samples).

    Attributes:
        battery_wh: ``(N-1,)`` battery energy of each step (Wh; negative when recuperating more than the
            auxiliaries draw).
        wheel_j: ``(N-1,)`` work at the wheels (J).
        kinetic_j, potential_j, rolling_j, drag_j: ``(N-1,)`` the four terms of ``wheel_j`` (J).
        distance_m: ``(N-1,)`` distance of each step (m).
        dt_s: ``(N-1,)`` duration of each step (s).
    """

    battery_wh: np.ndarray
    wheel_j: np.ndarray
    kinetic_j: np.ndarray
    potential_j: np.ndarray
    rolling_j: np.ndarray
    drag_j: np.ndarray
    distance_m: np.ndarray
    dt_s: np.ndarray

    @property
    def total_wh(self) -> float:
        return float(self.battery_wh.sum())

    def cumulative_wh(self) -> np.ndarray:
        """``(N,)`` battery energy used since the first sample (Wh)."""
        return np.concatenate([[0.0], np.cumsum(self.battery_wh)])


def trace_energy(
    trace: Trace,
    vehicle: VehicleProfile,
    options: TraceModelOptions | None = None,
    *,
    altitude_m: np.ndarray | None = None,
) -> TraceEnergy:
    """Battery energy of every step of ``trace`` for ``vehicle`` (see the module docstring for the model).

    Args:
        trace: the logged trip.
        vehicle: the vehicle profile (mass, resistances, efficiencies, ``auxiliary_power_w``,
            ``max_regen_power_kw``).
        options: rotating mass and altitude smoothing.
        altitude_m: ``(N,)`` altitude to use instead of :func:`smooth_altitude` of the trace (m).

    Returns:
        The per-step energies.
    """
    opt = options or TraceModelOptions()
    z = smooth_altitude(trace, opt) if altitude_m is None else np.asarray(altitude_m, dtype=np.float64)
    if z.shape != trace.t_s.shape:
        raise ParameterError(f"altitude_m has shape {z.shape}, the trace {trace.t_s.shape}")
    v0, v1 = trace.speed_mps[:-1], trace.speed_mps[1:]
    dt = np.diff(trace.t_s)
    vbar = 0.5 * (v0 + v1)
    ds = vbar * dt
    m, g = vehicle.mass_kg, vehicle.gravity_mps2
    m_rot = (vehicle.rotating_mass_kg or 0.0) if opt.rotating_mass_kg is None else opt.rotating_mass_kg
    kinetic = 0.5 * (m + m_rot) * (v1**2 - v0**2)
    potential = m * g * np.diff(z)
    rolling = m * g * vehicle.rolling_resistance * ds
    drag = 0.5 * vehicle.air_density_kgpm3 * vehicle.drag_coefficient * vehicle.front_area_m2 * vbar**2 * ds
    wheel = kinetic + potential + rolling + drag
    return TraceEnergy(
        battery_wh=battery_energy_wh(wheel, dt, vehicle, vbar),
        wheel_j=wheel,
        kinetic_j=kinetic,
        potential_j=potential,
        rolling_j=rolling,
        drag_j=drag,
        distance_m=ds,
        dt_s=dt,
    )


def measured_energy_wh(trace: Trace, vehicle: VehicleProfile) -> np.ndarray:
    """``(N,)`` battery energy used since the first sample according to the logged state of charge (Wh):
    ``(soc_0 - soc_i) / 100 * (max_soc - min_soc) * battery_capacity_wh`` (SoC in % of the usable window)."""
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    return (trace.soc_pct[0] - trace.soc_pct) / 100.0 * usable


def soc_resolution_wh(trace: Trace, vehicle: VehicleProfile) -> float:
    """Energy of the smallest state-of-charge step seen in the log (Wh): the quantisation of the measurement."""
    steps = np.abs(np.diff(trace.soc_pct))
    steps = steps[steps > 1e-9]
    if steps.size == 0:
        raise ParameterError(f"trace {trace.name!r}: the state of charge never changes")
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    return float(np.round(steps.min(), 6) / 100.0 * usable)
