"""A drive cycle (a speed trace) through evroute's energy models: second by second, and as a chain of edges.

Used by the validation against FASTSim (``studies/energy_validation/energy_validation.py``): a cycle is driven

* as a trace (:func:`evroute.traces.energy.trace_energy`);
* as edges: cut at its stops into micro-trips (:func:`microtrips`), each one edge driven from rest to rest by the
  speed-profile model (:func:`evroute.energy.profile_energy`) at the cruise speed that keeps the micro-trip's
  moving time (:func:`cruise_for_time`) with the style's speed fluctuation while cruising (and without it:
  ``edges_steady``), plus the auxiliaries while idling;
* with Eq. 8 on the same edges at their average moving speeds (no acceleration, no stops).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evroute.energy import DrivingStyle, VehicleProfile, edge_energy_wh, profile_energy
from evroute.traces.energy import trace_energy
from evroute.traces.reader import Trace


def microtrips(t: np.ndarray, v: np.ndarray) -> list[tuple[float, float, float]]:
    """``(distance m, moving time s, idle time s)`` of each stop-to-stop piece of a speed trace.

    Args:
        t: ``(N,)`` increasing times (s).
        v: ``(N,)`` speeds (m/s, >= 0; 0 is a stop).

    A piece ends at each sample with speed 0 after motion; distances by the trapezoid rule, so they sum to the
    trace's distance.  A piece's idle time is the standstill before it; the standstill after the last piece is
    added to the last piece's.
    """
    dt = np.diff(t)
    moving = (v[:-1] > 0) | (v[1:] > 0)
    ds = 0.5 * (v[:-1] + v[1:]) * dt
    out: list[tuple[float, float, float]] = []
    dist = mov = idle = 0.0
    for k in range(len(dt)):
        if moving[k]:
            dist += ds[k]
            mov += dt[k]
            if v[k + 1] == 0:
                out.append((dist, mov, idle))
                dist = mov = idle = 0.0
        else:
            idle += dt[k]
    if dist > 0:
        out.append((dist, mov, idle))
    elif out and idle:
        d, m, i = out[-1]
        out[-1] = (d, m, i + idle)
    return out


def cruise_for_time(length_m: np.ndarray, time_s: np.ndarray, style: DrivingStyle) -> np.ndarray:
    """``(n,)`` cruise speeds (m/s) whose rest-to-rest profile (:func:`evroute.energy.profile_energy`) over
    ``length_m`` (``(n,)`` m) takes ``time_s`` (``(n,)`` s): the smaller root of ``L / v + v c = T`` with ``c = 1/(2a)
    + 1/(2b)`` (a trapezoid).  When even the fastest profile, the triangle with peak ``sqrt(L / c)`` and time ``2
    sqrt(c L)``, takes longer than ``T`` (``T^2 < 4 c L``), that triangle's peak."""
    c = 0.5 / style.acceleration_mps2 + 0.5 / style.deceleration_mps2
    disc = time_s**2 - 4.0 * c * length_m
    v_tri = np.sqrt(length_m / c)  # the peak of the triangle (cruise distance 0)
    v = np.where(disc >= 0, (time_s - np.sqrt(np.maximum(disc, 0.0))) / (2.0 * c), v_tri)
    return np.minimum(v, v_tri)


def speed_fluctuation_mps2(t: np.ndarray, v: np.ndarray, style: DrivingStyle | None = None) -> float:
    """The speed fluctuation of a speed trace (m/s^2; :class:`evroute.energy.DrivingStyle`): its positive kinetic
    energy ``sum (v_{i+1}^2 - v_i^2)+`` beyond that of its micro-trips driven as accelerate-cruise-brake profiles at
    the cruise speeds that keep their times (:func:`cruise_for_time`; a profile from rest has ``v_c^2``), per metre of
    those profiles' cruise.  A kinematic statistic of the trace alone: no vehicle, no energy.

    Args:
        t: ``(N,)`` increasing times (s).
        v: ``(N,)`` speeds (m/s, >= 0).
        style: accelerations of the profiles (default :class:`DrivingStyle`).
    """
    st = style or DrivingStyle()
    t, v = np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64)
    mt = np.asarray(microtrips(t, v), dtype=np.float64).reshape(-1, 3)
    length, moving = mt[:, 0], mt[:, 1]
    v_c = cruise_for_time(length, moving, st)
    d_c = length - v_c**2 / (2 * st.acceleration_mps2) - v_c**2 / (2 * st.deceleration_mps2)
    cruise_m = float(np.maximum(d_c, 0.0).sum())
    if cruise_m <= 0:
        return 0.0
    pke = float(np.clip(np.diff(v**2), 0.0, None).sum())
    return max(pke - float((v_c**2).sum()), 0.0) / cruise_m


def cycle_energy_wh(
    t: np.ndarray, v: np.ndarray, vehicle: VehicleProfile, style: DrivingStyle | None = None
) -> dict[str, float]:
    """evroute's energies (Wh) of the cycle ``(t, v)`` (``(N,)`` s and m/s, flat) for ``vehicle``: ``trace``,
    ``edges`` (with ``style``, default :class:`DrivingStyle`, its speed fluctuation included), ``edges_steady`` (the
    same without the speed fluctuation) and ``eq8`` (module doc), and ``edges_time_s``, the edge chain's time with
    the idling (s)."""
    n = len(t)
    trace = Trace(t, v, np.zeros(n), np.full(n, 50.0), np.zeros(n), np.zeros(n), name="cycle")
    out = {"trace": trace_energy(trace, vehicle).total_wh}
    mt = np.asarray(microtrips(t, v), dtype=np.float64)
    length, moving, idle = mt[:, 0], mt[:, 1], mt[:, 2]
    style = style or DrivingStyle()
    v_c = cruise_for_time(length, moving, style)
    aux_idle = vehicle.aux_w * idle.sum() / 3600.0
    steady = replace(style, speed_fluctuation_mps2=0.0)
    for key, st in (("edges", style), ("edges_steady", steady)):
        prof = profile_energy(length, 0.0, v_c, 0.0, np.zeros_like(length), vehicle, st)
        out[key] = float(prof.battery_wh.sum()) + aux_idle
    out["edges_time_s"] = float(prof.time_s.sum() + idle.sum())
    out["eq8"] = float(edge_energy_wh(length, length / moving, np.zeros_like(length), vehicle).sum()) + aux_idle
    return out


__all__ = ["cruise_for_time", "cycle_energy_wh", "microtrips", "speed_fluctuation_mps2"]
