"""Paper Fig. 3: GP-BUCB (xi = 1, omega = 1) and (xi = 0.5, omega = 1) against GP-UCB with the theoretical beta_t
and 0.5 x beta_t: cumulative regret (mean +- 1 s.e.) and the beta_t each policy used (``beta`` in rounds.csv).

Paper protocol (the defaults): 5 seeds, T = 500, M = 1000, Algorithm 2 as published:

    EVROUTE_DATA=/work/shared/data .venv/bin/python -m studies.paper.repro_fig3 --routes monaco:A

Runs are shared with repro_fig2.py (same --runs folder): GP-UCB and GP-BUCB (xi = 1, omega = 1) are Fig. 2's
runs under the same names, so only GP-UCB (0.5 beta) and GP-BUCB (xi = 0.5) are new.  Writes
docs/results/fig3_<network>_<route><tag>.png and docs/results/fig3_table<tag>.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evroute.stats import mean_se
from studies.common import report as R

#: name -> (method, policy parameters, label in the figure)
VARIANTS = {
    "GP-UCB": ("gp-ucb", {}, "GP-UCB, beta_t (theory)"),
    "GP-UCB-beta0.5": ("gp-ucb", {"beta_scale": 0.5}, "GP-UCB, 0.5 beta_t"),
    "GP-BUCB": ("gp-bucb", {}, "GP-BUCB, xi=1, omega=1"),
    "GP-BUCB-xi0.5": ("gp-bucb", {"xi": 0.5, "omega": 1.0}, "GP-BUCB, xi=0.5, omega=1"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["monaco:A"], help="NETWORK:ROUTE items")
    R.add_common_args(ap, runs="results/repro")
    args = ap.parse_args()
    if args.gp_model != "gp":
        ap.error(
            "--gp-model: Fig. 3 is run with the paper's SVGP only (the exact GP: repro_fig2.py, repro_lengthscale.py)"
        )
    cmd = R.command_line()

    routes = R.parse_routes(args.routes)

    def nm(key: str) -> str:  # run name under --gp-model (GP-UCB-beta0.5 -> GP-EXACT-UCB-beta0.5 for gp-exact)
        meth = VARIANTS[key][0]
        return R.resolve_method(meth, args).upper() + key[len(meth) :]

    variants = {nm(k): (R.resolve_method(m, args), pp, label) for k, (m, pp, label) in VARIANTS.items()}
    cfgs = {
        f"{R.route_key(n, r)}/{name}": R.method_config(n, r, meth, args, policy_params=pp)
        for n, r in routes
        for name, (meth, pp, _) in variants.items()
    }
    R.run_grid(cfgs, args)

    docs, runs = Path(args.docs), Path(args.runs)
    rows = ["| route | variant | final regret (Wh) | beta_1 | beta_T | mean beta_t |", "|---|---|---|---|---|---|"]
    for network, route in routes:
        key = R.route_key(network, route)
        frames = R.finished_frames(runs / key, list(variants), args.seeds)
        labelled = {variants[k][2]: v for k, v in frames.items()}
        for name, (_, _, label) in variants.items():
            m, se, n = R.regret_row(runs / key / name, args.seeds)
            b = frames[name].groupby("round")["beta"].mean() if name in frames else None
            bcells = f"{b.iloc[0]:.2f} | {b.iloc[-1]:.2f} | {b.mean():.2f}" if b is not None else "-- | -- | --"
            part = "" if n in (0, args.seeds) else f" ({n} seeds)"
            rows.append(f"| {network} {route} | {label} | {R.fmt(m, se)}{part} | {bcells} |")
        if labelled:
            fig, ax = R.new_axes(2, width=5.6)
            R.plot_curves(ax[0, 0], labelled)
            ax[0, 0].set_ylabel(
                "cumulative regret (Wh)\n" + R.reference_label([runs / key / n for n in frames]), fontsize=8
            )
            ax[0, 0].legend(fontsize=8)
            R.plot_curves(ax[0, 1], labelled, "beta", per_seed_constant=True)
            ax[0, 1].set_ylabel("beta_t")
            fig.suptitle(f"{network} route {route}: T = {args.horizon}, {args.seeds} seeds", fontsize=10)
            R.save_fig(fig, docs / f"fig3_{key}{args.tag}.png")
    extra = []
    for network, route in routes:
        key = R.route_key(network, route)
        fig2 = [R.resolve_method(m, args).upper() for m in R.FIG2_METHODS]
        names = [*variants, *(m for m in fig2 if m not in variants)]
        finals, _ = R.common_reference_finals(runs / key, names, args.seeds)
        extra += [
            "",
            f"{network} {route} against the best known route per seed (lowest expected energy among all "
            "these runs' reference and driven routes), mean +- 1 s.e.:",
            "",
            "| variant | final regret (Wh) |",
            "|---|---|",
            *[f"| {variants[n][2]} | {R.fmt(*mean_se(finals[n]))} |" for n in variants if n in finals],
            "",
            *R.paired_lines(
                runs / key,
                [
                    (nm(a), nm(b))
                    for a, b in (
                        ("GP-UCB-beta0.5", "GP-UCB"),
                        ("GP-BUCB-xi0.5", "GP-BUCB"),
                        ("GP-BUCB", "GP-UCB"),
                        ("GP-BUCB-xi0.5", "GP-UCB-beta0.5"),
                    )
                ],
                args.seeds,
                f"{network} {route}",
            ),
            "",
            *R.per_seed_lines(runs / key, list(variants), args.seeds, f"{network} {route} (own reference)"),
        ]
    R.write_markdown(
        docs / f"fig3_table{args.tag}.md",
        [
            f"# Fig. 3 reproduction{args.tag}",
            "",
            f"Command: `{cmd}`",
            "",
            *R.settings_lines(args),
            "",
            f"Final cumulative regret at T = {args.horizon} (Wh, mean +- 1 s.e.) and the beta_t used "
            "(GP-BUCB: beta_t = Phi^-1(eta_t)^2).",
            "",
            *rows,
            *extra,
        ],
    )


if __name__ == "__main__":
    main()
