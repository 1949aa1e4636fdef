"""Bandit study on SUMO energy: route learners in the ``sumo-replay`` environment (resumable).

Runs ``evroute run --env sumo-replay`` for every (network, route, model, policy, arms) asked, into
``RUNS/<network>-<route>/<model>-<policy>[-turn]``, then saves every completed seed's final cumulative regret to
``--data`` (CSV, one row per run and seed) and the study's set-up (command, recorded day, regret reference and its
negative-cycle check) to ``--meta`` (JSON), and writes the report ``--out`` from these two files alone:

    nice -n 10 .venv/bin/python -m studies.sumo_bandit.run --networks monaco --routes A --models bi gp-exact \\
        --policies ts bucb --arms edge turn --seeds 10 --horizon 500 --env-param probe_turns=true --seed-major

``--arms edge turn`` runs every method with edge and with turn arms (:mod:`evroute.arms`; folders and labels of turn
arms end in ``-turn`` / ``-TURN``) and scores every run's driven routes by the turn truth too (one yardstick for both
kinds of arm), giving paired differences turn - edge per method; models after the first are compared with the first
under the same policy and arms (e.g. ``GP-EXACT-TS - BI-TS``).  ``--tables-only`` rewrites data and report from the
seeds completed so far; ``--report-only`` rebuilds the report from ``--data`` and ``--meta`` alone (no runs, no
recorded day; tests/studies/test_results_rebuild.py).
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evroute.experiments import ExperimentConfig, run_experiment
from evroute.experiments.output import output_lock
from evroute.experiments.runner import prepare_output, run_seed
from evroute.io import atomic_write_text
from evroute.stats import format_mean_se
from studies.sumo_bandit.report import report_from_files
from studies.sumo_bandit.runner import merge_rows

#: Columns of the per-seed data file (``--data``); regrets in Wh, cumulative over the horizon.
#: read the commit column as text (a hash such as ``1234e56`` is not a number)
COMMIT = {"commit": str}
#: the per-seed table's columns; ``commit``: the checkout that recorded the row (:mod:`studies.reproduce.provenance`)
COLUMNS = [
    "network",
    "route",
    "label",
    "model",
    "policy",
    "arms",
    "seed",
    "final_regret_wh",
    "final_regret_turn_truth_wh",
    "reference_wh",
    "reference_exact",
    "cpu_s",
    "commit",
]


def study_config(
    network: str,
    route: str,
    model: str,
    policy: str,
    arms: str,
    env_params: dict[str, Any],
    horizon: int,
    seeds: int,
) -> ExperimentConfig:
    """The study's configuration of one method on one route (``seeds``: how many, 0..seeds-1)."""
    return ExperimentConfig(
        network=network,
        route=route,
        model=model,
        policy=policy,
        env="sumo-replay",
        environment=env_params,
        horizon=horizon,
        seeds=tuple(range(seeds)),
        potential="elevation",
        arms=arms,
    )


def run_folder(runs: Path, cfg: ExperimentConfig) -> Path:
    """``runs/<network>-<route>/<model>-<policy>[-turn]``: the raw runs of one method (its seeds inside)."""
    name = f"{cfg.model}-{cfg.policy}" + ("" if cfg.arms == "edge" else f"-{cfg.arms}")
    return runs / f"{cfg.network}-{cfg.route}" / name


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _seed_summaries(folder: Path) -> dict[int, dict[str, Any]]:
    """The summaries of the seeds of ``folder`` that have completed (``seed_<k>/summary.json``)."""
    return {int(p.parent.name.split("_")[1]): json.loads(p.read_text()) for p in folder.glob("seed_*/summary.json")}


