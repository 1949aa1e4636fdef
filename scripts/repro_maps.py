"""Paper Figs. 6-9: exploration maps per method and route from finished runs (HTML + PNG).

    .venv/bin/python scripts/repro_maps.py --runs results/fig2 --docs docs/results

Reads every OUT/<network>-<route>/<METHOD>/ results folder written by repro_fig2.py, counts how often
each edge was driven (all seeds), and writes maps_<network>_<route>_<method>.html/.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="results/fig2")
    ap.add_argument("--docs", default="docs/results")
    ap.add_argument("--seed", type=int, default=None, help="only this seed (default: all seeds)")
    args = ap.parse_args()

    from evroute.experiments import ExperimentConfig, build_problem, load_rounds
    from evroute.maps import drive_counts, exploration_map_html, exploration_map_png
    from evroute.oracle import optimal_route

    for cfg_path in sorted(Path(args.runs).glob("*/*/config.json")):
        run = cfg_path.parent
        cfg = ExperimentConfig.from_dict(json.loads(cfg_path.read_text()))
        rounds = load_rounds(run)
        seed = args.seed if args.seed is not None else int(rounds["seed"].min())
        if args.seed is not None:
            rounds = rounds[rounds["seed"] == seed]
        pb = build_problem(cfg, seed)
        opt = optimal_route(pb.linegraph, pb.env.true_mean_wh, pb.route.start, pb.route.goal)
        counts = drive_counts(pb.linegraph, rounds)
        name = f"maps_{run.parent.name}_{run.name.lower()}"
        title = f"{cfg.label}, {cfg.network} route {cfg.route}: edges driven over {rounds['seed'].nunique()} seed(s)"
        kw = dict(start=pb.route.start, goal=pb.route.goal, optimal=opt.edges, title=title)
        exploration_map_html(pb.linegraph, counts, Path(args.docs) / f"{name}.html", **kw)
        exploration_map_png(pb.linegraph, counts, Path(args.docs) / f"{name}.png", **kw)
        print(name, "distinct edges driven:", int((counts > 0).sum()))


if __name__ == "__main__":
    main()
