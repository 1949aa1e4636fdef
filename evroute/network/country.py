"""A deterministic synthetic *country*: towns, villages, rural roads and motorways whose structure resembles a real
road region rather than one grid (issue 39: the scale benchmark's road-like network).

:func:`synthetic_country` lays out, in a square of land sized for a real road density:

* **Settlements** with Zipf-distributed sizes (size of the k-th largest proportional to ``1 / k``, from a city of a
  tenth of the network down to villages of :data:`VILLAGE_MIN_EDGES` edges), placed at random without overlapping,
  largest first.  Each is a jittered street grid of the synthetic city (:func:`evroute.network.synthetic.grid_streets`
  in :mod:`evroute.network.country_towns`: random block sizes, removed segments, diagonals, bends, one-way streets),
  rotated by a random angle, with more removed segments than the city (``TOWN_REMOVAL`` there: T-junctions and dead
  ends, as in European towns).
* **Rural roads** along the Gabriel graph of the settlement centres (an edge joins two settlements when no third lies
  in the circle over them: the neighbourhood graph road networks of settlement systems are modelled by), from the
  town junction nearest to the neighbour's side, meandering (a random smooth curve of up to ~6 % of the length),
  subdivided into edges of :data:`RURAL_EDGE_M` metres with a bend point each.  Their class follows the smaller
  settlement they join: primary, secondary, tertiary or unclassified.
* **Motorways** along the Gabriel graph of the largest cities, as many as give :data:`MOTORWAY_LENGTH_SHARE` of the
  road length: two one-way carriageways 50 m apart in edges of :data:`MOTORWAY_EDGE_M` metres, meeting at one
  interchange per city (an incoming and an outgoing junction joined by a link), with an off-ramp to and an on-ramp
  from the city's central junction (``motorway_link``).
* **Terrain**: the city's hills (:func:`evroute.network.synthetic.terrain`) over every junction; edge lengths follow
  the slope.

Speeds are the project's defaults for untagged OSM ways (:func:`evroute.network.speeds.default_speed_kmh`: urban in
settlements, rural outside) times the free-flow factor the OSM loaders apply (:func:`~evroute.network.speeds.
free_flow_factor`), so a motorway is 130 km/h, a ramp 80, a rural primary road 90 * 0.85, a town street 50.  Only
the largest strongly connected part of the turn graph is kept.  Longitude/latitude come from a sinusoidal projection
around ``origin_lonlat`` (distances along parallels exact), lengths from the planar geometry.

Published statistics it matches (``tests/test_network_country.py`` checks each on ``synthetic-country:100000:0``;
measured there: 2.19 km/km^2, motorways 2.2 % and rural roads 47 % of the road length, town rank-size slope -1.05,
junctions 42 % 3-way against 39 % 4-way, mean 3.3 streets per junction, 12 % dead ends):

* **Settlement sizes** follow Zipf's law, rank-size exponent ~1 (Gabaix, *Zipf's law for cities*, QJE 1999); the
  test accepts a slope of -0.8 to -1.25 over the towns.
* **Road density**: :data:`ROAD_DENSITY_KM_PER_KM2` km of road per km^2 of land (Germany: ~830,000 km of public
  roads on 357,600 km^2, ~2.3; France ~1.1 M km on 550,000 km^2, ~2.0); the test accepts 1.5-3.
* **Motorway share** of the road length ~1.5-2 % (Germany: ~13,200 km of Autobahn, ~1.6 %); the test accepts
  0.5-4 %.
* **Rural share**: the roads outside settlements carry a large part of the road length (Germany's classified
  inter-urban roads alone, ~230,000 km, are ~28 % of its public roads; municipal and farm roads between villages
  add to it); the test accepts 20-55 %.
* **Junction degrees** (distinct neighbouring junctions, degree 2 excluded, as OSMnx's streets per node): 3-way
  junctions outnumber 4-way ones (Boeing, *Urban spatial order*, Applied Network Science 2019: most cities' street
  networks outside gridded North America are dominated by 3-way junctions), a mean of 2.5-3.5 and 3-20 % dead ends.

Everything is vectorised per settlement with numpy, the towns' strongly connected parts in one pass over all towns
(:mod:`evroute.network.country_towns`): a million edges take 11.8 s of CPU in the country's cold ``network`` step of
``studies.bench.benchmark_scale`` (generation and the compute-cache entry, load average ~12), against 20.1 s for the
code before (``d5ee1c3``) in the same run; ``tests/test_country_pinned.py`` pins the output bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.errors import ParameterError, check_positive
from evroute.network._graph import junction_turns, largest_scc_edges
from evroute.network.country_layout import (
    MOTORWAY_EDGE_M,
    RURAL_EDGE_M,
    VILLAGE_MIN_EDGES,
    layout,
    meander,
    road_edges,
)
from evroute.network.country_towns import largest_parts, place_town, town_grid
from evroute.network.elevation import slope_length
from evroute.network.netstore import cached_network
from evroute.network.polylines import Polylines
from evroute.network.road_network import RoadNetwork, set_junction_codes
from evroute.network.speeds import default_speed_kmh, free_flow_factor
from evroute.network.synthetic import EARTH_RADIUS_M, decimal_order, prefixed_ids, terrain

#: Version of the generator's output; part of the cache key: bump it whenever the same parameters give another network.
COUNTRY_VERSION = 1
#: OSM ``highway`` classes of the edges (``meta["road_class"]``); the town grid's classes 0..3 map to the first four.
CLASSES: tuple[str, ...] = (
    "residential",
    "tertiary",
    "secondary",
    "primary",
    "unclassified",
    "motorway",
    "motorway_link",
)
_UNCLASSIFIED, _MOTORWAY, _LINK = 4, 5, 6
#: share of the edges in settlements (the rest are rural roads and motorways).
TOWN_EDGE_SHARE = 0.77
_CARRIAGEWAY_M = 25.0  # each carriageway's offset from the motorway's centre line


def country_params(
    n_edges: int = 100_000,
    seed: int = 0,
    *,
    max_elevation_m: float = 300.0,
    max_incline: float = 0.06,
    origin_lonlat: tuple[float, float] = (10.0, 51.0),
) -> dict[str, Any]:
    """The checked parameters of :func:`synthetic_country` (``name`` aside): the key of its cache entry.

    Raises:
        ParameterError: for an invalid parameter.
    """
    try:
        n_req, seed_i = int(n_edges), int(seed)
    except (TypeError, ValueError):
        raise ParameterError(f"n_edges and seed must be integers, got {n_edges!r} and {seed!r}") from None
    if n_req != n_edges or not 2000 <= n_req <= 10_000_000:
        raise ParameterError(f"a synthetic country's n_edges must be an integer in 2000..10000000, got {n_edges!r}")
    if seed_i < 0:
        raise ParameterError(f"seed must be >= 0, got {seed!r}")
    max_elev = check_positive("max_elevation_m", max_elevation_m, allow_zero=True)
    if check_positive("max_incline", max_incline, allow_zero=True) > 0.5:
        raise ParameterError(f"max_incline must be in [0, 0.5], got {max_incline!r}")
    lon0, lat0 = (float(v) for v in origin_lonlat)
    if not (np.isfinite(lon0) and np.isfinite(lat0) and -180 <= lon0 <= 180 and -60 <= lat0 <= 60):
        raise ParameterError(f"origin_lonlat must be (lon, lat) with |lat| <= 60, got {origin_lonlat!r}")
    return {
        "n_edges": n_req,
        "seed": seed_i,
        "max_elevation_m": max_elev,
        "max_incline": float(max_incline),
        "origin_lonlat": (lon0, lat0),
    }


class _Parts:
    """The country's junctions and edges as they are added (local metres)."""

    def __init__(self) -> None:
        self.xy: list[np.ndarray] = []
        self.n_nodes = 0
        self.edges: list[tuple[np.ndarray, ...]] = []  # (frm, to, cls, bend_x, bend_y, settlement, urban)

    def nodes(self, xy: np.ndarray) -> np.ndarray:
        ids = np.arange(self.n_nodes, self.n_nodes + len(xy))
        self.xy.append(np.asarray(xy, dtype=np.float64).reshape(-1, 2))
        self.n_nodes += len(xy)
        return ids

    def add(self, frm: Any, to: Any, cls: Any, bend: np.ndarray | None, settlement: Any, urban: bool) -> None:
        frm, to = np.atleast_1d(np.asarray(frm, np.int64)), np.atleast_1d(np.asarray(to, np.int64))
        bx = np.full(len(frm), np.nan) if bend is None else bend[:, 0]
        by = np.full(len(frm), np.nan) if bend is None else bend[:, 1]
        cl = np.broadcast_to(np.asarray(cls, np.int64), frm.shape)
        st = np.broadcast_to(np.asarray(settlement, np.int64), frm.shape)
        self.edges.append((frm, to, cl, bx, by, st, np.full(len(frm), urban)))

    def arrays(self) -> tuple[np.ndarray, ...]:
        cols = tuple(np.concatenate(c) for c in zip(*self.edges, strict=True))
        return (np.concatenate(self.xy), *cols)


