"""Set-up of a BI-TS ``evroute run`` on a large synthetic city, before and after, side by side (issue 21).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m studies.bench.bench_env_setup --check
    python -m studies.bench.bench_env_setup --report-only          # the page again from the JSON, nothing measured
    OMP_NUM_THREADS=1 python -m studies.bench.bench_env_setup --profile --network synthetic:20000:0

``--check`` measures the set-up through round 1 (network, line graph, route, environment draw, bandit, round 1;
CPU time next to wall time and the load average) of the ``evroute`` package of ``--baseline`` (extracted with
``git archive``) and of the current one, alternately in one process (compute cache off; then warm), then each in
fresh processes, and one cProfile run of each; it checks that both make the same network, draw and round 1 bit for
bit, writes the raw numbers to ``--json`` and the page ``--out`` rendered from them
(:mod:`studies.bench.env_setup`, :mod:`studies.bench.env_setup_report`).
``--report-only`` renders the page from the JSON (and refreshes its derived fields ``goal_cpu_s`` and ``summary``,
which the generated goals page ``docs/benchmark_gp.md`` reads).  ``--profile`` prints the CPU-time profile of one
cold set-up with the current code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from pathlib import Path

from evroute.io import atomic_write_text
from studies.bench.env_setup import check, profile
from studies.bench.env_setup_report import goal_summary, render
from studies.common.bench import machine_line

#: The commit before the set-up work of issue 21 item 5 (BI-TS set-up on 100k edges <= 10 s CPU).
BASELINE = "6f092a9"
COMMAND = "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m studies.bench.bench_env_setup --check"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="measure baseline and current side by side")
    mode.add_argument("--report-only", action="store_true", help="rebuild --out from --json")
    mode.add_argument("--profile", action="store_true", help="print a CPU profile of one cold set-up (current code)")
    ap.add_argument("--network", default="synthetic:100000:0")
    ap.add_argument("--baseline", default=BASELINE, help=f"git revision to compare against (default {BASELINE})")
    ap.add_argument("--repeats", type=int, default=3, help="cold runs of each, in this process")
    ap.add_argument("--fresh-repeats", type=int, default=2, help="cold runs of each in fresh processes")
    ap.add_argument("--warm-repeats", type=int, default=2, help="runs of each with the compute cache warm")
    ap.add_argument("--json", default="docs/data/bench_env_setup.json")
    ap.add_argument("--out", default="docs/bench_env_setup.md")
    args = ap.parse_args()
    if args.profile:
        os.environ["EVROUTE_COMPUTE_CACHE"] = "off"
        res = profile(args.network)
        print(f"{machine_line()}\nwhole set-up: {res['cpu_total_s']:.2f} s CPU, {res['wall_total_s']:.2f} s wall")
        for stage, cpu in res["cpu_s"].items():
            print(f"  {stage:12s} {cpu:6.2f} s CPU  {res['wall_s'][stage]:6.2f} s wall")
        for name, cpu in res["profile"].items():
            print(f"  {name:45s} {cpu:6.2f} s CPU")
        for fn, calls, own, cum in res["profile_top"]:
            print(f"  {own:6.2f} {cum:6.2f} {calls:8d}  {fn}")
        return
    json_path = Path(args.json)
    command = COMMAND if args.network == "synthetic:100000:0" else f"{COMMAND} --network {args.network}"
    if args.check:
        data = check(
            args.network,
            args.baseline,
            repeats=args.repeats,
            fresh_repeats=args.fresh_repeats,
            warm_repeats=args.warm_repeats,
        )
        data["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        data["machine"] = machine_line()
        json_path.parent.mkdir(parents=True, exist_ok=True)
    else:
        data = json.loads(json_path.read_text())
    derived = goal_summary(data)  # recomputed from the runs, also by --report-only
    if args.check or any(data.get(k) != v for k, v in derived.items()):
        atomic_write_text(json_path, json.dumps({**data, **derived}, indent=1) + "\n")
    data = json.loads(json_path.read_text())
    page = render(data, args.json, command)
    atomic_write_text(Path(args.out), page)
    print(page)


if __name__ == "__main__":
    main()
