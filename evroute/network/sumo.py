"""Load a SUMO network (``.net.xml`` or ``.net.xml.gz``) as a :class:`RoadNetwork`.

Edges are the non-internal SUMO edges that allow the ``passenger`` vehicle class; their ids are the
SUMO edge ids (e.g. ``"-32888#0"``).  Turns are SUMO connections between kept edges, one per
(from-edge, to-edge) pair whatever the lanes.  ``speed_limit_mps`` is SUMO's edge speed (the posted limit);
``speed_mps`` the free-flow driving speed, the limit times
:func:`~evroute.network.speeds.free_flow_factor` of the edge's OSM class (its SUMO type ``highway.CLASS``).
Elevation and length describe the same stretch (:mod:`evroute.network.elevation`): each edge takes the ``z`` of
its start and end junctions (so consecutive edges agree on the height of the junction they share; when the
junctions carry no ``z`` but the lane shapes are 3-D, a junction takes the mean ``z`` of the shape ends touching
it), and its length is the slope length of the edge's shape from junction centre to junction centre (SUMO's lane
length stops short of the junctions: dividing the junction-to-junction rise by it overstated inclines).  Edges
tagged as bridge or tunnel (``<param>`` ``bridge``/``tunnel``/``layer``, imported by netconvert's
``--osm.all-attributes``) are listed in ``meta["structures"]``.  ``meta["turn_controls"]`` holds each turn's
control (link state, traffic-light cycle and green) for :mod:`evroute.network.junctions`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError
from evroute.network.elevation import is_structure, polyline_length_m, slope_length
from evroute.network.road_network import RoadNetwork


def _read_net(path: Path):  # noqa: ANN202 - sumolib.net.Net
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    check_xml_file(path, "SUMO network file")  # no DTD, no bomb reaches sumolib (evroute.network.xmlguard)

    try:
        return sumolib.net.readNet(str(path), withInternal=False, withPrograms=True, withFoes=False, maxcache=0)
    except Exception as exc:  # noqa: BLE001 - lxml/sax/KeyError/ValueError from a malformed file
        msg = str(exc).splitlines()[0].strip() if str(exc).strip() else type(exc).__name__
        raise DataError(f"malformed SUMO network {path}: {type(exc).__name__}: {msg}") from None


def load_sumo_net(path: str | os.PathLike[str], *, name: str | None = None, vclass: str = "passenger") -> RoadNetwork:
    """Read a SUMO ``.net.xml`` / ``.net.xml.gz`` file into a :class:`RoadNetwork`.

    Args:
        path: the SUMO network file.
        name: network name (default: file name without the ``.net.xml`` suffix).
        vclass: keep only edges that allow this SUMO vehicle class.

    Returns:
        The network: SUMO edge ids, lengths in m, speed limits and free-flow speeds in m/s, junction elevations
        in m, lon/lat geometry (``meta["crs"] == "EPSG:4326"``) or, for a net without geo-projection, the net's x/y in
        metres (``meta["crs"] == "local-metres"``).

    Raises:
        DataError: if the file is missing or malformed, declares a DTD or entity, decompresses beyond the limits of
            :mod:`evroute.network.xmlguard`, or holds no edge for ``vclass``.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"SUMO network file not found: {p}")
    net = _read_net(p)
    label = name or p.name.removesuffix(".gz").removesuffix(".xml").removesuffix(".net")
    edges = [e for e in net.getEdges(withInternal=False) if e.getFunction() == "" and e.allows(vclass)]
    if not edges:
        raise DataError(f"SUMO network {p} has no edges that allow {vclass!r}")
    index = {e.getID(): i for i, e in enumerate(edges)}

    turns = sorted(
        {(i, index[to.getID()]) for i, e in enumerate(edges) for to in e.getOutgoing() if to.getID() in index}
    )

    zj_from = np.array([e.getFromNode().getCoord3D()[2] for e in edges], dtype=np.float64)
    zj_to = np.array([e.getToNode().getCoord3D()[2] for e in edges], dtype=np.float64)
    shapes = [np.asarray(e.getShape3D(), dtype=np.float64).reshape(-1, 3) for e in edges]
    zs_from = np.array([s[0, 2] if len(s) else 0.0 for s in shapes])
    zs_to = np.array([s[-1, 2] if len(s) else 0.0 for s in shapes])
    if np.any(zj_from != 0) or np.any(zj_to != 0) or not (np.any(zs_from != 0) or np.any(zs_to != 0)):
        z_from, z_to, z_src = zj_from, zj_to, "junction z"
    else:  # one z per junction: the mean of the lane-shape ends that touch it
        from evroute.network._graph import node_codes

        (fi, ti), uniq = node_codes([e.getFromNode().getID() for e in edges], [e.getToNode().getID() for e in edges])
        idx = np.concatenate([fi, ti])
        zn = np.bincount(idx, weights=np.concatenate([zs_from, zs_to]), minlength=len(uniq)) / np.bincount(
            idx, minlength=len(uniq)
        )
        z_from, z_to, z_src = zn[fi], zn[ti], "lane shape z (mean per junction)"
    flat = not (np.any(z_from != 0) or np.any(z_to != 0))

    # geometry: the edge's shape with its junction end points, projected back to lon/lat in one call
    polys = [np.asarray(e.getShape(includeJunctions=True), dtype=np.float64).reshape(-1, 2) for e in edges]
    polys = [q if len(q) >= 2 else np.vstack([q, q]) if len(q) == 1 else np.zeros((2, 2)) for q in polys]
    sizes = np.array([len(q) for q in polys])
    xy = np.concatenate(polys)
    if net.hasGeoProj():
        lon, lat = net.convertXY2LonLat(xy[:, 0].copy(), xy[:, 1].copy())
        xy = np.column_stack([np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)])
        crs = "EPSG:4326"
    else:
        crs = "local-metres"
    geometry = np.split(xy, np.cumsum(sizes)[:-1])

    # junction centre to junction centre, the stretch the elevations describe (lane length where it degenerates)
    lane_length = np.array([e.getLength() for e in edges], dtype=np.float64)
    horizontal = np.array([polyline_length_m(q) for q in polys])
    horizontal = np.where(horizontal > 1e-2, horizontal, lane_length)
    length = slope_length(horizontal, z_to - z_from)
    structures = [e.getID() for e in edges if is_structure(e.getParams())]
    from evroute.network.speeds import free_flow_factor, road_class

    limit = np.array([e.getSpeed() for e in edges], dtype=np.float64)
    speed = limit * free_flow_factor(limit, np.array([road_class(e.getType()) for e in edges], dtype=object))
    meta: dict[str, Any] = {
        "source": str(p),
        "loader": "sumo",
        "crs": crs,
        "vclass": vclass,
        "elevation": "flat (no z in the net)" if flat else z_src,
        "length": "slope length, junction centre to junction centre",
    }
    if structures:
        meta["structures"] = structures
    from evroute.network.headings import lane_headings
    from evroute.network.junctions import sumo_turn_controls

    meta["turn_controls"] = sumo_turn_controls(net, set(index))
    meta["lane_headings"] = lane_headings(edges)
    if crs != "EPSG:4326":
        meta["warning"] = "the SUMO net has no geo-projection: geometry holds x/y in metres, not lon/lat"
    return RoadNetwork(
        name=label,
        edge_ids=np.array([e.getID() for e in edges], dtype=object),
        from_node=np.array([e.getFromNode().getID() for e in edges], dtype=object),
        to_node=np.array([e.getToNode().getID() for e in edges], dtype=object),
        length_m=length,
        speed_mps=speed,
        z_from_m=z_from,
        z_to_m=z_to,
        geometry=geometry,
        turns=np.array(turns, dtype=np.int64).reshape(-1, 2),
        meta=meta,
    ).with_speed_limits(limit)
