"""Texts the command line prints about results: regret with or without a standard error, the SUMO net a route file
pairs with.  Kept apart from the command modules of :mod:`evroute.cli` so they stay parsers and handlers."""

from __future__ import annotations

import json
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


def regret_reference_text(summary: dict[str, Any], out: str | Path) -> str:
    """The regret reference a results folder used: the summary's own ``regret_reference`` (or ``reference``) when
    it has one (a string, or ``{"text": ..., "methods": [...]}``), else each seed's ``optimal_method`` (e.g.
    ``johnson``, ``rectified``) as recorded in ``seed_<s>/summary.json``."""
    ref = summary.get("regret_reference") or summary.get("reference")
    if isinstance(ref, dict) and ref.get("text"):
        methods = ref.get("methods") or []
        return f"{ref['text']} ({', '.join(map(str, methods))})" if methods else str(ref["text"])
    if ref:
        return ref if isinstance(ref, str) else json.dumps(ref, sort_keys=True)
    methods_by_seed: dict[str, list[int]] = {}
    for s in summary.get("seeds", []):
        try:
            seed_summary = json.loads((Path(out) / f"seed_{s}" / "summary.json").read_text())
        except (OSError, json.JSONDecodeError):
            continue
        methods_by_seed.setdefault(str(seed_summary.get("optimal_method", "unknown")), []).append(int(s))
    if not methods_by_seed:
        return "unknown"
    if len(methods_by_seed) == 1:
        return f"{next(iter(methods_by_seed))} (all seeds)"
    return "; ".join(f"{m} (seeds {', '.join(map(str, ss))})" for m, ss in sorted(methods_by_seed.items()))
