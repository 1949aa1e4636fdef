"""Score the SUMO bandit study's final routes by live SUMO energy (issue 20, item 4), resumable.

Reads the study's raw runs (``--runs``, as written by ``studies/sumo_bandit/run.py``): every completed seed's
final route (the route driven in round T) and the exact optima of the replay's turn and edge means, into
``--data``/``sumo_bandit_live_routes.csv``; or, with ``--from-data`` and no raw runs, the same rows as committed there
(each route by its key; its edges from the stored trips of ``sumo_bandit_live_trips.csv``, checked against the key).
Drives every distinct route in ``sumo-live`` (the runs' scenario, :func:`studies.sumo_bandit.runner.
live_simulation`) at ``--slots`` departure times, appending each trip to ``--data``/``sumo_bandit_live_trips.csv`` (a
rerun drives only the trips not stored; ``--redrive`` drives every trip again, each replacing its stored row), and
records this command in ``--data``/``sumo_bandit_live_meta.json`` (one set-up per network; a run of other routes
with the same slots and speed seed adds its command, ``; ``-separated).  The section "Final
routes driven live" of ``docs/results/sumo_bandit.md`` is then rebuilt from these files by the study's
``--report-only`` (method: :mod:`studies.sumo_bandit.runner`)::

    nice -n 10 python -m studies.sumo_bandit.live --runs results/sumo-rerun --network monaco --routes A B
    nice -n 10 python -m studies.sumo_bandit.live --from-data --redrive --network monaco --routes A B --slots 6
    nice python -m studies.sumo_bandit.live --runs results/sumo-lux --network luxembourg --routes A B --slots 6
    python -m studies.sumo_bandit.run --report-only
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from evroute.io import atomic_write_text
from studies.sumo_bandit.runner import (
    FINAL_COLUMNS,
    FINALS,
    LIVE_META,
    REFERENCES,
    TRIP_COLUMNS,
    TRIPS,
    drive,
    live_networks,
    live_simulation,
    route_key,
    slot_speed_factor,
)


def _fail(message: str) -> NoReturn:
    print(f"evroute: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def run_folders(runs: Path, network: str, route: str) -> list[Path]:
    """The run folders (with a ``config.json``) of one route, sorted by name."""
    return sorted(p.parent for p in (runs / f"{network}-{route}").glob("*/config.json"))


def final_rows(network: str, route: str, folders: list[Path]) -> tuple[list[dict[str, Any]], Any, dict[str, str]]:
    """Rows of :data:`FINAL_COLUMNS` (every completed seed, then the references), the first run's config, and the
    edges (space-separated SUMO ids) of every route key."""
    from evroute.arms import make_arms
    from evroute.experiments import ExperimentConfig
    from evroute.experiments.runner import build_problem

    cfgs = [ExperimentConfig.from_dict(json.loads((f / "config.json").read_text())) for f in folders]
    envs = {json.dumps(c.environment, sort_keys=True) for c in cfgs}
    if len(envs) != 1:
        _fail(f"the runs of {network} {route} differ in their environment parameters: {sorted(envs)}")
    problem = build_problem(cfgs[0], 0)
    env, lg, r = problem.env, problem.linegraph, problem.route
    ids = lg.network.edge_ids
    turn = make_arms(lg, "turn")
    truth = env.arm_truth(turn)
    rows: list[dict[str, Any]] = []
    edges_of: dict[str, str] = {}

    def add(label: str, model: str, policy: str, arms: str, seed: int, edges: str) -> None:
        idx = np.array([lg.network.index_of(e) for e in edges.split()])
        key = route_key(edges)
        edges_of[key] = edges
        rows.append(dict(zip(FINAL_COLUMNS, [network, route, label, model, policy, arms, seed, key], strict=False)))
        rows[-1]["replay_turn_wh"] = round(turn.route_cost(truth, idx), 3)

    for cfg, folder in zip(cfgs, folders, strict=True):
        for s in sorted(folder.glob("seed_*/summary.json"), key=lambda p: int(p.parent.name.split("_")[1])):
            last = pd.read_csv(s.parent / "rounds.csv")["route"].iloc[-1]
            add(cfg.label, cfg.model, cfg.policy, cfg.arms, int(s.parent.name.split("_")[1]), str(last))
    for label, kind in REFERENCES.items():
        opt = env.optimal_route_arms(make_arms(lg, kind), r.start, r.goal)
        add(label, "replay", "optimum", kind, -1, " ".join(ids[opt.edges].tolist()))
    return rows, cfgs[0], edges_of


def stored_rows(network: str, routes: list[str], data: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The committed rows of :data:`FINAL_COLUMNS` of ``routes`` in ``data`` and the edges of every route key (from
    the stored trips; each checked against its key)."""
    if not (data / FINALS).is_file() or not (data / TRIPS).is_file():
        _fail(f"--from-data needs {data / FINALS} and {data / TRIPS}")
    finals = pd.read_csv(data / FINALS, dtype={"commit": str})
    finals = finals[(finals["network"] == network) & finals["route"].isin(routes)]
    missing = sorted(set(routes) - set(finals["route"]))
    if missing:
        _fail(f"no final routes of {network} {missing[0]} in {data / FINALS}")
    trips = pd.read_csv(data / TRIPS, dtype={"commit": str})
    trips = trips[trips["network"] == network].drop_duplicates("route_key").set_index("route_key")
    edges_of: dict[str, str] = {}
    for key in dict.fromkeys(finals["route_key"].astype(str)):
        if key not in trips.index:
            _fail(f"route {key} has no stored trip in {data / TRIPS}: its edges are unknown (drive it from --runs)")
        edges = str(trips.loc[key, "edges"])
        if route_key(edges) != key:
            _fail(f"the stored edges of route {key} do not hash to its key")
        edges_of[key] = edges
    return finals.to_dict("records"), edges_of


