"""One against two BLAS threads per run: CPU and wall time of short runs, measured alternately in one process.

    EVROUTE_DATA=/work/shared/data nice -n 10 .venv/bin/python -m studies.bench.bench_threads \\
        --network luxembourg --route A --rounds 40 --repeats 2 --out results/bench_threads.md

For each method (default exact GP-UCB and BI-TS, consistent environment: its reference is one Dijkstra;
``--potential none``) and each thread count, a run of ``--rounds`` rounds (``evroute.experiments.run_experiment``,
one seed) is timed ``--repeats`` times, the counts alternating; a first untimed run of each fills the compute cache
(environment draw, reference, graph Gram), so the timed runs measure the rounds and the model's set-up. The thread
count is the run's BLAS count (``EVROUTE_BLAS_THREADS``) and, for the GP, its ``threads`` model parameter (torch and
BLAS). Reported: process CPU seconds (all threads) and wall seconds per run (medians), the median round's model
update, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from evroute.experiments import ExperimentConfig, run_experiment
from evroute.io import atomic_write_text
from studies.common import report as R
from studies.common.bench import machine_line


def _config(method: str, threads: int, args: argparse.Namespace) -> ExperimentConfig:
    model, policy = method.rsplit("-", 1)
    return ExperimentConfig(
        network=args.network,
        route=args.route,
        model=model,
        policy=policy,
        env=args.env,
        horizon=args.rounds,
        seeds=(0,),
        potential="none",
        model_params={"threads": threads} if model.startswith("gp") else {},
    )


def _timed(cfg: ExperimentConfig, threads: int, folder: Path) -> tuple[float, float, float]:
    os.environ["EVROUTE_BLAS_THREADS"] = str(threads)
    c0, w0 = time.process_time(), time.perf_counter()
    run_experiment(cfg, folder, progress=False)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    rounds = pd.read_csv(folder / "seed_0" / "rounds.csv")
    return cpu, wall, float(rounds["update_ms"].median())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="luxembourg")
    ap.add_argument("--route", default="A")
    ap.add_argument("--env", default="consistent", choices=["paper", "consistent"])
    ap.add_argument("--methods", nargs="+", default=["gp-exact-ucb", "bi-ts"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=None, help="markdown report (default: print only)")
    args = ap.parse_args()
    cmd = R.command_line()
    rows = []
    with tempfile.TemporaryDirectory(prefix="evroute-bench-threads-") as tmp:
        for method in args.methods:
            for n in args.threads:  # warm-up: fills the compute cache for this thread count
                _timed(_config(method, n, args), n, Path(tmp) / f"warm-{method}-{n}")
            got: dict[int, list[tuple[float, float, float]]] = {n: [] for n in args.threads}
            for rep in range(args.repeats):
                for n in args.threads:
                    got[n].append(_timed(_config(method, n, args), n, Path(tmp) / f"{method}-{n}-{rep}"))
            for n in args.threads:
                cpu, wall, upd = (statistics.median(x[i] for x in got[n]) for i in range(3))
                load = os.getloadavg()[0]
                rows.append(f"| {method} | {n} | {cpu:.1f} | {wall:.1f} | {upd:.1f} | {load:.1f} |")
    text = "\n".join(
        [
            "# One against two BLAS threads per run",
            "",
            f"Command: `{cmd}`",
            "",
            machine_line(),
            "",
            f"{args.network} {args.route}, {args.env} environment, {args.rounds} rounds, seed 0, medians of "
            f"{args.repeats} runs per cell (counts alternating), compute cache warm.",
            "",
            "| method | BLAS threads | CPU s per run | wall s per run | median update ms | load (1 min) |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if args.out:
        atomic_write_text(Path(args.out), text + "\n")


if __name__ == "__main__":
    main()
