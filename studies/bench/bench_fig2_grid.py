"""The Fig. 2 grid end to end, both environments in one process pool, with the compute cache; CPU, wall and load.

The paper protocol (defaults): GP-UCB, GP-BUCB, GP-TS (exact GP), BI-UCB, BI-BUCB, BI-TS on Luxembourg A/B and
Monaco A/B, 5 seeds, T = 500, ``--potential none``, in the paper's and in the consistent environment::

    EVROUTE_DATA=/work/shared/data nice -n 10 .venv/bin/python -m studies.bench.bench_fig2_grid \\
        --runs results/fig2-grid --out results/fig2_grid_timing.md

Every (environment, route, method, seed) cell is one job of one :func:`evroute.experiments.sweep.run_sweep` over a
``--workers`` process pool; the environment draw of a (route, seed), its regret reference and the graph Gram are
computed once and shared through the compute cache (:mod:`evroute.network.computecache`; ``--cold`` empties a private
cache folder first, ``EVROUTE_COMPUTE_CACHE=off`` switches it off).  Reported: wall time, the CPU time of the whole
pool (``getrusage`` of the children), every cell's CPU time (``summary.json``: set-up and total, this session), their
sum per method and environment, the load average before and after, and ``CPU sum / workers`` (the wall time the grid
would take on ``--workers`` idle cores).  Results are resumable: finished cells are skipped (and then not timed), so
time a grid into a fresh ``--runs`` folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

from evroute.experiments.sweep import run_sweep
from evroute.io import atomic_write_text
from studies.common import report as R
from studies.common.bench import machine_line

METHODS = ["gp-exact-ucb", "gp-exact-bucb", "gp-exact-ts", "bi-ucb", "bi-bucb", "bi-ts"]


def configs(args: argparse.Namespace) -> dict[str, object]:
    """``<env>/<route key>/<METHOD> -> ExperimentConfig`` of the grid."""
    out = {}
    for env in args.envs:
        ns = argparse.Namespace(
            env=env, horizon=args.horizon, seeds=args.seeds, potential="none", model_param=[], gp_model="gp-exact"
        )
        for network, route in R.parse_routes(args.routes):
            for meth in args.methods:
                out[f"{env}/{R.route_key(network, route)}/{meth.upper()}"] = R.method_config(network, route, meth, ns)
    return out


def _setup_once(cfg: object, seed: int) -> tuple[float, float, float, str]:
    from evroute.bandit import regret_reference_route
    from evroute.experiments import runner as RR
    from evroute.kernels.graph_gram import _MEMO, dense_graph_gram

    RR._environment.cache_clear()
    _MEMO.clear()
    c0 = time.process_time()
    pb = RR.build_problem(cfg, seed)  # type: ignore[arg-type]
    c1 = time.process_time()
    ref = regret_reference_route(pb.env, pb.route.start, pb.route.goal, "auto")
    c2 = time.process_time()
    dense_graph_gram(pb.linegraph.laplacian(), 2.0, 1.0)
    return c1 - c0, c2 - c1, time.process_time() - c2, ref.method


def setup_table(cfgs: dict[str, object], seed: int) -> list[str]:
    """CPU seconds of the per-(route, seed) set-up -- environment draw (``build_problem``), regret reference and graph
    Gram -- computed (the cache emptied before each route) and then loaded from the compute cache, one row per
    environment and route (the first method of each)."""
    from evroute.experiments import runner as RR
    from evroute.experiments.threads import run_threads
    from evroute.network.computecache import compute_cache_dir

    rows = []
    seen = set()
    for name, cfg in cfgs.items():
        env, key, _ = name.split("/")
        if (env, key) in seen:
            continue
        seen.add((env, key))
        RR.load_linegraph(cfg.network, cfg.data_dir, cfg.dem, cfg.loader)  # type: ignore[attr-defined]
        times = []
        for _ in ("computed", "loaded"):
            with run_threads():  # as in a run: the exact GP's Gram then shares the draw's
                times.append(_setup_once(cfg, seed))
        (d0, r0, g0, method), (d1, r1, g1, _) = times
        rows.append(f"| {env} | {key} | {method} | {d0:.1f} / {d1:.2f} | {r0:.1f} / {r1:.2f} | {g0:.1f} / {g1:.2f} |")
        print(rows[-1], flush=True)
        shutil.rmtree(compute_cache_dir(), ignore_errors=True)  # the next route starts cold again
    return [
        f"Set-up of seed {seed}, CPU seconds computed / loaded from the compute cache (each route starts from an "
        "empty cache; the linegraph is loaded before):",
        "",
        "| environment | route | reference | environment draw | regret reference | graph Gram (exact GP) |",
        "|---|---|---|---|---|---|",
        *rows,
    ]


def _commit() -> str:
    """The checked-out commit (and whether evroute/ differs from it), for the JSON record."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "evroute"], capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + (" (evroute/ modified)" if dirty.strip() else "")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["luxembourg:A", "luxembourg:B", "monaco:A", "monaco:B"])
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--envs", nargs="+", default=["paper", "consistent"], choices=["paper", "consistent"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="results/fig2-grid", help="run folders (not committed)")
    ap.add_argument("--cold", action="store_true", help="start from an empty compute cache in RUNS/.compute-cache")
    ap.add_argument("--out", default=None, help="markdown report (default: print only)")
    ap.add_argument(
        "--references",
        default=None,
        help="a reference book (studies/bench/fig2_references.py) imported into the compute cache before the timing",
    )
    ap.add_argument("--json", default=None, help="also write the timing's numbers to this JSON file")
    ap.add_argument(
        "--setup-only",
        action="store_true",
        help="run no grid: time each route's set-up computed and loaded (private cache RUNS/.setup-cache, emptied)",
    )
    args = ap.parse_args()
    cmd = R.command_line()
    runs = Path(args.runs)
    cfgs = configs(args)
    if args.references:
        from evroute.errors import ParameterError
        from studies.bench.reference_book import load_book

        try:
            load_book(args.references)  # checked before anything is removed or written
        except ParameterError as exc:
            print(f"bench_fig2_grid: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    if args.setup_only:
        os.environ["EVROUTE_COMPUTE_CACHE"] = str(runs / ".setup-cache")
        shutil.rmtree(runs / ".setup-cache", ignore_errors=True)
        text = (
            "\n".join(
                [
                    "# Fig. 2 grid: set-up per route",
                    "",
                    f"Command: `{cmd}`",
                    "",
                    machine_line(),
                    "",
                    *setup_table(cfgs, 0),
                ]
            )
            + "\n"
        )
        print(text)
        if args.out:
            atomic_write_text(Path(args.out), text)
        return
    if args.cold:
        cache = runs / ".compute-cache"
        shutil.rmtree(cache, ignore_errors=True)
        os.environ["EVROUTE_COMPUTE_CACHE"] = str(cache)
    imported = 0
    if args.references:
        from studies.bench.reference_book import import_references

        imported = import_references(args.references)
    load0 = os.getloadavg()
    w0, c0, s0 = time.perf_counter(), _children_cpu(), _self_cpu()
    run_sweep(cfgs, runs, executor="process", workers=args.workers)  # type: ignore[arg-type]
    wall, pool_cpu, own_cpu = time.perf_counter() - w0, _children_cpu() - c0, _self_cpu() - s0
    load1 = os.getloadavg()
    cell: dict[tuple[str, str], list[float]] = defaultdict(list)
    setup: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name in cfgs:
        env, _, meth = name.split("/")
        for f in sorted((runs / name).glob("seed_*/summary.json")):
            s = json.loads(f.read_text())
            if "cpu_s_this_session" in s:
                cell[(env, meth)].append(float(s["cpu_s_this_session"]))
                setup[(env, meth)].append(float(s["setup_cpu_s_this_session"]))
    total = sum(sum(v) for v in cell.values())
    lines = [
        "# Fig. 2 grid: end-to-end timing",
        "",
        f"Command: `{cmd}`",
        "",
        machine_line(),
        "",
        f"Grid: {len(args.envs)} environments x {len(args.routes)} routes x {len(args.methods)} methods x "
        f"{args.seeds} seeds, T = {args.horizon}, {args.workers} worker processes, compute cache "
        f"{'cold (emptied first)' if args.cold else 'as found'}"
        + (f", {imported} regret references imported from `{args.references}` first." if args.references else "."),
        "",
        f"* wall {wall:.0f} s; CPU {pool_cpu + own_cpu:.0f} s (pool {pool_cpu:.0f} s + this process {own_cpu:.0f} s); "
        f"load average (1, 5, 15 min) before {load0[0]:.1f}, {load0[1]:.1f}, {load0[2]:.1f}, after "
        f"{load1[0]:.1f}, {load1[1]:.1f}, {load1[2]:.1f}",
        f"* sum of the cells' CPU {total:.0f} s over {sum(len(v) for v in cell.values())} cells timed; on "
        f"{args.workers} idle cores: **{total / args.workers / 60:.1f} min** (estimate: CPU sum / workers)",
        "",
        "| environment | method | cells | CPU s, sum | of which set-up | CPU s per cell, mean |",
        "|---|---|---|---|---|---|",
    ]
    for (env, meth), v in sorted(cell.items()):
        lines.append(
            f"| {env} | {meth} | {len(v)} | {sum(v):.0f} | {sum(setup[(env, meth)]):.0f} | {sum(v) / len(v):.1f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        atomic_write_text(Path(args.out), text)
    if args.json:
        numbers = {
            "command": cmd,
            "commit": _commit(),
            "machine": machine_line(),
            "grid": {"envs": args.envs, "routes": args.routes, "methods": args.methods, "seeds": args.seeds},
            "horizon": args.horizon,
            "workers": args.workers,
            "cold": bool(args.cold),
            "references_imported": imported,
            "wall_s": wall,
            "cpu_s": pool_cpu + own_cpu,
            "load_before": list(load0),
            "load_after": list(load1),
            "cells": {f"{e}/{m}": {"cpu_s": v, "setup_cpu_s": setup[(e, m)]} for (e, m), v in sorted(cell.items())},
        }
        atomic_write_text(Path(args.json), json.dumps(numbers, indent=1) + "\n")


if __name__ == "__main__":
    main()
