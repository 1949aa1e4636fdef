"""Paper Fig. 2: cumulative regret of GP-UCB, GP-BUCB, GP-TS, BI-UCB, BI-BUCB, BI-TS (mean +- 1 s.e.).

Paper protocol (the defaults): routes Luxembourg A/B and Monaco A/B, 5 seeds, T = 500, M = 1000, Algorithm 2 as
published (``--potential none``):

    EVROUTE_DATA=/work/shared/data .venv/bin/python -m studies.paper.repro_fig2

Reduced protocols use --routes/--seeds/--horizon/--model-param n_inducing=...; results are resumable (re-run the
same command).  ``--elevation-methods`` also runs those methods with the elevation potential (our improvement,
labelled ``+pot``; skipped on flat networks, where it changes nothing).  Writes RUNS/<network>-<route>/<METHOD>/
(raw runs), docs/results/fig2_<network>_<route><tag>.png and docs/results/fig2_table<tag>.md (final regret and
per-round latency tables, with the exact command).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evroute.stats import mean_se
from studies.common import report as R

#: paired comparisons behind the paper's claims (GP vs BI per policy; TS vs UCB/BUCB; BUCB vs UCB)
PAIRS = [
    ("GP-UCB", "BI-UCB"),
    ("GP-BUCB", "BI-BUCB"),
    ("GP-TS", "BI-TS"),
    ("GP-TS", "GP-UCB"),
    ("GP-TS", "GP-BUCB"),
    ("BI-TS", "BI-UCB"),
    ("BI-TS", "BI-BUCB"),
    ("GP-BUCB", "GP-UCB"),
    ("BI-BUCB", "BI-UCB"),
]


def elevation_matters(network: str) -> bool:
    """False on flat networks (zero elevation potential everywhere): the ``+pot`` variant would be identical."""
    import numpy as np

    from evroute.energy import VehicleProfile, elevation_potential_wh
    from evroute.experiments.runner import load_linegraph

    pot = elevation_potential_wh(load_linegraph(network).network, VehicleProfile.load("sumo_ev"))
    return bool(np.any(np.abs(pot) > 1e-9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--routes",
        nargs="+",
        default=["luxembourg:A", "luxembourg:B", "monaco:A", "monaco:B"],
        help="NETWORK:ROUTE items",
    )
    ap.add_argument("--methods", nargs="+", default=list(R.FIG2_METHODS))
    ap.add_argument(
        "--elevation-methods",
        nargs="*",
        default=[],
        help="methods also run with potential='elevation' (named METHOD+pot)",
    )
    R.add_common_args(ap, runs="results/repro")
    args = ap.parse_args()
    cmd = R.command_line()

    routes = R.parse_routes(args.routes)
    names: dict[str, list[str]] = {}
    cfgs = {}
    for network, route in routes:
        key = R.route_key(network, route)
        names[key] = []
        for meth in (R.resolve_method(m, args) for m in args.methods):
            names[key].append(meth.upper())
            cfgs[f"{key}/{meth.upper()}"] = R.method_config(network, route, meth, args)
        if args.elevation_methods and args.potential == "none" and elevation_matters(network):
            for meth in (R.resolve_method(m, args) for m in args.elevation_methods):
                names[key].append(meth.upper() + R.ELEV)
                cfgs[f"{key}/{meth.upper()}{R.ELEV}"] = R.method_config(
                    network, route, meth, args, potential="elevation"
                )
    R.run_grid(cfgs, args)

    pairs = [(R.resolve_method(a, args).upper(), R.resolve_method(b, args).upper()) for a, b in PAIRS]
    docs = Path(args.docs)
    runs = Path(args.runs)
    all_names = list(dict.fromkeys(n for v in names.values() for n in v))
    head = "| method | " + " | ".join(f"{n.split(':')[0]} {r}" for n, r in routes) + " |"
    reg = [head, "|---|" + "---|" * len(routes)]
    tim = [head, "|---|" + "---|" * len(routes)]
    notes = []
    for name in all_names:
        cells, tcells = [], []
        for network, route in routes:
            d = runs / R.route_key(network, route) / name
            m, se, n = R.regret_row(d, args.seeds)
            cells.append(R.fmt(m, se) + ("" if n in (0, args.seeds) else f" ({n} seeds)"))
            t = R.timing_row(d) if n else {}
            tcells.append(
                f"{t['total_ms']:.0f} (upd {t['update_ms']:.0f}, post {t['posterior_ms']:.0f}, "
                f"orc {t['oracle_ms']:.0f})"
                if t
                else "--"
            )
        reg.append(f"| {name} | " + " | ".join(cells) + " |")
        tim.append(f"| {name} | " + " | ".join(tcells) + " |")
    for network, route in routes:
        key = R.route_key(network, route)
        frames = R.finished_frames(runs / key, names[key], args.seeds)
        if frames:
            fig, ax = R.new_axes()
            R.plot_curves(ax[0, 0], frames)
            ax[0, 0].set_ylabel(
                "cumulative regret (Wh)\n" + R.reference_label([runs / key / n for n in frames]), fontsize=8
            )
            ax[0, 0].set_title(
                f"{network} route {route}: T = {args.horizon}, {args.seeds} seeds (mean +- 1 s.e.)", fontsize=9
            )
            ax[0, 0].legend(fontsize=8)
            R.save_fig(fig, docs / f"fig2_{key}{args.tag}.png")
        meth = sorted({m for n in names[key] for m in R.optimal_methods(runs / key / n)})
        notes.append(f"* {network} {route}: regret reference {', '.join(meth) or '--'}")
    common = [
        "| method | " + " | ".join(f"{n.split(':')[0]} {r}" for n, r in routes) + " |",
        "|---|" + "---|" * len(routes),
    ]
    cref = {}
    for network, route in routes:
        key = R.route_key(network, route)
        cref[key], refs = R.common_reference_finals(runs / key, names[key], args.seeds)
        own = {s: R.seed_summary(runs / key / names[key][0], s).get("optimal_wh") for s in refs}
        notes.append(
            f"* {network} {route}: per-seed best known route energy (Wh) "
            + ", ".join(
                f"seed {s}: {v:.1f} (own reference {own[s] if own[s] is None else round(own[s], 1)})"
                for s, v in sorted(refs.items())
            )
        )
    for name in all_names:
        cells = []
        for network, route in routes:
            v = cref[R.route_key(network, route)].get(name, [])
            cells.append(R.fmt(*mean_se(v)) + ("" if len(v) in (0, args.seeds) else f" ({len(v)} seeds)"))
        common.append(f"| {name} | " + " | ".join(cells) + " |")
    R.write_markdown(
        docs / f"fig2_table{args.tag}.md",
        [
            f"# Fig. 2 reproduction{args.tag}",
            "",
            f"Command: `{cmd}`",
            "",
            *R.settings_lines(args),
            "",
            f"Final cumulative regret at T = {args.horizon} (Wh), mean +- 1 s.e. over seeds "
            f"(`{R.ELEV}`: with the elevation potential, not in the paper).",
            "",
            *reg,
            "",
            "Median per-round latency in ms (total = model update + posterior + index + oracle; all seeds, all "
            "rounds):",
            "",
            *tim,
            "",
            *notes,
            "",
            "Final cumulative regret against the best known route per seed (the lowest expected energy among all runs' "
            "reference routes and driven routes of that environment; a common reference for runs whose own rectified "
            "references differ, e.g. with and without the potential, and a check on how far the rectified reference is "
            "from the best route):",
            "",
            *common,
            "",
            "Paired differences (same environment and reference per seed):",
            "",
            *[
                line
                for network, route in routes
                for line in [
                    "",
                    *R.paired_lines(runs / R.route_key(network, route), pairs, args.seeds, f"{network} {route}"),
                ]
            ],
            "",
            "Final cumulative regret of every seed (Wh, against each run's own regret reference, see the notes above):",
            "",
            *[
                line
                for network, route in routes
                for line in [
                    "",
                    *R.per_seed_lines(
                        runs / R.route_key(network, route),
                        names[R.route_key(network, route)],
                        args.seeds,
                        f"{network} {route}",
                    ),
                ]
            ],
        ],
    )


if __name__ == "__main__":
    main()
