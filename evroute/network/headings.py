"""Directions of a road network's edges where they meet: the end headings and the deflection angle of each turn.

Used by :mod:`evroute.network.junctions` (turn speeds, which turn is straight on) and
:mod:`evroute.network.rightofway` (which approaches are opposite).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from evroute.network.polylines import as_polylines

if TYPE_CHECKING:  # pragma: no cover
    from evroute.network.road_network import RoadNetwork


def lane_headings(edges: list[Any]) -> dict[str, list[float]]:
    """``{edge id: [start x, start y, end x, end y]}``: the unit direction (net x/y, metres) of the first and last
    segment of each ``sumolib`` edge's lane shape, without the stubs to the junction centres that the edge's drawn
    geometry adds (``getShape(includeJunctions=True)``: from the end of the right-hand lane to the centre, they turn
    a straight road through a junction by 20-40 degrees); a degenerate shape gives zeros."""
    out: dict[str, list[float]] = {}
    for e in edges:
        q = np.asarray(e.getShape(), dtype=np.float64).reshape(-1, 2)
        d = np.diff(q, axis=0)
        d = d[np.hypot(d[:, 0], d[:, 1]) > 1e-6]
        if not len(d):
            out[e.getID()] = [0.0, 0.0, 0.0, 0.0]
            continue
        s, t = d[0] / np.hypot(*d[0]), d[-1] / np.hypot(*d[-1])
        out[e.getID()] = [round(float(x), 6) for x in (*s, *t)]
    return out


def end_headings(network: RoadNetwork) -> tuple[np.ndarray, np.ndarray]:
    """``(E, 2)`` unit direction of each edge's first and last segment in local metres (zero where degenerate): a
    SUMO network's lane shapes (``meta["lane_headings"]``, :func:`lane_headings`), else its geometry's."""
    listed = network.meta.get("lane_headings")
    if listed:
        h = np.array([listed.get(e, [0.0] * 4) for e in network.edge_ids.tolist()], dtype=np.float64).reshape(-1, 4)
        return h[:, :2].copy(), h[:, 2:].copy()
    lines = as_polylines(network.geometry)
    scale = np.array([1.0, 1.0])
    if network.meta.get("crs", "EPSG:4326") == "EPSG:4326":
        lat = float(np.mean(np.ascontiguousarray(lines.first()[:, 1])))  # as the mean of the list of first latitudes
        scale = np.array([np.cos(np.radians(lat)), 1.0])
    start = np.zeros((network.n_edges, 2))
    end = np.zeros((network.n_edges, 2))
    # every polyline's segments at once: segment p joins points p and p + 1 (the same differences of the scaled
    # points as np.diff per polyline); those that join two polylines, or are shorter than 1e-12, are left out
    xy = lines.xy * scale
    d = xy[1:] - xy[:-1]
    off = lines.offsets
    inside = np.ones(len(d), dtype=bool)
    joins = off[1:-1]
    inside[joins[(joins >= 1) & (joins <= len(d))] - 1] = False
    seg = np.flatnonzero(inside & (np.hypot(d[:, 0], d[:, 1]) > 1e-12))
    if len(seg):
        edge = np.searchsorted(off, seg, side="right") - 1  # the polyline of each kept segment (non-decreasing)
        new = np.r_[True, edge[1:] != edge[:-1]]
        last = np.r_[edge[1:] != edge[:-1], True]
        start[edge[new]] = d[seg[new]]
        end[edge[last]] = d[seg[last]]
    for h in (start, end):
        n = np.hypot(h[:, 0], h[:, 1])
        h[n > 0] /= n[n > 0, None]
    return start, end


def turn_deflection_rad(network: RoadNetwork) -> np.ndarray:
    """``(C,)`` deflection angle of each legal turn (rad, ``[0, pi]``: 0 straight on, ``pi/2`` a right angle, ``pi``
    a U-turn) between the last segment of ``e1`` and the first of ``e2``; 0 where a geometry is degenerate."""
    start, end = end_headings(network)
    t = network.turns
    cos = np.einsum("ij,ij->i", end[t[:, 0]], start[t[:, 1]])
    known = (np.abs(end[t[:, 0]]).sum(axis=1) > 0) & (np.abs(start[t[:, 1]]).sum(axis=1) > 0)
    return np.where(known, np.arccos(np.clip(cos, -1.0, 1.0)), 0.0)


__all__ = ["end_headings", "lane_headings", "turn_deflection_rad"]