def _hamlets(parts: _Parts, lay: dict[str, Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Add the hamlets (settlements below :data:`VILLAGE_MIN_EDGES`): a junction with one to three dead-end lanes of
    80-250 m (more for a larger hamlet); the junction of each, as an array of one."""
    first = lay["towns"]
    pos, sizes = lay["pos"][first:], lay["sizes"][first:]
    centre = parts.nodes(pos)
    owner = np.repeat(np.arange(len(pos)), 1 + (sizes >= 20) + (sizes >= 40))
    ang, length = rng.uniform(0.0, 2 * np.pi, len(owner)), rng.uniform(80.0, 250.0, len(owner))
    tips = parts.nodes(pos[owner] + length[:, None] * np.stack([np.cos(ang), np.sin(ang)], axis=1))
    parts.add(centre[owner], tips, 0, None, first + owner, False)
    parts.add(tips, centre[owner], 0, None, first + owner, False)
    return [centre[i : i + 1] for i in range(len(pos))]


def _rural_roads(parts: _Parts, lay: dict[str, Any], towns: list[np.ndarray], rng: np.random.Generator) -> None:
    """Add the rural roads: each from the town junction nearest to the neighbour's side, meandering, subdivided."""
    pos, radius, roads, sizes = lay["pos"], lay["radius"], lay["roads"], lay["sizes"]
    xy = np.concatenate(parts.xy)
    ends = np.zeros(roads.shape, np.int64)
    for side in (0, 1):
        a, b = roads[:, side], roads[:, 1 - side]
        d = pos[b] - pos[a]
        target = pos[a] + d * (radius[a] / np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-9))[:, None]
        hamlet = np.array([len(t) == 1 for t in towns])[a]
        ends[hamlet, side] = np.array([t[0] for t in towns])[a[hamlet]]
        order = np.argsort(a, kind="stable")
        order = order[~hamlet[order]]
        cut = np.flatnonzero(np.diff(a[order])) + 1
        for sel in np.split(order, cut) if len(order) else []:
            t = a[sel[0]]
            ids = towns[t]
            dist = np.hypot(xy[ids, 0][None, :] - target[sel, 0:1], xy[ids, 1][None, :] - target[sel, 1:2])
            ends[sel, side] = ids[dist.argmin(axis=1)]
    p0, p1 = xy[ends[:, 0]], xy[ends[:, 1]]
    counts = road_edges(np.hypot(*(p1 - p0).T) * 1.05, RURAL_EDGE_M)
    nodes, bends = meander(p0, p1, counts, 0.03, rng)
    # class by the smaller settlement: the roads joining the largest settlements are primary
    small = np.minimum(sizes[roads[:, 0]], sizes[roads[:, 1]])
    q = np.quantile(small, [0.5, 0.75, 0.9]) if len(small) else np.zeros(3)
    cls = np.where(small >= q[2], 3, np.where(small >= q[1], 2, np.where(small >= q[0], 1, _UNCLASSIFIED)))
    _chains(parts, nodes, bends, counts, ends, cls, two_way=True, settlement=-1)


def _chains(
    parts: _Parts,
    nodes: np.ndarray,
    bends: np.ndarray,
    counts: np.ndarray,
    ends: np.ndarray,
    cls: np.ndarray,
    *,
    two_way: bool,
    settlement: int,
) -> None:
    """Add roads given as node chains (:func:`_meander`): the chain's first and last node are the existing junctions
    ``ends`` (R, 2), its inner nodes new junctions; edges along the chain (and back when ``two_way``)."""
    first = np.cumsum(counts + 1) - (counts + 1)
    last = first + counts
    inner = np.ones(len(nodes), bool)
    inner[first], inner[last] = False, False
    ids = np.empty(len(nodes), np.int64)
    ids[inner] = parts.nodes(nodes[inner])
    ids[first], ids[last] = ends[:, 0], ends[:, 1]
    lo = np.delete(np.arange(len(nodes)), last)
    seg_cls = np.repeat(cls, counts)
    parts.add(ids[lo], ids[lo + 1], seg_cls, bends, settlement, False)
    if two_way:
        parts.add(ids[lo + 1], ids[lo], seg_cls, bends, settlement, False)


def _motorways(parts: _Parts, lay: dict[str, Any], towns: list[np.ndarray], rng: np.random.Generator) -> None:
    """Add the motorways: per link, two one-way carriageways between the cities' interchanges (module doc)."""
    links, pos = lay["links"], lay["pos"]
    if not len(links):
        return
    cities = np.unique(links)
    xy = np.concatenate(parts.xy)
    hub_in, hub_out = {}, {}
    for c in cities.tolist():
        ids = towns[c]
        centre = ids[np.hypot(*(xy[ids] - pos[c]).T).argmin()]
        hub_in[c], hub_out[c] = parts.nodes(pos[c] + np.array([[0.0, -60.0], [0.0, 60.0]]))
        parts.add([hub_in[c], centre, hub_in[c]], [centre, hub_out[c], hub_out[c]], _LINK, None, -2, False)
    for a, b in ((links[:, 0], links[:, 1]), (links[:, 1], links[:, 0])):
        o = np.array([hub_out[int(i)] for i in a])
        i_ = np.array([hub_in[int(i)] for i in b])
        p0, p1 = pos[a], pos[b]
        d = p1 - p0
        normal = np.stack([d[:, 1], -d[:, 0]], axis=1) / np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-9)[:, None]
        counts = road_edges(np.hypot(*d.T), MOTORWAY_EDGE_M)
        nodes, bends = meander(p0, p1, counts, 0.015, rng)
        off = np.repeat(normal, counts + 1, axis=0) * _CARRIAGEWAY_M  # keep right
        nodes = nodes + off
        bends = bends + np.repeat(normal, counts, axis=0) * _CARRIAGEWAY_M
        _chains(
            parts,
            nodes,
            bends,
            counts,
            np.stack([o, i_], axis=1),
            np.full(len(a), _MOTORWAY),
            two_way=False,
            settlement=-2,
        )


