"""``evroute plan``: charging stops with a probability of arriving (the cli side of :mod:`evroute.charging`).

Exit status: 0 with a feasible plan, 1 when no plan keeps the reserve with the asked probability (the answer then
names the farthest reachable charger), 2 for bad input (one ``evroute: error:`` line, nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from evroute.cli.args import add_endpoints, add_model_file, add_network_args
from evroute.errors import ParameterError

#: exit status when no plan is feasible
NO_PLAN = 1


def register(sub: Any) -> None:
    """Register ``plan`` on the top-level subparsers ``sub``."""
    p = sub.add_parser(
        "plan", help="charging stops for a trip, with P(arrival charge >= reserve) at every stop and the destination"
    )
    p.set_defaults(handler=cmd_plan)
    add_network_args(p)
    add_endpoints(p)
    p.add_argument("--chargers", required=True, help="charging stations: .csv, .geojson or .osm (docs/charging.md)")
    p.add_argument("--charge", required=True, help="battery charge at the start, e.g. 15%%")
    p.add_argument("--reserve", default=None, help="charge to keep on every arrival, e.g. 10%% (default: min_soc)")
    p.add_argument(
        "--delta", type=float, default=0.05, help="allowed P(some arrival below the reserve) (default: 0.05)"
    )
    p.add_argument("--max-stops", type=int, default=3, help="most charging stops (default: %(default)s)")
    p.add_argument("--step", default="1%", help="grid of charge-to levels (default: %(default)s)")
    p.add_argument(
        "--energy-weight",
        type=float,
        default=0.0,
        metavar="S_PER_KWH",
        help="blend: seconds one kWh is worth (default: 0, least time)",
    )
    p.add_argument("--stop-min", type=float, default=3.0, help="minutes a stop takes besides charging (default: 3)")
    p.add_argument(
        "--trip-rho",
        type=float,
        default=0.0,
        help="trip-level correlation of traversal noise in [0, 1] (default: 0; docs/charging.md)",
    )
    p.add_argument(
        "--min-availability",
        type=float,
        default=0.0,
        help="leave out chargers less likely to be free than this (default: 0)",
    )
    p.add_argument("--max-snap-m", type=float, default=250.0, help="snapping limit of LON,LAT ends (default: 250 m)")
    p.add_argument(
        "--charger-snap-m",
        type=float,
        default=250.0,
        help="chargers farther than this from every road are left out (default: 250 m)",
    )
    add_model_file(p, "saved model (default: the physics prior)")
    p.add_argument(
        "--vehicle",
        default=None,
        help="vehicle profile (default: the model's, else the default vehicle; see `evroute vehicles`)",
    )
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    from evroute.cli.driver import add_prior_arg

    add_prior_arg(p)
    p.add_argument("--geojson", default=None, help="write the legs and stops to this GeoJSON file")
    p.add_argument("--html", default=None, help="write an offline map of the plan with the charge profile")


def _check(args: argparse.Namespace) -> None:
    """Checks that need no file or network (before anything loads)."""
    if not 0 < args.delta < 0.5:
        raise ParameterError(f"--delta must be in (0, 0.5), got {args.delta}")
    if args.max_stops < 0 or args.max_stops > 10:
        raise ParameterError(f"--max-stops must be in 0..10, got {args.max_stops}")
    for flag, v, lo, hi in (
        ("--trip-rho", args.trip_rho, 0.0, 1.0),
        ("--min-availability", args.min_availability, 0.0, 1.0),
    ):
        if not lo <= v <= hi:
            raise ParameterError(f"{flag} must be in [{lo:g}, {hi:g}], got {v}")
    if not (args.energy_weight >= 0 and args.stop_min >= 0 and args.max_snap_m > 0 and args.charger_snap_m > 0):
        raise ParameterError("--energy-weight and --stop-min must be >= 0, --max-snap-m and --charger-snap-m > 0")
    for flag, value, exts in (("--geojson", args.geojson, (".geojson", ".json")), ("--html", args.html, (".html",))):
        if value is not None and not str(value).endswith(exts):
            raise ParameterError(f"{flag} must name a {exts[0]} file, got {value!r}")


def cmd_plan(args: argparse.Namespace) -> int:
    """``evroute plan`` (module doc)."""
    from evroute.charging.answers import farthest_text, plan_dict, plan_geojson, plan_text
    from evroute.charging.chargers import read_chargers, snap_chargers
    from evroute.charging.planner import plan_trip
    from evroute.charging.search import PlanSettings
    from evroute.cli.driver import load_inputs, parse_soc
    from evroute.driver.answers import BatteryState
    from evroute.routes import resolve_endpoint

    _check(args)
    charge, reserve = parse_soc(args.charge, "--charge"), parse_soc(args.reserve, "--reserve")
    step = parse_soc(args.step, "--step")
    if step is None or not 0 < step <= 0.5:
        raise ParameterError(f"--step must be in (0%, 50%], got {args.step!r}")
    chargers = read_chargers(args.chargers)  # a bad charger file fails before the network loads
    lg, belief, vehicle, header = load_inputs(args, args.vehicle)
    battery = BatteryState.from_vehicle(vehicle, charge, reserve)
    n_read = len(chargers)
    chargers = snap_chargers(lg.network, chargers, args.charger_snap_m)
    outside = n_read - len(chargers)
    chargers = chargers.subset(chargers.availability >= args.min_availability)
    s = resolve_endpoint(lg, args.origin, "start", max_snap_m=args.max_snap_m)
    g = resolve_endpoint(lg, args.dest, "goal", max_snap_m=args.max_snap_m)
    settings = PlanSettings(
        capacity_wh=battery.capacity_wh,
        charge=battery.charge,
        reserve=battery.reserve,
        max_soc=vehicle.max_soc,
        delta=args.delta,
        max_stops=args.max_stops,
        step=step,
        energy_weight=args.energy_weight,
        stop_s=60.0 * args.stop_min,
    )
    problem, plan = plan_trip(lg, belief, vehicle, s, g, chargers, settings, trip_rho=args.trip_rho)
    d = plan_dict(plan, problem, belief, lg, chargers)
    net = lg.network
    source = f"model {args.model_file} ({header['kind']})" if header else "physics prior"
    d |= {
        "network": net.name,
        "vehicle": vehicle.name,
        "source": source,
        "chargers_used": len(chargers),
        "chargers_outside": outside,
        "chargers_skipped": chargers.skipped,
        "trip_rho": args.trip_rho,
    }
    far = None if plan.feasible else farthest_text(plan, problem)
    d["farthest_reachable"] = far
    info = sys.stderr if args.json else sys.stdout
    if args.json:
        sys.stdout.write(json.dumps(d, indent=2) + "\n")
    else:
        head = (
            f"{net.name}: {net.edge_ids[s]} -> {net.edge_ids[g]} (vehicle {vehicle.name}, {source}; {len(chargers)} "
            f"chargers from {args.chargers}"
            + (f", {outside} off the network" if outside else "")
            + (f", {chargers.skipped} OSM stations without an output skipped" if chargers.skipped else "")
            + ")"
        )
        print(plan_text(d, head))
        if far:
            print(far)
    if args.geojson:
        from evroute.io import atomic_write_text

        atomic_write_text(args.geojson, json.dumps(plan_geojson(d, lg)))
        print(f"GeoJSON: {args.geojson}", file=info)
    if args.html:
        from evroute.charging.plan_map import plan_map_html

        plan_map_html(d, lg, args.html, title=f"{net.name}, {vehicle.name}: charging plan")
        print(f"map: {args.html}", file=info)
    return 0 if plan.feasible else NO_PLAN


__all__ = ["NO_PLAN", "cmd_plan", "register"]
