"""The layout of a synthetic country (:mod:`evroute.network.country`) before any street is built: settlement
sizes (Zipf), their places on the land, the rural roads (the Gabriel graph of the settlements) and the motorway links
(the Gabriel graph of the largest cities), and the meandering node chains roads are cut into."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.spatial import Delaunay, cKDTree

#: km of road (a two-way road counted once, a motorway once) per km^2 of land.
ROAD_DENSITY_KM_PER_KM2 = 2.0
#: share of the road length on motorways.
MOTORWAY_LENGTH_SHARE = 0.015
#: the smallest village (directed edges).
VILLAGE_MIN_EDGES = 60
#: the largest settlement's share of the settlement edges is ``1 / H_K`` (Zipf, exponent 1).
ZIPF_EXPONENT = 1.0
#: directed edges per grid junction of a town (measured on the town grids, refined by the size calibration).
TOWN_EDGES_PER_NODE = 2.9
#: mean block size of the town grids (m; uniform 70-200 m).
BLOCK_M = 135.0
#: least gap between two settlements' discs (m).
TOWN_GAP_M = 400.0
#: land per settlement (km^2; towns, villages and hamlets): so many that the rural roads between neighbouring
#: settlements carry about a third of the road length (a calibration, see the module doc's rural share).
SETTLEMENT_AREA_KM2 = 3.5
#: radius of a hamlet's disc and the least distance between two hamlets (m).
HAMLET_RADIUS_M = 250.0
HAMLET_SPACING_M = 700.0
#: target edge length of rural roads and motorways (m): a road of length D gets ceil(D / target) edges, jittered.
RURAL_EDGE_M = 450.0
MOTORWAY_EDGE_M = 1200.0


def gabriel_edges(pts: np.ndarray) -> np.ndarray:
    """``(G, 2)`` index pairs ``i < j`` of the Gabriel graph of ``(K, 2)`` points (``K >= 2``): the Delaunay edges
    whose diametral circle holds no other point (it is planar and contains the minimum spanning tree, so it is
    connected); for fewer than 4 points or collinear ones, the path in x order."""
    k = len(pts)
    try:
        tri = Delaunay(pts).simplices if k >= 4 else None
    except Exception:  # qhull refuses degenerate (collinear) input
        tri = None
    if tri is None:
        o = np.argsort(pts[:, 0])
        return np.sort(np.stack([o[:-1], o[1:]], axis=1), axis=1)
    a, b, c = (np.concatenate([tri[:, i], tri[:, j], tri[:, m]]) for i, j, m in ((0, 1, 2), (1, 2, 0), (2, 0, 1)))
    inside = np.einsum("ij,ij->i", pts[c] - pts[a], pts[c] - pts[b]) < 0  # c in the circle over a-b
    e = np.sort(np.stack([a, b], axis=1), axis=1)
    bad = np.unique(e[inside], axis=0)
    e = np.unique(e, axis=0)
    if len(bad):
        keys = e[:, 0] * k + e[:, 1]
        e = e[~np.isin(keys, bad[:, 0] * k + bad[:, 1])]
    return e


def _first_free(cand: np.ndarray, pos: np.ndarray, reach: np.ndarray) -> int | None:
    """Index of the first of the ``(T, 2)`` candidates at least ``reach`` ``(i,)`` from each of the ``(i, 2)`` centres
    ``pos`` (m), or ``None``."""
    d = np.hypot(cand[:, None, 0] - pos[None, :, 0], cand[:, None, 1] - pos[None, :, 1])
    ok = np.flatnonzero((d >= reach[None, :]).all(axis=1))
    return int(ok[0]) if len(ok) else None


def place_discs(radius: np.ndarray, side: float, rng: np.random.Generator) -> np.ndarray:
    """``(K, 2)`` centres in ``[0, side]^2`` of discs of ``radius`` (largest first) at least :data:`TOWN_GAP_M` apart
    (the square grows by 5 % whenever 200 more candidates for one disc fail)."""
    pos = np.zeros((len(radius), 2))
    for i, r in enumerate(radius):
        tries = 16  # most discs fit at one of the first few candidates: the land is mostly empty
        while True:
            cand = rng.uniform(r, max(side - r, r + 1.0), (tries, 2))
            if i == 0:
                pos[0] = cand[0]
                break
            reach = radius[:i] + r + TOWN_GAP_M
            first = _first_free(cand[:1], pos[:i], reach)  # usually the first candidate fits: test it alone first
            if first is None and tries > 1:
                first = _first_free(cand[1:], pos[:i], reach)
                first = None if first is None else first + 1
            if first is not None:
                pos[i] = cand[first]
                break
            if tries == 200:
                side *= 1.05
            tries = 200
    return pos


def meander(
    p0: np.ndarray, p1: np.ndarray, counts: np.ndarray, amp: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Points along ``R`` roads from ``p0`` to ``p1`` (each ``(R, 2)``): for road r, ``counts[r] + 1`` nodes at
    jittered even steps and a bend point halfway between consecutive nodes, on the curve ``chord + D sum_h a_h
    sin(h pi t) n`` (``a_h ~ N(0, amp / h)``, ``n`` the chord's normal).  Returns ``(nodes (sum(counts)+R, 2), bends
    (sum(counts), 2))``, road by road."""
    r = len(p0)
    a = rng.normal(0.0, amp, (r, 3)) / np.arange(1, 4)
    total = int(counts.sum())
    road_n = np.repeat(np.arange(r), counts + 1)
    k = np.arange(len(road_n)) - np.repeat(np.cumsum(counts + 1) - (counts + 1), counts + 1)
    cn = counts[road_n].astype(np.float64)
    jitter = np.where((k > 0) & (k < cn), rng.uniform(-0.2, 0.2, len(k)), 0.0)
    t_node = (k + jitter) / cn
    first = np.cumsum(counts + 1) - (counts + 1)
    last = first + counts
    road_b = np.repeat(np.arange(r), counts)
    lo = np.delete(np.arange(len(road_n)), last)  # every node but each road's last starts a segment
    t_bend = 0.5 * (t_node[lo] + t_node[lo + 1])
    assert len(t_bend) == total

    def curve(road: np.ndarray, t: np.ndarray) -> np.ndarray:
        d = p1[road] - p0[road]
        length = np.hypot(d[:, 0], d[:, 1])
        normal = np.stack([-d[:, 1], d[:, 0]], axis=1) / np.maximum(length, 1e-9)[:, None]
        off = sum(a[road, h - 1] * np.sin(h * np.pi * t) for h in (1, 2, 3)) * length
        return p0[road] + t[:, None] * d + off[:, None] * normal

    return curve(road_n, t_node), curve(road_b, t_bend)


