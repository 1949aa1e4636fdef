"""``evroute demo | run | sweep | plot``: simulated experiments (the cli side of :mod:`evroute.experiments`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evroute.cli.args import (
    add_endpoints,
    add_executor_args,
    add_network_args,
    dem_arg,
    parse_params,
    parse_seeds,
    positive_int,
    workers_int,
)
from evroute.cli.text import regret_reference_text, regret_text, sumo_pairing_text
from evroute.errors import ParameterError


def kinds_help() -> str:
    """The model kinds and learners with one line each, from the registries (``--model`` help)."""
    from evroute.experiments.registry import model_descriptions

    return "; ".join(f"{name} ({text})" for name, text in model_descriptions().items())


def register(sub: Any) -> None:
    """Register ``demo``, ``run``, ``sweep`` and ``plot`` on the top-level subparsers ``sub``."""
    p = sub.add_parser("demo", help="learn routes on a synthetic city with several policies and plot the regret")
    p.set_defaults(handler=_cmd_demo)
    add_network_args(p, "synthetic:1500:0")
    p.add_argument("--horizon", type=positive_int, default=150, help="rounds per run (default: %(default)s)")
    p.add_argument("--seeds", default="3", help="number of seeds or a list (default: %(default)s)")
    p.add_argument("--policies", default="ts,bucb,ucb,greedy", help="comma-separated policies (default: %(default)s)")
    p.add_argument("--model", default="bi", metavar="KIND", help=f"model kind (default: %(default)s): {kinds_help()}")
    p.add_argument("--out", default="results/demo", help="results folder (default: %(default)s)")
    p.add_argument("--workers", type=workers_int, default=1, help="processes for the seeds (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier demo results in --out")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars (shown only on a terminal)")

    p = sub.add_parser("run", help="run one experiment config (network, route, model, policy, horizon, seeds)")
    p.set_defaults(handler=_cmd_run)
    add_network_args(p, None)
    p.add_argument("--config", help="JSON config file (command-line options override its values)")
    p.add_argument("--route", default=None, help="named route A or B (default: A unless --from/--to)")
    add_endpoints(p, required=False, what=" (snapped to the nearest edge)")
    p.add_argument(
        "--model",
        default=None,
        metavar="KIND",
        help=f"model kind (default bi; parameters via --model-param): {kinds_help()}",
    )
    p.add_argument("--policy", default=None, help="ucb, bucb, ts (default) or greedy")
    p.add_argument(
        "--policy-param",
        action="append",
        metavar="NAME=VALUE",
        help="policy parameter, e.g. beta_scale=0.5, xi=0.5 (repeatable)",
    )
    p.add_argument("--model-param", action="append", metavar="NAME=VALUE", help="model parameter (repeatable)")
    p.add_argument(
        "--env",
        default=None,
        help="environment: consistent (default: the paper's perturbation on the dissipative energy only, "
        "exact optimum), paper (the reference paper's), drifting (the paper's, drifting over rounds), "
        "sumo-replay (a recorded SUMO day of EV traffic; SUMO networks only), sumo-live (each route "
        "driven in a running SUMO simulation; regret against sumo-replay's means)",
    )
    p.add_argument(
        "--env-param",
        action="append",
        metavar="NAME=VALUE",
        help="environment parameter, e.g. lengthscale=0.5 (repeatable)",
    )
    p.add_argument("--horizon", type=positive_int, default=None, help="rounds per seed (default 100)")
    p.add_argument("--seeds", default=None, help="number of seeds, a list 0,3,5 or a range 0-4 (default 1)")
    p.add_argument("--env-seed", type=int, default=None, help="fixed environment seed for all runs")
    p.add_argument(
        "--regret-reference",
        default=None,
        choices=["auto", "exact", "rectified"],
        help="route regret is measured against (default auto: exact unless a negative cycle is reachable)",
    )
    p.add_argument(
        "--potential",
        default=None,
        choices=["elevation", "none"],
        help="rectify estimates minus the elevation potential (default) or raw (the paper's Algorithm 2)",
    )
    p.add_argument("--vehicle", default=None, help="vehicle profile name or JSON file (default sumo_ev)")
    p.add_argument("--arms", default=None, help="bandit arms: edge (default) or turn (bi and gp-exact)")
    p.add_argument(
        "--out",
        default=None,
        help="results folder (default: results/<network>-<route>-<model>-<policy>, where a network path "
        "becomes its file name and a short hash)",
    )
    p.add_argument(
        "--workers", type=workers_int, default=1, help="processes (or Ray CPUs) for the seeds (default: %(default)s)"
    )
    add_executor_args(p, default=None)
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--sumo-routes",
        action="store_true",
        help="also write OUT/routes.rou.xml: each seed's last route as a SUMO route file",
    )

    p = sub.add_parser("sweep", help="run a grid of experiments from a JSON grid file, resumable")
    p.set_defaults(handler=_cmd_sweep)
    p.add_argument("grid", help='JSON file {"base": {config fields}, "grid": {field: [values, ...]}}')
    p.add_argument("--out", required=True, help="results folder (one sub-folder per grid point)")
    p.add_argument("--workers", type=workers_int, default=None, help="processes or Ray CPUs (default: all cores)")
    add_executor_args(p, default="process")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    p = sub.add_parser("plot", help="draw the regret plot and the exploration map of a results folder")
    p.set_defaults(handler=_cmd_plot)
    p.add_argument("results", help="a results folder written by `evroute run`")
    p.add_argument("--into", default=None, help="folder for the figures (default: the results folder)")
    p.add_argument("--prefix", default="", help="prefix of the file names regret.png, exploration.html/.png")
    p.add_argument("--no-html", action="store_true", help="PNG figures only (also for networks without lon/lat)")
    p.add_argument("--no-tiles", action="store_true", help="no OpenStreetMap basemap in the HTML map")


def _cmd_run(args: argparse.Namespace) -> int:
    from evroute.experiments import ExperimentConfig, run_experiment

    base: dict[str, Any] = ExperimentConfig.from_file(args.config).to_dict() if args.config else {}
    over = {
        "network": args.network,
        "route": args.route,
        "start": args.origin,
        "goal": args.dest,
        "model": args.model,
        "policy": args.policy,
        "horizon": args.horizon,
        "env": args.env,
        "env_seed": args.env_seed,
        "regret_reference": args.regret_reference,
        "potential": args.potential,
        "vehicle": args.vehicle,
        "data_dir": args.data_dir,
        "dem": dem_arg(args),
        "loader": args.loader,
        "arms": args.arms,
    }
    base.update({k: v for k, v in over.items() if v is not None})
    if args.seeds is not None:
        base["seeds"] = parse_seeds(args.seeds)
    for key, items, flag in (
        ("policy_params", args.policy_param, "--policy-param"),
        ("model_params", args.model_param, "--model-param"),
        ("environment", args.env_param, "--env-param"),
    ):
        if items:
            base[key] = {**base.get(key, {}), **parse_params(items, flag)}
    if args.origin is not None:
        base["route"] = None
    cfg = ExperimentConfig.from_dict(base, what="config" if args.config is None else f"config {args.config}:")
    from evroute.experiments.output import default_results_dir

    out = args.out or str(default_results_dir(cfg.network, cfg.route, cfg.model, cfg.policy))
    if args.executor is None:
        summary = run_experiment(
            cfg, out, workers=args.workers, progress=not args.no_progress, overwrite=args.overwrite
        )
    else:  # one config is a sweep of one grid point
        from evroute.experiments.runner import prepare_output
        from evroute.experiments.sweep import run_sweep

        path = Path(out)
        if args.overwrite:
            prepare_output(cfg, path, overwrite=True)
        summary = run_sweep(
            {path.name: cfg},
            path.parent,
            executor=args.executor,
            workers=args.workers,
            address=args.address,
            progress=not args.no_progress,
        )[path.name]
    print(
        f"{summary['label']} on {cfg.network} route {summary['route']}: T={cfg.horizon}, "
        f"{len(cfg.seeds)} seed(s), final cumulative regret "
        f"{regret_text(summary['mean_final_regret_wh'], summary['se_final_regret_wh'], len(cfg.seeds))}"
    )
    print(f"regret reference: {regret_reference_text(summary, out)}")
    if summary.get("potential", cfg.potential) != cfg.potential:
        print(f"potential: {summary['potential']} (the {cfg.env} energies are already reduced; --potential ignored)")
    if args.sumo_routes:
        from evroute.energy import VehicleProfile
        from evroute.experiments.runner import load_linegraph
        from evroute.sumo.export import export_experiment_routes

        rou = export_experiment_routes(out, vehicle=VehicleProfile.load(cfg.vehicle))
        net = load_linegraph(cfg.network, cfg.data_dir, cfg.dem, cfg.loader).network
        print(f"SUMO routes: {rou}\n{sumo_pairing_text(net, rou)}")
    print(f"results: {out}  (figures: evroute plot {out})")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from evroute.experiments.sweep import load_grid, run_sweep

    configs = load_grid(args.grid)
    if not configs:
        raise ParameterError(f"grid file {args.grid} defines no experiment")
    out = run_sweep(
        configs,
        args.out,
        executor=args.executor,
        workers=args.workers,
        address=args.address,
        progress=not args.no_progress,
    )
    width = max(len(n) for n in out)
    print(f"{'run':<{width}}  {'method':<10} final cumulative regret (Wh, mean +- s.e.)")
    for name, s in out.items():
        text = regret_text(s["mean_final_regret_wh"], s["se_final_regret_wh"], len(s.get("seeds", [])), units=False)
        print(f"{name:<{width}}  {s['label']:<10} {text}")
    print(f"results: {args.out}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
    from evroute.viz import plot_regret

    seeds = parse_seeds(args.seeds)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not policies:
        raise ParameterError("--policies names no policy")
    cfgs = [
        ExperimentConfig(
            network=args.network,
            route="A",
            model=args.model,
            policy=p,
            horizon=args.horizon,
            seeds=tuple(seeds),
            data_dir=args.data_dir,
            dem=dem_arg(args),
            loader=args.loader or "netconvert",
        )
        for p in policies
    ]
    from evroute.experiments.runner import validate

    for cfg in cfgs:  # every policy before the first folder is written
        validate(cfg)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {out} is a file")
    frames, rows = {}, []
    for cfg in cfgs:
        d = out / cfg.label.lower()
        s = run_experiment(cfg, d, workers=args.workers, progress=not args.no_progress, overwrite=args.overwrite)
        frames[cfg.label] = load_rounds(d)
        df = frames[cfg.label]
        half = df[df["round"] > args.horizon // 2]
        rows.append((cfg.label, s["mean_final_regret_wh"], s["se_final_regret_wh"], half["regret_wh"].mean()))
    png = plot_regret(frames, out / "regret.png", title=f"{args.network}, route A, T={args.horizon}")
    print(f"{'method':<12} {'final regret (Wh)':>22} {'mean regret/round, 2nd half (Wh)':>34}")
    for label, m, se, late in sorted(rows, key=lambda r: r[1]):
        spread = f"+- {se:<7.2f}" if len(seeds) > 1 else f"{'(one seed)':<10}"
        print(f"{label:<12} {m:>12.2f} {spread} {late:>34.3f}")
    print(f"plot: {png}")
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from evroute.viz import plot_results

    files = plot_results(
        args.results,
        args.into,
        prefix=args.prefix,
        html=not args.no_html,
        tiles=None if args.no_tiles else "openstreetmap",
    )
    print(f"regret: {files['regret']}")
    print(f"exploration map: {', '.join(str(files[k]) for k in ('map_html', 'map_png') if k in files)}")
    print(f"distinct edges driven: {files['distinct_edges']}")
    return 0
