"""(b) evroute's route energy against FASTSim driving SUMO's recorded speed traces of the same trips (issue 34).

For a network (``monaco``, ``luxembourg``: the ``.net.xml`` evroute routes on), ``trips`` random pairs of edges of its
largest strongly connected component, at least ``min_km`` apart as the crow flies (seeded), are joined by the
fastest route by free-flow time (``length_m / speed_mps``, Dijkstra on the line graph, legal turns only).  All the
trips are driven in ONE SUMO simulation (``libsumo``, 1 s steps, SUMO's passenger car and driver: Krauss car
following with its dawdling, speed factor drawn per vehicle, signals and right of way as netconvert built them; only
the braking is gentler, :data:`DECEL_MPS2`), departing every :data:`HEADWAY_S` s from rest at the start of their
first edge and told to arrive at rest at the end of their last (``arrivalSpeed=0``), so they meet each other but no
background traffic.  Each step records every vehicle's speed, road and slope; a trip is kept when its vehicle was
never teleported and the edges it was seen on are its route's, in order, from the first to the last (an edge shorter
than one step's distance can be driven unseen), and FASTSim accepts the trace.  The recorded traces are cached
(:func:`cached_drive`: the user cache folder, keyed by the network file, the routes and the SUMO settings), so the
page is regenerated from scratch in minutes.

FASTSim's battery starts at :data:`START_SOC` of its window (``SimDrive.run_once``; ``SimDrive.run`` starts a BEV
full, and FASTSim 3.1 then stops with an error at the first braking or descent, since its motor may not recover
into a full battery and it does not hand that braking to the friction brakes: that kept only the climbs).

Per kept trip (one CSV row): FASTSim 3 (NREL) simulates the recorded 1 Hz speed trace, with the grade
``tan(slope)`` from the network's elevation (Monaco; Luxembourg is flat), for the vehicle's FASTSim file (unadjusted,
battery chemical energy); evroute gives, for the same vehicle profile, the route energy its router uses: the default
per-edge prior :func:`evroute.energy.edge_prior` summed over the driven edges (``profile_wh``), the same without the
speed fluctuation while cruising (``steady_wh``) and the paper's Eq. 8 (``eq8_wh``), and, to separate the vehicle
model from the speed model, :func:`evroute.traces.trace_energy` on the same SUMO trace (``trace_wh``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

#: seconds between two departures
HEADWAY_S = 10.0
#: the drivers' braking (m/s^2; SUMO's passenger default is 4.5): FASTSim 3.1 stops with an error ("edrv charge power
#: exceeds current max charge power") when braking asks the motor for more than its peak power instead of using the
#: friction brakes; at 2.5 m/s^2 the Bolt (1,660 kg, 149 kW) stays under it up to 130 km/h on the flat
DECEL_MPS2 = 2.5
#: a trip not arrived this many simulated seconds after the last departure is dropped
MAX_TAIL_S = 3600.0
#: FASTSim's state of charge at departure (fraction of its window): a daily charge, leaving the headroom a trip's
#: braking and descents recover into (a Monaco descent of 150 m returns about 0.7 kWh, 1 % of the Bolt's 66 kWh).
#: Within that headroom the value does not matter: the Bolt file's battery efficiency depends on C-rate and
#: temperature only (``res.eff_interp`` ``CRateTemperature``), not on the state of charge
START_SOC = 0.8


def plan_trips(lg, n: int, seed: int, min_km: float) -> list[np.ndarray]:  # lg: LineGraph
    """``n`` fastest routes (edge indices, at least 3 edges) between random edge pairs ``min_km`` apart."""
    from evroute.errors import UnreachableError
    from evroute.oracle import RouteOracle
    from evroute.routes import edge_midpoints

    net = lg.network
    time_s = net.length_m / net.speed_mps
    mid = edge_midpoints(net.geometry)
    coslat = np.cos(np.radians(mid[:, 1].mean()))
    rng = np.random.default_rng(seed)
    oracle = RouteOracle(lg)
    routes: list[np.ndarray] = []
    for _ in range(100 * n):
        if len(routes) == n:
            break
        i, j = (int(x) for x in rng.choice(net.n_edges, size=2, replace=False))
        if float(np.hypot((mid[i, 0] - mid[j, 0]) * coslat, mid[i, 1] - mid[j, 1]) * 111.2) < min_km:
            continue
        try:
            r = np.asarray(oracle.shortest_route(time_s, i, j).edges, dtype=np.int64)
        except UnreachableError:
            continue
        if len(r) >= 3:
            routes.append(r)
    return routes


def drive(net_file: Path, routes: list[list[str]], seed: int) -> list[dict[str, np.ndarray] | str]:
    """Drive every route (SUMO edge ids) in one simulation; per route its 1 Hz trace ``{t, v, grade, roads}``
    (``roads``: the normal edges driven, in order) or why it failed."""
    from traci import constants as tc

    from evroute.sumo.binaries import import_libsumo, sumo_binary

    ls = import_libsumo()
    with tempfile.TemporaryDirectory() as tmp:
        rou = Path(tmp) / "trips.rou.xml"
        lines = ["<routes>", f'  <vType id="driver" vClass="passenger" decel="{DECEL_MPS2:g}"/>']
        for k, edges in enumerate(routes):
            lines.append(
                f'  <vehicle id="t{k}" type="driver" depart="{k * HEADWAY_S:g}" departPos="base" departSpeed="0" '
                f'arrivalPos="max" arrivalSpeed="0"><route edges="{" ".join(edges)}"/></vehicle>'
            )
        rou.write_text("\n".join([*lines, "</routes>"]) + "\n")
        args = [str(sumo_binary("sumo")), "-n", str(net_file), "-r", str(rou), "--step-length", "1"]
        args += [
            "--seed",
            str(seed),
            "--no-step-log",
            "true",
            "--no-warnings",
            "true",
            "--duration-log.disable",
            "true",
        ]
        ls.start(args)
        rec: dict[str, list[tuple[float, float, float, str]]] = {}
        failed: dict[str, str] = {}
        end = len(routes) * HEADWAY_S + MAX_TAIL_S
        try:
            while ls.simulation.getMinExpectedNumber() > 0 and ls.simulation.getTime() < end:
                ls.simulationStep()
                now = ls.simulation.getTime()
                for vid in ls.simulation.getDepartedIDList():
                    ls.vehicle.subscribe(vid, [tc.VAR_SPEED, tc.VAR_ROAD_ID, tc.VAR_SLOPE])
                    rec[vid] = [(now - 2.0, 0.0, 0.0, "")]  # at rest before its first move
                for vid in ls.simulation.getStartingTeleportIDList():
                    failed[vid] = f"teleported at {now:g} s"
                for vid, res in ls.vehicle.getAllSubscriptionResults().items():
                    rec[vid].append((now - 1.0, res[tc.VAR_SPEED], res[tc.VAR_SLOPE], res[tc.VAR_ROAD_ID]))
        finally:
            ls.close()
    out: list[dict[str, np.ndarray] | str] = []
    for k in range(len(routes)):
        vid = f"t{k}"
        if vid in failed or vid not in rec:
            out.append(failed.get(vid, "never departed"))
            continue
        t, v, slope, road = zip(*rec[vid], strict=True)
        roads = [r for i, r in enumerate(road) if r and not r.startswith(":") and (i == 0 or r != road[i - 1])]
        roads = [r for i, r in enumerate(roads) if i == 0 or r != roads[i - 1]]
        # the vehicle leaves the network in the step it arrives: it ends at rest one step after its last record
        out.append(
            {
                "t": np.append(np.asarray(t), t[-1] + 1.0) - t[0],  # from 0: FASTSim crashes on negative times
                "v": np.append(np.asarray(v, dtype=np.float64), 0.0),
                "grade": np.tan(np.radians(np.append(np.asarray(slope, dtype=np.float64), slope[-1]))),
                "roads": np.asarray(roads, dtype=object),
            }
        )
    return out


def cached_drive(
    net_file: Path, routes: list[list[str]], seed: int, redo: bool = False
) -> list[dict[str, np.ndarray] | str]:
    """:func:`drive`, cached in ``<user cache>/sumo_traces/`` under a key of the network file's content, the routes,
    the seed and this module's SUMO settings (``redo``: drive again and overwrite)."""
    from importlib.metadata import PackageNotFoundError, version

    from evroute.paths import cache_home

    try:
        sumo = version("eclipse-sumo")
    except PackageNotFoundError:  # a system SUMO ($SUMO_HOME)
        sumo = "system"
    key = hashlib.sha256()
    key.update(Path(net_file).read_bytes())
    settings = [routes, seed, HEADWAY_S, DECEL_MPS2, MAX_TAIL_S, sumo]
    key.update(json.dumps(settings).encode())
    path = cache_home() / "sumo_traces" / f"{Path(net_file).name.split('.')[0]}-{key.hexdigest()[:16]}.json"
    if path.is_file() and not redo:
        raw = json.loads(path.read_text())
        return [r if isinstance(r, str) else {k: np.asarray(x) for k, x in r.items()} for r in raw]
    out = drive(net_file, routes, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([r if isinstance(r, str) else {k: x.tolist() for k, x in r.items()} for r in out]))
    tmp.replace(path)
    return out


