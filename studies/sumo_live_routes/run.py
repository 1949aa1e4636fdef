"""Does the replay predict live SUMO trips?  Routes driven in ``sumo-live`` vs replay-trained predictions.

Three steps, each resumable, writing only under ``--data`` (default ``docs/results/data``):

``collect``: random origin-destination pairs on a network (``--ods``, seeded; route length within ``--min-km`` and
``--max-km``), and between each pair the shortest, the fastest (free-flow time), the replay-cheapest (Dijkstra on
the replay's mean reduced energies) and the Eq. 8-cheapest route (reduced prior), identical routes merged.  Every
route is driven live (:class:`evroute.sumo.live.LiveSimulation`, from saved states of the replay's scenario) at
``--times`` clock times drawn (seeded) from ``--snapshots`` evenly spaced departure times of the window, each trip
with its own speed factor (drawn like SUMO's).  A process pool (``--workers``) drives the trips; every finished
trip is appended to ``sumo_live_routes_trips.csv`` (one row per trip: route as a space-separated string of SUMO
edge ids, clock time, live battery and reduced energy of the route's complete traversals, CPU and wall time) and
its traversals to ``sumo_live_routes_traversals.csv.gz`` (trip, position, edge, next edge, battery, reduced
energy, travel time); a rerun skips the trips already stored::

    nice -n 10 python -m studies.sumo_live_routes.run collect --network monaco --ods 40 --times 3

``arms``: the replay-trained arm statistics of every (edge, next edge) the live trips drove, from the replay's
recorded day of the same scenario (mean, sample variance and count of the edge's reduced energies; of the turn's
when the recording stores each traversal's next edge, column ``next_edge``, else NaN), with Eq. 8's reduced prior
of the edge in each variant of :data:`~studies.sumo_live_routes.runner.VARIANTS` and its slope in the driver's
speed factor (``eq8_dsf_wh``, variant :data:`~studies.sumo_live_routes.runner.DRIVER_VARIANT`):
``sumo_live_routes_arms.csv``; and, from the same day's whole trips (its vehicle ids), the within-trip correlation
of the traversal errors for edge and turn arms (:func:`evroute.sumo.trip_interval.correlation_table`:
``sumo_live_routes_correlation.csv``) and the interval's coverage of held-out replay trips
(:func:`evroute.sumo.trip_interval.holdout_coverage`: ``sumo_live_routes_holdout.csv``)::

    python -m studies.sumo_live_routes.run arms --network monaco

``report``: ``docs/results/sumo_live_routes.md`` from the committed CSV files alone (``--report-only`` is the same
and never reads the network or SUMO)::

    python -m studies.sumo_live_routes.run --report-only
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from studies.sumo_live_routes.report import report_lines
from studies.sumo_live_routes.runner import (
    ARMS,
    CORR,
    CORR_LAGS,
    DRIVER_STEP,
    DRIVER_VARIANT,
    HOLDOUT,
    HOLDOUT_WINDOW,
    KINDS,
    SCENARIOS,
    TRAV,
    TRAV_COLUMNS,
    TRIP_COLUMNS,
    TRIPS,
    TURN_MIN,
    VARIANTS,
    append_rows,
    day_spec,
    load_tables,
    missing_tables,
    next_edges,
    replace_network_rows,
    snapshot_times,
    sumo_vehicle,
)

DATA = Path("docs/results/data")
DOC = Path("docs/results/sumo_live_routes.md")


def _fail(message: str) -> NoReturn:
    """One line ``evroute: error: ...`` on stderr and exit status 2 (bad input), nothing written."""
    print(f"evroute: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def replay_env(network: str) -> Any:
    """The replay environment of the network's scenario (records the day on first use; cached)."""
    from evroute.environments import sumo_replay
    from evroute.experiments.runner import load_linegraph

    lg = load_linegraph(network)
    params = {**SCENARIOS[network]}
    if "hours" in params:
        params["hours"] = list(params["hours"])
    return sumo_replay.build(lg, params, vehicle=sumo_vehicle())


