"""Parsed road networks in the compute cache: a converted ``.net.xml.gz`` is parsed once (sumolib's SAX parse of
Luxembourg's 130,000 XML elements costs ~1.7 s of CPU), then loaded as arrays in milliseconds.

The entry is a data tree (:mod:`evroute.network.datatree`: arrays, strings, numbers; never a pickle) in the compute
cache (:func:`evroute.network.computecache.cached_compute`: checksummed, authenticated with the user's cache key,
rebuilt when corrupt).  Its key holds the inputs of the conversion and :func:`network_code_digest`, a digest of the
source of every module of :mod:`evroute.network`, so a change to any parser, speed or elevation rule parses again.
``EVROUTE_COMPUTE_CACHE=off`` parses every time.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from evroute.network.polylines import Polylines, as_polylines
from evroute.network.road_network import RoadNetwork

#: the arrays of a :class:`RoadNetwork` kept as they are
_ARRAYS = ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns")


@functools.lru_cache(maxsize=1)
def network_code_digest() -> str:
    """SHA-256 of the source files of :mod:`evroute.network` (sorted names and contents)."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(f.relative_to(Path(__file__).parent).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def network_tree(net: RoadNetwork) -> dict[str, Any]:
    """``net`` as a data tree: its arrays, the polylines concatenated with their ``(E + 1,)`` offsets, its meta."""
    tree: dict[str, Any] = {k: np.asarray(getattr(net, k)) for k in _ARRAYS}
    lines = as_polylines(net.geometry)
    tree["geometry_offsets"] = lines.offsets
    tree["geometry_points"] = lines.xy
    tree["speed_limit_mps"] = np.asarray(net.speed_limit_mps, dtype=np.float64)
    tree["name"] = net.name
    tree["meta"] = dict(net.meta)
    return tree


def network_from_tree(tree: dict[str, Any]) -> RoadNetwork:
    """The :class:`RoadNetwork` of :func:`network_tree` (validated by its constructor).

    Raises:
        KeyError, ValueError, TypeError: the tree is not one (a cache entry of another layout: it is rebuilt).
    """
    off = np.asarray(tree["geometry_offsets"], dtype=np.int64)
    pts = np.asarray(tree["geometry_points"], dtype=np.float64).reshape(-1, 2)
    if off.ndim != 1 or len(off) != len(tree["edge_ids"]) + 1 or off[-1] != len(pts) or np.any(np.diff(off) < 0):
        raise ValueError("geometry offsets do not match the edges and points")
    geometry = Polylines(pts, off)
    a = {k: np.asarray(tree[k]) for k in _ARRAYS}
    net = RoadNetwork(
        name=str(tree["name"]),
        edge_ids=a["edge_ids"],
        from_node=a["from_node"],
        to_node=a["to_node"],
        length_m=a["length_m"],
        speed_mps=a["speed_mps"],
        z_from_m=a["z_from_m"],
        z_to_m=a["z_to_m"],
        geometry=geometry,
        turns=a["turns"].astype(np.int64),
        meta=dict(tree["meta"]),
    )
    return net.with_speed_limits(np.asarray(tree["speed_limit_mps"], dtype=np.float64))


def _check(tree: Any) -> None:
    if not isinstance(tree, dict) or not isinstance(tree.get("meta"), dict):
        raise ValueError("not a parsed network")


def cached_network(inputs: dict[str, Any], parse: Callable[[], RoadNetwork], what: str) -> RoadNetwork:
    """``parse()``, or the network it returned for the same ``inputs`` (plus :func:`network_code_digest`) from the
    compute cache (module doc)."""
    from evroute.network.computecache import cached_compute

    key = {"inputs": inputs, "network_code": network_code_digest(), "layout": 1}
    tree = cached_compute("parsed-network", key, lambda: network_tree(parse()), what=what, blas=False, check=_check)
    try:
        return network_from_tree(tree)
    except (KeyError, ValueError, TypeError):  # pragma: no cover - a well-formed entry of a foreign layout
        return parse()


__all__ = ["cached_network", "network_code_digest", "network_from_tree", "network_tree"]