def merged_command(prev: dict[str, Any], command: str, slots: int, seed: int) -> str:
    """The ``command`` entry of a network's live set-up after running ``command``: added (``; ``-separated, once) to
    the commands of ``prev`` (the network's stored set-up) when ``prev`` has the same ``slots`` and speed ``seed`` (a
    run of other routes of the same scenario); else ``command`` alone (a new set-up replaces the old)."""
    if prev.get("slots") != slots or prev.get("speed_seed") != seed or not prev.get("command"):
        return command
    before = str(prev["command"]).split("; ")
    return "; ".join(before if command in before else [*before, command])


def merge(path: Path, new: pd.DataFrame, key: list[str]) -> None:
    """Rows of ``new`` replace those of ``path`` with the same ``key``; the rest are kept."""
    from studies.reproduce.provenance import head_commit

    new = new.assign(commit=head_commit())  # the checkout that recorded the new rows
    if path.is_file():
        old = pd.read_csv(path, dtype={"commit": str})
        idx = pd.MultiIndex.from_frame(old[key]).isin(pd.MultiIndex.from_frame(new[key]))
        new = pd.concat([old[~idx], new], ignore_index=True)
    atomic_write_text(path, new.to_csv(index=False, lineterminator="\n"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="results/sumo-rerun", help="the study's raw runs folder")
    ap.add_argument("--from-data", action="store_true", help="the final routes stored in --data, not --runs")
    ap.add_argument("--redrive", action="store_true", help="drive every trip again (each replaces its stored row)")
    ap.add_argument("--network", default="monaco")
    ap.add_argument("--routes", nargs="+", default=["A", "B"])
    ap.add_argument("--slots", type=int, default=4, help="departure times over the scenario's window")
    ap.add_argument("--seed", type=int, default=0, help="seed of the speed factor of each departure time")
    ap.add_argument("--data", default="docs/results/data", help="folder of the live-scoring tables")
    ap.add_argument("--meta", default="docs/results/data/sumo_bandit_meta.json", help="the study's set-up (JSON)")
    ap.add_argument("--limit", type=int, default=0, help="drive at most this many new trips (timing probe)")
    args = ap.parse_args()
    runs, data, meta_path = Path(args.runs), Path(args.data), Path(args.meta)
    if args.slots < 1 or args.limit < 0:
        _fail("--slots must be >= 1 and --limit >= 0")
    if not meta_path.is_file():
        _fail(f"no study set-up at {meta_path} (run studies/sumo_bandit/run.py first)")
    from evroute.experiments import ExperimentConfig

    study = json.loads(meta_path.read_text())
    if args.from_data:  # the scenario of the study's runs: its environment parameters, the default vehicle
        rows, edges_of = stored_rows(args.network, args.routes, data)
        cfg0: Any = ExperimentConfig(network=args.network, env="sumo-replay", environment=study["env_params"])
    else:
        folders = {r: run_folders(runs, args.network, r) for r in args.routes}
        empty = [r for r, f in folders.items() if not f]
        if empty:
            _fail(f"no runs under {runs}/{args.network}-{empty[0]} (run the study into --runs first)")
        rows, edges_of, cfg0 = [], {}, None
        for r, f in folders.items():
            rr, cfg, e = final_rows(args.network, r, f)
            rows, cfg0 = rows + rr, cfg0 or cfg
            edges_of |= e
            if cfg.environment != cfg0.environment:
                _fail(f"route {r}'s runs have other environment parameters than route {args.routes[0]}'s")
        data.mkdir(parents=True, exist_ok=True)
        merge(data / FINALS, pd.DataFrame(rows, columns=FINAL_COLUMNS), ["network", "route", "label", "seed"])
    from evroute.energy import VehicleProfile
    from evroute.experiments.runner import load_linegraph

    lg = load_linegraph(cfg0.network, cfg0.data_dir, cfg0.dem, cfg0.loader)
    sim, departures = live_simulation(lg, dict(cfg0.environment), VehicleProfile.load(cfg0.vehicle), args.slots)
    meta_file = data / LIVE_META
    live_meta = {"networks": live_networks(json.loads(meta_file.read_text())) if meta_file.is_file() else {}}
    command = "python -m studies.sumo_bandit.live " + shlex.join(sys.argv[1:])
    command = merged_command(live_meta["networks"].get(args.network, {}), command, args.slots, args.seed)
    live_meta["networks"][args.network] = {  # this network's set-up, the other networks' kept
        "command": command,
        "slots": args.slots,
        "speed_seed": args.seed,
        "departures": [time.strftime("%H:%M:%S", time.gmtime(float(t))) for t in departures],
    }
    atomic_write_text(meta_file, json.dumps(live_meta, indent=1, sort_keys=True) + "\n")
    done: set[tuple[str, int]] = set()
    trips_path = data / TRIPS
    if trips_path.is_file() and not args.redrive:
        t = pd.read_csv(trips_path)
        t = t[t["network"] == args.network]
        done = set(zip(t["route_key"], t["slot"].astype(int), strict=True))
    todo = [(k, s) for s in range(args.slots) for k in sorted(edges_of) if (k, s) not in done]
    if args.limit:
        todo = todo[: args.limit]
    print(f"{len(edges_of)} distinct routes, {len(todo)} trips to drive ({len(done)} stored)", flush=True)
    cpu0 = time.process_time()
    for n, (k, s) in enumerate(todo, 1):
        row = pd.DataFrame(
            [{"network": args.network, **drive(sim, edges_of[k], s, slot_speed_factor(args.seed, s))}],
            columns=TRIP_COLUMNS,
        )
        if args.redrive:  # the stored row of this trip replaced (the file keeps every route's edges meanwhile)
            merge(trips_path, row, ["network", "route_key", "slot"])
        else:  # appended with the checkout that drove it (the committed file has a commit column)
            from studies.reproduce.provenance import head_commit

            row = row.assign(commit=head_commit())
            if trips_path.is_file():
                row = row.reindex(columns=pd.read_csv(trips_path, nrows=0).columns)
            row.to_csv(trips_path, mode="a", header=not trips_path.is_file(), index=False, lineterminator="\n")
        if n % 10 == 0 or n == len(todo):
            print(f"{n} trips, CPU {time.process_time() - cpu0:.0f} s", flush=True)
    sim.close()


if __name__ == "__main__":
    main()