def turn_truth_finals(folders: dict[str, Path], cfg: ExperimentConfig) -> dict[str, dict[int, float]]:
    """Final cumulative regret of every run with its driven routes scored by the TURN truth (the sum of the routes'
    turn-arm means, :meth:`~evroute.environments.EnergyEnvironment.arm_truth`) against the turn-arm optimum: one
    yardstick for edge-arm and turn-arm runs (an edge-arm run's own regret is against the edge means)."""
    from evroute.arms import make_arms
    from evroute.experiments.runner import build_problem

    problem = build_problem(cfg, 0)
    env, lg = problem.env, problem.linegraph
    arms = make_arms(lg, "turn")
    truth = env.arm_truth(arms)
    best = env.optimal_route_arms(arms, problem.route.start, problem.route.goal).cost
    out: dict[str, dict[int, float]] = {}
    for label, folder in folders.items():
        out[label] = {}
        for sd in _seed_summaries(folder):
            routes = pd.read_csv(folder / f"seed_{sd}" / "rounds.csv")["route"]
            costs = [arms.route_cost(truth, np.array([lg.network.index_of(e) for e in r.split()])) for r in routes]
            out[label][sd] = float(np.sum(costs) - best * len(costs))
    return out


def collect_rows(network: str, route: str, cfgs: dict[str, tuple[ExperimentConfig, Path]]) -> list[dict[str, Any]]:
    """One row (:data:`COLUMNS`) per completed seed of every run of one route."""
    folders = {lab: out for lab, (_, out) in cfgs.items() if list(out.glob("seed_*/summary.json"))}
    if not folders:
        return []
    cfg0 = next(iter(cfgs.values()))[0]
    turn = turn_truth_finals(folders, cfg0)
    from studies.reproduce.provenance import head_commit

    rows, commit = [], head_commit()
    for lab, folder in folders.items():
        cfg = cfgs[lab][0]
        for sd, s in sorted(_seed_summaries(folder).items()):
            if sd not in turn[lab]:  # completed while the turn truth was being scored: next time
                continue
            ref = s["regret_reference"]
            rows.append(
                {
                    "network": network,
                    "route": route,
                    "label": lab,
                    "model": cfg.model,
                    "policy": cfg.policy,
                    "arms": cfg.arms,
                    "seed": sd,
                    "final_regret_wh": round(float(s["final_cumulative_regret_wh"]), 3),
                    "final_regret_turn_truth_wh": round(turn[lab][sd], 3),
                    "reference_wh": round(float(ref["wh"]), 3),
                    "reference_exact": bool(ref["exact"]),
                    "cpu_s": round(float(s["cpu_s_this_session"]) + float(s.get("setup_cpu_s_this_session", 0.0)), 2),
                    "commit": commit,
                }
            )
    return rows


def route_meta(cfg: ExperimentConfig) -> dict[str, Any]:
    """The recorded day and the regret reference of one route: optimum per kind of arm, and the negative-cycle check
    (no arm mean below 0 means no negative cycle: every route cost is a sum of non-negative means)."""
    from evroute.arms import make_arms
    from evroute.experiments.runner import build_problem

    problem = build_problem(cfg, 0)
    env, lg, r = problem.env, problem.linegraph, problem.route
    d = env.describe()
    day = d.get("day", {})
    out: dict[str, Any] = {
        "network_edges": int(lg.network.n_edges),
        "turns": int(lg.n_arcs),
        "start": r.start_id,
        "goal": r.goal_id,
        "traversals": int(np.sum(getattr(env, "counts"))),  # noqa: B009 (a SumoReplayEnvironment attribute)
        "probe_trips": int(day.get("probe_trips", 0)),
        "clipped_traversals": int(d["clipped_traversals"]),
        "record_cpu_s": round(float(day.get("record_cpu_s", float("nan"))), 1),  # recording the day (SUMO included)
        "record_wall_s": round(float(day.get("record_wall_s", float("nan"))), 1),
        "clipped_wh": round(float(d["clipped_wh"]), 3),
        "eq8_edges": len(d["eq8_edges"]),
        "negative_cycle_reachable": bool(d["negative_cycle_reachable"]),
        "arms": {},
    }
    turn_arms = make_arms(lg, "turn")
    edge_opt = env.optimal_route_arms(make_arms(lg, "edge"), r.start, r.goal)
    out["edge_optimum_turn_truth_wh"] = round(turn_arms.route_cost(env.arm_truth(turn_arms), edge_opt.edges), 3)
    for kind in ("edge", "turn"):
        arms = make_arms(lg, kind)
        truth = np.asarray(env.arm_truth(arms), dtype=np.float64)
        opt = env.optimal_route_arms(arms, r.start, r.goal)
        out["arms"][kind] = {
            "n": int(truth.size),
            "negative_means": int((truth < 0).sum()),
            "min_mean_wh": round(float(truth.min()), 4),
            "optimum_wh": round(float(opt.cost), 3),
            "method": str(getattr(opt, "method", "dijkstra")),
        }
    return out