def fastsim_trace(vehicle_file: str, t: np.ndarray, v: np.ndarray, grade: np.ndarray, profile) -> dict[str, float]:
    """FASTSim driving the speed trace ``(t, v, grade)`` from :data:`START_SOC` (``profile``: the evroute
    :class:`~evroute.energy.VehicleProfile` of the same car, to read its motor map at FASTSim's regenerating steps).

    Returns ``fastsim_wh`` (battery chemical energy, Wh), ``dist_m``, ``brake_wh`` (FASTSim's tractive energy of the
    braking steps, Wh, > 0), ``fastsim_regen_eff`` (its motor efficiency while regenerating: electric over mechanical
    energy; NaN without regeneration), ``evroute_regen_eff`` (the profile's motor map at the same mechanical powers,
    energy-weighted) and ``regen_gap_wh``: what FASTSim's battery would have received more with the motor map read at
    each regenerating step's power (``sum |P_mech| (eta_map(|P_mech|) - eta_FASTSim) eta_battery dt``, its own
    battery efficiency of the step)."""
    import fastsim as fs

    cyc = fs.Cycle.from_dict(
        {"time_seconds": t.tolist(), "speed_meters_per_second": v.tolist(), "grade": grade.tolist()}
    )
    vd = fs.Vehicle.from_resource(vehicle_file).to_dict()
    vd["pt_type"]["BEV"]["res"]["state"]["soc"] = START_SOC
    sd = fs.SimDrive(fs.Vehicle.from_dict(vd), cyc)
    sd.run_once()
    veh = sd.to_dict()["veh"]  # not to_dataframe: its pyarrow path crashes once libsumo has run in the process
    bev = veh["pt_type"]["BEV"]
    em = bev["em"]["history"]
    mech = np.asarray(em["pwr_out_req_watts"], dtype=np.float64)
    elec = np.asarray(em["pwr_elec_prop_in_watts"], dtype=np.float64)
    res_eff = np.asarray(bev["res"]["history"]["eff"], dtype=np.float64)
    dt = np.diff(t, prepend=t[0])
    tractive = np.asarray(veh["history"]["pwr_tractive_watts"], dtype=np.float64)
    regen = mech < 0
    eta_fs = np.divide(elec, mech, out=np.zeros_like(mech), where=regen)
    eta_ev = profile.motor_efficiency(mech)
    return {
        "fastsim_wh": float(bev["res"]["state"]["energy_out_chemical_joules"]) / 3600.0,
        "dist_m": float(veh["state"]["dist_meters"]),
        "brake_wh": float(-np.sum(np.minimum(tractive, 0.0) * dt)) / 3600.0,
        "fastsim_regen_eff": float(elec[regen].sum() / mech[regen].sum()) if regen.any() else float("nan"),
        "evroute_regen_eff": _mean_eff(profile, mech[regen]),
        "regen_gap_wh": float(np.sum((-mech * (eta_ev - eta_fs) * res_eff * dt)[regen])) / 3600.0,
    }


