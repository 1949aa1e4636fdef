"""Paper Figs. 4-5: final regret against the environment's context lengthscale for GP-BUCB, GP-TS, BI-BUCB, BI-TS
(mean +- 1 s.e.).

The environment's lengthscale (``environment={"lengthscale": l}``, the Matérn-5/2 lengthscale of k_f and k_f' on the
standardised contexts) is varied; the GP model's *initial* lengthscale follows it (the paper initialises the
hyperparameters "according to the prior"; with ``--model-param 'init="oracle-v1"'`` the models are built from the
environment's kernel and scalar prior variance, the oracle ablation the committed tables used), then it is learnt by
Adam as usual.
``--fixed-model-lengthscale L`` instead starts every GP model at L (misspecified prior).
The l = 1 runs are Fig. 2's (the default environment), shared through the same --runs folder.

Paper protocol (the defaults): 5 seeds, T = 500, M = 1000, Algorithm 2 as published:

    EVROUTE_DATA=/work/shared/data .venv/bin/python -m studies.paper.repro_lengthscale --routes monaco:A

Writes docs/results/lengthscale_<network>_<route><tag>.png and docs/results/lengthscale_table<tag>.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evroute.stats import mean_se
from studies.common import report as R

METHODS = ("gp-bucb", "gp-ts", "bi-bucb", "bi-ts")
DEFAULT_LENGTHSCALE = 1.0  # EnvironmentConfig().lengthscale


def run_name(method: str, ls: float, fixed: float | None) -> str:
    if ls == DEFAULT_LENGTHSCALE and (fixed is None or fixed == DEFAULT_LENGTHSCALE or method.startswith("bi")):
        return method.upper()  # the default environment: Fig. 2's run
    suffix = f"-modells{fixed:g}" if fixed is not None and method.startswith("gp") else ""
    return f"{method.upper()}-ls{ls:g}{suffix}"


def extremes_first(values: list[float]) -> list[float]:
    """Run order: the default (shared with Fig. 2), then alternately the smallest and largest remaining values."""
    rest = sorted(set(values))
    out = [v for v in rest if v == DEFAULT_LENGTHSCALE]
    rest = [v for v in rest if v != DEFAULT_LENGTHSCALE]
    while rest:
        out.append(rest.pop(0))
        if rest:
            out.append(rest.pop())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["monaco:A"], help="NETWORK:ROUTE items")
    ap.add_argument("--lengthscales", nargs="+", type=float, default=[0.1, 0.25, 0.5, 1.0, 1.5, 2.0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument(
        "--fixed-model-lengthscale",
        type=float,
        default=None,
        help="initial GP lengthscale for every environment (default: the environment's)",
    )
    R.add_common_args(ap, runs="results/repro")
    args = ap.parse_args()
    args.methods = [R.resolve_method(m, args) for m in args.methods]  # gp-* -> gp-exact-* under --gp-model gp-exact
    cmd = R.command_line()
    args.methods = [R.resolve_method(m, args) for m in args.methods]  # gp-* -> gp-exact-* under --gp-model gp-exact
    if args.fixed_model_lengthscale is not None:
        args.model_param.append(f"lengthscale={args.fixed_model_lengthscale}")

    routes = R.parse_routes(args.routes)
    cfgs = {}
    for network, route in routes:
        for ls in extremes_first(args.lengthscales):  # an interrupted sweep still spans the range
            env = {} if ls == DEFAULT_LENGTHSCALE else {"lengthscale": ls}
            for meth in args.methods:
                cfg = R.method_config(network, route, meth, args, environment=env)
                if ls == DEFAULT_LENGTHSCALE and meth.startswith("gp") and args.fixed_model_lengthscale is None:
                    cfg = R.method_config(network, route, meth, args)
                cfgs[f"{R.route_key(network, route)}/{run_name(meth, ls, args.fixed_model_lengthscale)}"] = cfg
    R.run_grid(cfgs, args)

    docs, runs = Path(args.docs), Path(args.runs)
    head = "| route | method | " + " | ".join(f"l = {ls:g}" for ls in args.lengthscales) + " |"
    rows = [head, "|---|---|" + "---|" * len(args.lengthscales)]
    for network, route in routes:
        key = R.route_key(network, route)
        fig, ax = R.new_axes()
        for meth in args.methods:
            ms, ses, cells = [], [], []
            for ls in args.lengthscales:
                m, se, n = R.regret_row(runs / key / run_name(meth, ls, args.fixed_model_lengthscale), args.seeds)
                ms.append(m)
                ses.append(0.0 if se != se else se)
                cells.append(R.fmt(m, se) + ("" if n in (0, args.seeds) else f" ({n} seeds)"))
            rows.append(f"| {network} {route} | {meth.upper()} | " + " | ".join(cells) + " |")
            ax[0, 0].errorbar(
                args.lengthscales,
                ms,
                yerr=ses,
                marker="o",
                capsize=3,
                label=meth.upper(),
                ls="-" if meth.startswith("gp") else "--",
            )
        ax[0, 0].set_xlabel("environment lengthscale l")
        ax[0, 0].set_ylabel(f"final cumulative regret at T = {args.horizon} (Wh)")
        ax[0, 0].set_title(f"{network} route {route}: {args.seeds} seeds, mean +- 1 s.e.", fontsize=9)
        ax[0, 0].grid(alpha=0.3)
        ax[0, 0].legend(fontsize=8)
        R.save_fig(fig, docs / f"lengthscale_{key}{args.tag}.png")
    common = [head, rows[1]]
    for network, route in routes:  # one reference per (l, seed): the environments differ with l
        key = R.route_key(network, route)
        per_ls = {
            ls: R.common_reference_finals(
                runs / key, [run_name(m, ls, args.fixed_model_lengthscale) for m in args.methods], args.seeds
            )[0]
            for ls in args.lengthscales
        }
        for meth in args.methods:
            cells = [
                R.fmt(*mean_se(per_ls[ls].get(run_name(meth, ls, args.fixed_model_lengthscale), [])))
                for ls in args.lengthscales
            ]
            common.append(f"| {network} {route} | {meth.upper()} | " + " | ".join(cells) + " |")
    paired = []
    for network, route in routes:
        fm = args.fixed_model_lengthscale
        pairs = [
            (run_name(g, ls, fm), run_name(b, ls, fm))
            for ls in args.lengthscales
            for g, b in ((R.resolve_method("gp-bucb", args), "bi-bucb"), (R.resolve_method("gp-ts", args), "bi-ts"))
            if g in args.methods and b in args.methods
        ]
        paired += ["", *R.paired_lines(runs / R.route_key(network, route), pairs, args.seeds, f"{network} {route}")]
    learnt = "" if "refit_first=0" in args.model_param else " (then learnt)"
    init = (
        f"GP initial lengthscale fixed to {args.fixed_model_lengthscale:g}"
        if args.fixed_model_lengthscale is not None
        else f"GP initial lengthscale = the environment's{learnt}"
    )
    R.write_markdown(
        docs / f"lengthscale_table{args.tag}.md",
        [
            f"# Lengthscale study (Figs. 4-5){args.tag}",
            "",
            f"Command: `{cmd}`",
            "",
            *R.settings_lines(args),
            f" {init}.",
            "",
            f"Final cumulative regret at T = {args.horizon} (Wh), mean +- 1 s.e.",
            "",
            *rows,
            "",
            "Against the best known route of each (l, seed) (lowest expected energy among these runs' reference and "
            "driven routes; the rectified reference can be far from it), mean +- 1 s.e.:",
            "",
            *common,
            "",
            "GP minus BI, paired by seed (same environment and reference):",
            *paired,
        ],
    )


if __name__ == "__main__":
    main()