def plan(network: str, env: Any, args: argparse.Namespace) -> pd.DataFrame:
    """Trips to drive: ``--ods`` seeded OD pairs, their distinct routes, ``--times`` clock slots per route."""
    from evroute.energy import travel_time_s
    from evroute.oracle import RouteOracle

    lg = env.linegraph
    net = lg.network
    oracle = RouteOracle(lg)
    weights = {
        "shortest": net.length_m,
        "fastest": travel_time_s(net.length_m, net.speed_mps),
        "replay": env.true_mean_wh,
        "eq8": env.prior_mean_wh,
    }
    rng = np.random.default_rng(args.seed)
    ids = net.edge_ids
    rows: list[dict[str, Any]] = []
    od = 0
    tries = 0
    while od < args.ods:
        tries += 1
        if tries > 100 * args.ods:
            _fail(f"found only {od} OD pairs within the length bounds")
        s, g = (int(x) for x in rng.choice(lg.n_nodes, 2, replace=False))
        short = oracle.shortest_route(weights["shortest"], s, g)
        km = float(net.length_m[short.edges].sum()) / 1000.0
        if not args.min_km <= km <= args.max_km:
            continue
        routes: dict[str, list[str]] = {}
        for kind in KINDS:
            r = oracle.shortest_route(weights[kind], s, g)
            key = " ".join(ids[r.edges].tolist())
            routes.setdefault(key, []).append(kind)
        for key, kinds in routes.items():
            # the route's clock times: a permutation of its own stream (a larger --times extends the same trips)
            slots = np.random.default_rng([args.seed, od, KINDS.index(kinds[0])]).permutation(args.snapshots)
            for k, slot in enumerate(int(x) for x in slots[: args.times]):
                rows.append(
                    {
                        "network": network,
                        "trip": f"{network}-{od:03d}-{'+'.join(kinds)}-{k}",
                        "od": od,
                        "kinds": "+".join(kinds),
                        "route": key,
                        "slot": slot,
                        "speed_factor": _speed_factor(args.seed, od, kinds[0], k),
                    }
                )
        od += 1
    return pd.DataFrame(rows)


def _speed_factor(seed: int, od: int, kind: str, k: int) -> float:
    from evroute.sumo.live import draw_speed_factor

    return draw_speed_factor(np.random.default_rng([seed, od, KINDS.index(kind), k, 1]))


_SIM: Any = None


def _init_worker(network: str, n_snapshots: int) -> None:
    """Per worker process: the live simulation of the network's scenario (saved states built by the parent)."""
    global _SIM
    os.nice(0)
    _SIM = _live_sim(network, n_snapshots)


def _live_sim(network: str, n_snapshots: int) -> Any:
    from evroute.experiments.runner import load_linegraph
    from evroute.sumo.live import LiveSimulation, live_snapshots
    from evroute.sumo.replay import sumo_net_file
    from evroute.sumo.scenario import background_demand

    spec = day_spec(network)
    v = sumo_vehicle()
    net = sumo_net_file(load_linegraph(network))
    demand = background_demand(net, peak_per_hour=spec.peak_per_hour, hours=spec.window, seed=spec.demand_seed)
    times = snapshot_times(spec, n_snapshots)
    snaps = live_snapshots(
        net,
        [demand],
        times,
        vehicle=v,
        model=spec.model,
        step_length=spec.step_length,
        seed=spec.demand_seed,
        begin_s=spec.window[0] * 3600.0,
    )
    return LiveSimulation(
        net, [demand], snaps, times, vehicle=v, model=spec.model, step_length=spec.step_length, seed=spec.demand_seed
    )


