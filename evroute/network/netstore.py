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

from collections.abc import Callable
from typing import Any

import numpy as np

from evroute.errors import DataError
from evroute.network.polylines import Polylines, as_polylines
from evroute.network.road_network import RoadNetwork, set_junction_codes

__all__ = [
    "SYNTHETIC_VERSION",
    "cached_network",
    "check_network_arrays",
    "load_synthetic",
    "network_arrays",
    "network_from_arrays",
]

#: Version of the synthetic city generator's output; part of the cache key: bump it whenever
#: :func:`~evroute.network.synthetic.synthetic_city` makes a different network for the same parameters.
SYNTHETIC_VERSION = 1
_FIELDS = ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns")
#: the arrays of an entry (:func:`network_arrays`; the junctions as ids and codes)
_ARRAYS = ("edge_ids", "node_ids", "node_codes", "node_widths", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns")
#: layout of an entry: part of the cache key, so that entries of another layout are never read (3: ASCII strings
#: stored as bytes)
LAYOUT = 3


def _pack_str(a: Any) -> Any:
    """An ASCII NumPy str array as bytes (``S``: a quarter of the ``U`` array's size, which every load reads and
    checksums); anything else as it is."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "U" and a.dtype.itemsize:
        try:
            return a.astype(f"S{a.dtype.itemsize // 4}")
        except UnicodeEncodeError:
            return a
    return a


def _unpack_str(a: Any, width: int) -> Any:
    """The str array ``<U{width}`` of a packed bytes array (:func:`_pack_str`, ``width`` > 0); anything else (a
    width of 0: not packed) as it is."""
    if width <= 0 or not isinstance(a, np.ndarray) or a.dtype.kind != "S":
        return a
    if a.ndim == 1 and a.dtype.itemsize == width:  # ASCII bytes widened to code points: 4x faster than astype
        return np.ascontiguousarray(a).view(np.uint8).astype(np.uint32).view(f"<U{width}")
    return a.astype(f"<U{width}")


def _str_width(a: Any) -> int:
    return a.dtype.itemsize // 4 if isinstance(a, np.ndarray) and a.dtype.kind == "U" else 0


def network_arrays(net: RoadNetwork) -> dict[str, Any]:
    """The network as a dict of arrays (and its name and ``meta``) that :func:`network_from_arrays` turns back.

    Stored compactly (the entry is read and checksummed on every load): the junction ids once each
    (``node_ids``, in their own str dtype) with each edge's ``(from, to)`` index into them (``node_codes``, int32, where
    two ``(E,)`` str arrays took ~180 bytes per edge at a million edges) and the turns as int32 when they fit."""
    lines = as_polylines(net.geometry)
    fi, ti, uniq = net.junction_codes()  # node_codes' result, or the loader's own (the country sets them)
    idx = np.int32 if max(len(uniq), net.n_edges) < 2**31 else np.int64
    node_ids = uniq.astype(np.result_type(net.from_node, net.to_node), copy=False)
    return {
        "name": net.name,
        **{f: getattr(net, f) for f in _FIELDS if f not in ("from_node", "to_node", "turns", "edge_ids")},
        "edge_ids": _pack_str(net.edge_ids),
        "node_ids": _pack_str(node_ids),
        "node_codes": np.stack([fi, ti], axis=1).astype(idx),
        "node_widths": np.array([net.from_node.dtype.itemsize // 4, net.to_node.dtype.itemsize // 4]),
        "turns": net.turns.astype(idx),
        "geometry_xy": np.ascontiguousarray(lines.xy, dtype=np.float64),
        "geometry_counts": lines.counts.astype(np.int32),
        "meta": {k: _pack_str(v) for k, v in net.meta.items()},
        # the str widths of the packed arrays: edge ids, junction ids and meta["KEY"] (0: not a str array)
        "str_widths": {
            "edge_ids": _str_width(net.edge_ids),
            "node_ids": _str_width(node_ids),
            "meta": {k: _str_width(v) for k, v in net.meta.items()},
        },
    }


def check_network_arrays(data: Any) -> None:
    """Raise :class:`ValueError` unless ``data`` has the keys and array kinds of :func:`network_arrays` and its
    geometry counts add up (the :class:`RoadNetwork` constructor checks the rest: lengths, ranges, turns)."""
    arrays = (*_ARRAYS, "geometry_xy", "geometry_counts")
    keys = {"name", *arrays, "meta", "str_widths"}
    if not isinstance(data, dict) or set(data) != keys:
        raise ValueError(f"a network entry has the keys {sorted(keys)}")
    if not all(isinstance(data[f], np.ndarray) for f in arrays):
        raise ValueError("a network entry's fields are arrays")
    xy, counts = data["geometry_xy"], data["geometry_counts"]
    if xy.dtype != np.float64 or xy.ndim != 2 or xy.shape[1] != 2 or counts.dtype.kind != "i" or counts.ndim != 1:
        raise ValueError("a network entry's geometry is (P, 2) float64 with integer counts")
    if len(counts) != len(data["edge_ids"]) or (counts < 0).any() or int(counts.sum(dtype=np.int64)) != len(xy):
        raise ValueError("a network entry's geometry counts do not match its edges and points")
    codes, ids = data["node_codes"], data["node_ids"]
    if codes.dtype.kind != "i" or codes.shape != (len(data["edge_ids"]), 2) or ids.dtype.kind not in "US":
        raise ValueError("a network entry's junctions are (E, 2) integer codes into a str array")
    widths = data["str_widths"]
    if (
        not isinstance(widths, dict)
        or set(widths) != {"edge_ids", "node_ids", "meta"}
        or not isinstance(widths["meta"], dict)
        or not all(
            isinstance(w, int) and w >= 0 for w in (widths["edge_ids"], widths["node_ids"], *widths["meta"].values())
        )
    ):
        raise ValueError("a network entry's str widths are non-negative integers")
    if (
        data["edge_ids"].dtype.kind == "S"
        and widths["edge_ids"] < 1
        or ids.dtype.kind == "S"
        and widths["node_ids"] < 1
    ):
        raise ValueError("a network entry's packed ids have no str width")
    if len(codes) and (codes.min() < 0 or codes.max() >= len(ids)):
        raise ValueError("a network entry's junction codes are outside its junction ids")
    if data["node_widths"].shape != (2,) or data["node_widths"].dtype.kind != "i" or data["node_widths"].min() < 1:
        raise ValueError("a network entry's junction id widths are two positive integers")
    if data["turns"].dtype.kind != "i":
        raise ValueError("a network entry's turns are integers")
    if not isinstance(data["meta"], dict) or not isinstance(data["name"], str):
        raise ValueError("a network entry's name is a string and its meta a mapping")


def network_from_arrays(data: dict[str, Any]) -> RoadNetwork:
    """The :class:`RoadNetwork` of :func:`network_arrays` (checked as every network is on construction)."""
    geometry = Polylines.from_counts(data["geometry_xy"], data["geometry_counts"])
    widths = data["str_widths"]
    ids = _unpack_str(data["node_ids"], widths["node_ids"])
    codes, (w_from, w_to) = data["node_codes"], data["node_widths"].tolist()
    fields = {f: data[f] for f in _FIELDS if f not in ("from_node", "to_node", "edge_ids")}
    meta = {k: _unpack_str(v, widths["meta"].get(k, 0)) for k, v in data["meta"].items()}
    net = RoadNetwork(
        name=data["name"],
        **fields,
        edge_ids=_unpack_str(data["edge_ids"], widths["edge_ids"]),
        from_node=ids[codes[:, 0]].astype(f"<U{w_from}", copy=False),  # each in the str dtype it was made with
        to_node=ids[codes[:, 1]].astype(f"<U{w_to}", copy=False),
        geometry=geometry,
        meta=meta,
    )
    # the entry's junction codes are node_codes(from_node, to_node) (network_arrays made them): no sort of 2E ids
    set_junction_codes(net, codes[:, 0], codes[:, 1], ids.astype(np.result_type(net.from_node, net.to_node)))
    return net


def cached_network(kind: str, key: dict[str, Any], build: Callable[[], RoadNetwork], *, what: str) -> RoadNetwork:
    """``build()``, from the compute cache (kind ``kind``, keyed by ``key`` and :data:`LAYOUT`) when it holds a
    verified entry (see the module docstring); an entry that fails :func:`check_network_arrays` or the network's own
    checks is rebuilt."""
    from evroute.network.computecache import cache_enabled, cached_compute

    if not cache_enabled():
        return build()
    built: list[RoadNetwork] = []

    def check(d: Any) -> None:  # the schema, then the network's own checks (a DataError is a bad entry too)
        check_network_arrays(d)
        try:
            built.append(network_from_arrays(d))
        except DataError as exc:
            raise ValueError(str(exc)) from None

    def make() -> dict[str, Any]:  # a fresh network is returned as built (equal to its entry's, bit for bit)
        built.append(build())
        return network_arrays(built[-1])

    data = cached_compute(kind, {**key, "layout": LAYOUT}, make, what=what, blas=False, check=check)
    return built[-1] if built else network_from_arrays(data)


def load_synthetic(n_edges: int = 1000, seed: int = 0, **options: Any) -> RoadNetwork:
    """:func:`~evroute.network.synthetic.synthetic_city` ``(n_edges, seed, **options)``, from the compute cache when
    it holds a verified entry (see the module docstring); the parameters are checked before anything is read."""
    from evroute.network.synthetic import synthetic_city, synthetic_params

    name = options.pop("name", None)
    params = synthetic_params(n_edges, seed, **options)
    return cached_network(
        "synthetic-network",
        {"params": params, "name": name, "version": SYNTHETIC_VERSION},
        lambda: synthetic_city(n_edges, seed, name=name, **options),
        what="synthetic network",
    )
