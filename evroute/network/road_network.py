"""The :class:`RoadNetwork` type every loader produces.

A road network is a set of directed road edges (segments between two junctions) with stable
string ids, per-edge attributes in SI units, lon/lat geometry for maps and the legal turns
between edges.  All arrays are aligned by edge index ``0 .. n_edges - 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evroute.errors import DataError, UnknownEdgeError
from evroute.network.polylines import Polylines, as_polylines

if TYPE_CHECKING:  # pragma: no cover
    import geopandas as gpd
    import networkx as nx
    import pandas as pd

    from evroute.network.junctions import JunctionArms, JunctionModel


def all_unique(ids: np.ndarray) -> bool:
    """Whether the strings of ``ids`` ``(E,)`` (a NumPy str array) are all different.

    Each string's code points (NumPy pads them with zeros to a common width) are hashed to one uint64 (a polynomial,
    modulo 2^64); distinct hashes prove distinct strings, and only a repeated hash (a duplicate, or rarely a
    collision) falls back to a set of the strings: a million ids in ~0.1 s instead of ~0.7 s.
    """
    ids = np.ascontiguousarray(ids)
    if ids.dtype.kind != "U" or ids.dtype.itemsize == 0 or len(ids) < 2:
        return len(set(ids.tolist())) == len(ids)
    codes = ids.view(np.uint32).reshape(len(ids), -1)
    h = np.zeros(len(ids), dtype=np.uint64)
    for j in range(codes.shape[1]):
        h *= np.uint64(1_000_003)  # wraps modulo 2^64 (no warning for arrays)
        h += codes[:, j]
    h.sort()
    if not np.any(h[1:] == h[:-1]):
        return True
    return len(set(ids.tolist())) == len(ids)


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` (a NumPy str array) at the width of its longest string: a wider input dtype (a padded buffer) would cost
    4 bytes per unused code point and per id, and change the arrays' digests."""
    if a.dtype.kind != "U" or len(a) == 0:
        return a
    width = max(int(np.strings.str_len(a).max()), 1)
    return a if a.dtype.itemsize == 4 * width else a.astype(f"<U{width}")


def _str_array(a: Any) -> np.ndarray:
    """``a`` as a NumPy str array: a str array as it is (no copy: a million junction ids are ~90 MB), else converted."""
    arr = np.asarray(a)
    return arr if arr.dtype.kind == "U" else arr.astype(str)


def set_junction_codes(net: RoadNetwork, from_idx: np.ndarray, to_idx: np.ndarray, ids: np.ndarray) -> None:
    """Give ``net`` its :meth:`RoadNetwork.junction_codes`: ``(E,)`` integer indices into the sorted unique junction
    ids ``ids`` ``(N,)`` with ``ids[from_idx] == net.from_node`` and ``ids[to_idx] == net.to_node`` (what
    :func:`evroute.network._graph.node_codes` returns; a loader that stored them passes them here)."""
    arrays = (np.asarray(from_idx, dtype=np.int64), np.asarray(to_idx, dtype=np.int64), np.asarray(ids))
    for a in arrays:
        a.flags.writeable = False
    net._junctions = arrays