def _generate(n_req: int, seed: int, town_share: float) -> tuple[_Parts, dict[str, Any]]:
    """One attempt: the layout, then the towns, rural roads and motorways."""
    rng = np.random.default_rng([seed, n_req, 39])
    lay = layout(n_req, town_share, rng)
    parts = _Parts()
    angles = rng.uniform(0.0, np.pi / 2, len(lay["sizes"]))
    grids = [town_grid(k, float(lay["sizes"][k]), seed) for k in range(lay["towns"])]
    kept = largest_parts(grids)
    towns = [place_town(parts, k, grids[k], kept[k], lay["pos"][k], float(angles[k])) for k in range(lay["towns"])]
    towns += _hamlets(parts, lay, rng)
    _rural_roads(parts, lay, towns, rng)
    _motorways(parts, lay, towns, rng)
    return parts, lay


def synthetic_country(
    n_edges: int = 100_000,
    seed: int = 0,
    *,
    max_elevation_m: float = 300.0,
    max_incline: float = 0.06,
    origin_lonlat: tuple[float, float] = (10.0, 51.0),
    name: str | None = None,
) -> RoadNetwork:
    """Generate a deterministic synthetic country with about ``n_edges`` directed road edges (module doc).

    Args:
        n_edges: requested number of directed edges (2,000 .. 10,000,000); the result is within a few percent.
        seed: random seed; the same ``(n_edges, seed, options)`` always gives the identical network.
        max_elevation_m: cap of the elevation range in metres (>= 0; 0 gives a flat country).
        max_incline: steepest terrain slope at a junction, as rise/run (0..0.5).
        origin_lonlat: (lon, lat) in degrees of the land's centre (``|lat| <= 60``).
        name: network name (default ``"synthetic-country:N_EDGES:SEED"``).

    Returns:
        A strongly connected :class:`RoadNetwork` with edge ids ``"e0", "e1", ...`` and junction ids ``"n<k>"``;
        ``meta`` holds each edge's OSM class (``road_class``), its settlement (``settlement``: the town's rank from
        0 = the largest, -1 a rural road, -2 a motorway or ramp), whether it is one-way (``oneway``), the settlement
        sizes in edges (``settlement_edges``), the land area (``area_km2``) and the seed.

    Raises:
        ParameterError: for an invalid parameter.
    """
    p = country_params(
        n_edges, seed, max_elevation_m=max_elevation_m, max_incline=max_incline, origin_lonlat=origin_lonlat
    )
    n_req, seed_i = p["n_edges"], p["seed"]
    share, best = TOWN_EDGE_SHARE, None
    for _ in range(4):  # calibrate the settlements' edges: keep the attempt closest to the request
        parts, lay = _generate(n_req, seed_i, share)
        xy, frm, to, cls, bx, by, settle, urban = parts.arrays()
        turns = junction_turns(frm, to, n_nodes=len(xy))
        kept = largest_scc_edges(len(frm), turns)
        if best is None or abs(len(kept) - n_req) < abs(len(best[2]) - n_req):
            best = (parts, lay, kept, turns)
        if abs(len(kept) - n_req) <= 0.02 * n_req:
            break
        town = int(np.count_nonzero(settle[kept] >= 0))
        share = share * (1.0 + (n_req - len(kept)) / max(town, 1))
    assert best is not None
    parts, lay, kept, turns = best
    xy, frm, to, cls, bx, by, settle, urban = parts.arrays()
    return _network(p, name, xy, kept, turns, frm, to, cls, np.stack([bx, by], axis=1), settle, urban, lay)


