"""Issue 4, item 5: the evroute.bo reuses in routing next to BI-TS and GP-TS, in the Fig. 2 protocol.

Methods (``MODEL-POLICY``): ``kr-ts`` / ``kr-ucb`` (kernel-regression edge model with the index policies),
``routeset-ts`` / ``routeset-ucb`` (GP-TS / IGP-UCB over the 20 prior-shortest routes), ``bi-ts`` and ``gp-ts``.
Paper protocol: T = 500, 5 seeds, here on the Monaco routes A and B (resumable; re-run the same command):

    EVROUTE_DATA=/work/shared/data .venv/bin/python -m studies.paper.repro_routing_reuse

Writes OUT/<network>-<route>/<METHOD>/... (raw runs), docs/results/routing_reuse_<network>_<route>.png (all methods),
routing_reuse_<network>_<route>_edge_models.png (without the route-set baseline, whose spread hides the others) and
docs/results/archive/routing_reuse_table.md: final cumulative regret (mean +- 1 s.e.), per-round cost (median and 90th
percentile over all rounds and seeds of posterior + index + oracle + update time, ms) and, for the route-set
baseline, the regret floor (mean over seeds of the gap between the best candidate and the reference route, Wh/round),
and the paired difference to BI-TS (same seeds = same environments; the reference route cancels in it).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from evroute.stats import format_mean_se, json_float, mean_se

DEFAULT_METHODS = ["bi-ts", "kr-ts", "kr-ucb", "routeset-ts", "routeset-ucb", "gp-ts"]
COST_COLUMNS = ["posterior_ms", "index_ms", "oracle_ms", "update_ms"]


def routeset_floor(cfg, seeds: list[int]) -> float:  # cfg: ExperimentConfig
    """Mean over seeds of the best candidate's gap to the regret reference (Wh per round)."""
    from evroute.experiments.runner import build_problem, make_bandit

    return float(np.mean([make_bandit(cfg, build_problem(cfg, s), s).best_candidate_gap_wh for s in seeds]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["monaco:A", "monaco:B"], help="NETWORK:ROUTE items")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=500)
    ap.add_argument("--methods", nargs="+", default=DEFAULT_METHODS, help="MODEL-POLICY items")
    ap.add_argument("--executor", default="serial", choices=["serial", "process", "ray"])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--runs", default="results/routing_reuse", help="raw results folder")
    ap.add_argument("--docs", default="docs/results", help="figures and tables folder")
    ap.add_argument("--tag", default="", help="suffix of the figure/table names (e.g. for a reduced protocol)")
    args = ap.parse_args()

    from evroute.experiments import ExperimentConfig, load_rounds
    from evroute.experiments.sweep import run_sweep
    from evroute.viz import plot_regret

    docs = Path(args.docs)
    docs.mkdir(parents=True, exist_ok=True)
    cmd = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    seeds = list(range(args.seeds))
    rows = []
    for item in args.routes:
        network, route = item.rsplit(":", 1)
        cfgs = {}
        for meth in args.methods:
            model, policy = meth.split("-")
            cfgs[meth.upper()] = ExperimentConfig(
                network=network,
                route=route,
                model=model,
                policy=policy,
                env="paper",
                horizon=args.horizon,
                seeds=tuple(seeds),
            )
        root = Path(args.runs) / f"{network.replace(':', '_')}-{route}"
        for name, cfg in cfgs.items():  # one method at a time: cheap methods finish first
            summary = run_sweep({name: cfg}, root, executor=args.executor, workers=args.workers)[name]
            df = load_rounds(root / name)
            cost = df[COST_COLUMNS].sum(axis=1)
            floor = routeset_floor(cfg, seeds) if cfg.model == "routeset" else float("nan")
            rows.append(
                {
                    "route": f"{network} {route}",
                    "method": name,
                    "final": summary["final_cumulative_regret_wh"],
                    "mean": summary["mean_final_regret_wh"],
                    "se": json_float(summary["se_final_regret_wh"]),  # None (n = 1) stays None
                    "median_ms": float(cost.median()),
                    "p90_ms": float(cost.quantile(0.9)),
                    "floor": floor,
                    "late": float(df[df["round"] > args.horizon - 100]["regret_wh"].mean()),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        frames = {name: load_rounds(root / name) for name in cfgs}
        tag = f"{network.replace(':', '_')}_{route}{args.tag}"
        title = f"{network} route {route}, T={args.horizon}, {args.seeds} seeds"
        plot_regret(frames, docs / f"routing_reuse_{tag}.png", title=title)
        edge_level = {k: v for k, v in frames.items() if not k.startswith("ROUTESET")}
        plot_regret(edge_level, docs / f"routing_reuse_{tag}_edge_models.png", title=f"{title} (edge models)")
    finals = {(r["route"], r["method"]): np.asarray(r["final"]) for r in rows}
    lines = [
        "# Routing reuse of evroute.bo: final regret and per-round cost",
        "",
        f"Command: `{cmd}`",
        "",
        f"T = {args.horizon}, {args.seeds} seeds (environment, policy and noise seeded by the run seed). "
        "Final cumulative regret (Wh), mean +- 1 s.e. over seeds; per-round cost = posterior + index + "
        "oracle + update time per round (ms), median and 90th percentile over all rounds and seeds; "
        "late regret = mean regret per round over the last 100 rounds; floor = best candidate's gap to the "
        "reference route (route-set baseline only); minus BI-TS = final regret minus BI-TS's on the same seed "
        "(mean +- s.e. of the paired differences).",
        "",
        "| route | method | final regret (Wh) | s.e. | minus BI-TS (Wh) | late regret (Wh/round) "
        "| floor (Wh/round) | median ms/round | p90 ms/round |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        floor = "" if np.isnan(r["floor"]) else f"{r['floor']:.1f}"
        bi = finals.get((r["route"], "BI-TS"))
        diff = ""
        if bi is not None and r["method"] != "BI-TS" and len(bi) == len(r["final"]) > 1:
            diff = format_mean_se(*mean_se(np.asarray(r["final"]) - bi))
        se_cell = "--" if r["se"] is None else f"{r['se']:.1f}"  # one seed: no s.e.
        lines.append(
            f"| {r['route']} | {r['method']} | {r['mean']:.1f} | {se_cell} | {diff} | {r['late']:.2f} "
            f"| {floor} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} |"
        )
    (docs / f"routing_reuse_table{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
