"""Named start/goal routes (paper routes A and B) and resolution of user-given start/goal edges.

Start and goal may be edge ids or points ``LON,LAT``, snapped to the nearest edge by its true geometry within
a maximum distance (:func:`resolve_endpoint`, default :data:`~evroute.network.snap.DEFAULT_MAX_SNAP_M`).

Routes for real networks are data: ``evroute/resources/routes.json`` maps ``network -> route name -> {start, goal,
why}`` with SUMO edge ids.  Synthetic cities get routes from their geometry: ``A`` from the edge
nearest the south-west corner to the edge nearest the north-east corner, ``B`` from north-west to
south-east (both deterministic, spanning the whole city).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evroute.errors import DataError, ParameterError, UnknownEdgeError
from evroute.linegraph import LineGraph
from evroute.network.polylines import as_polylines
from evroute.network.snap import DEFAULT_MAX_SNAP_M, nearest_edge
from evroute.paths import resource

ROUTES_FILE = resource("routes.json")
_CORNERS = {"A": ((0.0, 0.0), (1.0, 1.0)), "B": ((0.0, 1.0), (1.0, 0.0))}


@dataclass(frozen=True)
class RouteSpec:
    """A resolved route: line-graph indices and edge ids of the start and goal edges."""

    name: str
    start: int
    goal: int
    start_id: str
    goal_id: str
    note: str = ""


def route_table() -> dict[str, dict[str, dict[str, str]]]:
    """The ``evroute/resources/routes.json`` table (network -> route -> {start, goal, why})."""
    try:
        return json.loads(ROUTES_FILE.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read route table {ROUTES_FILE}: {exc}") from None


def network_family(network_name: str) -> str:
    """``"synthetic"`` for ``synthetic[:...]`` and ``synthetic-country:...`` names, else the name itself
    (``monaco``, ``luxembourg``, a path)."""
    return "synthetic" if network_name.split(":")[0] in ("synthetic", "synthetic-country") else network_name


def _edge_index(lg: LineGraph, edge_id: str, what: str) -> int:
    try:
        return lg.network.index_of(edge_id)
    except UnknownEdgeError:
        parent = lg.parent_edge_ids
        if parent is not None and str(edge_id) in set(parent.tolist()):
            raise UnknownEdgeError(
                f"{what} edge {edge_id!r} of {lg.network.name!r} is outside its largest strongly connected component "
                f"({lg.n_nodes} of {len(parent)} edges), where every route can return; choose another edge"
            ) from None
        raise UnknownEdgeError(f"{what} edge {edge_id!r} is not an edge of network {lg.network.name!r}") from None


def parse_point(text: str) -> tuple[float, float] | None:
    """``(lon, lat)`` for a ``"LON,LAT"`` string of two numbers, else ``None``."""
    parts = str(text).split(",")
    if len(parts) != 2:
        return None
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        return None


def resolve_endpoint(lg: LineGraph, text: str, what: str = "start", *, max_snap_m: float = DEFAULT_MAX_SNAP_M) -> int:
    """Line-graph index of an edge id, or of the edge nearest the point ``"LON,LAT"`` (true geometry).

    An existing edge id wins over a point reading of the same text.

    Raises:
        UnknownEdgeError: an edge id that is not in the line graph.
        ParameterError: a malformed point, or one farther than ``max_snap_m`` metres from every edge.
    """
    s = str(text).strip()
    try:
        return lg.network.index_of(s)
    except UnknownEdgeError:
        pass
    point = parse_point(s)
    if point is None:
        if "," in s:
            raise ParameterError(f"{what} {s!r} is neither an edge id nor a point LON,LAT")
        return _edge_index(lg, s, what)
    return nearest_edge(lg.network, *point, max_distance_m=max_snap_m)


def edge_midpoints(geometry: Sequence[np.ndarray]) -> np.ndarray:
    """``(E, 2)`` mean of each edge's polyline points (``geometry``: ``E`` arrays ``(k_i, 2)``, lon/lat degrees).

    Vectorised per point count ``k`` (a network has a few dozen distinct counts): the polylines of ``k`` points are
    summed point by point (``k`` gathers of ``(m, 2)`` points added in order, then divided by ``k``), the same
    sequence of additions and the same division as ``g.mean(axis=0)`` per polyline (NumPy reduces a ``(k, 2)`` array
    over its first axis row after row, without pairwise summation: bit-identical, ``tests/test_setup_vectorised.py``),
    without a Python call per edge and without a ``(m, k, 2)`` temporary (a million edges: ~0.1 s instead of ~0.6 s).
    """
    out = np.zeros((len(geometry), 2))
    if not len(geometry):
        return out
    lines = as_polylines(geometry)
    counts, xy = lines.counts, lines.xy
    starts = lines.offsets[:-1]
    columns = (np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1]))  # 1-D gathers are the fast ones
    for k in np.flatnonzero(np.bincount(counts)).tolist():
        idx = np.flatnonzero(counts == k)
        first = starts[idx]
        if k == 0:  # an empty polyline has no mean (as g.mean(axis=0) of no points)
            out[idx] = np.nan
            continue
        for c, col in enumerate(columns):
            acc = col[first]  # (m,): the points added one after the other, as the mean's reduction over k rows does
            for j in range(1, k):
                acc += col[first + j]
            out[idx, c] = acc / k
    return out


def corner_route(lg: LineGraph, name: str) -> tuple[int, int]:
    """Start/goal indices nearest two opposite corners of the network's bounding box."""
    mid = edge_midpoints(lg.network.geometry)
    lo = np.array([mid[:, 0].min(), mid[:, 1].min()])  # per contiguous column: the same extremes, ~10x faster
    hi = np.array([mid[:, 0].max(), mid[:, 1].max()])
    rel = (mid - lo) / np.where(hi > lo, hi - lo, 1.0)
    (a, b) = _CORNERS[name]
    start = int(np.argmin(((rel - a) ** 2).sum(axis=1)))
    goal = int(np.argmin(((rel - b) ** 2).sum(axis=1)))
    return start, goal


