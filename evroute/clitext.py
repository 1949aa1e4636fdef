"""Texts the command line prints about results: regret with or without a standard error, the SUMO net a route file
pairs with.  Kept apart from :mod:`evroute.cli` so that module stays a parser and its handlers."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def regret_text(mean_wh: float, se_wh: float, n_seeds: int, *, units: bool = True) -> str:
    """``"12.34 +- 0.56 Wh (mean +- s.e.)"``; with one seed there is no standard error: ``"12.34 Wh (one seed)"``."""
    wh = " Wh" if units else ""
    if n_seeds < 2:
        return f"{mean_wh:.2f}{wh} (one seed)"
    return f"{mean_wh:.2f} +- {se_wh:.2f}{wh}" + (" (mean +- s.e.)" if units else "")


def sumo_pairing_text(net: Any, routes_file: str | Path) -> str:
    """Which SUMO net file a route file written for ``net`` (a :class:`~evroute.network.RoadNetwork`) runs with:
    the ``.net.xml`` it was read from (for OpenStreetMap files, the cached netconvert output), or a note that the
    edge ids belong to no SUMO net (synthetic cities, the osmnx loader)."""
    src = net.meta.get("source") if net.meta.get("loader") == "sumo" else None
    if not src:
        return (
            f"SUMO net: none (network {net.name!r} was not read from a SUMO net, so its edge ids are not SUMO ids; "
            "load it with the netconvert loader or from a .net.xml to drive these routes in SUMO)"
        )
    return f"SUMO net: {src}  (run: sumo-gui -n {src} -r {routes_file})"
