"""Paper Fig. 2: cumulative regret of GP-UCB, GP-BUCB, GP-TS, BI-UCB, BI-BUCB, BI-TS (mean +- 1 s.e.).

Paper protocol (the defaults): routes Luxembourg A/B and Monaco A/B, 5 seeds, T = 500:

    EVROUTE_DATA=/work/shared/data .venv/bin/python scripts/repro_fig2.py

Reduced protocols use --routes/--seeds/--horizon; results are resumable (re-run the same command).
Writes OUT/<network>-<route>/<method>/... (raw runs), docs/results/fig2_<network>_<route>.png and
docs/results/fig2_table.md (final regret table with the exact command).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

METHODS = [("gp", "ucb"), ("gp", "bucb"), ("gp", "ts"), ("bi", "ucb"), ("bi", "bucb"), ("bi", "ts")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["luxembourg:A", "luxembourg:B", "monaco:A", "monaco:B"],
                    help="NETWORK:ROUTE items")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--methods", nargs="+", default=[f"{m}-{p}" for m, p in METHODS])
    ap.add_argument("--model-param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--executor", default="process", choices=["serial", "process", "ray"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", default="results/fig2", help="raw results folder")
    ap.add_argument("--docs", default="docs/results", help="figures and tables folder")
    ap.add_argument("--tag", default="", help="suffix of the figure/table names (e.g. for a reduced protocol)")
    args = ap.parse_args()

    import json

    from evroute.experiments import ExperimentConfig, load_rounds
    from evroute.experiments.sweep import run_sweep
    from evroute.viz import plot_regret

    gp_params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.model_param)}
    docs = Path(args.docs)
    docs.mkdir(parents=True, exist_ok=True)
    cmd = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    rows = []
    for item in args.routes:
        network, route = item.rsplit(":", 1)
        cfgs = {}
        for meth in args.methods:
            model, policy = meth.split("-")
            cfgs[meth.upper()] = ExperimentConfig(network=network, route=route, model=model, policy=policy,
                                                  horizon=args.horizon, seeds=tuple(range(args.seeds)),
                                                  model_params=gp_params if model == "gp" else {})
        root = Path(args.runs) / f"{network.replace(':', '_')}-{route}"
        summaries = run_sweep(cfgs, root, executor=args.executor, workers=args.workers)
        frames = {name: load_rounds(root / name) for name in cfgs}
        tag = f"{network.replace(':', '_')}_{route}{args.tag}"
        plot_regret(frames, docs / f"fig2_{tag}.png", title=f"{network} route {route}, T={args.horizon}, "
                                                          f"{args.seeds} seeds")
        for name, s in summaries.items():
            rows.append((f"{network} {route}", name, s["mean_final_regret_wh"], s["se_final_regret_wh"]))
    lines = [f"# Fig. 2 reproduction{args.tag}", "", f"Command: `{cmd}`", "",
             f"Final cumulative regret at T = {args.horizon} (Wh), mean +- 1 s.e. over {args.seeds} seeds.", "",
             "| route | method | final regret (Wh) | s.e. |", "|---|---|---|---|"]
    lines += [f"| {r} | {m} | {v:.1f} | {se:.1f} |" for r, m, v, se in rows]
    (docs / f"fig2_table{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