def grid_radius(size: np.ndarray) -> np.ndarray:
    """Radius (m) of the disc around a town grid of ``size`` edges (half its diagonal)."""
    return 0.5 * np.sqrt(2.0 * np.maximum(size / TOWN_EDGES_PER_NODE, 9.0)) * BLOCK_M


def road_edges(length: np.ndarray, target: float) -> np.ndarray:
    """Edges per direction of roads of ``length`` metres: ``ceil(length / target)``, at least 1."""
    return np.maximum(np.ceil(length / target), 1).astype(np.int64)


def free_land(pos: np.ndarray, radius: np.ndarray, side: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``(n, 2)`` hamlet positions in ``[0, side]^2``, at least :data:`TOWN_GAP_M` outside every town disc
    (``pos``, ``radius``) and :data:`HAMLET_SPACING_M` from each other (candidates on a raster of free land)."""
    cell = 250.0
    g = int(np.ceil(side / cell)) + 1
    free = np.ones((g, g), bool)
    for (x, y), r in zip(pos.tolist(), (radius + TOWN_GAP_M).tolist(), strict=True):
        i0, i1 = max(int((x - r) / cell), 0), min(int((x + r) / cell) + 2, g)
        j0, j1 = max(int((y - r) / cell), 0), min(int((y + r) / cell) + 2, g)
        cx, cy = (np.arange(i0, i1) + 0.5) * cell, (np.arange(j0, j1) + 0.5) * cell
        free[i0:i1, j0:j1] &= (cx[:, None] - x) ** 2 + (cy[None, :] - y) ** 2 > (r + cell) ** 2
    cand = rng.uniform(0.0, side, (3 * n + 50, 2))
    cand = cand[free[(cand[:, 0] / cell).astype(int), (cand[:, 1] / cell).astype(int)]]
    close = cKDTree(cand).query_pairs(HAMLET_SPACING_M, output_type="ndarray")
    keep = np.ones(len(cand), bool)
    keep[close.max(axis=1) if len(close) else []] = False  # the later of each close pair goes
    return cand[keep][:n]


def layout(n_req: int, town_share: float, rng: np.random.Generator) -> dict[str, Any]:
    """Settlement sizes, radii and centres, rural roads and motorway links (before any street is built): the land
    is sized for :data:`ROAD_DENSITY_KM_PER_KM2` from the estimated road length, with one settlement per
    :data:`SETTLEMENT_AREA_KM2`; the Zipf sizes at least :data:`VILLAGE_MIN_EDGES` are town grids, the rest
    hamlets."""
    town_km = town_share * n_req * BLOCK_M / 2.0 / 1e3 * 1.05  # two edges per two-way street; bends, diagonals
    rural_km = (1.0 - town_share) * n_req * RURAL_EDGE_M * 0.75 / 2.0 / 1e3
    area = (town_km + rural_km) / ROAD_DENSITY_KM_PER_KM2
    side = float(np.sqrt(area) * 1e3)
    k_total = max(8, int(round(area / SETTLEMENT_AREA_KM2)))
    w = np.arange(1, k_total + 1, dtype=np.float64) ** -ZIPF_EXPONENT
    sizes = town_share * n_req * w / w.sum()
    n_towns = max(2, int(np.count_nonzero(sizes >= VILLAGE_MIN_EDGES)))
    hamlet_edges = 2 * (1 + (sizes[n_towns:] >= 20) + (sizes[n_towns:] >= 40)).sum()  # _hamlets' lanes
    sizes[:n_towns] *= (town_share * n_req - hamlet_edges) / sizes[:n_towns].sum()  # the towns take the rest
    radius = grid_radius(sizes[:n_towns])
    pos = place_discs(radius, side, rng)
    side = max(side, float(pos.max()) + 1.0)
    hamlets = free_land(pos, radius, side, k_total - n_towns, rng)
    pos = np.concatenate([pos, hamlets])
    sizes = sizes[: len(pos)]
    radius = np.r_[radius, np.full(len(hamlets), HAMLET_RADIUS_M)]
    roads = gabriel_edges(pos)
    # motorways: the Gabriel graph of the M largest cities, M the least giving the motorway share of the length
    want = MOTORWAY_LENGTH_SHARE * (town_km + rural_km) * 1e3
    links = np.empty((0, 2), np.int64)
    for m in range(2, n_towns + 1):
        links = gabriel_edges(pos[:m])
        if np.hypot(*(pos[links[:, 0]] - pos[links[:, 1]]).T).sum() >= want:
            break
    return {
        "sizes": sizes,
        "radius": radius,
        "pos": pos,
        "roads": roads,
        "links": links,
        "side": side,
        "towns": n_towns,
    }


__all__ = [
    "BLOCK_M",
    "HAMLET_RADIUS_M",
    "HAMLET_SPACING_M",
    "MOTORWAY_EDGE_M",
    "MOTORWAY_LENGTH_SHARE",
    "ROAD_DENSITY_KM_PER_KM2",
    "RURAL_EDGE_M",
    "SETTLEMENT_AREA_KM2",
    "TOWN_EDGES_PER_NODE",
    "TOWN_GAP_M",
    "VILLAGE_MIN_EDGES",
    "ZIPF_EXPONENT",
    "free_land",
    "gabriel_edges",
    "grid_radius",
    "layout",
    "meander",
    "place_discs",
    "road_edges",
]