@dataclass(eq=False)
class RoadNetwork:
    """Directed road network with per-edge attributes and legal turns.

    Attributes:
        name: Human-readable network name (e.g. ``"monaco"``, ``"synthetic:1000:0"``).
        edge_ids: ``(E,)`` array of ``str``, stable edge ids (SUMO ids, ``"u-v-k"`` for OSM, ...).
        from_node: ``(E,)`` array of ``str``, id of the junction where each edge starts.
        to_node: ``(E,)`` array of ``str``, id of the junction where each edge ends.
        length_m: ``(E,)`` float, edge length in metres (> 0), along the slope, between the same two points as the
            elevations (junction centres; see :mod:`evroute.network.elevation`), so ``|z_to - z_from| <= length``.
        speed_mps: ``(E,)`` float, expected free-flow driving speed in m/s (> 0): the posted limit times the
            free-flow factor of :func:`evroute.network.speeds.free_flow_factor` for OSM networks (junction and signal
            delays not included); travel times and the energy prior use it.
        z_from_m: ``(E,)`` float, elevation of the start of the edge in metres.
        z_to_m: ``(E,)`` float, elevation of the end of the edge in metres.
        geometry: sequence of ``E`` arrays of shape ``(k_i, 2)``: (lon, lat) polyline of each edge, degrees (a list,
            or :class:`~evroute.network.polylines.Polylines`: the same sequence packed in two arrays).
        turns: ``(C, 2)`` int array of legal turns ``(e1, e2)``: a vehicle may drive ``e2`` right after ``e1``.
        meta: free-form provenance (source file, loader, warnings).
        speed_limit_mps: ``(E,)`` float, posted speed limit in m/s, what SUMO's lanes carry: not a constructor
            argument; it equals ``speed_mps`` until :meth:`with_speed_limits` sets it (the OSM and SUMO loaders do),
            so ``dataclasses.replace`` (which may change the edge set) always yields a consistent network.
    """

    name: str
    edge_ids: np.ndarray
    from_node: np.ndarray
    to_node: np.ndarray
    length_m: np.ndarray
    speed_mps: np.ndarray
    z_from_m: np.ndarray
    z_to_m: np.ndarray
    geometry: Sequence[np.ndarray]
    turns: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)
    speed_limit_mps: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.speed_limit_mps = np.array(self.speed_mps, dtype=np.float64, copy=True)
        ids = np.asarray(self.edge_ids)
        # a str array is copied as it is (through object: ~0.5 s per million ids, the same result)
        self.edge_ids = _narrow(ids.astype(str) if ids.dtype.kind == "U" else np.asarray(ids, dtype=object).astype(str))
        self.from_node = _str_array(self.from_node)
        self.to_node = _str_array(self.to_node)
        for attr in ("length_m", "speed_mps", "z_from_m", "z_to_m"):
            setattr(self, attr, np.asarray(getattr(self, attr), dtype=np.float64))
        self.turns = np.asarray(self.turns, dtype=np.int64).reshape(-1, 2)
        self._index: dict[str, int] | None = None
        self._junctions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.validate()
        from evroute.network.elevation import warn_inconsistent

        warn_inconsistent(self.name, self.edge_ids, self.length_m, self.z_to_m - self.z_from_m)

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise :class:`DataError` if arrays disagree in length or hold invalid values."""
        n = len(self.edge_ids)
        if n == 0:
            raise DataError(f"network {self.name!r} has no edges")
        for attr in ("from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m"):
            if len(getattr(self, attr)) != n:
                raise DataError(f"network {self.name!r}: {attr} has {len(getattr(self, attr))} entries, expected {n}")
        if len(self.geometry) != n:
            raise DataError(f"network {self.name!r}: geometry has {len(self.geometry)} entries, expected {n}")
        if not all_unique(self.edge_ids):
            raise DataError(f"network {self.name!r}: edge ids are not unique")
        for attr in ("length_m", "speed_mps", "z_from_m", "z_to_m"):
            if not np.all(np.isfinite(getattr(self, attr))):
                raise DataError(f"network {self.name!r}: {attr} contains NaN or inf")
        if np.any(self.length_m <= 0):
            raise DataError(f"network {self.name!r}: edge lengths must be > 0 m")
        if np.any(self.speed_mps <= 0):
            raise DataError(f"network {self.name!r}: speeds must be > 0 m/s")
        if self.turns.size and (self.turns.min() < 0 or self.turns.max() >= n):
            raise DataError(f"network {self.name!r}: a turn refers to an edge index outside 0..{n - 1}")

    def with_speed_limits(self, limit_mps: np.ndarray) -> RoadNetwork:
        """Set :attr:`speed_limit_mps` (``(E,)`` posted limits, m/s, finite, > 0) and return this network.

        Raises:
            DataError: for a wrong shape or a non-finite or non-positive limit.
        """
        limit = np.asarray(limit_mps, dtype=np.float64)
        if limit.shape != (self.n_edges,):
            raise DataError(
                f"network {self.name!r}: speed_limit_mps has shape {limit.shape}, expected ({self.n_edges},)"
            )
        if not np.all(np.isfinite(limit)) or np.any(limit <= 0):
            raise DataError(f"network {self.name!r}: speed limits must be finite and > 0 m/s")
        self.speed_limit_mps = limit
        return self

    # -------------------------------------------------------------- accessors
    @property
    def n_edges(self) -> int:
        """Number of directed edges ``E``."""
        return len(self.edge_ids)

    @property
    def n_turns(self) -> int:
        """Number of legal turns ``C``."""
        return len(self.turns)

    @property
    def incline(self) -> np.ndarray:
        """``(E,)`` sine of the slope angle, ``(z_to - z_from) / length`` (dimensionless).

        In [-1, 1] for consistent input; edges that rise more than their length (warned about at construction) are
        clipped to +-1.
        """
        return np.clip((self.z_to_m - self.z_from_m) / self.length_m, -1.0, 1.0)

    def index_of(self, edge_id: str) -> int:
        """Index of the edge with id ``edge_id``; :class:`UnknownEdgeError` if there is none."""
        if self._index is None:
            self._index = {e: i for i, e in enumerate(self.edge_ids.tolist())}
        try:
            return self._index[str(edge_id)]
        except KeyError:
            raise UnknownEdgeError(f"edge id {edge_id!r} is not in network {self.name!r}") from None

    def subnetwork(self, edges: np.ndarray, name: str | None = None) -> RoadNetwork:
        """The network restricted to edge indices ``edges`` (turns between kept edges only)."""
        edges = np.asarray(edges, dtype=np.int64)
        remap = np.full(self.n_edges, -1, dtype=np.int64)
        remap[edges] = np.arange(len(edges))
        t = remap[self.turns] if self.n_turns else self.turns
        t = t[(t >= 0).all(axis=1)] if len(t) else t
        return RoadNetwork(
            name=name or self.name,
            edge_ids=self.edge_ids[edges],
            from_node=self.from_node[edges],
            to_node=self.to_node[edges],
            length_m=self.length_m[edges],
            speed_mps=self.speed_mps[edges],
            z_from_m=self.z_from_m[edges],
            z_to_m=self.z_to_m[edges],
            geometry=(
                self.geometry.take(edges) if isinstance(self.geometry, Polylines) else [self.geometry[i] for i in edges]
            ),
            turns=t,
            meta=dict(self.meta),
        ).with_speed_limits(self.speed_limit_mps[edges])

    # ------------------------------------------------------------- conversion
    def edge_frame(self) -> pd.DataFrame:
        """Per-edge attributes as a :class:`pandas.DataFrame` indexed by edge id."""
        import pandas as pd

        return pd.DataFrame(
            {
                "from_node": self.from_node,
                "to_node": self.to_node,
                "length_m": self.length_m,
                "speed_mps": self.speed_mps,
                "speed_limit_mps": self.speed_limit_mps,
                "z_from_m": self.z_from_m,
                "z_to_m": self.z_to_m,
                "incline": self.incline,
            },
            index=pd.Index(self.edge_ids, name="edge_id"),
        )

    def to_geodataframe(self) -> gpd.GeoDataFrame:
        """Edges as a :class:`geopandas.GeoDataFrame` of LineStrings in EPSG:4326."""
        import geopandas as gpd
        from shapely.geometry import LineString

        geoms = [LineString(g) if len(g) >= 2 else LineString([g[0], g[0]]) for g in self.geometry]
        return gpd.GeoDataFrame(self.edge_frame(), geometry=geoms, crs="EPSG:4326")

    def junction_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(from_idx (E,), to_idx (E,), ids (N,))``: each edge's start and end junction as an index into the sorted
        junction ids ``ids`` (int64), computed once (read-only arrays; a network loaded from the compute cache has them
        from its entry, :func:`set_junction_codes`)."""
        if self._junctions is None:
            from evroute.network._graph import node_codes

            (fi, ti), uniq = node_codes(self.from_node, self.to_node)
            set_junction_codes(self, fi, ti, uniq)
        assert self._junctions is not None
        return self._junctions

    def junction_positions(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Junction ids and their x, y (mean of the edge end points touching each junction) and elevation (m).

        Returns:
            ``(ids, x, y, z)``: ``(N,)`` arrays, ``ids`` sorted; x/y in the network's CRS (lon/lat degrees for
            ``meta["crs"] == "EPSG:4326"``).
        """
        fi, ti, uniq = self.junction_codes()
        idx = np.concatenate([fi, ti])
        lines = as_polylines(self.geometry)
        pts = np.concatenate([lines.first(), lines.last()])
        cnt = np.bincount(idx, minlength=len(uniq)).astype(np.float64)
        x = np.bincount(idx, weights=pts[:, 0], minlength=len(uniq)) / cnt
        y = np.bincount(idx, weights=pts[:, 1], minlength=len(uniq)) / cnt
        z = np.bincount(idx, weights=np.concatenate([self.z_from_m, self.z_to_m]), minlength=len(uniq)) / cnt
        return uniq, x, y, z

    def to_networkx(self, *, vehicle: Any = "sumo_ev") -> nx.MultiDiGraph:
        """osmnx-compatible junction graph: nodes are integers, one keyed edge per road edge (key = edge id).

        Works with ``osmnx.plot_graph``, ``osmnx.graph_to_gdfs``, ``osmnx.nearest_edges`` / ``nearest_nodes``
        and networkx shortest paths (``weight="length"``, ``"travel_time"`` or ``"energy_reduced_wh"``; not
        ``"energy_wh"``, which is negative downhill, where Dijkstra is wrong or raises: see ``docs/interop.md``).

        Graph attributes: ``name``, ``crs`` (``meta["crs"]``, ``"EPSG:4326"`` for lon/lat networks),
        ``potential_wh_per_m`` (``k = m g eta- / 3600``, Wh per metre of climb: a route from junction ``o`` to ``d``
        needs ``sum(energy_reduced_wh) + k (elevation(d) - elevation(o))`` Wh).
        Nodes are ``0 .. N-1`` (osmnx treats node ids as scalars, so string ids cannot be used) in the order of
        :meth:`junction_positions`; node attributes: ``junction`` (the network's junction id), ``x``, ``y``
        (lon/lat degrees, mean of the edge end points at the junction), ``elevation`` (m), ``street_count``
        (distinct neighbouring junctions).
        Edge attributes: ``edge_id``, ``index`` (edge index), ``length`` (m), ``speed`` (m/s), ``speed_kph``,
        ``travel_time`` (s), ``incline`` (sine of the slope), ``grade`` (rise / length, osmnx's name),
        ``energy_wh`` (physics energy of :func:`evroute.energy.network_energy_wh` at the speed limit, Wh, negative
        when recuperating), ``energy_reduced_wh`` (``energy_wh - k dz``, :func:`evroute.energy.reduced_cost_wh`:
        the energy dissipated on the edge, ``>= 0``, so Dijkstra applies; along any route it differs from the sum of
        ``energy_wh`` by the same constant, so the route minimising it is the minimum-energy route) and ``geometry``
        (shapely LineString in the graph CRS).

        Args:
            vehicle: vehicle profile name, JSON path or :class:`~evroute.energy.VehicleProfile` for ``energy_wh``.
        """
        import networkx as nx
        from shapely.geometry import LineString

        from evroute.energy import VehicleProfile, network_energy_wh, reduced_cost_wh

        profile = vehicle if isinstance(vehicle, VehicleProfile) else VehicleProfile.load(vehicle)
        energy = network_energy_wh(self, profile)
        reduced = np.maximum(reduced_cost_wh(self, profile), 0.0)  # >= 0 by Eq. 8; the clip only removes rounding
        k = profile.mass_kg * profile.gravity_mps2 * profile.recuperation_efficiency / 3600.0
        g = nx.MultiDiGraph(name=self.name, crs=self.meta.get("crs", "EPSG:4326"), potential_wh_per_m=k)
        ids, x, y, z = self.junction_positions()
        code = {n: k for k, n in enumerate(ids.tolist())}
        fi = [code[n] for n in self.from_node.tolist()]
        ti = [code[n] for n in self.to_node.tolist()]
        neigh: dict[int, set[int]] = {}
        for u, v in zip(fi, ti, strict=True):
            if u != v:
                neigh.setdefault(u, set()).add(v)
                neigh.setdefault(v, set()).add(u)
        for k, (n, xi, yi, zi) in enumerate(zip(ids.tolist(), x.tolist(), y.tolist(), z.tolist(), strict=True)):
            g.add_node(k, junction=n, x=xi, y=yi, elevation=zi, street_count=len(neigh.get(k, ())))
        inc = self.incline
        for i, (u, v, eid) in enumerate(zip(fi, ti, self.edge_ids.tolist(), strict=True)):
            geom = self.geometry[i]
            length, speed = float(self.length_m[i]), float(self.speed_mps[i])
            g.add_edge(
                u,
                v,
                key=eid,
                edge_id=eid,
                index=i,
                length=length,
                speed=speed,
                speed_kph=speed * 3.6,
                travel_time=length / speed,
                incline=float(inc[i]),
                grade=float((self.z_to_m[i] - self.z_from_m[i]) / length),
                energy_wh=float(energy[i]),
                energy_reduced_wh=float(reduced[i]),
                geometry=LineString(geom if len(geom) >= 2 else np.vstack([geom, geom])),
            )
        return g

    def junction_arms(self, model: JunctionModel | None = None) -> JunctionArms:
        """What the junction at each edge's end does to each legal turn: stop probability, standstill, turn speed
        (:func:`evroute.network.junctions.junction_arms`), for the energy layer's prior."""
        from evroute.network.junctions import junction_arms

        return junction_arms(self, model)

    def turn_graph(self) -> nx.DiGraph:
        """Directed line graph as networkx: nodes are edge indices, arcs are legal turns."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(self.n_edges))
        g.add_edges_from(map(tuple, self.turns.tolist()))
        return g

    def summary(self) -> dict[str, Any]:
        """Basic statistics (counts, total length in km, elevation range in m, posted speed classes in km/h)."""
        z = np.concatenate([self.z_from_m, self.z_to_m])
        return {
            "name": self.name,
            "edges": self.n_edges,
            "turns": self.n_turns,
            "junctions": len(set(self.from_node.tolist()) | set(self.to_node.tolist())),
            "total_length_km": float(self.length_m.sum() / 1000.0),
            "mean_edge_length_m": float(self.length_m.mean()),
            "elevation_min_m": float(z.min()),
            "elevation_max_m": float(z.max()),
            "max_abs_incline": float(np.abs(self.incline).max()),
            "speed_classes_kmh": sorted({round(float(s) * 3.6) for s in np.unique(self.speed_limit_mps)})[:20],
        }

    def __repr__(self) -> str:
        return f"RoadNetwork(name={self.name!r}, edges={self.n_edges}, turns={self.n_turns})"
