"""Command-line interface: ``evroute demo | run | sweep | route | reach | model | plot | info | data | config |
learn | serve``.

Errors a user can cause (bad file, unknown network/edge, unreachable goal, invalid parameter, an unwritable or
full disk) are printed as one line ``evroute: error: ...`` with exit status 2; no traceback.  This module imports
nothing heavy at import time, so ``evroute --help`` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from evroute.cliargs import (
    add_executor_args as _add_executor_args,
)
from evroute.cliargs import (
    add_network_args as _add_network_args,
)
from evroute.cliargs import (
    dem_arg as _dem,
)
from evroute.cliargs import (
    parse_params as _parse_params,
)
from evroute.cliargs import (
    parse_seeds as _parse_seeds,
)
from evroute.cliargs import (
    positive_int as _positive_int,
)
from evroute.cliargs import (
    positive_metres as _positive_metres,
)
from evroute.cliargs import (
    split_negative_values as _split_negative_values,
)
from evroute.cliargs import (
    workers_int as _workers,
)
from evroute.clitext import regret_reference_text, regret_text, sumo_pairing_text
from evroute.errors import EvrouteError, ParameterError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``evroute: error: ...``, status 2) instead of usage plus message."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("evroute").strip()
        self.exit(2, f"evroute: error: {where + ': ' if where else ''}{' '.join(message.split())}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="evroute", description=__doc__.splitlines()[0])
    from evroute import __version__

    parser.add_argument("--version", action="version", version=f"evroute {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="learn routes on a synthetic city with several policies and plot the regret")
    _add_network_args(p, "synthetic:1500:0")
    p.add_argument("--horizon", type=_positive_int, default=150, help="rounds per run (default: %(default)s)")
    p.add_argument("--seeds", default="3", help="number of seeds or a list (default: %(default)s)")
    p.add_argument("--policies", default="ts,bucb,ucb,greedy", help="comma-separated policies (default: %(default)s)")
    p.add_argument("--model", default="bi", help="edge model (default: %(default)s)")
    p.add_argument("--out", default="results/demo", help="results folder (default: %(default)s)")
    p.add_argument("--workers", type=_workers, default=1, help="processes for the seeds (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace earlier demo results in --out")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars (shown only on a terminal)")

    p = sub.add_parser("run", help="run one experiment config (network, route, model, policy, horizon, seeds)")
    _add_network_args(p, None)
    p.add_argument("--config", help="JSON config file (command-line options override its values)")
    p.add_argument("--route", default=None, help="named route A or B (default: A unless --start/--goal)")
    p.add_argument("--start", default=None, help="start edge id, or a point LON,LAT (snapped to the nearest edge)")
    p.add_argument("--goal", default=None, help="goal edge id, or a point LON,LAT (snapped to the nearest edge)")
    p.add_argument(
        "--model",
        default=None,
        help="edge model: bi (default), gp (sparse variational GP, the paper's), gp-exact (exact GP "
        "posterior), kr (kernel regression), or routeset (IGP-UCB with --policy ucb, "
        "GP-TS with --policy ts, over the k prior-shortest routes; parameters via --model-param)",
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
    p.add_argument("--horizon", type=_positive_int, default=None, help="rounds per seed (default 100)")
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
        "--workers", type=_workers, default=1, help="processes (or Ray CPUs) for the seeds (default: %(default)s)"
    )
    _add_executor_args(p, default=None)
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--sumo-routes",
        action="store_true",
        help="also write OUT/routes.rou.xml: each seed's last route as a SUMO route file",
    )

    p = sub.add_parser("sweep", help="run a grid of experiments from a JSON grid file, resumable")
    p.add_argument("grid", help='JSON file {"base": {config fields}, "grid": {field: [values, ...]}}')
    p.add_argument("--out", required=True, help="results folder (one sub-folder per grid point)")
    p.add_argument("--workers", type=_workers, default=None, help="processes or Ray CPUs (default: all cores)")
    _add_executor_args(p, default="process")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    p = sub.add_parser(
        "route",
        help="energy-optimal route (physics prior or a saved model) vs shortest, fastest and risk-aware routes, "
        "with energy +- sd and arrival charge",
    )
    _add_network_args(p)
    p.add_argument("--from", dest="origin", required=True, help="start edge id, or a point LON,LAT")
    p.add_argument("--to", dest="dest", required=True, help="goal edge id, or a point LON,LAT")
    p.add_argument(
        "--max-snap-m",
        type=_positive_metres,
        default=250.0,
        help="a LON,LAT point farther than this from every edge (true geometry) is an error (default: %(default)s m)",
    )
    p.add_argument(
        "--vehicle",
        default=None,
        help="vehicle profile name or JSON file (default: the model's, else chevrolet_bolt_2020; `evroute vehicles`)",
    )
    p.add_argument("--geojson", default=None, help="write the three routes to this GeoJSON file")
    p.add_argument("--html", default=None, help="write an interactive map of the three routes (works offline)")
    p.add_argument(
        "--sumo-routes",
        default=None,
        metavar="FILE.rou.xml",
        help="write the three routes as a SUMO route file (one EV per route, for sumo/sumo-gui)",
    )

    from evroute.driver.commands import add_commands, add_route_args

    add_route_args(p)
    add_commands(sub, _add_network_args)
    from evroute.charging.commands import add_plan_parser

    add_plan_parser(sub, _add_network_args)
    from evroute.service.cli import add_serve_command

    add_serve_command(sub, _add_network_args)

    p = sub.add_parser("plot", help="draw the regret plot and the exploration map of a results folder")
    p.add_argument("results", help="a results folder written by `evroute run`")
    p.add_argument("--into", default=None, help="folder for the figures (default: the results folder)")
    p.add_argument("--prefix", default="", help="prefix of the file names regret.png, exploration.html/.png")
    p.add_argument("--no-html", action="store_true", help="PNG figures only (also for networks without lon/lat)")
    p.add_argument("--no-tiles", action="store_true", help="no OpenStreetMap basemap in the HTML map")

    p = sub.add_parser("info", help="network statistics")
    _add_network_args(p)
    p.add_argument(
        "--steep-grade",
        type=float,
        default=25.0,
        metavar="PERCENT",
        help="list the edges whose grade (rise over run) exceeds PERCENT %% (default: %(default)s)",
    )

    p = sub.add_parser("data", help="manage real road data")
    dsub = p.add_subparsers(dest="data_command", required=True)
    f = dsub.add_parser("fetch", help="download monaco/luxembourg OSM files (pinned upstream commits, SHA-256 checked)")
    f.add_argument("name", help="monaco or luxembourg")
    f.add_argument("--cache-dir", default=None, help="target folder (default: $EVROUTE_DATA or the user cache)")
    c = dsub.add_parser("convert", help="convert an OpenStreetMap file to a SUMO network with netconvert")
    c.add_argument("osm", help="input .osm / .osm.bz2 / .osm.gz file")
    c.add_argument("out", help="output .net.xml (or .net.xml.gz) file")
    c.add_argument("--no-elevation", action="store_true", help="ignore OSM ele tags")
    c.add_argument("--no-join", action="store_true", help="do not join nearby junctions")

    p = sub.add_parser("config", help="the configuration schema")
    csub = p.add_subparsers(dest="config_command", required=True)
    csub.add_parser("schema", help="print the configuration schema (Markdown, generated from the validation layer)")

    from evroute.cli_learn import add_learn_parser

    add_learn_parser(sub)
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from evroute.experiments import ExperimentConfig, run_experiment

    base: dict[str, Any] = ExperimentConfig.from_file(args.config).to_dict() if args.config else {}
    over = {
        "network": args.network,
        "route": args.route,
        "start": args.start,
        "goal": args.goal,
        "model": args.model,
        "policy": args.policy,
        "horizon": args.horizon,
        "env": args.env,
        "env_seed": args.env_seed,
        "regret_reference": args.regret_reference,
        "potential": args.potential,
        "vehicle": args.vehicle,
        "data_dir": args.data_dir,
        "dem": _dem(args),
        "loader": args.loader,
        "arms": args.arms,
    }
    base.update({k: v for k, v in over.items() if v is not None})
    if args.seeds is not None:
        base["seeds"] = _parse_seeds(args.seeds)
    for key, items, flag in (
        ("policy_params", args.policy_param, "--policy-param"),
        ("model_params", args.model_param, "--model-param"),
        ("environment", args.env_param, "--env-param"),
    ):
        if items:
            base[key] = {**base.get(key, {}), **_parse_params(items, flag)}
    if args.start is not None:
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

    seeds = _parse_seeds(args.seeds)
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
            dem=_dem(args),
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


def _cmd_route(args: argparse.Namespace) -> int:
    from evroute.driver.commands import cmd_route

    return cmd_route(args)


def _cmd_reach(args: argparse.Namespace) -> int:
    from evroute.driver.commands import cmd_reach

    return cmd_reach(args)


def _cmd_model(args: argparse.Namespace) -> int:
    from evroute.driver.commands import cmd_model

    return cmd_model(args)


def _cmd_vehicles(args: argparse.Namespace) -> int:
    from evroute.driver.commands import cmd_vehicles

    return cmd_vehicles(args)


def _cmd_serve(args: argparse.Namespace) -> int:
    from evroute.service.cli import cmd_serve

    return cmd_serve(args)


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


def _cmd_info(args: argparse.Namespace) -> int:
    import numpy as np

    from evroute.energy import network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.inclines import grade, steep_edges
    from evroute.network.registry import load_network

    if not (np.isfinite(args.steep_grade) and args.steep_grade > 0):
        raise ParameterError(f"--steep-grade must be a positive percentage; got {args.steep_grade}")
    net = load_network(args.network, data_dir=args.data_dir, dem=_dem(args), loader=args.loader)
    lg = build_line_graph(net)  # the same network object: loaded once
    info = net.summary()
    e = network_energy_wh(lg.network)
    info.update(
        {
            "lcc_edges": lg.n_nodes,
            "lcc_turns": lg.n_arcs,
            "energy_mean_wh": float(e.mean()),
            "energy_std_wh": float(e.std()),
            "negative_energy_edges": int((e < 0).sum()),
        }
    )
    steep = steep_edges(net, args.steep_grade / 100.0)
    info["max_abs_grade"] = float(np.abs(grade(net)).max())
    info[f"edges_steeper_than_{args.steep_grade:g}pct"] = len(steep)
    width = max(map(len, info))
    for k, v in info.items():
        print(f"{k:<{width}}  {v:.4g}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    for r in steep:
        kind = " (bridge/tunnel)" if r["structure"] else ""
        run, rise = f"run {r['length_m']:.1f} m", f"rise {r['rise_m']:+.1f} m"
        print(f"  steep: {r['edge']}  grade {100 * r['grade']:+.1f} %  {run}  {rise}{kind}")
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    if args.data_command == "convert":
        from evroute.network.netconvert import osm_to_sumo
        from evroute.network.sumo import load_sumo_net

        out = osm_to_sumo(args.osm, args.out, elevation=not args.no_elevation, join_junctions=not args.no_join)
        net = load_sumo_net(out)
        print(f"{out}: {net.n_edges} passenger edges, {net.n_turns} turns")
        return 0
    from evroute.network.registry import fetch_dataset

    path = fetch_dataset(args.name, args.cache_dir)
    print(f"{args.name}: {path}")
    return 0


def _cmd_config(args: argparse.Namespace) -> int:
    from evroute.experiments.schema_doc import schema_markdown

    sys.stdout.write(schema_markdown())
    return 0


def _os_error_text(exc: OSError) -> str:
    import errno

    what = exc.strerror or str(exc) or type(exc).__name__
    name = exc.filename if exc.filename is not None else None
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        if name:
            return f"disk full writing {name}: {what} (free some space and run the same command again)"
        from evroute.network.computecache import compute_cache_dir
        from evroute.network.registry import net_cache_dir

        return (
            f"disk full: {what} (the system did not say which file; besides the output files, evroute writes caches "
            f"under {net_cache_dir()} and {compute_cache_dir()}; free some space and run the same command again)"
        )
    return f"{what}: {name}" if name else what


def main(argv: Sequence[str] | None = None) -> int:
    from evroute.charging.commands import cmd_plan
    from evroute.cli_learn import cmd_learn

    parser = build_parser()
    args = parser.parse_args(_split_negative_values(parser, list(sys.argv[1:] if argv is None else argv)))
    handlers = {
        "run": _cmd_run,
        "sweep": _cmd_sweep,
        "demo": _cmd_demo,
        "route": _cmd_route,
        "reach": _cmd_reach,
        "model": _cmd_model,
        "vehicles": _cmd_vehicles,
        "info": _cmd_info,
        "plot": _cmd_plot,
        "data": _cmd_data,
        "config": _cmd_config,
        "learn": cmd_learn,
        "plan": cmd_plan,
        "serve": _cmd_serve,
    }
    import warnings

    from evroute.errors import install_warning_format

    previous = install_warning_format()
    try:
        return handlers[args.command](args)
    except EvrouteError as exc:
        print(f"evroute: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:  # read-only folder, full disk, a file where a folder should be, ...
        print(f"evroute: error: {_os_error_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "evroute: interrupted (completed rounds are saved; run the same command again to resume)", file=sys.stderr
        )
        return 130
    except RecursionError:  # json.loads of input nested ~1,000 levels deep (a vehicle file, a config, a grid)
        print("evroute: error: input nested too deeply to read (JSON with ~1,000 nested levels?)", file=sys.stderr)
        return 2
    except OverflowError as exc:  # a number too large for the quantity it sets (e.g. a count of processes)
        print(f"evroute: error: a number is too large: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = previous  # type: ignore[assignment]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