def _network(
    p: dict[str, Any],
    name: str | None,
    xy: np.ndarray,
    kept: np.ndarray,
    turns: np.ndarray,
    frm: np.ndarray,
    to: np.ndarray,
    cls: np.ndarray,
    bend: np.ndarray,
    settle: np.ndarray,
    urban: np.ndarray,
    lay: dict[str, Any],
) -> RoadNetwork:
    """The :class:`RoadNetwork` of the kept edges: geometry, terrain, slope lengths, speeds and meta."""
    remap = np.full(len(frm), -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    t = remap[turns]
    turns = t[(t >= 0).all(axis=1)]
    frm, to, cls, bend, settle, urban = frm[kept], to[kept], cls[kept], bend[kept], settle[kept], urban[kept]
    rng = np.random.default_rng([p["seed"], p["n_edges"], 40])
    extent = float(np.ptp(xy, axis=0).max())
    z = (
        terrain(xy[:, 0], xy[:, 1], extent, rng, p["max_elevation_m"], p["max_incline"])
        if p["max_elevation_m"] > 0 and p["max_incline"] > 0
        else np.zeros(len(xy))
    )
    curved = ~np.isnan(bend[:, 0])
    npts = np.where(curved, 3, 2)
    ends = np.cumsum(npts)
    starts = ends - npts
    pts = np.empty((int(ends[-1]), 2))
    pts[starts], pts[ends - 1], pts[starts[curved] + 1] = xy[frm], xy[to], bend[curved]
    seg = np.diff(pts, axis=0)
    seg_len = np.hypot(seg[:, 0], seg[:, 1])
    seg_len[ends[:-1] - 1] = 0.0  # no segment joins two polylines
    planar = np.add.reduceat(np.r_[seg_len, 0.0], starts)
    lon0, lat0 = p["origin_lonlat"]
    centre = 0.5 * (xy.min(axis=0) + xy.max(axis=0))
    lat = lat0 + np.degrees((pts[:, 1] - centre[1]) / EARTH_RADIUS_M)
    lon = lon0 + np.degrees((pts[:, 0] - centre[0]) / (EARTH_RADIUS_M * np.cos(np.radians(lat))))
    names = np.array(CLASSES)[cls]
    # posted limit and free-flow speed per (class, urban): 14 values computed once, gathered per edge
    kind_limit = np.array([default_speed_kmh(c, area) for area in ("rural", "urban") for c in CLASSES]) / 3.6
    speed = (kind_limit * free_flow_factor(kind_limit, np.array(CLASSES * 2)))[cls + len(CLASSES) * urban]
    pair = np.sort(frm * len(xy) + to)  # is the reverse pair an edge too (np.isin's hash path: ~1.3 s at 1M)
    rev = to * len(xy) + frm
    back = pair[np.minimum(np.searchsorted(pair, rev), len(pair) - 1)] == rev
    meta = {
        "loader": "synthetic-country",
        "crs": "EPSG:4326",
        "seed": p["seed"],
        "requested_edges": p["n_edges"],
        "origin_lonlat": (lon0, lat0),
        "road_class": names,
        "oneway": ~back,
        "settlement": settle.astype(np.int32),
        "settlement_edges": np.bincount(settle[settle >= 0], minlength=len(lay["sizes"])).astype(np.int64),
        "area_km2": float(lay["side"]) ** 2 / 1e6,
        "elevation": "synthetic terrain",
    }
    m = len(frm)
    # the junction ids "n<k>" sorted as strings and each edge's index into them: what node_codes would find
    used = np.flatnonzero(np.bincount(np.concatenate([frm, to]), minlength=len(xy)))
    order = decimal_order(used)
    rank = np.full(len(xy), -1, np.int64)
    rank[used[order]] = np.arange(len(order))
    ids, fi, ti = prefixed_ids("n", used[order]), rank[frm], rank[to]
    net = RoadNetwork(
        name=name or f"synthetic-country:{p['n_edges']}:{p['seed']}",
        edge_ids=prefixed_ids("e", np.arange(m)),
        from_node=ids[fi],
        to_node=ids[ti],
        length_m=slope_length(planar, z[to] - z[frm]),
        speed_mps=speed,
        z_from_m=z[frm],
        z_to_m=z[to],
        geometry=Polylines.from_counts(np.column_stack([lon, lat]), npts),
        turns=turns,
        meta=meta,
    )
    set_junction_codes(net, fi, ti, ids)
    return net


def country_stats(net: RoadNetwork) -> dict[str, float]:
    """What a generated country is made of (the module doc's statistics), from its ``meta``: ``area_km2``, ``towns``
    and ``hamlets`` (settlements of at least / below :data:`VILLAGE_MIN_EDGES` edges), ``largest_town_edges``,
    ``road_km_per_km2`` (a two-way road and a motorway's two carriageways counted once), ``town_share`` (of the
    edges, hamlets included), ``rural_share`` and ``motorway_share`` (of the road length)."""
    m = net.meta
    cls, settle, sizes = m["road_class"], m["settlement"], m["settlement_edges"]
    per_road = np.where(m["oneway"] & (cls != "motorway"), 1.0, 0.5) * net.length_m
    km = float(per_road.sum()) / 1e3
    return {
        "area_km2": float(m["area_km2"]),
        "towns": int(np.count_nonzero(sizes >= VILLAGE_MIN_EDGES)),
        "hamlets": int(np.count_nonzero((sizes > 0) & (sizes < VILLAGE_MIN_EDGES))),
        "largest_town_edges": int(sizes.max()),
        "road_km_per_km2": km / float(m["area_km2"]),
        "town_share": float(np.mean(settle >= 0)),
        "rural_share": float(per_road[settle == -1].sum()) / 1e3 / km,
        "motorway_share": float(per_road[cls == "motorway"].sum()) / 1e3 / km,
    }


def load_synthetic_country(n_edges: int = 100_000, seed: int = 0, **options: Any) -> RoadNetwork:
    """:func:`synthetic_country` ``(n_edges, seed, **options)`` through the compute cache (kind
    ``synthetic-country``, :func:`~evroute.network.netstore.cached_network`); parameters checked first."""
    name = options.pop("name", None)
    params = country_params(n_edges, seed, **options)
    return cached_network(
        "synthetic-country",
        {"params": params, "name": name, "version": COUNTRY_VERSION},
        lambda: synthetic_country(n_edges, seed, name=name, **options),
        what="synthetic country",
    )


__all__ = [
    "CLASSES",
    "COUNTRY_VERSION",
    "country_params",
    "country_stats",
    "load_synthetic_country",
    "synthetic_country",
]
