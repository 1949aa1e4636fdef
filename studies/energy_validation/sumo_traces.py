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
than one step's distance can be driven unseen), and FASTSim accepts the trace.

Per kept trip (one CSV row): FASTSim 3 (NREL) simulates the recorded 1 Hz speed trace, with the grade
``tan(slope)`` from the network's elevation (Monaco; Luxembourg is flat), for the vehicle's FASTSim file (unadjusted,
battery chemical energy); evroute gives, for the same vehicle profile, the route energy its router uses: the default
per-edge prior :func:`evroute.energy.edge_prior` summed over the driven edges (``profile_wh``), the same without the
speed fluctuation while cruising (``steady_wh``) and the paper's Eq. 8 (``eq8_wh``), and, to separate the vehicle
model from the speed model, :func:`evroute.traces.trace_energy` on the same SUMO trace (``trace_wh``).
"""

from __future__ import annotations

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


def fastsim_trace_wh(
    vehicle_file: str, t: np.ndarray, v: np.ndarray, grade: np.ndarray
) -> tuple[float, float, float, np.ndarray]:
    """FASTSim driving the speed trace ``(t, v, grade)``: ``(battery chemical energy Wh, distance m, motor
    efficiency while regenerating, mechanical power of the regenerating steps (W, < 0))``; the efficiency is the
    energy-weighted mean over the regenerating steps, electric over mechanical power (NaN without regeneration)."""
    import fastsim as fs

    cyc = fs.Cycle.from_dict(
        {"time_seconds": t.tolist(), "speed_meters_per_second": v.tolist(), "grade": grade.tolist()}
    )
    sd = fs.SimDrive(fs.Vehicle.from_resource(vehicle_file), cyc)
    sd.run()
    veh = sd.to_dict()["veh"]  # not to_dataframe: its pyarrow path crashes once libsumo has run in the process
    em = veh["pt_type"]["BEV"]["em"]["history"]
    mech = np.asarray(em["pwr_out_req_watts"], dtype=np.float64)
    elec = np.asarray(em["pwr_elec_prop_in_watts"], dtype=np.float64)
    regen = mech < 0
    eff = float(elec[regen].sum() / mech[regen].sum()) if regen.any() else float("nan")
    return (
        float(veh["pt_type"]["BEV"]["res"]["state"]["energy_out_chemical_joules"]) / 3600.0,
        float(veh["state"]["dist_meters"]),
        eff,
        mech[regen],
    )


def collect(network: str, trips: int, seed: int, min_km: float, vehicle_name: str, vehicle_file: str) -> pd.DataFrame:
    """One row per planned trip of ``network`` (module doc); failed trips keep their reason and no energies."""
    from evroute.energy import DrivingStyle, VehicleProfile, edge_prior
    from evroute.experiments.runner import load_linegraph
    from evroute.sumo.replay import sumo_net_file
    from evroute.traces.energy import trace_energy
    from evroute.traces.reader import Trace

    lg = load_linegraph(network)
    net = lg.network
    vehicle = VehicleProfile.load(vehicle_name)
    prior = {
        "profile": edge_prior(net, vehicle),
        "steady": edge_prior(net, vehicle, style=replace(DrivingStyle(), speed_fluctuation_mps2=0.0)),
        "eq8": edge_prior(net, vehicle, "eq8"),
    }
    routes = plan_trips(lg, trips, seed, min_km)
    ids = [[str(e) for e in net.edge_ids[r]] for r in routes]
    t0 = time.process_time()
    traces = drive(sumo_net_file(lg), ids, seed)
    print(f"{network}: {len(routes)} trips driven in SUMO ({time.process_time() - t0:.0f} s CPU)", file=sys.stderr)
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
            ref_wh, dist, regen_eff, regen_w = fastsim_trace_wh(vehicle_file, tr["t"], tr["v"], tr["grade"])
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
                "sumo_m": round(dist, 1),
                "sumo_s": float(tr["t"][-1] - tr["t"][0]),
                "stops": int(np.sum((tr["v"][1:] < 0.1) & (tr["v"][:-1] >= 0.1))) - 1,
                "rise_m": round(float(z[-1]), 1),
                "fastsim_wh": ref_wh,
                "fastsim_regen_eff": regen_eff,
                "evroute_regen_eff": _mean_eff(vehicle, regen_w),
                "trace_wh": trace_energy(trace, vehicle, altitude_m=z).total_wh,
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
    all_ratio = (kept["profile_wh"] / kept["fastsim_wh"]).to_numpy()
    s = _stats(all_ratio)
    within = abs(s["median"] - 1.0) * 100 <= goal_pct
    verdicts.append(
        f"All {len(kept)} kept trips: profile median ratio {s['median']:.3f} (10-90 % {s['q10']:.3f}-{s['q90']:.3f}), "
        f"{'within' if within else 'OUTSIDE'} +-{goal_pct:g} %."
    )
    verdicts.append(
        "Why evroute's vehicle model reads low on these traces but not on UDDS: FASTSim converts regenerated power at "
        f"a motor efficiency of {kept['fastsim_regen_eff'].median():.3f} (median trip; from "
        f"{kept['fastsim_regen_eff'].min():.3f} to {kept['fastsim_regen_eff'].max():.3f}), the lowest point of its "
        "own efficiency map, whatever the power, while evroute reads the same map at the braking power: "
        f"{kept['evroute_regen_eff'].median():.3f} at the same steps. SUMO's drivers brake harder than UDDS (up to "
        f"{DECEL_MPS2:g} m/s^2 against about 1.5), at powers where the map is near its top, so FASTSim recovers "
        "less; evroute keeps its reading of the map (not fitted to FASTSim's)."
    )
    tr = kept["trace_wh"] / kept["fastsim_wh"]
    pr = kept["profile_wh"] / kept["trace_wh"]
    verdicts.append(
        f"Split of the error: evroute's vehicle model on the same trace reads {tr.median():.3f} of FASTSim (median), "
        f"the speed-profile prior {pr.median():.3f} of that trace model: the speed model and the vehicle model "
        "contribute separately."
    )
    fail = df["failure"].fillna("")
    charge = df[fail.str.contains("exceeds current max charge power")]
    trace = df[fail.str.contains("failed to meet speed trace")]
    other = df[(fail != "") & ~df.index.isin(charge.index) & ~df.index.isin(trace.index)]
    by_net = ", ".join(f"{n} {c}" for n, c in charge["network"].value_counts().sort_index().items())
    verdicts.append(
        f"Not kept: {len(charge)} trips ({by_net}) where FASTSim stops with an error because braking or a descent "
        "asks to charge the battery faster than it may (FASTSim starts a BEV with a full battery and does not hand "
        "the excess to the friction brakes), so the kept Monaco trips are mostly climbs (median rise "
        f"{kept.loc[kept['network'] == 'monaco', 'rise_m'].median():+.0f} m); {len(trace)} where FASTSim's Bolt "
        f"cannot follow SUMO's speed trace; {len(other)} for SUMO reasons (teleports, edges seen off the route)."
    )
    ts = (kept["prior_s"] / kept["sumo_s"]).median()
    verdicts.append(f"The prior's expected time over SUMO's trip time: median {ts:.3f}.")
    return [*lines, "", *[f"- {v}" for v in verdicts], ""]


def run(data_csv: Path, trips: dict[str, int], seed: int, vehicles: dict[str, str], redo: bool) -> pd.DataFrame:
    """Collect the networks (and vehicles) not yet in ``data_csv``, append them, write it and return all rows
    (resumable: a network is committed to the CSV as soon as it is done)."""
    df = pd.read_csv(data_csv, keep_default_na=False, na_values=[""]) if data_csv.is_file() and not redo else None
    for name, n in trips.items():
        for vname, vfile in vehicles.items():
            if df is not None and ((df["network"] == name) & (df["vehicle"] == vname)).any():
                continue
            new = collect(name, n, seed, 1.0, vname, vfile)
            df = new if df is None else pd.concat([df, new], ignore_index=True)
            df.to_csv(data_csv, index=False, float_format="%.6g")
    assert df is not None
    return df


__all__ = ["DECEL_MPS2", "HEADWAY_S", "collect", "drive", "fastsim_trace_wh", "plan_trips", "report", "run"]
