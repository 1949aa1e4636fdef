"""Command-line interface: ``evroute demo | run | sweep | route | info | data fetch``.

Errors a user can cause (bad file, unknown network/edge, unreachable goal, invalid parameter) are
printed as one line ``evroute: error: ...`` with exit status 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evroute.errors import EvrouteError, ParameterError


def _parse_seeds(text: str) -> list[int]:
    """``"5"`` -> seeds 0..4; ``"3,7,9"`` -> those seeds; ``"2-4"`` -> 2, 3, 4."""
    try:
        if "," in text:
            return [int(s) for s in text.split(",") if s.strip()]
        if "-" in text:
            a, b = text.split("-")
            return list(range(int(a), int(b) + 1))
        n = int(text)
    except ValueError:
        raise ParameterError(f"--seeds must be a count, a list like 0,3,5 or a range like 0-4, got {text!r}") from None
    if n < 1:
        raise ParameterError(f"--seeds must be >= 1, got {n}")
    return list(range(n))


def _parse_params(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ParameterError(f"parameter {item!r} must look like NAME=VALUE")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out


def _add_network_args(p: argparse.ArgumentParser, default: str | None = "synthetic:2000:0") -> None:
    p.add_argument("--network", default=default,
                   help="synthetic[:EDGES[:SEED]], monaco, luxembourg, or a .net.xml/.osm path (default: %(default)s)")
    p.add_argument("--data-dir", default=None, help="folder with monaco.osm / luxembourg.osm (default: $EVROUTE_DATA)")
    p.add_argument("--dem", default=None, help="elevation raster (GeoTIFF or SRTM .hgt) for networks without elevation")


def _add_executor_args(p: argparse.ArgumentParser, default: str | None) -> None:
    from evroute.experiments.sweep import EXECUTORS

    p.add_argument("--executor", default=default, choices=EXECUTORS,
                   help="where the seeds run: serial, a local process pool or Ray (optional extra 'ray')"
                        + (" (default: %(default)s)" if default else " (default: a process pool when --workers > 1)"))
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray instance)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evroute", description=__doc__.splitlines()[0])
    from evroute import __version__

    parser.add_argument("--version", action="version", version=f"evroute {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="learn routes on a synthetic city with several policies and plot the regret")
    _add_network_args(p, "synthetic:1500:0")
    p.add_argument("--horizon", type=int, default=150, help="rounds per run (default: %(default)s)")
    p.add_argument("--seeds", default="3", help="number of seeds or a list (default: %(default)s)")
    p.add_argument("--policies", default="ts,bucb,ucb,greedy", help="comma-separated policies (default: %(default)s)")
    p.add_argument("--model", default="bi", help="edge model (default: %(default)s)")
    p.add_argument("--out", default="results/demo", help="results folder (default: %(default)s)")
    p.add_argument("--workers", type=int, default=1, help="processes for the seeds (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")

    p = sub.add_parser("run", help="run one experiment config (network, route, model, policy, horizon, seeds)")
    _add_network_args(p, None)
    p.add_argument("--config", help="JSON config file (command-line options override its values)")
    p.add_argument("--route", default=None, help="named route A or B (default: A unless --start/--goal)")
    p.add_argument("--start", default=None, help="start edge id")
    p.add_argument("--goal", default=None, help="goal edge id")
    p.add_argument("--model", default=None,
                   help="edge model: bi (default), gp, kr (kernel regression), or routeset (IGP-UCB with --policy ucb, "
                        "GP-TS with --policy ts, over the k prior-shortest routes; parameters via --model-param)")
    p.add_argument("--policy", default=None, help="ucb, bucb, ts (default) or greedy")
    p.add_argument("--policy-param", action="append", metavar="NAME=VALUE",
                   help="policy parameter, e.g. beta_scale=0.5, xi=0.5 (repeatable)")
    p.add_argument("--model-param", action="append", metavar="NAME=VALUE", help="model parameter (repeatable)")
    p.add_argument("--env", default=None,
                   help="environment: consistent (default: the paper's perturbation on the dissipative energy only, "
                        "exact optimum), paper (the reference paper's), drifting (the paper's, drifting over rounds), "
                        "sumo-replay (a recorded SUMO day of EV traffic; SUMO networks only)")
    p.add_argument("--env-param", action="append", metavar="NAME=VALUE",
                   help="environment parameter, e.g. lengthscale=0.5 (repeatable)")
    p.add_argument("--horizon", type=int, default=None, help="rounds per seed (default 100)")
    p.add_argument("--seeds", default=None, help="number of seeds, a list 0,3,5 or a range 0-4 (default 1)")
    p.add_argument("--env-seed", type=int, default=None, help="fixed environment seed for all runs")
    p.add_argument("--regret-reference", default=None, choices=["auto", "exact", "rectified"],
                   help="route regret is measured against (default auto: exact unless a negative cycle is reachable)")
    p.add_argument("--potential", default=None, choices=["elevation", "none"],
                   help="rectify estimates minus the elevation potential (default) or raw (the paper's Algorithm 2)")
    p.add_argument("--vehicle", default=None, help="vehicle profile name or JSON file (default sumo_ev)")
    p.add_argument("--out", default=None, help="results folder (default: results/<network>-<route>-<model>-<policy>)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes (or Ray CPUs) for the seeds (default: %(default)s)")
    _add_executor_args(p, default=None)
    p.add_argument("--overwrite", action="store_true", help="replace an existing results folder")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--sumo-routes", action="store_true",
                   help="also write OUT/routes.rou.xml: each seed's last route as a SUMO route file")

    p = sub.add_parser("sweep", help="run a grid of experiments from a JSON grid file, resumable")
    p.add_argument("grid", help='JSON file {"base": {config fields}, "grid": {field: [values, ...]}}')
    p.add_argument("--out", required=True, help="results folder (one sub-folder per grid point)")
    p.add_argument("--workers", type=int, default=None, help="processes or Ray CPUs (default: all cores)")
    _add_executor_args(p, default="process")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    p = sub.add_parser("route", help="energy-optimal route with the physics model vs shortest and fastest routes")
    _add_network_args(p)
    p.add_argument("--from", dest="origin", required=True, help="start edge id, or a point LON,LAT")
    p.add_argument("--to", dest="dest", required=True, help="goal edge id, or a point LON,LAT")
    p.add_argument("--vehicle", default="sumo_ev", help="vehicle profile name or JSON file (default: %(default)s)")
    p.add_argument("--geojson", default=None, help="write the three routes to this GeoJSON file")
    p.add_argument("--sumo-routes", default=None, metavar="FILE.rou.xml",
                   help="write the three routes as a SUMO route file (one EV per route, for sumo/sumo-gui)")

    p = sub.add_parser("info", help="network statistics")
    _add_network_args(p)

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
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from evroute.experiments import ExperimentConfig, run_experiment

    base: dict[str, Any] = ExperimentConfig.from_file(args.config).to_dict() if args.config else {}
    over = {
        "network": args.network, "route": args.route, "start": args.start, "goal": args.goal, "model": args.model,
        "policy": args.policy, "horizon": args.horizon, "env": args.env, "env_seed": args.env_seed,
        "regret_reference": args.regret_reference, "potential": args.potential, "vehicle": args.vehicle,
        "data_dir": args.data_dir, "dem": args.dem,
    }
    base.update({k: v for k, v in over.items() if v is not None})
    if args.seeds is not None:
        base["seeds"] = _parse_seeds(args.seeds)
    for key, items in (("policy_params", args.policy_param), ("model_params", args.model_param),
                       ("environment", args.env_param)):
        if items:
            base[key] = {**base.get(key, {}), **_parse_params(items)}
    if args.start is not None:
        base["route"] = None
    cfg = ExperimentConfig.from_dict(base)
    out = args.out or f"results/{cfg.network.replace(':', '_')}-{cfg.route or 'custom'}-{cfg.model}-{cfg.policy}"
    if args.executor is None:
        summary = run_experiment(cfg, out, workers=args.workers, progress=not args.no_progress,
                                 overwrite=args.overwrite)
    else:  # one config is a sweep of one grid point
        from evroute.experiments.runner import prepare_output
        from evroute.experiments.sweep import run_sweep

        path = Path(out)
        if args.overwrite:
            prepare_output(cfg, path, overwrite=True)
        summary = run_sweep({path.name: cfg}, path.parent, executor=args.executor, workers=args.workers,
                            address=args.address, progress=not args.no_progress)[path.name]
    print(f"{summary['label']} on {cfg.network} route {summary['route']}: T={cfg.horizon}, "
          f"{len(cfg.seeds)} seed(s), final cumulative regret {summary['mean_final_regret_wh']:.2f} "
          f"+- {summary['se_final_regret_wh']:.2f} Wh (mean +- s.e.)")
    if args.sumo_routes:
        from evroute.energy import VehicleProfile
        from evroute.sumo.export import export_experiment_routes

        print(f"SUMO routes: {export_experiment_routes(out, vehicle=VehicleProfile.load(cfg.vehicle))}")
    print(f"results: {out}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from evroute.experiments.sweep import load_grid, run_sweep

    configs = load_grid(args.grid)
    if not configs:
        raise ParameterError(f"grid file {args.grid} defines no experiment")
    if args.workers is not None and args.workers < 1:
        raise ParameterError(f"--workers must be >= 1, got {args.workers}")
    out = run_sweep(configs, args.out, executor=args.executor, workers=args.workers, address=args.address,
                    progress=not args.no_progress)
    width = max(len(n) for n in out)
    print(f"{'run':<{width}}  {'method':<10} final cumulative regret (Wh, mean +- s.e.)")
    for name, s in out.items():
        print(f"{name:<{width}}  {s['label']:<10} {s['mean_final_regret_wh']:.2f} +- {s['se_final_regret_wh']:.2f}")
    print(f"results: {args.out}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
    from evroute.viz import plot_regret

    seeds = _parse_seeds(args.seeds)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    cfgs = [ExperimentConfig(network=args.network, route="A", model=args.model, policy=p, horizon=args.horizon,
                             seeds=tuple(seeds), data_dir=args.data_dir, dem=args.dem) for p in policies]
    out = Path(args.out)
    frames, rows = {}, []
    for cfg in cfgs:
        d = out / cfg.label.lower()
        s = run_experiment(cfg, d, workers=args.workers, progress=not args.no_progress)
        frames[cfg.label] = load_rounds(d)
        df = frames[cfg.label]
        half = df[df["round"] > args.horizon // 2]
        rows.append((cfg.label, s["mean_final_regret_wh"], s["se_final_regret_wh"], half["regret_wh"].mean()))
    png = plot_regret(frames, out / "regret.png", title=f"{args.network}, route A, T={args.horizon}")
    print(f"{'method':<12} {'final regret (Wh)':>22} {'mean regret/round, 2nd half (Wh)':>34}")
    for label, m, se, late in sorted(rows, key=lambda r: r[1]):
        print(f"{label:<12} {m:>12.2f} +- {se:<7.2f} {late:>34.3f}")
    print(f"plot: {png}")
    return 0


def _endpoint(net: Any, text: str) -> int:
    """Edge index for an edge id or the nearest edge midpoint to ``LON,LAT``."""
    if "," in text:
        try:
            lon, lat = (float(v) for v in text.split(","))
        except ValueError:
            raise ParameterError(f"point {text!r} must be LON,LAT") from None
        import numpy as np

        mid = np.array([g.mean(axis=0) for g in net.geometry])
        coslat = np.cos(np.radians(lat))
        d2 = ((mid[:, 0] - lon) * coslat) ** 2 + (mid[:, 1] - lat) ** 2
        return int(np.argmin(d2))
    return net.index_of(text)


def _cmd_route(args: argparse.Namespace) -> int:
    from evroute.energy import VehicleProfile, network_energy_wh, travel_time_s
    from evroute.experiments.runner import load_linegraph
    from evroute.oracle import RouteOracle, optimal_route

    if args.sumo_routes and not str(args.sumo_routes).endswith(".xml"):
        raise ParameterError(f"--sumo-routes must name a .rou.xml file, got {args.sumo_routes!r}")
    lg = load_linegraph(args.network, args.data_dir, args.dem)
    net = lg.network
    s, g = _endpoint(net, args.origin), _endpoint(net, args.dest)
    vehicle = VehicleProfile.load(args.vehicle)
    energy = network_energy_wh(net, vehicle)
    time_s = travel_time_s(net.length_m, net.speed_mps)
    oracle = RouteOracle(lg)
    routes = {
        "energy-optimal": optimal_route(lg, energy, s, g).edges,
        "shortest": oracle.shortest_route(net.length_m, s, g).edges,
        "fastest": oracle.shortest_route(time_s, s, g).edges,
    }
    stats = {name: (float(net.length_m[e].sum()), float(time_s[e].sum()), float(energy[e].sum()), len(e))
             for name, e in routes.items()}
    print(f"{net.name}: {net.edge_ids[s]} -> {net.edge_ids[g]} (vehicle {args.vehicle})")
    print(f"{'route':<15} {'length (km)':>12} {'time (min)':>11} {'energy (Wh)':>12} {'edges':>6}")
    for name, (length, t, e, k) in stats.items():
        print(f"{name:<15} {length / 1000:>12.3f} {t / 60:>11.2f} {e:>12.1f} {k:>6}")
    if args.geojson:
        from evroute.io import atomic_write_text
        from evroute.viz import routes_geodataframe

        gdf = routes_geodataframe(lg, routes, length_m={k: v[0] for k, v in stats.items()},
                                  time_s={k: v[1] for k, v in stats.items()},
                                  energy_wh={k: v[2] for k, v in stats.items()},
                                  edge_ids={k: net.edge_ids[e].tolist() for k, e in routes.items()})
        atomic_write_text(args.geojson, gdf.to_json())
        print(f"GeoJSON: {args.geojson}")
    if args.sumo_routes:
        from evroute.sumo.export import write_routes_xml

        write_routes_xml(args.sumo_routes, {k: net.edge_ids[e].tolist() for k, e in routes.items()}, vehicle=vehicle)
        print(f"SUMO routes: {args.sumo_routes}")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from evroute.energy import network_energy_wh
    from evroute.experiments.runner import load_linegraph
    from evroute.network.registry import load_network

    net = load_network(args.network, data_dir=args.data_dir, dem=args.dem)
    lg = load_linegraph(args.network, args.data_dir, args.dem)
    info = net.summary()
    e = network_energy_wh(lg.network)
    info.update({"lcc_edges": lg.n_nodes, "lcc_turns": lg.n_arcs, "energy_mean_wh": float(e.mean()),
                 "energy_std_wh": float(e.std()), "negative_energy_edges": int((e < 0).sum())})
    width = max(map(len, info))
    for k, v in info.items():
        print(f"{k:<{width}}  {v:.4g}" if isinstance(v, float) else f"{k:<{width}}  {v}")
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {"run": _cmd_run, "sweep": _cmd_sweep, "demo": _cmd_demo, "route": _cmd_route, "info": _cmd_info,
                "data": _cmd_data}
    try:
        return handlers[args.command](args)
    except EvrouteError as exc:
        print(f"evroute: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("evroute: interrupted (completed rounds are saved; run the same command again to resume)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
