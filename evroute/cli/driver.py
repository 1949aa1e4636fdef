"""Command-line side of the driver features: ``evroute route`` (with ``--model-file``, ``--charge``, ``--reserve``,
``--json``, ``--prior``), ``evroute reach``, ``evroute model prior`` and
``evroute vehicles``, registered by :func:`register` (:mod:`evroute.cli.app`); this module sits at the cli level
(it loads networks through :mod:`evroute.experiments`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from evroute.cli.args import add_endpoints, add_model_file, add_network_args, add_option, positive_metres
from evroute.energy.vehicle import DEFAULT_VEHICLE
from evroute.errors import ParameterError
from evroute.io import dumps_strict

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


def parse_soc(text: str | None, flag: str) -> float | None:
    """``"80%"`` -> 0.8, ``"0.8"`` -> 0.8 (a fraction of the battery capacity); None stays None."""
    if text is None:
        return None
    m = _PERCENT.match(text)
    try:
        value = float(m.group(1)) / 100.0 if m else float(text)
    except ValueError:
        raise ParameterError(f"{flag} must be a percentage like 80% or a fraction like 0.8, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        hint = f"; for {text} percent write {text.strip()}%" if not m and 1.0 < value <= 100.0 else ""
        raise ParameterError(
            f"{flag} must be between 0% and 100% (a percentage like 80% or a fraction like 0.8: a bare number is "
            f"read as a fraction of the battery), got {text!r}{hint}"
        )
    return value


def register(sub: Any) -> None:
    """Register ``route``, ``reach``, ``model`` and ``vehicles`` on the top-level subparsers ``sub``."""
    p = sub.add_parser(
        "route",
        help="energy-optimal route (physics prior or a saved model) vs shortest, fastest and risk-aware routes, "
        "with energy +- sd and arrival charge",
    )
    p.set_defaults(handler=cmd_route)
    add_network_args(p)
    add_endpoints(p)
    p.add_argument(
        "--max-snap-m",
        type=positive_metres,
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

    add_route_args(p)
    _register_reach_model_vehicles(sub)


def add_route_args(p: argparse.ArgumentParser) -> None:
    """The driver options of ``evroute route``."""
    add_model_file(p, "saved model (seed_<s>/model.npz of a run, or `evroute model prior`)")
    p.add_argument("--charge", default=None, help="battery charge at the start, e.g. 80%% (adds the risk-aware route)")
    p.add_argument("--reserve", default=None, help="charge to keep on arrival, e.g. 10%% (default: the min_soc)")
    p.add_argument(
        "--delta",
        type=float,
        default=0.05,
        help="risk-aware route: allowed probability of arriving below the reserve (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the answers as JSON instead of a table")
    add_prior_arg(p)


def add_prior_arg(p: argparse.ArgumentParser) -> None:
    from evroute.energy import PRIORS

    p.add_argument(
        "--prior",
        default=PRIORS[0],
        choices=list(PRIORS),
        help="physics prior: profile (speed profiles with junction stops, default) or eq8 (the paper's Eq. 8); "
        "also gives the travel times",
    )


def _register_reach_model_vehicles(sub: Any) -> None:
    p = sub.add_parser("reach", help="road segments reachable on a given charge, with a given probability")
    p.set_defaults(handler=cmd_reach)
    add_network_args(p)
    add_endpoints(p, to=False)
    p.add_argument(
        "--max-snap-m", type=float, default=250.0, help="snapping limit for LON,LAT (default: %(default)s m)"
    )
    p.add_argument("--charge", required=True, help="battery charge at the start, e.g. 23%%")
    p.add_argument("--reserve", default=None, help="charge to keep on arrival, e.g. 10%% (default: the min_soc)")
    p.add_argument("--delta", type=float, default=0.05, help="allowed probability of arriving below the reserve")
    add_model_file(p, "saved model (default: the physics prior)")
    p.add_argument("--vehicle", default=None, help=f"vehicle profile (default: the model's, else {DEFAULT_VEHICLE})")
    add_prior_arg(p)
    p.add_argument("--geojson", default=None, help="write the reachable segments to this GeoJSON file")
    p.add_argument("--html", default=None, help="write an interactive map of the reachable area (works offline)")
    p = sub.add_parser("model", help="edge models for route answers")
    p.set_defaults(handler=cmd_model)
    msub = p.add_subparsers(dest="model_command", required=True)
    q = msub.add_parser("prior", help="a model from the physics prior alone (no observation)")
    add_network_args(q)
    add_option(
        q,
        "--model",
        dest="kind",
        aliases=("--kind",),
        default="bi",
        choices=["bi", "gp-exact"],
        help="model kind (default: %(default)s)",
    )
    q.add_argument(
        "--vehicle", default=DEFAULT_VEHICLE, help="vehicle profile name or JSON file (default: %(default)s)"
    )
    q.add_argument("--out", required=True, help="model file to write (.npz)")
    add_prior_arg(q)
    q = msub.add_parser("show", help="print a model file's header")
    q.add_argument("path", help="model file (.npz)")
    sub.add_parser("vehicles", help="list the shipped vehicle profiles (evroute/resources/vehicles)").set_defaults(
        handler=cmd_vehicles
    )


def cmd_vehicles(args: argparse.Namespace) -> int:
    """``evroute vehicles``: one line per shipped profile (mass, battery, top speed, what it is)."""
    from evroute.energy import VehicleProfile, vehicle_names

    print(f"{'name':<24} {'mass (kg)':>9} {'battery (kWh)':>13} {'top (km/h)':>10}  description")
    for name in vehicle_names():
        v = VehicleProfile.load(name)
        top = "-" if v.top_speed_kmh is None else f"{v.top_speed_kmh:g}"
        mark = " (default)" if name == DEFAULT_VEHICLE else ""
        print(f"{name:<24} {v.mass_kg:>9g} {v.battery_capacity_wh / 1000:>13g} {top:>10}  {v.description}{mark}")
    return 0


def _dem(args: argparse.Namespace) -> str | list[str] | None:
    return None if not args.dem else (args.dem[0] if len(args.dem) == 1 else list(args.dem))


def load_inputs(args: argparse.Namespace, vehicle_arg: str | None):
    """``(linegraph, belief, vehicle, model header or None)`` for a command with ``--network`` and ``--model-file``."""
    from evroute.energy import VehicleProfile
    from evroute.experiments.runner import load_linegraph
    from evroute.models.store import load_model, prior_model, read_header

    header = read_header(args.model_file) if args.model_file else None  # a bad file fails before the network loads
    lg = load_linegraph(args.network, args.data_dir, _dem(args), args.loader)
    if header is not None:
        model, header = load_model(args.model_file, lg, serve=True)
        trained = VehicleProfile(**header["vehicle"])
        vehicle = trained if vehicle_arg is None else VehicleProfile.load(vehicle_arg)
        from evroute.sumo.vehicle import energy_fields

        if energy_fields(vehicle) != energy_fields(trained):
            raise ParameterError(
                f"model {args.model_file} was learned for vehicle {trained.name!r}; --vehicle {vehicle_arg!r} has "
                "other energy parameters (only the battery fields may differ)"
            )
    else:
        vehicle = VehicleProfile.load(vehicle_arg or DEFAULT_VEHICLE)
        model = prior_model("bi", lg, vehicle, prior=args.prior)
    from evroute.driver.query import make_belief

    return lg, make_belief(lg, model, vehicle, header), vehicle, header


def cmd_route(args: argparse.Namespace) -> int:
    """``evroute route``: energy-optimal (posterior mean), shortest, fastest and, with ``--charge``, risk-aware."""
    from evroute.driver.answers import BatteryState
    from evroute.driver.query import QueryContext, route_query
    from evroute.routes import resolve_endpoint

    if args.sumo_routes and not str(args.sumo_routes).endswith(".xml"):
        raise ParameterError(f"--sumo-routes must name a .rou.xml file, got {args.sumo_routes!r}")
    charge, reserve = parse_soc(args.charge, "--charge"), parse_soc(args.reserve, "--reserve")
    if not 0 < args.delta < 0.5:
        raise ParameterError(f"--delta must be in (0, 0.5), got {args.delta}")
    from evroute.energy import edge_prior

    vehicle_arg = args.vehicle if args.vehicle is not None or args.model_file else DEFAULT_VEHICLE
    lg, belief, vehicle, header = load_inputs(args, vehicle_arg)
    battery = BatteryState.from_vehicle(vehicle, charge, reserve)
    net = lg.network
    s = resolve_endpoint(lg, args.origin, "start", max_snap_m=args.max_snap_m)
    g = resolve_endpoint(lg, args.dest, "goal", max_snap_m=args.max_snap_m)
    # the query the server answers too (evroute.driver.query); times from the prior's speed profiles
    ctx = QueryContext(lg, belief, vehicle, time_s=edge_prior(net, vehicle, args.prior).time_s)
    res = route_query(ctx, s, g, battery, args.delta, risk_aware=charge is not None)
    routes, answers, risk = res.routes, res.answers, res.risk
    source = f"model {args.model_file} ({header['kind']})" if header else f"physics prior {args.prior}"
    if args.json:
        out = {
            "network": net.name,
            "start": str(net.edge_ids[s]),
            "goal": str(net.edge_ids[g]),
            "vehicle": vehicle.name,
            "source": source,
            "battery": {"capacity_wh": battery.capacity_wh, "charge": battery.charge, "reserve": battery.reserve},
            "routes": [a.to_dict(net.edge_ids) for a in answers.values()],
        }
        if risk is not None:
            out["risk_aware"] = {
                "delta": args.delta,
                "feasible": risk.feasible,
                "certified": risk.certified,
                "paths_listed": risk.paths,
            }
        sys.stdout.write(dumps_strict(out, indent=2) + "\n")
    else:
        _print_table(net, s, g, vehicle, source, battery, answers, risk, args.delta)
    _write_outputs(args, lg, routes, answers, s, g, vehicle, battery)
    _warn_infeasible(answers, risk, battery, args.delta)
    return 0


def _warn_infeasible(answers, risk, battery, delta) -> None:
    """One ``evroute: warning:`` line on stderr when no answer keeps the reserve (the exit status stays 0: the
    answer is valid, the trip is not)."""
    if risk is not None and not risk.feasible:
        best = max(a.p_reserve for a in answers.values())
        print(
            f"evroute: warning: infeasible: no route keeps the reserve {100 * battery.reserve:g} % with probability "
            f">= {1 - delta:g} (best {best:.3f}); charge first",
            file=sys.stderr,
        )
    elif risk is None and all(a.arrival_soc < battery.reserve for a in answers.values()):
        print(
            f"evroute: warning: infeasible: every route's expected arrival charge is below the reserve "
            f"{100 * battery.reserve:g} %",
            file=sys.stderr,
        )


def _print_table(net, s, g, vehicle, source, battery, answers, risk, delta) -> None:
    print(f"{net.name}: {net.edge_ids[s]} -> {net.edge_ids[g]} (vehicle {vehicle.name}, {source})")
    print(
        f"battery {battery.capacity_wh / 1000:g} kWh, charge {100 * battery.charge:g} %, "
        f"reserve {100 * battery.reserve:g} %; energy +- sd of one drive (model and noise), arrival 90 % interval"
    )
    print(
        f"{'route':<15} {'length (km)':>11} {'time (min)':>10} {'energy (Wh)':>17} {'edges':>6} "
        f"{'arrival charge (%)':>24} {'P(>=reserve)':>12}"
    )
    for name, a in answers.items():
        energy = f"{a.energy_wh:.1f} +- {a.trip_sd_wh:.1f}"
        soc = f"{100 * a.arrival_soc:.1f} [{100 * a.arrival_soc_lo:.1f}, {100 * a.arrival_soc_hi:.1f}]"
        soc += "*" if a.capped else ""
        print(
            f"{name:<15} {a.length_m / 1000:>11.3f} {a.time_s / 60:>10.2f} {energy:>17} {len(a.edges):>6} "
            f"{soc:>24} {a.p_reserve:>12.4f}"
        )
    if any(a.capped for a in answers.values()):
        print(
            f"* capped at the full battery ({100 * battery.max_charge:g} %): energy recovered into a full battery "
            "is lost (drawn from the arrival charge)"
        )
    if risk is not None:
        what = "certified optimal" if risk.certified else f"best of {risk.paths} routes listed (not certified)"
        if not risk.feasible:
            what = ("no route keeps" if risk.certified else "no listed route keeps") + " the reserve with that "
            what += "probability; shown: the likeliest"
        print(f"risk-aware: least expected energy with P(>= reserve) >= {1 - delta:g}: {what}")


def _write_outputs(args, lg, routes, answers, s, g, vehicle, battery) -> None:
    net = lg.network
    if args.geojson:
        from evroute.io import atomic_write_text
        from evroute.viz import routes_geodataframe

        cols = ("length_m", "time_s", "energy_wh", "energy_sd_wh", "trip_sd_wh", "arrival_soc")
        columns: dict[str, dict[str, Any]] = {c: {k: getattr(a, c) for k, a in answers.items()} for c in cols}
        columns["arrival_soc_lo"] = {k: a.arrival_soc_lo for k, a in answers.items()}
        columns["arrival_soc_hi"] = {k: a.arrival_soc_hi for k, a in answers.items()}
        columns["p_arrival_above_reserve"] = {k: a.p_reserve for k, a in answers.items()}
        columns["edge_ids"] = {k: net.edge_ids[e].tolist() for k, e in routes.items()}
        atomic_write_text(args.geojson, routes_geodataframe(lg, routes, **columns).to_json())
        print(f"GeoJSON: {args.geojson}", file=sys.stderr if args.json else sys.stdout)
    if args.html:
        from evroute.maps import route_map_html

        labels = {
            k: f"{k}: {a.length_m / 1000:.2f} km, {a.time_s / 60:.1f} min, {a.energy_wh:.0f} +- {a.trip_sd_wh:.0f} Wh, "
            f"arrival {100 * a.arrival_soc:.1f} % [{100 * a.arrival_soc_lo:.1f}, {100 * a.arrival_soc_hi:.1f}]"
            + (" (capped: full battery)" if a.capped else "")
            for k, a in answers.items()
        }
        route_map_html(lg, routes, args.html, start=s, goal=g, labels=labels, title=f"{net.name}, {vehicle.name}")
        print(f"map: {args.html}", file=sys.stderr if args.json else sys.stdout)
    if args.sumo_routes:
        from evroute.sumo.export import write_routes_xml

        write_routes_xml(
            args.sumo_routes,
            {k: net.edge_ids[e].tolist() for k, e in routes.items()},
            vehicle=vehicle,
            charge_wh=battery.charge * battery.capacity_wh if args.charge is not None else None,
        )
        from evroute.cli.text import sumo_pairing_text

        text = f"SUMO routes: {args.sumo_routes}\n{sumo_pairing_text(net, args.sumo_routes)}"
        print(text, file=sys.stderr if args.json else sys.stdout)


def cmd_reach(args: argparse.Namespace) -> int:
    """``evroute reach``: the reachable road segments (:mod:`evroute.driver.reach`), GeoJSON and map."""
    import numpy as np

    from evroute.driver.answers import BatteryState
    from evroute.driver.paths import potential_h
    from evroute.driver.reach import reachable
    from evroute.routes import resolve_endpoint

    charge, reserve = parse_soc(args.charge, "--charge"), parse_soc(args.reserve, "--reserve")
    if not 0 < args.delta < 0.5:
        raise ParameterError(f"--delta must be in (0, 0.5), got {args.delta}")
    for flag, value, ext in (("--geojson", args.geojson, ".geojson"), ("--html", args.html, ".html")):
        if value is not None and not str(value).endswith((ext, ".json") if ext == ".geojson" else ext):
            raise ParameterError(f"{flag} must name a {ext} file, got {value!r}")
    lg, belief, vehicle, header = load_inputs(args, args.vehicle)
    battery = BatteryState.from_vehicle(vehicle, charge, reserve)
    s = resolve_endpoint(lg, args.origin, "start", max_snap_m=args.max_snap_m)
    res = reachable(lg, belief, s, battery, args.delta, h0=potential_h(lg.network, vehicle))
    net = lg.network
    idx = np.flatnonzero(res.reachable)
    print(
        f"{net.name}: from {net.edge_ids[s]} with {100 * battery.charge:g} % of {battery.capacity_wh / 1000:g} kWh, "
        f"reserve {100 * battery.reserve:g} %: {len(idx)} of {lg.n_nodes} road segments "
        f"({net.length_m[idx].sum() / 1000:.1f} km) reachable with probability >= {1 - args.delta:g} "
        f"(conservative; {'model ' + header['kind'] if header else 'physics prior ' + args.prior})"
    )
    if len(idx) == 0:
        print("evroute: warning: infeasible: no road segment is reachable keeping the reserve", file=sys.stderr)
    if args.geojson:
        from evroute.io import atomic_write_text

        feats = [
            {
                "type": "Feature",
                "geometry": {"type": "LineString", "coordinates": net.geometry[e].tolist()},
                "properties": {
                    "edge_id": str(net.edge_ids[e]),
                    "quantile_energy_wh": float(res.quantile_wh[e]),
                    "mean_energy_wh": float(res.mean_wh[e]),
                    "budget_wh": res.budget_wh,
                },
            }
            for e in idx
        ]
        atomic_write_text(args.geojson, dumps_strict({"type": "FeatureCollection", "features": feats}))
        print(f"GeoJSON: {args.geojson}")
    if args.html:
        from evroute.maps import reach_map_html

        title = f"{net.name}: reachable on {100 * battery.charge:g} %, P >= {1 - args.delta:g}"
        reach_map_html(lg, res.reachable, res.quantile_wh, args.html, start=s, budget_wh=res.budget_wh, title=title)
        print(f"map: {args.html}")
    return 0


def cmd_model(args: argparse.Namespace) -> int:
    """``evroute model prior`` / ``evroute model show``."""
    from evroute.models.store import read_header

    if args.model_command == "show":
        sys.stdout.write(dumps_strict(read_header(args.path), indent=2, sort_keys=True) + "\n")
        return 0
    from evroute.energy import VehicleProfile
    from evroute.experiments.runner import load_linegraph
    from evroute.models.store import prior_model, save_model

    if not str(args.out).endswith(".npz"):
        raise ParameterError(f"--out must name a .npz file, got {args.out!r}")
    vehicle = VehicleProfile.load(args.vehicle)
    lg = load_linegraph(args.network, args.data_dir, _dem(args), args.loader)
    model = prior_model(args.kind, lg, vehicle, prior=args.prior)
    meta = {"source": "physics prior", "prior": args.prior, "network": args.network}
    from evroute.io import file_lock

    with file_lock(args.out, what=f"model {args.out}"):
        save_model(args.out, model, lg, vehicle=vehicle, meta=meta)
    print(f"{args.kind} prior model of {lg.network.name} ({lg.n_nodes} edges, vehicle {vehicle.name}): {args.out}")
    return 0


__all__ = [
    "add_prior_arg",
    "add_route_args",
    "cmd_model",
    "cmd_reach",
    "cmd_route",
    "cmd_vehicles",
    "load_inputs",
    "parse_soc",
    "register",
]
