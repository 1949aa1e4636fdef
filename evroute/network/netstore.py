"""Generated synthetic cities kept on disk: content-addressed, self-verifying, rebuilt when corrupt.

:func:`load_synthetic` is :func:`~evroute.network.synthetic.synthetic_city` through the compute cache
(:mod:`evroute.network.computecache`, kind ``synthetic-network``), as the netconvert cache keeps converted OSM
networks: the key is the SHA-256 of everything the city depends on (its parameters, :data:`SYNTHETIC_VERSION`, the
numpy/scipy versions), the entry is checksummed on every load (a truncated, corrupted or edited entry is removed and
rebuilt with one warning), built under a file lock, and ``EVROUTE_COMPUTE_CACHE=off`` generates afresh and writes
nothing.  A loaded city equals a generated one array for array, bit for bit (``tests/test_netstore.py``).

The entry is data, not a pickle (:mod:`evroute.network.datatree`): the plain arrays of :func:`network_arrays` (the
geometry as one ``(P, 2)`` array and the point count of each edge, rebuilt as views into it: a list of 100k small
arrays would save and load slowly), checked on load by :func:`check_network_arrays` and by the
:class:`RoadNetwork` constructor; an entry that fails is rebuilt.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.errors import DataError
from evroute.network.polylines import Polylines, as_polylines
from evroute.network.road_network import RoadNetwork

__all__ = ["SYNTHETIC_VERSION", "check_network_arrays", "load_synthetic", "network_arrays", "network_from_arrays"]

#: Version of the synthetic city generator's output; part of the cache key: bump it whenever
#: :func:`~evroute.network.synthetic.synthetic_city` makes a different network for the same parameters.
SYNTHETIC_VERSION = 1
_FIELDS = ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns")


def network_arrays(net: RoadNetwork) -> dict[str, Any]:
    """The network as a dict of arrays (and its name and ``meta``) that :func:`network_from_arrays` turns back."""
    lines = as_polylines(net.geometry)
    counts, xy = lines.counts, lines.xy
    return {
        "name": net.name,
        **{f: getattr(net, f) for f in _FIELDS},
        "geometry_xy": np.ascontiguousarray(xy, dtype=np.float64),
        "geometry_counts": counts,
        "meta": net.meta,
    }


def check_network_arrays(data: Any) -> None:
    """Raise :class:`ValueError` unless ``data`` has the keys and array kinds of :func:`network_arrays` and its
    geometry counts add up (the :class:`RoadNetwork` constructor checks the rest: lengths, ranges, turns)."""
    keys = {"name", *_FIELDS, "geometry_xy", "geometry_counts", "meta"}
    if not isinstance(data, dict) or set(data) != keys:
        raise ValueError(f"a network entry has the keys {sorted(keys)}")
    if not all(isinstance(data[f], np.ndarray) for f in (*_FIELDS, "geometry_xy", "geometry_counts")):
        raise ValueError("a network entry's fields are arrays")
    xy, counts = data["geometry_xy"], data["geometry_counts"]
    if xy.dtype != np.float64 or xy.ndim != 2 or xy.shape[1] != 2 or counts.dtype != np.int64 or counts.ndim != 1:
        raise ValueError("a network entry's geometry is (P, 2) float64 with int64 counts")
    if len(counts) != len(data["edge_ids"]) or (counts < 0).any() or int(counts.sum()) != len(xy):
        raise ValueError("a network entry's geometry counts do not match its edges and points")
    if not isinstance(data["meta"], dict) or not isinstance(data["name"], str):
        raise ValueError("a network entry's name is a string and its meta a mapping")


def network_from_arrays(data: dict[str, Any]) -> RoadNetwork:
    """The :class:`RoadNetwork` of :func:`network_arrays` (checked as every network is on construction)."""
    geometry = Polylines.from_counts(data["geometry_xy"], data["geometry_counts"])
    return RoadNetwork(name=data["name"], **{f: data[f] for f in _FIELDS}, geometry=geometry, meta=data["meta"])


def load_synthetic(n_edges: int = 1000, seed: int = 0, **options: Any) -> RoadNetwork:
    """:func:`~evroute.network.synthetic.synthetic_city` ``(n_edges, seed, **options)``, from the compute cache when
    it holds a verified entry (see the module docstring); the parameters are checked before anything is read."""
    from evroute.network.computecache import cache_enabled, cached_compute
    from evroute.network.synthetic import synthetic_city, synthetic_params

    name = options.pop("name", None)
    params = synthetic_params(n_edges, seed, **options)
    if not cache_enabled():
        return synthetic_city(n_edges, seed, name=name, **options)
    built: list[RoadNetwork] = []

    def check(d: Any) -> None:  # the schema, then the network's own checks (a DataError is a bad entry too)
        check_network_arrays(d)
        try:
            built.append(network_from_arrays(d))
        except DataError as exc:
            raise ValueError(str(exc)) from None

    data = cached_compute(
        "synthetic-network",
        {"params": params, "name": name, "version": SYNTHETIC_VERSION},
        lambda: network_arrays(synthetic_city(n_edges, seed, name=name, **options)),
        what="synthetic network",
        blas=False,
        check=check,
    )
    return built[-1] if built else network_from_arrays(data)
