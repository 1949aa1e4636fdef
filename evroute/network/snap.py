"""Snap lon/lat points to the nearest road edge by its true polyline geometry, within a maximum distance.

Distances are measured in metres in an azimuthal equidistant projection centred on the network (exact for
distances from the centre, within a fraction of a percent across a city), with a shapely ``STRtree`` over the
edge polylines.  A point farther than ``max_distance_m`` from every edge is an error, not a silent snap.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from evroute.errors import ParameterError
from evroute.network.polylines import as_polylines

if TYPE_CHECKING:  # pragma: no cover
    from evroute.network.road_network import RoadNetwork

#: Default maximum snapping distance (m) for points given as ``LON,LAT``.
DEFAULT_MAX_SNAP_M = 250.0
_TREES: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def _index(network: RoadNetwork) -> tuple[Any, Any]:
    """``(STRtree of projected edge LineStrings, lon/lat -> metres transformer)``, cached per network."""
    hit = _TREES.get(network)
    if hit is not None:
        return hit
    from pyproj import Transformer
    from shapely import STRtree, linestrings

    crs = network.meta.get("crs", "EPSG:4326")
    if crs != "EPSG:4326":
        raise ParameterError(f"network {network.name!r} has no geographic coordinates ({crs}): give edge ids")
    packed = as_polylines(network.geometry)
    pts = packed.xy
    lon0, lat0 = (float(v) for v in (pts.min(axis=0) + pts.max(axis=0)) / 2)
    tf = Transformer.from_crs(
        "EPSG:4326", f"+proj=aeqd +lat_0={lat0} +lon_0={lon0} +datum=WGS84 +units=m", always_xy=True
    )
    x, y = tf.transform(pts[:, 0], pts[:, 1])
    sizes = packed.counts
    lines = linestrings(np.column_stack([x, y]), indices=np.repeat(np.arange(len(sizes)), sizes))
    hit = (STRtree(lines), tf)
    _TREES[network] = hit
    return hit


def _fmt_m(d: float) -> str:
    return f"{d / 1000:.0f} km" if d >= 10_000 else f"{d / 1000:.1f} km" if d >= 1000 else f"{d:.0f} m"


def nearest_edges(network: RoadNetwork, lon: Any, lat: Any) -> tuple[np.ndarray, np.ndarray]:
    """Nearest edge of each point by true geometry: ``((P,) edge indices, (P,) distances in m)``.

    Ties (e.g. the two directions of a two-way street with one polyline) go to the lower edge index.

    Raises:
        ParameterError: for non-finite or out-of-range coordinates, or a network without lon/lat geometry.
    """
    from shapely import points

    lon_a, lat_a = np.atleast_1d(np.asarray(lon, dtype=np.float64)), np.atleast_1d(np.asarray(lat, dtype=np.float64))
    bad = ~(np.isfinite(lon_a) & np.isfinite(lat_a)) | (np.abs(lon_a) > 180) | (np.abs(lat_a) > 90)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(f"point ({lon_a[i]}, {lat_a[i]}) is not a valid LON,LAT (|lon| <= 180, |lat| <= 90)")
    tree, tf = _index(network)
    x, y = tf.transform(lon_a, lat_a)
    (qi, ei), dist = tree.query_nearest(points(np.column_stack([x, y])), return_distance=True, all_matches=True)
    edge = np.full(len(lon_a), np.iinfo(np.int64).max)
    np.minimum.at(edge, qi, ei)  # lowest index among equidistant edges
    d = np.zeros(len(lon_a))
    d[qi] = dist
    return edge.astype(np.int64), d


def nearest_edge(network: RoadNetwork, lon: float, lat: float, *, max_distance_m: float = DEFAULT_MAX_SNAP_M) -> int:
    """Index of the edge nearest to ``(lon, lat)``; :class:`ParameterError` if it is over ``max_distance_m`` away."""
    if not max_distance_m > 0:
        raise ParameterError(f"the maximum snapping distance must be > 0 m, got {max_distance_m}")
    (e,), (d,) = nearest_edges(network, lon, lat)
    if d > max_distance_m:
        raise ParameterError(
            f"point {lon:.6f},{lat:.6f} is {_fmt_m(d)} from the network {network.name!r} (nearest edge "
            f"{network.edge_ids[e]}); the maximum snapping distance is {_fmt_m(max_distance_m)} (--max-snap-m)"
        )
    return int(e)
