"""evroute's energy models against FASTSim 3 (NREL) on the UDDS and HWFET cycles, and on the Twizy logs.

Command (needs the optional extra ``evroute[validation]``, i.e. ``fastsim``)::

    python scripts/energy/energy_validation.py --out docs/results/energy_validation.md

writes ``docs/results/data/energy_validation_cycles.csv`` (and, with ``$EVROUTE_DATA/ev-logs/rsk-twizy/``,
``energy_validation_twizy.csv``), then the page from those files (``--report-only`` rebuilds the page from them).

(a) For every electric vehicle FASTSim ships, both cycles are simulated by FASTSim (its own vehicle file, unadjusted
test procedure: battery chemical energy over the cycle) and by evroute with the matching shipped profile
(``evroute/resources/vehicles``, built from the same FASTSim files; nothing is fitted to these cycles):

* ``trace``: the cycle driven second by second through :func:`evroute.traces.energy.trace_energy`;
* ``edges``: the cycle cut into micro-trips (stop to stop), each one edge driven from rest to rest
  (:func:`evroute.energy.profile.profile_energy`, the junction model's stop branch) at the constant cruise speed
  that gives the micro-trip's moving time (the cycle's average speed), plus the auxiliaries over the idling;
* ``eq8``: the same edges at the same cruise speeds with the paper's Eq. 8 (the ``sumo_ev`` efficiencies of the
  paper replaced by the vehicle's, no stops): what the old prior would say.

(d) The Twizy logs: :func:`evroute.traces.energy.trace_energy` with the ``twizy`` profile, uncalibrated, against the
logged state of charge.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.energy import DrivingStyle, VehicleProfile, edge_energy_wh, profile_energy
from evroute.traces.energy import trace_energy
from evroute.traces.reader import Trace

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "results" / "data"
CYCLES = ("udds", "hwfet")
#: FASTSim vehicle file -> evroute profile
VEHICLES = {
    "2020 Chevrolet Bolt EV thrml.yaml": "chevrolet_bolt_2020",
    "2022 Tesla Model 3 RWD thrml.yaml": "tesla_model3_rwd_2022",
    "2022_Renault_Zoe_ZE50_R135.yaml": "renault_zoe_ze50",
    "2016 Nissan Leaf 30 kWh thrml.yaml": "nissan_leaf_2016",
}
COMMAND = "python scripts/energy/energy_validation.py --out docs/results/energy_validation.md"
GOAL_PCT = 10.0


def fastsim_cycle(cycle: str) -> tuple[np.ndarray, np.ndarray]:
    """``(t_s, speed_mps)`` of a FASTSim cycle resource."""
    import json

    import fastsim as fs

    data = json.loads(fs.Cycle.from_resource(f"{cycle}.csv").to_json())
    return np.asarray(data["time_seconds"], dtype=np.float64), np.asarray(data["speed_meters_per_second"], dtype=float)


def fastsim_energy_wh(vehicle_file: str, cycle: str) -> tuple[float, float]:
    """``(battery chemical energy Wh, distance m)`` of FASTSim's simulation of ``cycle``."""
    import fastsim as fs

    sd = fs.SimDrive(fs.Vehicle.from_resource(vehicle_file), fs.Cycle.from_resource(f"{cycle}.csv"))
    sd.run()
    last = sd.to_dataframe().iloc[-1]
    return float(last["veh.pt_type.BEV.res.history.energy_out_chemical_joules"]) / 3600.0, float(
        last["veh.history.dist_meters"]
    )


def microtrips(t: np.ndarray, v: np.ndarray) -> list[tuple[float, float, float]]:
    """``(distance m, moving time s, idle time s)`` of each stop-to-stop piece of a speed trace (trapezoid rule;
    the idle time before the first piece and after the last one goes to the first and last)."""
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
    """Cruise speed (m/s) whose rest-to-rest profile over ``length_m`` takes ``time_s``: the root of
    ``L / v + v (1/(2a) + 1/(2b)) = T`` (the smaller one: the trapezoid); the triangle's peak when no trapezoid is
    that slow (``T`` below the triangle's time: the profile cannot be as slow... then the slowest profile)."""
    c = 0.5 / style.acceleration_mps2 + 0.5 / style.deceleration_mps2
    disc = time_s**2 - 4.0 * c * length_m
    v_tri = np.sqrt(length_m / c)  # the peak of the triangle (cruise distance 0)
    v = np.where(disc >= 0, (time_s - np.sqrt(np.maximum(disc, 0.0))) / (2.0 * c), v_tri)
    return np.minimum(v, v_tri)


def evroute_cycle_wh(t: np.ndarray, v: np.ndarray, vehicle: VehicleProfile) -> dict[str, float]:
    """evroute's energies (Wh) of a cycle: ``trace``, ``edges`` and ``eq8`` (module doc)."""
    n = len(t)
    trace = Trace(t, v, np.zeros(n), np.full(n, 50.0), np.zeros(n), np.zeros(n), name="cycle")
    out = {"trace": trace_energy(trace, vehicle).total_wh}
    mt = np.asarray(microtrips(t, v), dtype=np.float64)
    length, moving, idle = mt[:, 0], mt[:, 1], mt[:, 2]
    style = DrivingStyle()
    v_c = cruise_for_time(length, moving, style)
    prof = profile_energy(length, 0.0, v_c, 0.0, np.zeros_like(length), vehicle, style)
    aux_idle = vehicle.aux_w * idle.sum() / 3600.0
    out["edges"] = float(prof.battery_wh.sum()) + aux_idle
    out["edges_time_s"] = float(prof.time_s.sum() + idle.sum())
    out["eq8"] = float(edge_energy_wh(length, length / moving, np.zeros_like(length), vehicle).sum()) + aux_idle
    return out


def run_cycles() -> pd.DataFrame:
    rows = []
    for vfile, name in VEHICLES.items():
        vehicle = VehicleProfile.load(name)
        for cycle in CYCLES:
            t, v = fastsim_cycle(cycle)
            ref_wh, dist = fastsim_energy_wh(vfile, cycle)
            ours = evroute_cycle_wh(t, v, vehicle)
            rows.append(
                {
                    "vehicle": name,
                    "fastsim_file": vfile,
                    "cycle": cycle,
                    "distance_km": dist / 1000.0,
                    "duration_s": float(t[-1] - t[0]),
                    "fastsim_wh": ref_wh,
                    "trace_wh": ours["trace"],
                    "edges_wh": ours["edges"],
                    "edges_time_s": ours["edges_time_s"],
                    "eq8_wh": ours["eq8"],
                }
            )
    return pd.DataFrame(rows)


if __name__ == "__main__":  # pragma: no cover
    df = run_cycles()
    for c in ("trace", "edges", "eq8"):
        df[c + "_err_pct"] = 100 * (df[c + "_wh"] / df["fastsim_wh"] - 1)
    print(df.round(2).to_string())