def resolve_route(
    lg: LineGraph,
    network_name: str,
    route: str | None = None,
    start: str | None = None,
    goal: str | None = None,
    *,
    max_snap_m: float = DEFAULT_MAX_SNAP_M,
) -> RouteSpec:
    """Resolve a named route (``A``/``B``) or explicit ``start``/``goal`` (edge ids or points ``LON,LAT``) on ``lg``.

    Raises:
        ParameterError: neither or both of a route name and start/goal are given, or the name is unknown.
        UnknownEdgeError: an edge id is not in the line graph (largest strongly connected component).
        ParameterError: a point farther than ``max_snap_m`` metres from the network.
    """
    if (start is None) != (goal is None):
        raise ParameterError("give both a start and a goal edge, or a route name")
    if start is not None and goal is not None:
        s = resolve_endpoint(lg, start, "start", max_snap_m=max_snap_m)
        g = resolve_endpoint(lg, goal, "goal", max_snap_m=max_snap_m)
        ids = lg.network.edge_ids
        return RouteSpec(f"{start}->{goal}", s, g, str(ids[s]), str(ids[g]))
    name = (route or "A").upper()
    fam = network_family(network_name)
    ids = lg.network.edge_ids
    if fam == "synthetic":
        if name not in _CORNERS:
            raise ParameterError(f"unknown route {route!r} for synthetic networks (use A or B)")
        s, g = corner_route(lg, name)
        return RouteSpec(name, s, g, str(ids[s]), str(ids[g]), "corner-to-corner of the synthetic city")
    table = route_table()
    if fam not in table:
        raise ParameterError(f"no named routes for network {network_name!r}: give --start and --goal edge ids")
    if name not in table[fam]:
        raise ParameterError(f"unknown route {route!r} for {fam} (known: {', '.join(sorted(table[fam]))})")
    entry = table[fam][name]
    s, g = _edge_index(lg, entry["start"], "start"), _edge_index(lg, entry["goal"], "goal")
    return RouteSpec(name, s, g, entry["start"], entry["goal"], entry.get("why", ""))
