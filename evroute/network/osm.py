"""Load an OpenStreetMap XML file (``.osm`` / ``.osm.bz2``) as a :class:`RoadNetwork` through osmnx.

* Edges are the directed osmnx edges of the drivable ways after osmnx's topological simplification (which
  keeps junctions and every point where the highway type or the maxspeed changes);
  their ids are ``"u-v-k"``: OSM node id where the edge starts, node id where it ends and the osmnx
  parallel-edge key (``0`` unless two edges join the same pair of junctions), e.g. ``"-107044--107046-0"``.
* Lengths: the slope length ``sqrt(h^2 + dz^2)`` of osmnx's great-circle ``length`` ``h`` (m) between the two
  junctions whose elevations the edge takes (:mod:`evroute.network.elevation`).
* Speeds: the posted limit (``speed_limit_mps``) is the way's resolved speed of :mod:`evroute.network.speeds`
  (``maxspeed``, ``maxspeed:forward`` / ``:backward``, zone values, else the default of its road class in its
  urban/rural context), the same rules the netconvert loader hands netconvert; ``speed_mps`` is the free-flow speed,
  the limit times :func:`~evroute.network.speeds.free_flow_factor`; both in m/s.
* Elevations: node ``ele`` tags (metres) when present; nodes without one take the DEM value when a
  DEM is given, else the ``ele`` of the nearest tagged node; with neither tags nor DEM the network
  is flat and a :class:`UserWarning` says so (``meta["elevation"] == "flat"``).  Junctions that only bridge or
  tunnel edges touch (``bridge``, ``tunnel`` or non-zero ``layer`` tags) and have no ``ele`` tag are interpolated
  between the structure's ends instead of taking the DEM's terrain surface (``meta["structures"]`` lists the
  bridge/tunnel edges).
* Turns: every pair (edge into junction ``v``, edge out of ``v``) except U-turns back to where the
  vehicle came from, which are allowed only at dead ends.
* Geometry: the edge's ``geometry`` polyline, or the straight line between its junctions.
* Junction control: the ``highway`` tag (``traffic_signals``, ``stop``, ``give_way``) of the junctions that keep
  one (such a node stays a junction, as netconvert keeps it), in ``meta["junction_tags"]``, and each edge's road
  class in ``meta["osm_road_class"]`` (:mod:`evroute.network.junctions`).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError, ParameterError
from evroute.network._graph import junction_turns
from evroute.network.dem import DemSpec, read_dem
from evroute.network.elevation import interpolate_structures, is_structure, slope_length
from evroute.network.road_network import RoadNetwork

_NOT_DRIVABLE = {
    "abandoned",
    "bridleway",
    "bus_guideway",
    "construction",
    "corridor",
    "cycleway",
    "elevator",
    "escalator",
    "footway",
    "no",
    "path",
    "pedestrian",
    "planned",
    "platform",
    "proposed",
    "raceway",
    "razed",
    "rest_area",
    "services",
    "steps",
    "track",
    "bus_stop",
    "via_ferrata",
}
_BAD_SERVICE = {
    "drive": {"alley", "driveway", "emergency_access", "parking", "parking_aisle", "private"},
    "drive_service": {"emergency_access", "parking", "parking_aisle", "private"},
}
#: node ``highway`` tags that control a junction (:mod:`evroute.network.junctions`)
_CONTROLS = {"traffic_signals", "stop", "give_way"}
NETWORK_TYPES = ("drive", "drive_service", "all")
_NUM = re.compile(r"^\s*([-+]?\d+(?:\.\d*)?|[-+]?\.\d+)")


@contextmanager
def _extra_osmnx_tags() -> Iterator[None]:
    """Make osmnx keep node ``ele`` and the way tags the drive filter needs, restoring its settings after."""
    import osmnx as ox

    old_n, old_w = list(ox.settings.useful_tags_node), list(ox.settings.useful_tags_way)
    ox.settings.useful_tags_node = list(dict.fromkeys([*old_n, "ele"]))
    ox.settings.useful_tags_way = list(
        dict.fromkeys([*old_w, "motor_vehicle", "motorcar", "access", "service", "bridge", "tunnel", "layer"])
    )
    try:
        yield
    finally:
        ox.settings.useful_tags_node, ox.settings.useful_tags_way = old_n, old_w


def _values(v: Any) -> list[str]:
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def _keep_edge(d: dict[str, Any], network_type: str) -> bool:
    """Whether a raw (unsimplified) osmnx edge belongs to ``network_type`` (mirrors osmnx's Overpass filters)."""
    hwy = set(_values(d.get("highway")))
    if not hwy or "yes" in _values(d.get("area")):
        return False
    if network_type == "all":
        return not hwy <= {"abandoned", "construction", "no", "planned", "platform", "proposed", "raceway", "razed"}
    if hwy & _NOT_DRIVABLE:
        return False
    if network_type == "drive" and "service" in hwy:
        return False
    if {"no"} & (set(_values(d.get("motor_vehicle"))) | set(_values(d.get("motorcar")))):
        return False
    if "private" in _values(d.get("access")):
        return False
    return not (set(_values(d.get("service"))) & _BAD_SERVICE[network_type])


def _parse_ele(v: Any) -> float:
    """Metres from an ``ele`` tag like ``"195.2"`` or ``"195 m"``; NaN when missing or malformed."""
    for s in _values(v):
        m = _NUM.match(s.replace(",", "."))
        if m:
            val = float(m.group(1))
            if np.isfinite(val):
                return val
    return float("nan")


def _fill_from_nearest(
    x: np.ndarray, y: np.ndarray, z: np.ndarray, src_x: np.ndarray, src_y: np.ndarray, src_z: np.ndarray
) -> np.ndarray:
    """Fill NaN entries of ``z`` at lon/lat ``(x, y)`` with the value of the nearest source point."""
    from scipy.spatial import cKDTree

    missing = ~np.isfinite(z)
    if not missing.any():
        return z
    coslat = np.cos(np.radians(np.nanmean(src_y)))
    tree = cKDTree(np.column_stack([src_x * coslat, src_y]))
    _, j = tree.query(np.column_stack([x[missing] * coslat, y[missing]]))
    out = z.copy()
    out[missing] = src_z[j]
    return out


def _set_speed_limits(g: Any, speeds: dict[str, Any]) -> None:
    """Give every raw (one node pair) osmnx edge ``speed_limit_kph``: its way's resolved posted speed in its direction
    (osmnx marks the opposite direction of a two-way way ``reversed``; one-way ways carry one speed)."""
    from evroute.network.speeds import FALLBACK_SPEED_KMH

    for _, _, a in g.edges(data=True):
        ws = speeds.get(str(a.get("osmid")))
        if ws is None:
            a["speed_limit_kph"] = FALLBACK_SPEED_KMH
        else:
            a["speed_limit_kph"] = ws.backward_kmh if a.get("reversed") is True else ws.forward_kmh


def load_osm(
    path: str | os.PathLike[str],
    *,
    dem: DemSpec | None = None,
    network_type: str = "drive",
    name: str | None = None,
) -> RoadNetwork:
    """Read an OpenStreetMap XML file into a :class:`RoadNetwork` (see the module docstring for the rules).

    Args:
        path: ``.osm`` / ``.osm.xml`` / ``.osm.bz2`` file.
        dem: optional DEM (GeoTIFF or SRTM ``.hgt`` path, a list of tiles, or a :class:`Dem`) for nodes without
            ``ele`` tags.
        network_type: ``"drive"`` (public drivable roads, no service roads), ``"drive_service"`` or ``"all"``.
        name: network name (default: the file name without its suffixes).

    Raises:
        DataError: if the file is missing or malformed, holds no road of ``network_type`` or the DEM fails.
        ParameterError: for an unknown ``network_type``.
    """
    import osmnx as ox

    from evroute.network.speeds import free_flow_factor, resolve_way_speeds, road_class

    p = Path(path)
    if network_type not in NETWORK_TYPES:
        raise ParameterError(f"network_type must be one of {', '.join(NETWORK_TYPES)}; got {network_type!r}")
    if not p.is_file():
        raise DataError(f"OSM file not found: {p}")
    from evroute.network.xmlguard import check_xml_file

    check_xml_file(p, "OpenStreetMap file")  # no DTD, no bomb reaches osmnx's parser (evroute.network.xmlguard)
    d = read_dem(dem) if dem is not None else None
    try:
        with _extra_osmnx_tags(), warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            g = ox.graph_from_xml(p, simplify=False, retain_all=True)
    except Exception as exc:  # noqa: BLE001 - ParseError, EOFError, OSError, KeyError on malformed files
        msg = str(exc).splitlines()[0].strip() if str(exc).strip() else type(exc).__name__
        raise DataError(f"malformed OSM file {p}: {type(exc).__name__}: {msg}") from None

    g.remove_edges_from([(u, v, k) for u, v, k, a in g.edges(keys=True, data=True) if not _keep_edge(a, network_type)])
    _set_speed_limits(g, resolve_way_speeds(p))
    g.remove_nodes_from([n for n in list(g.nodes) if g.degree(n) == 0])
    if g.number_of_edges() == 0:
        raise DataError(f"OSM file {p} has no {network_type!r} roads")
    tagged = [(a["x"], a["y"], _parse_ele(a.get("ele"))) for _, a in g.nodes(data=True)]
    tag_xyz = np.array(tagged, dtype=np.float64).reshape(-1, 3)
    tag_xyz = tag_xyz[np.isfinite(tag_xyz[:, 2])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        # a signal, stop or give-way node stays a junction (netconvert keeps it too): evroute.network.junctions
        for _, a in g.nodes(data=True):
            if a.get("highway") in _CONTROLS:
                a["evroute_control"] = a["highway"]
        g = ox.simplify_graph(
            g,
            node_attrs_include=["evroute_control"],
            edge_attrs_differ=["highway", "speed_limit_kph", "bridge", "tunnel", "layer"],
        )

    rows = [(u, v, k, a) for u, v, k, a in g.edges(keys=True, data=True) if float(a.get("length", 0.0)) > 0]
    n_zero = g.number_of_edges() - len(rows)
    if not rows:
        raise DataError(f"OSM file {p} has no {network_type!r} roads of positive length")
    nodes = g.nodes
    node_ids = [str(n) for n in nodes]
    pos = {n: i for i, n in enumerate(nodes)}
    nx_ = np.array([nodes[n]["x"] for n in nodes], dtype=np.float64)
    ny_ = np.array([nodes[n]["y"] for n in nodes], dtype=np.float64)
    z = np.array([_parse_ele(nodes[n].get("ele")) for n in nodes], dtype=np.float64)
    meta: dict[str, Any] = {"source": str(p), "loader": "osm", "crs": "EPSG:4326", "network_type": network_type}
    n_tag = int(np.isfinite(z).sum())
    if n_tag == len(z):
        meta["elevation"] = "ele tags"
    elif d is not None:
        miss = ~np.isfinite(z)
        z[miss] = d.sample(nx_[miss], ny_[miss])
        meta["elevation"] = f"ele tags ({n_tag} junctions) + dem:{d.source}" if n_tag else f"dem:{d.source}"
    elif len(tag_xyz):
        z = _fill_from_nearest(nx_, ny_, z, tag_xyz[:, 0], tag_xyz[:, 1], tag_xyz[:, 2])
        meta["elevation"] = f"ele tags ({n_tag}/{len(z)} junctions; others from the nearest tagged node)"
    else:
        z = np.zeros(len(z))
        meta["elevation"] = "flat"
        meta["warning"] = "no elevation data: the network is flat"
        warnings.warn(
            f"{p.name} has no 'ele' tags and no DEM was given: the network is flat (pass dem=...)",
            UserWarning,
            stacklevel=2,
        )
    if n_zero:
        meta["dropped_zero_length_edges"] = n_zero

    fi = np.array([pos[u] for u, _, _, _ in rows], dtype=np.int64)
    ti = np.array([pos[v] for _, v, _, _ in rows], dtype=np.int64)
    horizontal = np.array([float(a["length"]) for *_, a in rows])
    structure = np.array([is_structure(a) for *_, a in rows], dtype=bool)
    if structure.any():
        meta["structures"] = [f"{u}-{v}-{k}" for (u, v, k, _), st in zip(rows, structure, strict=True) if st]
        untagged = ~np.isfinite(np.array([_parse_ele(nodes[n].get("ele")) for n in nodes], dtype=np.float64))
        z_int, _ = interpolate_structures(fi, ti, z, horizontal, structure)
        n_int = int(np.sum(untagged & (z_int != z)))
        z = np.where(untagged, z_int, z)  # tagged elevations are measurements: kept
        if n_int:
            meta["interpolated_structure_junctions"] = n_int
    geometry = []
    for (_, _, _, a), f, t in zip(rows, fi, ti, strict=True):
        geom = a.get("geometry")
        if geom is not None:
            geometry.append(np.asarray(geom.coords, dtype=np.float64)[:, :2])
        else:
            geometry.append(np.array([[nx_[f], ny_[f]], [nx_[t], ny_[t]]]))
    turns = junction_turns(fi, ti, n_nodes=len(node_ids))
    tags = {node_ids[i]: str(nodes[n].get("highway")) for n, i in pos.items() if nodes[n].get("highway") in _CONTROLS}
    if tags:  # junction control for evroute.network.junctions (nodes osmnx's simplification kept)
        meta["junction_tags"] = tags
    meta["osm_road_class"] = {f"{u}-{v}-{k}": road_class(a.get("highway")) for u, v, k, a in rows}
    limit = np.array([float(np.mean(a["speed_limit_kph"])) for *_, a in rows]) / 3.6
    return RoadNetwork(
        name=name or p.name.split(".")[0],
        edge_ids=np.array([f"{u}-{v}-{k}" for u, v, k, _ in rows], dtype=object),
        from_node=np.array([node_ids[i] for i in fi], dtype=object),
        to_node=np.array([node_ids[i] for i in ti], dtype=object),
        length_m=slope_length(horizontal, z[ti] - z[fi]),
        speed_mps=limit * free_flow_factor(limit, np.array([road_class(a.get("highway")) for *_, a in rows])),
        z_from_m=z[fi],
        z_to_m=z[ti],
        geometry=geometry,
        turns=turns,
        meta=meta,
    ).with_speed_limits(limit)
