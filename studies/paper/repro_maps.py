"""Paper Figs. 6-9: exploration maps per method and route from finished runs (folium HTML + PNG).

    .venv/bin/python -m studies.paper.repro_maps --runs results/repro --docs docs/results/archive/maps

Reads the RUNS/<network>-<route>/<METHOD>/ folders written by repro_fig2.py (``--methods``, default the six Fig. 2
methods), counts how often each edge was driven (all finished seeds, or ``--seed``), and writes
maps_<network>_<route>_<method>.html/.png with the start/goal and the regret-reference route of the first seed
(the route the run's regret is measured against: exact when no negative cycle is reachable, else the rectified
perfect-knowledge route, see ``ExperimentConfig.regret_reference``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from studies.common import report as R


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="results/repro")
    ap.add_argument("--docs", default="docs/results/archive/maps")
    ap.add_argument("--methods", nargs="+", default=[m.upper() for m in R.FIG2_METHODS])
    ap.add_argument("--seed", type=int, default=None, help="only this seed (default: all finished seeds)")
    ap.add_argument("--no-html", action="store_true", help="PNG only")
    args = ap.parse_args()

    from evroute.bandit import regret_reference_route
    from evroute.energy import VehicleProfile, elevation_potential_wh
    from evroute.experiments import ExperimentConfig, build_problem, load_rounds
    from evroute.maps import drive_counts, exploration_map_html, exploration_map_png

    rows = []
    for route_dir in sorted(p for p in Path(args.runs).iterdir() if p.is_dir()):
        for meth in args.methods:
            run = route_dir / meth
            done = sorted(R.seed_finals(run))
            if args.seed is not None:
                done = [s for s in done if s == args.seed]
            if not done:
                continue
            cfg = ExperimentConfig.from_dict(json.loads((run / "config.json").read_text()))
            rounds = load_rounds(run)
            rounds = rounds[rounds["seed"].isin(done)]
            pb = build_problem(cfg, done[0])
            pot = (
                elevation_potential_wh(pb.linegraph.network, VehicleProfile.load(cfg.vehicle))
                if cfg.potential == "elevation"
                else None
            )
            ref = regret_reference_route(pb.env, pb.route.start, pb.route.goal, cfg.regret_reference, pot)
            counts = drive_counts(pb.linegraph, rounds)
            name = f"maps_{route_dir.name}_{meth.lower()}"
            title = f"{cfg.label}, {cfg.network} {cfg.route}: edges driven ({len(done)} seeds x T = {cfg.horizon})"
            kw = dict(start=pb.route.start, goal=pb.route.goal, optimal=ref.edges, title=title)
            if not args.no_html:
                exploration_map_html(pb.linegraph, counts, Path(args.docs) / f"{name}.html", **kw)
            exploration_map_png(pb.linegraph, counts, Path(args.docs) / f"{name}.png", **kw)
            distinct = int((counts > 0).sum())
            rows.append(f"| {route_dir.name} | {meth} | {distinct} | {len(done)} |")
            print(name, "distinct edges driven:", distinct, flush=True)
    R.write_markdown(
        Path(args.docs) / "maps_table.md",
        [
            "# Exploration maps: distinct edges driven",
            "",
            f"Command: `{R.command_line()}`",
            "",
            "| route | method | distinct edges driven (all seeds) | seeds |",
            "|---|---|---|---|",
            *rows,
        ],
    )


if __name__ == "__main__":
    main()
