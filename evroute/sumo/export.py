"""Routes back to SUMO: any route evroute computes or learns, as a ``.rou.xml`` a user can run in ``sumo-gui``.

:func:`write_routes_xml` writes one vehicle per named route (edge-id list) driving the EV of the vehicle profile
(vType ``evroute_ev``, see :mod:`evroute.sumo.vehicle`); :func:`export_experiment_routes` writes the route of the
last round of every seed of an experiment results folder (what the learner drives at the end).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from evroute.energy import VehicleProfile
from evroute.errors import DataError, ParameterError
from evroute.io import atomic_write_text
from evroute.sumo.vehicle import ev_vtype_xml

EXPORT_VTYPE = "evroute_ev"


def _vehicle_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name.strip()) or "route"


def routes_xml(
    routes: Mapping[str, Sequence[str]],
    *,
    vehicle: VehicleProfile | None = None,
    model: str = "Energy",
    depart_gap_s: float = 60.0,
    charge_wh: float | None = None,
    arrive_at_rest: bool = False,
) -> str:
    """The text of a SUMO route file: the EV type and one vehicle per ``name -> edge ids`` route.

    Vehicles depart ``depart_gap_s`` apart (in the order given), each from the start of its first edge, with the
    profile's battery (``battery_capacity_wh``) charged to ``charge_wh`` (Wh; default half the capacity).  With
    ``arrive_at_rest`` each vehicle brakes to a stop at the end of its last edge (``arrivalPos="max"``,
    ``arrivalSpeed="0"``), as a driver parking there does, instead of leaving the network at speed.
    """
    if not routes:
        raise ParameterError("no route to export")
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<!-- written by evroute -->",
        "<routes>",
        ev_vtype_xml(vehicle, model=model, vtype_id=EXPORT_VTYPE, charge_wh=charge_wh),
    ]
    used: set[str] = set()
    for k, (name, edges) in enumerate(routes.items()):
        ids = [str(e) for e in edges]
        if not ids or any(not e or " " in e for e in ids):
            raise ParameterError(f"route {name!r} must be a non-empty list of edge ids without spaces")
        vid = _vehicle_id(name)
        while vid in used:
            vid += "_"
        used.add(vid)
        lines.append(
            f'    <vehicle id={quoteattr(vid)} type={quoteattr(EXPORT_VTYPE)} depart="{k * depart_gap_s:g}" '
            f'departPos="0" departSpeed="0"' + (' arrivalPos="-1">' if arrive_at_rest else ">")
        )
        lines.append(f"        <route edges={quoteattr(' '.join(ids))}/>")
        if arrive_at_rest:  # park: stand still 5 s at the end of the last edge, where the vehicle then arrives
            lines.append(f'        <stop edge={quoteattr(ids[-1])} endPos="-1" duration="5" friendlyPos="true"/>')
        lines.append("    </vehicle>")
    lines.append("</routes>")
    return "\n".join(lines) + "\n"


def write_routes_xml(path: str | os.PathLike[str], routes: Mapping[str, Sequence[str]], **kw: Any) -> Path:
    """Write :func:`routes_xml` to ``path`` atomically; returns the path."""
    return atomic_write_text(path, routes_xml(routes, **kw))


def experiment_routes(out_dir: str | os.PathLike[str]) -> dict[str, list[str]]:
    """``{"seed_<s>": the route driven in the last completed round}`` for every seed of a results folder."""
    import pandas as pd

    out = Path(out_dir)
    routes: dict[str, list[str]] = {}
    for d in sorted(out.glob("seed_*"), key=lambda p: int(p.name.split("_")[1])):
        f = d / "rounds.csv"
        if not f.is_file():
            continue
        df = pd.read_csv(f, usecols=["round", "route"])
        if df.empty:
            continue
        routes[d.name] = str(df.sort_values("round")["route"].iloc[-1]).split()
    if not routes:
        raise DataError(f"no completed rounds in {out}")
    return routes


def export_experiment_routes(
    out_dir: str | os.PathLike[str], path: str | os.PathLike[str] | None = None, **kw: object
) -> Path:
    """Write the routes of :func:`experiment_routes` to ``path`` (default ``OUT/routes.rou.xml``)."""
    out = Path(out_dir)
    return write_routes_xml(path or out / "routes.rou.xml", experiment_routes(out), **kw)


__all__ = ["EXPORT_VTYPE", "experiment_routes", "export_experiment_routes", "routes_xml", "write_routes_xml"]