def _drive(trip: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Drive one planned trip in this worker's simulation: its trip row and its traversal rows."""
    from evroute.errors import EvrouteError

    try:
        return _drive_trip(trip)
    except EvrouteError as exc:  # SUMO failing to start or during the trip, an edge without connections
        return {**trip, "ok": False, "failure": str(exc).splitlines()[0]}, []


def _drive_trip(trip: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sim = _SIM
    route = trip["route"].split()
    pred, succ = sim.end_edges(route[0], route[-1])
    cpu0 = time.process_time()
    t = sim.drive([pred, *route, succ], int(trip["slot"]), speed_factor=float(trip["speed_factor"]))
    cpu = time.process_time() - cpu0
    ok = t.ok and np.all(np.isfinite(t.route_reduced_wh))
    row = {
        **trip,
        "pred": pred,
        "succ": succ,
        "depart_s": t.depart_s,
        "insert_s": t.insert_s,
        "arrive_s": t.arrive_s,
        "ok": bool(ok),
        "failure": t.failure,
        "battery_wh": float(np.sum(t.route_energy_wh)) if ok else np.nan,
        "reduced_wh": float(np.sum(t.route_reduced_wh)) if ok else np.nan,
        "travel_s": float(np.sum(t.route_travel_s)) if ok else np.nan,
        "trip_battery_wh": t.battery_wh,
        "cpu_s": cpu,
        "wall_s": t.wall_s,
    }
    trav = []
    if ok:
        nxt = [*route[1:], succ]
        for k, e in enumerate(route):
            trav.append(
                {
                    "trip": trip["trip"],
                    "k": k,
                    "edge": e,
                    "next_edge": nxt[k],
                    "energy_wh": round(float(t.route_energy_wh[k]), 4),
                    "reduced_wh": round(float(t.route_reduced_wh[k]), 4),
                    "travel_s": float(t.route_travel_s[k]),
                }
            )
    return row, trav


def collect(args: argparse.Namespace) -> None:
    if args.network not in SCENARIOS or args.times < 1 or args.ods < 1:
        _fail(f"need a network of {', '.join(SCENARIOS)}, --ods >= 1 and --times >= 1 (got {args.network!r})")
    if args.times > args.snapshots:
        _fail("--times must be <= --snapshots")
    from studies.reproduce.provenance import head_commit

    data, commit = Path(args.data), head_commit()
    env = replay_env(args.network)
    todo = plan(args.network, env, args)
    todo["command"] = (
        f"python -m studies.sumo_live_routes.run collect --network {args.network} --ods {args.ods} --times "
        f"{args.times} --snapshots {args.snapshots} --min-km {args.min_km:g} --max-km {args.max_km:g} "
        f"--seed {args.seed}"
    )
    data.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    if (data / TRIPS).is_file():
        done = set(pd.read_csv(data / TRIPS)["trip"])
    todo = todo[~todo["trip"].isin(done)]
    # every route's first clock time before any route's second: a collection stopped early still covers every route
    todo = todo.assign(_k=todo["trip"].str.rsplit("-", n=1).str[1].astype(int)).sort_values("_k", kind="stable")
    todo = todo.drop(columns="_k")
    if args.limit:
        todo = todo.head(args.limit)
    print(f"{args.network}: {len(todo)} trips to drive ({len(done)} stored)", flush=True)
    if todo.empty:
        return
    _live_sim(args.network, args.snapshots).close()  # builds the saved states once, in this process
    t0, n = time.perf_counter(), 0
    with ProcessPoolExecutor(args.workers, initializer=_init_worker, initargs=(args.network, args.snapshots)) as ex:
        pending = {ex.submit(_drive, r) for r in todo.to_dict("records")}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            rows, travs = [], []
            for f in finished:
                row, trav = f.result()
                rows.append(row)
                travs += trav
                n += 1
            append_rows(data / TRAV, travs, TRAV_COLUMNS)  # first: a stored trip row means its traversals are stored
            append_rows(data / TRIPS, [{**r, "commit": commit} for r in rows], TRIP_COLUMNS)
            if n % 10 == 0 or not pending:
                print(
                    f"{n} trips, {time.perf_counter() - t0:.0f} s wall; last cpu {rows[-1]['cpu_s']:.2f} s", flush=True
                )
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"done: {n} trips, wall {time.perf_counter() - t0:.0f} s, worker CPU {ru.ru_utime + ru.ru_stime:.0f} s")


def arms(args: argparse.Namespace) -> None:
    """Replay-trained statistics of every (edge, next edge) of the stored live trips of ``--network``."""
    from dataclasses import replace

    from evroute.environments.sumo_replay import reduced_prior_wh
    from evroute.sumo.replay import record_day

    data = Path(args.data)
    trav = pd.read_csv(data / TRAV)
    trips = pd.read_csv(data / TRIPS, dtype={"commit": str})
    trav = trav[trav["trip"].isin(trips.loc[trips["network"] == args.network, "trip"])]
    env = replay_env(args.network)
    lg = env.linegraph
    ids = lg.network.edge_ids
    index = {e: i for i, e in enumerate(ids.tolist())}
    pairs = trav[["edge", "next_edge"]].drop_duplicates().reset_index(drop=True)
    e = pairs["edge"].map(index).to_numpy(dtype=np.int64)
    out = pairs.assign(network=args.network)
    out["replay_mean_wh"] = env.day_mean_wh[e]
    out["replay_var_wh2"] = env.edge_var_wh2[e]
    out["replay_n"] = env.counts[e]
    out["replay_eq8_edge"] = np.isin(e, env.eq8_edges)
    out["potential_wh"] = env.potential_wh[e]  # m g dz / 3600 with SUMO's g: battery - reduced - potential = kinetic
    from evroute.sumo.live import connection_directions
    from evroute.sumo.replay import sumo_net_file

    dirs = connection_directions(sumo_net_file(lg))
    out["direction"] = [dirs.get((a, b), "?") for a, b in zip(pairs["edge"], pairs["next_edge"], strict=True)]
    day, _ = record_day(lg, day_spec(args.network), vehicle=sumo_vehicle())
    out["turn_mean_wh"], out["turn_var_wh2"], out["turn_n"] = np.nan, np.nan, 0
    if "next_edge" not in day.columns:  # a recording without each traversal's next edge: matched by time
        day = day.assign(next_edge=next_edges(day, lg))
        print(f"{args.network}: next edge matched for {np.mean(day['next_edge'] >= 0):.1%} of the traversals")
    if len(day):
        d = day[np.isfinite(day["reduced_wh"]) & (day["next_edge"] >= 0)]
        g = d.assign(r=np.maximum(d["reduced_wh"], 0.0)).groupby(["edge", "next_edge"])["r"]
        st = pd.DataFrame({"m": g.mean(), "v": g.var(ddof=1), "n": g.size()})
        key = pd.MultiIndex.from_arrays([e, pairs["next_edge"].map(index).fillna(-1).astype(np.int64)])
        st = st.reindex(key)
        out["turn_mean_wh"], out["turn_var_wh2"] = st["m"].to_numpy(), st["v"].to_numpy()
        out["turn_n"] = st["n"].fillna(0).to_numpy(dtype=np.int64)
    for name, fields in VARIANTS.items():
        out[f"eq8_{name}_wh"] = reduced_prior_wh(lg.network, replace(sumo_vehicle(), **fields))[e]
    # d/ds of the reduced prior at s = 1 with every speed s times the limit (central difference): the driver's term
    driver = replace(sumo_vehicle(), **VARIANTS[DRIVER_VARIANT])
    net, h = lg.network, DRIVER_STEP
    hi, lo = (reduced_prior_wh(replace(net, speed_mps=net.speed_mps * (1.0 + d)), driver) for d in (h, -h))
    out["eq8_dsf_wh"] = ((hi - lo) / (2.0 * h))[e]
    replace_network_rows(data / ARMS, out, args.network)
    print(f"{args.network}: {len(pairs)} arms written to {data / ARMS}")
    from evroute.sumo.trip_interval import correlation_table

    corr = correlation_table(day, arms=("edge", "turn"), lags=CORR_LAGS, turn_min_samples=TURN_MIN)
    corr.insert(0, "network", args.network)
    replace_network_rows(data / CORR, corr, args.network)
    print(f"{args.network}: within-trip correlations written to {data / CORR}")
    from evroute.sumo.trip_interval import holdout_coverage

    ho = [
        {"network": args.network, "arms": kind, "window": HOLDOUT_WINDOW}
        | holdout_coverage(day, kind, window=HOLDOUT_WINDOW, turn_min_samples=TURN_MIN)
        for kind in ("edge", "turn")
    ]
    replace_network_rows(data / HOLDOUT, pd.DataFrame(ho), args.network)
    print(f"{args.network}: coverage of held-out replay trips written to {data / HOLDOUT}")


def report(args: argparse.Namespace) -> None:
    """Write ``--doc`` from the tables under ``--data`` alone (:mod:`studies.sumo_live_routes.report`)."""
    data = Path(args.data)
    missing = missing_tables(data)
    if missing:
        _fail(f"--data {data}: missing {', '.join(missing)}")
    lines = report_lines(*load_tables(data))
    Path(args.doc).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.doc}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA), help="folder of the CSV files (default docs/results/data)")
    ap.add_argument("--report-only", action="store_true", help="write the report from the CSV files alone")
    ap.add_argument("--doc", default=str(DOC), help="report file")
    sub = ap.add_subparsers(dest="cmd")
    c = sub.add_parser("collect", help="drive routes live (resumable)")
    c.add_argument("--network", required=True)
    c.add_argument("--ods", type=int, default=40, help="origin-destination pairs")
    c.add_argument("--times", type=int, default=3, help="clock times per route")
    c.add_argument("--snapshots", type=int, default=24, help="departure times of the window to draw from")
    c.add_argument("--min-km", type=float, default=1.0)
    c.add_argument("--max-km", type=float, default=4.0)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--workers", type=int, default=2)
    c.add_argument("--limit", type=int, default=0, help="drive at most this many new trips (timing probe)")
    a = sub.add_parser("arms", help="replay-trained arm statistics of the driven (edge, next edge) pairs")
    a.add_argument("--network", required=True)
    sub.add_parser("report", help="the report from the CSV files")
    args = ap.parse_args()
    if args.report_only or args.cmd in (None, "report"):
        report(args)
    else:
        {"collect": collect, "arms": arms}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