def _machine() -> str:
    import os
    import platform

    return f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} when written"


def reference_data(commit: str, data: str) -> pd.DataFrame:
    """``data`` (a path in the repository) as committed at ``commit`` (``git show``); exit 2 if there is none."""
    import io
    import subprocess

    out = subprocess.run(["git", "show", f"{commit}:{data}"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"evroute: error: --check-against {commit}: no {data} at that commit", file=sys.stderr)
        raise SystemExit(2)
    return pd.read_csv(io.StringIO(out.stdout))


def write_data(
    rows: list[dict[str, Any]], meta: dict[str, Any], data: Path, meta_path: Path, *, check: dict[str, Any] | None
) -> None:
    """Merge ``rows`` into ``data`` (:func:`merge_rows`) and ``meta`` into ``meta_path`` (routes and commands of an
    earlier invocation kept); ``check`` (the rows against the data at a commit, :func:`reference_check`) is recorded
    under ``rerun_check`` for this command."""
    data.parent.mkdir(parents=True, exist_ok=True)
    new = pd.DataFrame(rows, columns=COLUMNS)
    if data.is_file() and meta_path.is_file():
        df, _ = merge_rows(pd.read_csv(data, dtype=COMMIT), new)
        old = json.loads(meta_path.read_text())
        checks = {**old.get("rerun_check", {}), **({meta["command"]: check} if check and check["compared"] else {})}
        commands = list(dict.fromkeys([*old.get("commands", [old["command"]]), meta["command"]]))
        routes = dict(old["routes"])
        for key, r in meta["routes"].items():  # a route run by several invocations: every method asked is kept
            asked = [*routes.get(key, {}).get("methods", []), *r.get("methods", [])]
            routes[key] = {**routes.get(key, {}), **r, "methods": list(dict.fromkeys(asked))}
        meta = {**old, **meta, "routes": routes, "commands": commands}
        meta["command"], meta["rerun_check"] = commands[0], checks
    else:
        df = new
    atomic_write_text(data, df.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(meta_path, json.dumps(meta, indent=1, sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco"])
    ap.add_argument("--routes", nargs="+", default=["A"])
    ap.add_argument("--models", nargs="+", default=["bi"])
    ap.add_argument("--policies", nargs="+", default=["ts", "bucb", "ucb"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--env-param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--arms", nargs="+", default=["edge"], choices=["edge", "turn"], help="arm kinds (evroute.arms)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--runs", default="results/sumo")
    ap.add_argument("--data", default="docs/results/data/sumo_bandit_finals.csv", help="per-seed final regrets (CSV)")
    ap.add_argument("--meta", default="docs/results/data/sumo_bandit_meta.json", help="set-up and reference checks")
    ap.add_argument("--out", default="docs/results/sumo_bandit.md", help="the report (Markdown)")
    ap.add_argument(
        "--seed-major",
        action="store_true",
        help="run seed 0 of every method, then seed 1, ... (a stopped study has equal seeds)",
    )
    ap.add_argument("--tables-only", action="store_true", help="write data and report from the seeds completed so far")
    ap.add_argument(
        "--check-against",
        metavar="COMMIT",
        help="record how the seeds run reproduce those in --data at this git commit (the re-run check)",
    )
    ap.add_argument(
        "--extra-data",
        type=Path,
        help="folder of the live-scoring tables (studies/sumo_bandit/live.py; default: --data's)",
    )
    ap.add_argument("--report-only", action="store_true", help="no runs: rebuild --out from --data and --meta alone")
    args = ap.parse_args()
    reference = reference_data(args.check_against, args.data) if args.check_against else None
    if args.report_only:
        for p in (Path(args.data), Path(args.meta)):
            if not p.is_file():
                ap.exit(2, f"evroute: error: no study data at {p} (run the study without --report-only)\n")
        report_from_files(Path(args.data), Path(args.meta), Path(args.out), args.extra_data)
        return
    env_params = {k: _value(v) for k, v in (p.split("=", 1) for p in args.env_param)}
    rows: list[dict[str, Any]] = []
    routes_meta: dict[str, Any] = {}
    for network in args.networks:
        for route in args.routes:
            cfgs: dict[str, tuple[ExperimentConfig, Path]] = {}
            for model, policy, arms in itertools.product(args.models, args.policies, args.arms):
                cfg = study_config(network, route, model, policy, arms, env_params, args.horizon, args.seeds)
                cfgs[cfg.label] = (cfg, run_folder(Path(args.runs), cfg))
            if not args.tables_only:
                run_route(network, route, cfgs, args)
            rows += collect_rows(network, route, cfgs)
            routes_meta[f"{network}-{route}"] = {**route_meta(next(iter(cfgs.values()))[0]), "methods": list(cfgs)}
    argv = [a for a in sys.argv[1:] if a != "--tables-only"]
    if args.check_against:  # not part of the study's command (a check of its data)
        i = argv.index("--check-against")
        argv = argv[:i] + argv[i + 2 :]
    meta = {
        "command": "python -m studies.sumo_bandit.run " + shlex.join(argv),
        "env_params": env_params,
        "horizon": args.horizon,
        "seeds": args.seeds,
        "machine": _machine(),
        "routes": routes_meta,
    }
    check = None
    if reference is not None:  # the seeds of these runs against the data at that commit (idempotent)
        check = {"against": args.check_against, **merge_rows(reference, pd.DataFrame(rows, columns=COLUMNS))[1]}
    write_data(rows, meta, Path(args.data), Path(args.meta), check=check)
    report_from_files(Path(args.data), Path(args.meta), Path(args.out), args.extra_data)
    print(Path(args.out).read_text())


def run_route(network: str, route: str, cfgs: dict[str, tuple[ExperimentConfig, Path]], args: Any) -> None:
    """Run (or resume) every method of one route."""
    if args.seed_major:  # seed 0 of every method, then seed 1...: a stopped study has k seeds of all
        stored: set[tuple[str, int]] = set()
        if Path(args.data).is_file():  # seeds already in --data run after the missing ones (then checked: merge_rows)
            d = pd.read_csv(args.data, dtype=COMMIT)
            d = d[(d["network"] == network) & (d["route"] == route)]
            stored = set(zip(d["label"], d["seed"].astype(int), strict=True))
        jobs = [(seed, cfg, out) for seed in range(args.seeds) for cfg, out in cfgs.values()]
        jobs.sort(key=lambda j: (j[1].label, j[0]) in stored)  # stable: the seed-major order within each part
        for seed, cfg, out in jobs:
            out = prepare_output(cfg, out)
            with output_lock(out):
                s = run_seed(cfg, seed, out)
            print(f"{network} {route} {cfg.label} seed {seed}: {s['final_cumulative_regret_wh']:.1f} Wh", flush=True)
    for cfg, out in cfgs.values():
        s = run_experiment(cfg, out, workers=args.workers, progress=False)
        print(
            f"{network} {route} {cfg.label}: {format_mean_se(s['mean_final_regret_wh'], s['se_final_regret_wh'])} Wh",
            flush=True,
        )


if __name__ == "__main__":
    main()
