"""The misspecification study (issue 38, item 3): GP-TS against strong baselines in worlds the GP did not come from.

Every world of :data:`~studies.misspecification.design.WORLDS` x every method of
:data:`~studies.misspecification.design.METHODS`, ``--seeds`` seeds each (seed ``s`` is the same world for every
method: the environment's generating parameters, truth and noise stream depend on the seed only), on the design's
network and route, elevation potential, regret against the exact optimum.  Resumable (finished seeds are skipped),
the experiment runner's process pool (``--workers 2``); run it niced:

    EVROUTE_DATA=/work/shared/data nice -n 10 python -m studies.misspecification.run --workers 2

Writes RUNS/<world>/<method>/ (raw runs, not committed; ``RUNS/commits/`` records the commit that started each),
``docs/results/data/misspecification_finals.csv`` (final cumulative regret of every finished seed, rewritten after
each world) and ``docs/results/misspecification.md`` from that CSV alone; ``--report-only`` rebuilds the page from the
CSV and the recorded commands (``docs/results/data/misspecification_commands.txt``) byte for byte.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import subprocess
import sys
from pathlib import Path

from studies.common import report as R
from studies.misspecification.design import HORIZON, METHODS, NETWORK, ROUTE, SEEDS, WORLDS, merge, read_csv, write_csv
from studies.misspecification.report import build_report


def study_command() -> str:
    """The running command as it is recorded: ``python -m studies.misspecification.run`` and its arguments (the
    interpreter's path and the module's file path, which differ between machines, left out)."""
    return " ".join(["python -m studies.misspecification.run", *(shlex.quote(a) for a in sys.argv[1:])])


def head_commit() -> str:
    """The short commit of the working tree (``-dirty`` when it has uncommitted changes), ``unknown`` without git."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def commit_file(runs: Path, key: str) -> Path:
    """Where the commit that started run ``key`` (``<world>/<method>``) is recorded (``RUNS/commits/``)."""
    return runs / "commits" / (key.replace("/", "__") + ".txt")


def configs(args: argparse.Namespace, world_names: list[str]) -> dict[str, object]:
    """``<world>/<method> -> ExperimentConfig`` of the chosen worlds."""
    out: dict[str, object] = {}
    for w in WORLDS:
        if w.name not in world_names:
            continue
        for m in METHODS:
            ns = argparse.Namespace(
                env="misspecified", potential="elevation", horizon=args.horizon, seeds=args.seeds, model_param=[]
            )
            cfg = R.method_config(NETWORK, ROUTE, f"{m.model}-{m.policy}", ns, environment=dict(w.params))
            out[f"{w.name}/{m.name}"] = dataclasses.replace(cfg, model_params=dict(m.params))
    return out


def collect(runs: Path, seeds: int) -> list[dict[str, object]]:
    """Rows of the per-seed CSV from the finished seeds under ``runs``."""
    rows: list[dict[str, object]] = []
    for w in WORLDS:
        for m in METHODS:
            d = runs / w.name / m.name
            mark = commit_file(runs, f"{w.name}/{m.name}")
            commit = mark.read_text().strip() if mark.is_file() else "unknown"
            for seed, final in sorted(R.seed_finals(d).items()):
                if seed < seeds:
                    summ = R.seed_summary(d, seed)
                    rows.append(
                        {
                            "world": w.name,
                            "method": m.name,
                            "model": m.model,
                            "policy": m.policy,
                            "network": NETWORK,
                            "route": ROUTE,
                            "horizon": summ.get("rounds", HORIZON),
                            "seed": seed,
                            "final_regret_wh": f"{final:.6f}",
                            "commit": commit,
                        }
                    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", nargs="+", default=[w.name for w in WORLDS], help="worlds to run (design order)")
    ap.add_argument("--seeds", type=int, default=SEEDS, help="seeds 0..N-1 of every cell")
    ap.add_argument("--horizon", type=int, default=HORIZON, help="rounds T")
    ap.add_argument("--executor", default="process", choices=["serial", "process", "ray"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="results/misspecification", help="raw results folder (not committed)")
    ap.add_argument("--data", default="docs/results/data/misspecification_finals.csv", help="per-seed final regrets")
    ap.add_argument("--commands", default="docs/results/data/misspecification_commands.txt", help="recorded commands")
    ap.add_argument("--out", default="docs/results/misspecification.md", help="the page")
    ap.add_argument("--report-only", action="store_true", help="run nothing; rebuild the page from --data")
    ap.add_argument("--collect-only", action="store_true", help="run nothing; merge finished seeds into --data")
    args = ap.parse_args()
    known = {w.name for w in WORLDS}
    bad = [w for w in args.worlds if w not in known]
    if bad or args.seeds < 1 or args.horizon < 1:
        ap.exit(2, f"evroute: error: worlds must be among {', '.join(sorted(known))}; --seeds, --horizon >= 1\n")
    data, out, cmd_file = Path(args.data), Path(args.out), Path(args.commands)
    if args.report_only and not data.is_file():
        ap.exit(2, f"evroute: error: --data {data}: no such file (the per-seed data the page is built from)\n")
    commands = [ln for ln in cmd_file.read_text().splitlines() if ln.strip()] if cmd_file.is_file() else []
    if args.report_only:
        R.write_markdown(out, build_report(read_csv(data), commands))
        return
    runs = Path(args.runs)
    if not args.collect_only:
        if study_command() not in commands:
            commands.append(study_command())
        commit = head_commit()
        for w in [w for w in WORLDS if w.name in args.worlds]:
            cfgs = configs(args, [w.name])
            for key in cfgs:  # the commit that started each run (beside the run folders: they must be new or runs)
                mark = commit_file(runs, key)
                if not mark.is_file():
                    mark.parent.mkdir(parents=True, exist_ok=True)
                    mark.write_text(commit + "\n")
            R.run_grid(
                cfgs,
                argparse.Namespace(report_only=False, runs=args.runs, executor=args.executor, workers=args.workers),
            )
            write_csv(data, merge(read_csv(data) if data.is_file() else [], collect(runs, args.seeds)))
            cmd_file.parent.mkdir(parents=True, exist_ok=True)
            cmd_file.write_text("".join(c + "\n" for c in commands))
            R.write_markdown(out, build_report(read_csv(data), commands))
    write_csv(data, merge(read_csv(data) if data.is_file() else [], collect(runs, args.seeds)))
    R.write_markdown(out, build_report(read_csv(data), commands))


if __name__ == "__main__":
    main()
