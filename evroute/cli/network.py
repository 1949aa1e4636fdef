"""``evroute info | data | config``: network statistics, real road data, the configuration schema."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evroute.cli.args import add_network_args, dem_arg
from evroute.errors import ParameterError


def register(sub: Any) -> None:
    """Register ``info``, ``data`` and ``config`` on the top-level subparsers ``sub``."""
    p = sub.add_parser("info", help="network statistics")
    p.set_defaults(handler=_cmd_info)
    add_network_args(p)
    p.add_argument(
        "--steep-grade",
        type=float,
        default=25.0,
        metavar="PERCENT",
        help="list the edges whose grade (rise over run) exceeds PERCENT %% (default: %(default)s)",
    )

    p = sub.add_parser("data", help="manage real road data")
    p.set_defaults(handler=_cmd_data)
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
    p.set_defaults(handler=_cmd_config)
    csub = p.add_subparsers(dest="config_command", required=True)
    csub.add_parser("schema", help="print the configuration schema (Markdown, generated from the validation layer)")


def _cmd_info(args: argparse.Namespace) -> int:
    import numpy as np

    from evroute.energy import network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.inclines import grade, steep_edges
    from evroute.network.registry import load_network

    if not (np.isfinite(args.steep_grade) and args.steep_grade > 0):
        raise ParameterError(f"--steep-grade must be a positive percentage; got {args.steep_grade}")
    net = load_network(args.network, data_dir=args.data_dir, dem=dem_arg(args), loader=args.loader)
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