def collect(
    network: str, trips: int, seed: int, min_km: float, vehicle_name: str, vehicle_file: str, redo: bool = False
) -> pd.DataFrame:
    """One row per planned trip of ``network`` (module doc); failed trips keep their reason and no energies."""
    from evroute.energy import DrivingStyle, VehicleProfile, edge_prior
    from evroute.experiments.runner import load_linegraph
    from evroute.sumo.replay import sumo_net_file
    from evroute.traces.energy import trace_energy
    from evroute.traces.reader import Trace

    lg = load_linegraph(network)
    net = lg.network
    vehicle = VehicleProfile.load(vehicle_name)
    no_blend = replace(vehicle, regen_fraction_max=None, regen_half_speed_kmh=None, regen_fade_width_kmh=None)
    prior = {
        "profile": edge_prior(net, vehicle),
        "steady": edge_prior(net, vehicle, style=replace(DrivingStyle(), speed_fluctuation_mps2=0.0)),
        "eq8": edge_prior(net, vehicle, "eq8"),
    }
    routes = plan_trips(lg, trips, seed, min_km)
    ids = [[str(e) for e in net.edge_ids[r]] for r in routes]
    t0 = time.process_time()
    traces = cached_drive(sumo_net_file(lg), ids, seed, redo)
    print(
        f"{network}: {len(routes)} trips driven in SUMO or cached ({time.process_time() - t0:.0f} s CPU)",
        file=sys.stderr,
    )
    rows = []
    for k, (r, tr) in enumerate(zip(routes, traces, strict=True)):
        row: dict[str, object] = {
            "network": network,
            "trip": k,
            "vehicle": vehicle_name,
            "edges": len(r),
            "length_m": round(float(net.length_m[r].sum()), 1),
            "failure": "",
        }
        if isinstance(tr, str):
            row["failure"] = tr
        elif not _in_order(list(tr["roads"]), ids[k]):
            row["failure"] = "the edges seen are not its route's, in order"
        if row["failure"]:
            rows.append(row)
            continue
        assert not isinstance(tr, str)
        try:
            ref = fastsim_trace(vehicle_file, tr["t"], tr["v"], tr["grade"], vehicle)
        except RuntimeError as exc:  # FASTSim refuses a step its powertrain cannot follow (its message says which)
            row["failure"] = "FASTSim: " + " ".join(str(exc).split("originating error")[-1].split())[:160]
            rows.append(row)
            continue
        n, t_s = len(tr["t"]), tr["t"]
        trace = Trace(t_s, tr["v"], np.zeros(n), np.full(n, 50.0), np.zeros(n), np.zeros(n), name=f"t{k}")
        inc = np.sin(np.arctan(tr["grade"]))
        ds = 0.5 * (tr["v"][1:] + tr["v"][:-1]) * np.diff(t_s)
        z = np.concatenate([[0.0], np.cumsum(ds * inc[:-1])])
        row.update(
            {
                "sumo_m": round(ref["dist_m"], 1),
                "sumo_s": float(tr["t"][-1] - tr["t"][0]),
                "stops": int(np.sum((tr["v"][1:] < 0.1) & (tr["v"][:-1] >= 0.1))) - 1,
                "rise_m": round(float(z[-1]), 1),
                **{k: x for k, x in ref.items() if k != "dist_m"},
                "trace_wh": trace_energy(trace, vehicle, altitude_m=z).total_wh,
                "trace_noblend_wh": trace_energy(trace, no_blend, altitude_m=z).total_wh,
                **{f"{name}_wh": float(p.energy_wh[r].sum()) for name, p in prior.items()},
                "prior_s": float(prior["profile"].time_s[r].sum()),
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_eff(vehicle, mech_w: np.ndarray) -> float:  # vehicle: VehicleProfile
    """Energy-weighted mean of the profile's motor efficiency at the (negative) mechanical powers ``mech_w`` (W)."""
    if not len(mech_w):
        return float("nan")
    return float(np.sum(mech_w * vehicle.motor_efficiency(mech_w)) / np.sum(mech_w))


def _in_order(seen: list[str], route: list[str]) -> bool:
    """Whether the edges seen (one sample per second: an edge driven within a step is not seen) are the route's in
    order, from its first edge to its last."""
    it = iter(route)
    return bool(seen) and seen[0] == route[0] and seen[-1] == route[-1] and all(e in it for e in seen)


def _stats(ratio: np.ndarray) -> dict[str, float]:
    return {
        "median": float(np.median(ratio)),
        "q10": float(np.quantile(ratio, 0.1)),
        "q90": float(np.quantile(ratio, 0.9)),
        "worst": float(ratio[np.argmax(np.abs(ratio - 1.0))]),
    }


def report(df: pd.DataFrame, goal_pct: float) -> list[str]:
    """Section (b) of the page (lines), every number from the rows ``df`` (module doc)."""
    kept = df[df["failure"].fillna("") == ""]
    lines = [
        "## (b) Route energy against FASTSim on SUMO speed traces",
        "",
        "Random trips (fastest routes between random edges at least 1 km apart, seeded) driven together in one SUMO "
        "simulation on the network evroute routes on, each vehicle's 1 Hz speed and slope recorded; FASTSim 3.1 "
        "drives each recorded trace (grade from the network's elevation: Monaco; Luxembourg is flat) with the "
        "vehicle's own FASTSim file, and evroute gives the route energy its router uses for the same car: the default "
        "prior `evroute.energy.edge_prior` summed over the driven edges (**profile**), the same without the speed "
        "fluctuation (**steady**), Eq. 8 (**eq8**), and `evroute.traces.trace_energy` on the same SUMO trace "
        "(**trace**: the vehicle model alone, no speed model). SUMO's driver is its default passenger car but for a "
        f"gentler braking ({DECEL_MPS2:g} m/s^2, `studies/energy_validation/sumo_traces.py` says why). Ratio = "
        f"evroute / FASTSim. Goal: median within +-{goal_pct:g} %. Rows: "
        "[`data/energy_validation_sumo.csv`](data/energy_validation_sumo.csv).",
        "",
        "| network | vehicle | trips kept / driven | median km | what | median ratio | 10-90 % | worst |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for (name, veh), g in df.groupby(["network", "vehicle"], sort=False):
        k = kept[(kept["network"] == name) & (kept["vehicle"] == veh)]
        for what in ("profile", "steady", "eq8", "trace"):
            s = _stats((k[f"{what}_wh"] / k["fastsim_wh"]).to_numpy())
            lines.append(
                f"| {name} | {veh} | {len(k)} / {len(g)} | {k['sumo_m'].median() / 1000:.2f} | {what} | "
                f"{s['median']:.3f} | {s['q10']:.3f}-{s['q90']:.3f} | {s['worst']:.3f} |"
            )
    s = _stats((kept["profile_wh"] / kept["fastsim_wh"]).to_numpy())
    within = abs(s["median"] - 1.0) * 100 <= goal_pct
    verdicts.append(
        f"All {len(kept)} kept trips: profile median ratio {s['median']:.3f} (10-90 % {s['q10']:.3f}-{s['q90']:.3f}, "
        f"worst {s['worst']:.3f}), {'within' if within else 'OUTSIDE'} +-{goal_pct:g} %."
    )
    ratio = kept["profile_wh"] / kept["fastsim_wh"]
    worst = kept.loc[(ratio - 1.0).abs().idxmax()]
    by_net = []
    for name, k in kept.groupby("network", sort=False):
        m = float((k["profile_wh"] / k["fastsim_wh"]).median())
        by_net.append(
            f"{name} {m:.3f} ({'within' if abs(m - 1.0) * 100 <= goal_pct else 'OUTSIDE'}; vehicle model on the "
            f"trace {(k['trace_wh'] / k['fastsim_wh']).median():.3f} of FASTSim, prior "
            f"{(k['profile_wh'] / k['trace_wh']).median():.3f} of the trace model)"
        )
    verdicts.append(
        "By network, profile median ratio: " + "; ".join(by_net) + ". The worst trip "
        f"({worst['network']} {int(worst['trip'])}) is a descent of {-worst['rise_m']:.0f} m over "
        f"{worst['sumo_m'] / 1000:.1f} km for which FASTSim's battery energy is {worst['fastsim_wh']:.0f} Wh: "
        "the ratio of two small numbers."
        if worst["rise_m"] < 0
        else "By network, profile median ratio: " + "; ".join(by_net) + "."
    )
    tr = kept["trace_wh"] / kept["fastsim_wh"]
    pr = kept["profile_wh"] / kept["trace_wh"]
    verdicts.append(
        f"Split of the error: evroute's vehicle model on the same trace reads {tr.median():.3f} of FASTSim (median), "
        f"the speed-profile prior {pr.median():.3f} of that trace model."
    )
    gap = kept["regen_gap_wh"] / kept["fastsim_wh"]
    fixed = kept["trace_wh"] / (kept["fastsim_wh"] - kept["regen_gap_wh"])
    verdicts.append(
        "Why the vehicle model reads low: FASTSim 3.1 converts regenerated power at a motor efficiency of "
        f"{kept['fastsim_regen_eff'].median():.3f} (median trip; from {kept['fastsim_regen_eff'].min():.3f} to "
        f"{kept['fastsim_regen_eff'].max():.3f}), the first point of its motor map, whatever the power: "
        "`ElectricMachine::solve` (fastsim-core/src/vehicle/powertrain/electric_machine.rs) looks the map up at "
        "the signed ratio `pwr_out_req / pwr_out_max` clamped to >= 0 when the map starts at 0, so every "
        "regenerating (negative) power reads it at zero power. FASTSim 2 reads it at the absolute power, as evroute "
        f"does: {kept['evroute_regen_eff'].median():.3f} at the same steps. FASTSim's braking energy at the wheels is "
        f"{(kept['brake_wh'] / kept['fastsim_wh']).median():.2f} of its battery energy (median trip), so that "
        "reading is "
        f"{100 * gap.median():.1f} % of FASTSim's energy (median; FASTSim's own steps and battery efficiency, the "
        f"map read at each step's power); against FASTSim with that reading evroute's trace model is "
        f"{fixed.median():.3f} (median). evroute keeps the map read at the motor's power (not fitted to FASTSim)."
    )
    blend = kept["trace_wh"] / kept["trace_noblend_wh"] - 1
    verdicts.append(
        "Brake blending (the vehicle profile's `regen_fraction_max` and fade, FASTSim 2's regenerative braking "
        "limit: the friction brakes take 2 % of the braking and all of it near standstill; FASTSim 3.1 has not "
        "ported it and recovers down to 0 km/h) adds "
        f"{100 * blend.median():.1f} % to the trace model's energy (median trip)."
    )
    fail = df["failure"].fillna("")
    charge = df[fail.str.contains("charge power")]
    miss = df[fail.str.contains("failed to meet speed trace|speed trace", regex=True)]
    other = df[(fail != "") & ~df.index.isin(charge.index) & ~df.index.isin(miss.index)]
    mk = kept[kept["network"] == "monaco"]
    rise = (
        f"; the kept Monaco trips have median rise {mk['rise_m'].median():+.0f} m, {int((mk['rise_m'] < 0).sum())} "
        f"of {len(mk)} end lower than they start"
        if len(mk)
        else ""
    )
    verdicts.append(
        f"FASTSim's battery starts at {100 * START_SOC:g} % (module `START_SOC`: FASTSim's `run` starts a battery "
        "electric vehicle full, and FASTSim 3.1 then stops at the first braking or descent, since it may not charge "
        f"and does not hand the braking to the friction brakes){rise}. Not kept: {len(charge)} trips where FASTSim "
        f"refuses braking beyond its charge power, {len(miss)} where FASTSim's Bolt cannot follow SUMO's speed "
        f"trace, {len(other)} for SUMO reasons (teleports, edges seen off the route)."
    )
    ts = (kept["prior_s"] / kept["sumo_s"]).median()
    verdicts.append(f"The prior's expected time over SUMO's trip time: median {ts:.3f}.")
    return [*lines, "", *[f"- {v}" for v in verdicts], ""]


def run(data_csv: Path, trips: dict[str, int], seed: int, vehicles: dict[str, str], redo: bool) -> pd.DataFrame:
    """Collect every network and vehicle afresh (evroute's energies at this commit; SUMO's traces from the cache of
    :func:`cached_drive` when present, ``redo``: drive them again), write ``data_csv`` and return the rows."""
    frames = [
        collect(name, n, seed, 1.0, vname, vfile, redo)
        for name, n in trips.items()
        for vname, vfile in vehicles.items()
    ]
    df = pd.concat(frames, ignore_index=True)
    df.to_csv(data_csv, index=False, float_format="%.6g")
    return df


__all__ = [
    "DECEL_MPS2",
    "HEADWAY_S",
    "START_SOC",
    "cached_drive",
    "collect",
    "drive",
    "fastsim_trace",
    "plan_trips",
    "report",
    "run",
]
