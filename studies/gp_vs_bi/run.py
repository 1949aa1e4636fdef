"""GP versus BI without an oracle kernel (issue 24, items 2 and 3): paired final regrets, Holm-adjusted tests.

Consistent environment, elevation potential, regret against the exact optimum.  Per route, stage by stage (each
stage is run, then the per-seed data and the report are rewritten, so a stopped study still reports what finished):

1. BI-TS and exact GP-TS (``gp-exact``, default init: the neutral model prior, hyper-parameters refit by type-II
   maximum likelihood at rounds 16, 32, 64, ...), ``--seeds`` seeds;
2. the ablations at ``--ablation-seeds`` seeds: GP-TS and BI-TS with ``init="oracle"`` (the environment's generating
   kernel and noise and its ACTUAL per-edge marginal variances after the cap, ``ModelPrior.prior_var_edges``) and
   GP-TS with ``refit_first=0`` (default init, never refit);
3. BI-BUCB and exact GP-BUCB, ``--seeds`` seeds;
4. BI-UCB and exact GP-UCB, ``--ucb-seeds`` seeds;
5. on ``--sensitivity-route`` only: BI-TS and GP-TS in environments with ``max_cv`` in :data:`MAX_CVS` (the main
   runs are ``max_cv = 1``), ``--sensitivity-seeds`` seeds.

Resumable (re-run the same command; finished seeds are skipped):

    EVROUTE_DATA=/work/shared/data nice -n 10 .venv/bin/python -m studies.gp_vs_bi.run \\
        --routes monaco:A luxembourg:A --stages 1 3 --seeds 20 --horizon 500 --workers 2

Writes RUNS/<route key>/<NAME>/ (raw runs, not committed), ``docs/results/data/gp_vs_bi_finals.csv`` (final
cumulative regret of every finished seed; rows of runs not under ``--runs``, e.g. of other routes or of raw runs
since deleted, are kept) and ``docs/results/gp_vs_bi.md``, built from that CSV alone (``--report-only`` rebuilds it
from the CSV without the raw runs, keeping the study commands the report records; ``--collect-only`` first merges
the finished seeds under ``--runs`` into the CSV, e.g. after a stage was stopped part-way).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from studies.common import report as R
from studies.gp_vs_bi.report import build_report
from studies.gp_vs_bi.runner import (
    DESIGN,
    MAX_CV_MAIN,
    VARIANTS,
    Variant,
    merge,
    read_csv,
    recorded_commands,
    write_csv,
)


def seed_count(args: argparse.Namespace, v: Variant) -> int:
    return int(
        {
            "main": args.seeds,
            "ablation": args.ablation_seeds,
            "ucb": args.ucb_seeds,
            "sensitivity": args.sensitivity_seeds,
        }[v.group]
    )


def configs(args: argparse.Namespace, network: str, route: str, stage: int) -> dict[str, object]:
    """``<route key>/<NAME> -> ExperimentConfig`` of the variants of ``stage`` (stage 5: the sensitivity route only)."""
    key = R.route_key(network, route)
    if stage == 5 and f"{network}:{route}" != args.sensitivity_route:
        return {}
    out: dict[str, object] = {}
    for v in VARIANTS:
        if v.stage != stage:
            continue
        ns = argparse.Namespace(
            env="consistent", potential="elevation", horizon=args.horizon, seeds=seed_count(args, v), model_param=[]
        )
        env = {} if v.max_cv == MAX_CV_MAIN else {"max_cv": v.max_cv}
        cfg = R.method_config(network, route, f"{v.model}-{v.policy}", ns, environment=env)
        out[f"{key}/{v.name}"] = dataclasses.replace(cfg, model_params={k: val for k, val in v.params})
    return out


def collect(args: argparse.Namespace, routes: Sequence[tuple[str, str]]) -> list[dict[str, object]]:
    """Rows of the per-seed CSV from the finished seeds under ``--runs``."""
    from studies.reproduce.provenance import head_commit

    rows: list[dict[str, object]] = []
    commit = head_commit()
    for network, route in routes:
        key = R.route_key(network, route)
        for v in VARIANTS:
            if v.stage == 0:
                continue
            d = Path(args.runs) / key / v.name
            for seed, final in sorted(R.seed_finals(d).items()):
                if seed >= seed_count(args, v):
                    continue
                summ = R.seed_summary(d, seed)
                rows.append(
                    {
                        "route": f"{network}:{route}",
                        "run": v.name,
                        "model": v.model,
                        "policy": v.policy,
                        "init": v.init,
                        "refit_first": dict(v.params).get("refit_first", 16) if v.model.startswith("gp") else "",
                        "max_cv": f"{v.max_cv:g}",
                        "horizon": summ.get("rounds", args.horizon),
                        "seed": seed,
                        "final_regret_wh": f"{final:.6f}",
                        "reference": summ.get("optimal_method", "?"),
                        "commit": commit,
                    }
                )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["monaco:A"], help="NETWORK:ROUTE items")
    ap.add_argument("--seeds", type=int, default=DESIGN["main"], help="seeds 0..N-1 of the TS and BUCB pairs")
    ap.add_argument("--ablation-seeds", type=int, default=DESIGN["ablation"], help="seeds of the ablations (stage 2)")
    ap.add_argument("--ucb-seeds", type=int, default=DESIGN["ucb"], help="seeds of the UCB pair (stage 4)")
    ap.add_argument(
        "--sensitivity-seeds", type=int, default=DESIGN["sensitivity"], help="seeds of the max_cv runs (stage 5)"
    )
    ap.add_argument("--sensitivity-route", default="monaco:A", help="the one route of the max_cv runs (stage 5)")
    ap.add_argument("--horizon", type=int, default=500, help="rounds T")
    ap.add_argument("--stages", type=int, nargs="+", default=[1, 3], help="stages to run (1-5, see above)")
    ap.add_argument("--executor", default="process", choices=["serial", "process", "ray"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="results/gp_vs_bi", help="raw results folder (not committed)")
    ap.add_argument("--data", default="docs/results/data/gp_vs_bi_finals.csv", help="per-seed final regrets")
    ap.add_argument(
        "--commands", default="docs/results/data/gp_vs_bi_commands.txt", help="the study's commands, one per line"
    )
    ap.add_argument("--out", default="docs/results/gp_vs_bi.md", help="the report")
    ap.add_argument("--report-only", action="store_true", help="run nothing; rebuild the report from --data")
    ap.add_argument(
        "--collect-only",
        action="store_true",
        help="run nothing; merge the finished seeds under --runs into --data (e.g. after stopping a stage), then "
        "the report",
    )
    args = ap.parse_args()
    bad = [s for s in args.stages if s not in (1, 2, 3, 4, 5)]
    counts = (args.seeds, args.ablation_seeds, args.ucb_seeds, args.sensitivity_seeds, args.horizon)
    if bad or min(counts) < 1 or any(":" not in r for r in args.routes):
        ap.exit(2, "evroute: error: stages must be in 1-5, seed counts and --horizon >= 1, routes NETWORK:ROUTE\n")
    routes = R.parse_routes(args.routes)
    data, out = Path(args.data), Path(args.out)
    if args.report_only and not data.is_file():
        ap.exit(2, f"evroute: error: --data {data}: no such file (the per-seed data the report is built from)\n")
    commands_file = Path(args.commands)
    commands = recorded_commands(commands_file)
    if not (args.report_only or args.collect_only) and R.command_line() not in commands:
        commands.append(R.command_line())  # recorded with the first data it produces (below)
    old = read_csv(data) if data.is_file() else []
    if args.collect_only:
        write_csv(data, merge(old, collect(args, routes)))
    if args.report_only or args.collect_only:
        R.write_markdown(out, build_report(read_csv(data), commands))
        return
    for network, route in routes:
        for stage in sorted(set(args.stages)):
            ns = argparse.Namespace(report_only=False, runs=args.runs, executor=args.executor, workers=args.workers)
            R.run_grid(configs(args, network, route, stage), ns)
            write_csv(data, merge(read_csv(data) if data.is_file() else [], collect(args, routes)))
            commands_file.parent.mkdir(parents=True, exist_ok=True)
            commands_file.write_text("".join(c + "\n" for c in commands))
            R.write_markdown(out, build_report(read_csv(data), commands))


if __name__ == "__main__":
    main()
