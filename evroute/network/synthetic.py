"""A deterministic synthetic city: the offline default network for demos and tests.

The city is an irregular street grid: grid lines with random spacing (70-200 m), jittered junctions,
a few removed street segments, occasional diagonal streets across blocks and gently curved streets.
Every grid line has a road class -- residential 30 km/h, urban 50 km/h, arterial 70 km/h (every
6th line) and expressway 90 km/h (every 16th line); some residential/urban lines are one-way, in
alternating directions like a real grid.  The terrain is a smooth sum of random low-frequency
sinusoids (hills), scaled so that the elevation range stays within ``max_elevation_m`` and the
steepest slope at a junction is about ``max_incline``.  Only the largest strongly connected part of
the turn graph is kept, so every edge can reach every other edge.

Everything is vectorised with numpy: 200,000 edges take a few seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.errors import ParameterError, check_positive
from evroute.network._graph import junction_turns, largest_scc_edges
from evroute.network.elevation import slope_length
from evroute.network.polylines import Polylines
from evroute.network.road_network import RoadNetwork

#: Speed limit of each road class in km/h: residential, urban, arterial, expressway.
CLASS_SPEEDS_KMH: tuple[float, ...] = (30.0, 50.0, 70.0, 90.0)
EARTH_RADIUS_M = 6_371_008.8
_EDGES_PER_NODE = 3.0  # first guess of directed edges per junction, refined by calibration


def _line_classes(n: int, rng: np.random.Generator) -> np.ndarray:
    """Road class of ``n`` parallel grid lines (0 residential .. 3 expressway)."""
    idx = np.arange(n)
    cls = np.where(idx % 3 == 1, 1, 0)
    cls[(idx - rng.integers(0, 6)) % 6 == 0] = 2
    cls[(idx - rng.integers(0, 16)) % 16 == 0] = 3
    return cls


def _oneway_dirs(cls: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Per grid line: 0 two-way, +1 one-way along increasing index, -1 one-way along decreasing index."""
    idx = np.arange(len(cls))
    one = (cls <= 1) & (rng.random(len(cls)) < fraction)
    return np.where(one, np.where(idx % 2 == 0, 1, -1), 0)


def _digit_counts(values: np.ndarray) -> np.ndarray:
    """``(n,)`` lengths of the decimal strings of ``(n,)`` non-negative int64 ``values``."""
    v = np.asarray(values, dtype=np.int64)
    if len(v) and v.min() < 0:
        raise ValueError("decimal strings of negative numbers")
    ndig = np.ones(len(v), np.int64)
    for k in range(1, 19):
        ndig += v >= 10**k
    return ndig


def prefixed_ids(prefix: str, values: np.ndarray) -> np.ndarray:
    """``np.char.add(prefix, values.astype(str))`` for ``(n,)`` non-negative integers ``values``: the same array,
    dtype included (``<U`` of ``len(prefix) + 21``: an int64's str has 21 code points, numpy's ``''`` one), written
    digit by digit into its code points (a million ids: ~0.2 s instead of ~0.5 s)."""
    v = np.asarray(values, dtype=np.int64)
    ndig = _digit_counts(v)
    width = max(len(prefix), 1) + 21  # numpy's '' is a <U1
    out = np.zeros((width, len(v)), np.uint32)  # code point j of every id in row j: contiguous writes
    out[: len(prefix)] = np.array([ord(c) for c in prefix], dtype=np.uint32)[:, None]
    small = not len(v) or int(v.max()) < 2**32  # uint32 divisions are ~4 times faster than int64 ones
    ten = np.uint32(10) if small else np.int64(10)
    for length in np.unique(ndig).tolist():
        rows = np.flatnonzero(ndig == length)
        q = v[rows].astype(ten.dtype)
        for i in range(length - 1, -1, -1):  # the last digit first
            q, r = np.divmod(q, ten)
            out[len(prefix) + i, rows] = r + ord("0")
    return np.ascontiguousarray(out.T).view(f"<U{width}").reshape(len(v))


def decimal_order(values: np.ndarray) -> np.ndarray:
    """The permutation that sorts ``(n,)`` distinct non-negative integers by their decimal strings (``"10" < "9"``,
    a prefix first: ``"1" < "10"``), the order of ``np.argsort(values.astype(str))``."""
    ndig = _digit_counts(values)
    width = int(ndig.max()) if len(ndig) else 1
    if width > 18:
        raise ValueError("decimal_order takes numbers below 10**18")
    padded = np.asarray(values, dtype=np.int64) * 10 ** (width - ndig)  # "1", "10" -> 10, 10; "9" -> 90
    return np.lexsort((ndig, padded))


def terrain(
    x: np.ndarray, y: np.ndarray, extent: float, rng: np.random.Generator, max_elev: float, max_incline: float
) -> np.ndarray:
    """Smooth hilly terrain (m) at the points ``(x, y)`` (m): a sum of random plane waves."""
    k_waves = 12
    lam = rng.uniform(800.0, max(1200.0, min(5000.0, extent)), k_waves)  # wavelengths, m
    theta = rng.uniform(0.0, 2 * np.pi, k_waves)
    kx, ky = 2 * np.pi / lam * np.cos(theta), 2 * np.pi / lam * np.sin(theta)
    amp = rng.uniform(0.3, 1.0, k_waves) * lam / lam.max()  # long waves dominate
    phase = rng.uniform(0.0, 2 * np.pi, k_waves)
    z = np.zeros_like(x)
    gx = np.zeros_like(x)
    gy = np.zeros_like(x)
    for i in range(k_waves):
        arg = kx[i] * x + ky[i] * y + phase[i]
        z += amp[i] * np.sin(arg)
        c = amp[i] * np.cos(arg)
        gx += c * kx[i]
        gy += c * ky[i]
    grad = float(np.sqrt(gx**2 + gy**2).max())
    span = float(z.max() - z.min())
    scale = max_incline / grad if grad > 0 else 0.0
    if span * scale > max_elev:
        scale = max_elev / span
    z = z * scale
    return z - z.min() + rng.uniform(0.0, 20.0)


def grid_streets(
    nr: int,
    nc: int,
    seed: int,
    oneway_fraction: float,
    removal_fraction: float,
    diagonal_fraction: float,
    curved_fraction: float,
) -> dict[str, Any]:
    """The random part of :func:`build_grid` (all its draws): the junctions ``px, py`` (N,), every directed edge's
    junctions ``frm, to``, street segment ``seg`` and direction ``reverse`` (E,) before the largest strongly connected
    part is taken, and per segment its class, bend and length (the keys of :func:`build_grid`, without ``turns``)."""
    rng = np.random.default_rng([seed, nr, nc])
    ys = np.concatenate([[0.0], np.cumsum(rng.uniform(70.0, 200.0, nr - 1))])
    xs = np.concatenate([[0.0], np.cumsum(rng.uniform(70.0, 200.0, nc - 1))])
    xs -= xs.mean()
    ys -= ys.mean()
    n_nodes = nr * nc
    jitter = np.clip(rng.normal(0.0, 10.0, (2, n_nodes)), -22.0, 22.0)
    px = np.tile(xs, nr) + jitter[0]
    py = np.repeat(ys, nc) + jitter[1]
    row_cls, col_cls = _line_classes(nr, rng), _line_classes(nc, rng)
    row_dir, col_dir = _oneway_dirs(row_cls, oneway_fraction, rng), _oneway_dirs(col_cls, oneway_fraction, rng)

    # street segments between neighbouring junctions: (a, b, class, direction) with a < b in grid order
    r, c = np.divmod(np.arange(n_nodes), nc)
    h = c < nc - 1
    v = r < nr - 1
    seg_a = np.concatenate([np.flatnonzero(h), np.flatnonzero(v)])
    seg_b = np.concatenate([np.flatnonzero(h) + 1, np.flatnonzero(v) + nc])
    seg_cls = np.concatenate([row_cls[r[h]], col_cls[c[v]]])
    seg_dir = np.concatenate([row_dir[r[h]], col_dir[c[v]]])
    # diagonal residential streets across some blocks (at most one per block, so they never cross)
    cells = np.flatnonzero(h & v)
    cells = cells[rng.random(len(cells)) < diagonal_fraction]
    anti = rng.random(len(cells)) < 0.5
    seg_a = np.concatenate([seg_a, np.where(anti, cells + 1, cells)])
    seg_b = np.concatenate([seg_b, np.where(anti, cells + nc, cells + nc + 1)])
    seg_cls = np.concatenate([seg_cls, np.zeros(len(cells), dtype=seg_cls.dtype)])
    seg_dir = np.concatenate([seg_dir, np.zeros(len(cells), dtype=seg_dir.dtype)])
    # remove some minor street segments
    drop_p = np.where(seg_cls == 0, removal_fraction, np.where(seg_cls == 1, removal_fraction / 2, 0.0))
    keep = rng.random(len(seg_a)) >= drop_p
    seg_a, seg_b, seg_cls, seg_dir = seg_a[keep], seg_b[keep], seg_cls[keep], seg_dir[keep]

    # geometry of each segment from a to b: straight, or bent at its midpoint
    n_seg = len(seg_a)
    ax, ay, bx, by = px[seg_a], py[seg_a], px[seg_b], py[seg_b]
    dx, dy = bx - ax, by - ay
    chord = np.hypot(dx, dy)
    curved = (seg_cls <= 1) & (rng.random(n_seg) < curved_fraction)
    bend = np.where(curved, rng.uniform(-0.15, 0.15, n_seg), 0.0)
    mx, my = (ax + bx) / 2 - bend * dy, (ay + by) / 2 + bend * dx
    seg_len = np.where(curved, np.hypot(mx - ax, my - ay) + np.hypot(bx - mx, by - my), chord)

    # directed edges: forward (a -> b) unless one-way backwards; backward (b -> a) unless one-way forwards
    fwd = seg_dir >= 0
    bwd = seg_dir <= 0
    s_idx = np.concatenate([np.flatnonzero(fwd), np.flatnonzero(bwd)])
    reverse = np.concatenate([np.zeros(fwd.sum(), bool), np.ones(bwd.sum(), bool)])
    order = np.lexsort((reverse, s_idx))  # both directions of a street next to each other
    s_idx, reverse = s_idx[order], reverse[order]
    frm = np.where(reverse, seg_b[s_idx], seg_a[s_idx])
    to = np.where(reverse, seg_a[s_idx], seg_b[s_idx])

    return dict(
        px=px,
        py=py,
        frm=frm,
        to=to,
        seg=s_idx,
        reverse=reverse,
        seg_cls=seg_cls,
        curved=curved,
        mx=mx,
        my=my,
        seg_len=seg_len,
        extent=max(np.ptp(xs), np.ptp(ys)),
    )


def build_grid(
    nr: int,
    nc: int,
    seed: int,
    oneway_fraction: float,
    removal_fraction: float,
    diagonal_fraction: float,
    curved_fraction: float,
    max_elev: float,
    max_incline: float,
) -> dict[str, Any]:
    """One generation attempt on an ``nr x nc`` grid (metres, centred on the origin): the junction positions
    ``px, py`` (N,), the kept directed edges' junctions ``frm, to``, their street segment ``seg`` and direction
    ``reverse`` (E,), the turns (C, 2) of the largest strongly connected part, and per segment its class
    ``seg_cls`` (0 residential .. 3 expressway), bend (``curved``, ``mx, my``) and length ``seg_len`` (m): the
    streets of :func:`grid_streets` cut to their largest strongly connected part."""
    g = grid_streets(nr, nc, seed, oneway_fraction, removal_fraction, diagonal_fraction, curved_fraction)
    frm, to = g["frm"], g["to"]
    turns = junction_turns(frm, to, n_nodes=nr * nc)
    kept = largest_scc_edges(len(frm), turns)
    remap = np.full(len(frm), -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    t = remap[turns]
    for key in ("frm", "to", "seg", "reverse"):
        g[key] = g[key][kept]
    return {**g, "turns": t[(t >= 0).all(axis=1)]}


def synthetic_params(
    n_edges: int = 1000,
    seed: int = 0,
    *,
    oneway_fraction: float = 0.3,
    removal_fraction: float = 0.08,
    diagonal_fraction: float = 0.04,
    curved_fraction: float = 0.15,
    max_elevation_m: float = 150.0,
    max_incline: float = 0.09,
    origin_lonlat: tuple[float, float] = (6.1, 49.6),
) -> dict[str, Any]:
    """The checked parameters of :func:`synthetic_city` (``name`` aside), with ``n_edges`` and ``seed`` as ``int``,
    ``max_elevation_m`` as returned by the check and ``origin_lonlat`` as a tuple of two floats: everything the
    generated city depends on (the key of its cache entry, :mod:`evroute.network.netstore`).

    Raises:
        ParameterError: for an invalid parameter.
    """
    try:
        n_req = int(n_edges)
        seed_i = int(seed)
    except (TypeError, ValueError):
        raise ParameterError(f"n_edges and seed must be integers, got {n_edges!r} and {seed!r}") from None
    if n_req != n_edges or not 20 <= n_req <= 5_000_000:
        raise ParameterError(f"n_edges must be an integer in 20..5000000, got {n_edges!r}")
    if seed_i < 0:
        raise ParameterError(f"seed must be >= 0, got {seed!r}")
    for pname, val, hi in (
        ("oneway_fraction", oneway_fraction, 1.0),
        ("removal_fraction", removal_fraction, 0.5),
        ("diagonal_fraction", diagonal_fraction, 1.0),
        ("curved_fraction", curved_fraction, 1.0),
        ("max_incline", max_incline, 0.5),
    ):
        if check_positive(pname, val, allow_zero=True) > hi:
            raise ParameterError(f"{pname} must be in [0, {hi}], got {val!r}")
    max_elev = check_positive("max_elevation_m", max_elevation_m, allow_zero=True)
    lon0, lat0 = (float(v) for v in origin_lonlat)
    if not (np.isfinite(lon0) and np.isfinite(lat0) and -180 <= lon0 <= 180 and -85 <= lat0 <= 85):
        raise ParameterError(f"origin_lonlat must be (lon, lat) with |lat| <= 85, got {origin_lonlat!r}")

    return {
        "n_edges": n_req,
        "seed": seed_i,
        "oneway_fraction": float(oneway_fraction),
        "removal_fraction": float(removal_fraction),
        "diagonal_fraction": float(diagonal_fraction),
        "curved_fraction": float(curved_fraction),
        "max_elevation_m": max_elev,
        "max_incline": float(max_incline),
        "origin_lonlat": (lon0, lat0),
    }


def synthetic_city(
    n_edges: int = 1000,
    seed: int = 0,
    *,
    oneway_fraction: float = 0.3,
    removal_fraction: float = 0.08,
    diagonal_fraction: float = 0.04,
    curved_fraction: float = 0.15,
    max_elevation_m: float = 150.0,
    max_incline: float = 0.09,
    origin_lonlat: tuple[float, float] = (6.1, 49.6),
    name: str | None = None,
) -> RoadNetwork:
    """Generate a deterministic synthetic city with about ``n_edges`` directed road edges.

    Args:
        n_edges: requested number of directed edges (20 .. 5,000,000); the result is within a few percent.
        seed: random seed; the same ``(n_edges, seed, options)`` always gives the identical network.
        oneway_fraction: probability that a residential/urban grid line is one-way (0..1).
        removal_fraction: probability that a residential street segment is removed (0..0.5).
        diagonal_fraction: probability that a block gets a diagonal street (0..1).
        curved_fraction: probability that a minor street is bent (0..1).
        max_elevation_m: cap of the elevation range in metres (>= 0; 0 gives a flat city).
        max_incline: steepest terrain slope at a junction, as rise/run (0..0.5).
        origin_lonlat: (lon, lat) in degrees of the city centre; geometry uses a local equirectangular projection.
        name: network name (default ``"synthetic:N_EDGES:SEED"``).

    Returns:
        A strongly connected :class:`RoadNetwork` with edge ids ``"e0", "e1", ...`` and junction ids ``"n<k>"``;
        ``meta`` holds the grid size, the road class of every edge (``meta["road_class"]``) and the seed.

    Raises:
        ParameterError: for an invalid parameter.
    """
    p = synthetic_params(
        n_edges,
        seed,
        oneway_fraction=oneway_fraction,
        removal_fraction=removal_fraction,
        diagonal_fraction=diagonal_fraction,
        curved_fraction=curved_fraction,
        max_elevation_m=max_elevation_m,
        max_incline=max_incline,
        origin_lonlat=origin_lonlat,
    )
    n_req, seed_i, max_elev = p["n_edges"], p["seed"], p["max_elevation_m"]
    lon0, lat0 = p["origin_lonlat"]

    # calibrate the grid size: a few deterministic attempts, keep the one closest to the request
    n_nodes = n_req / _EDGES_PER_NODE
    best = None
    for _ in range(4):
        nr = max(3, int(round(np.sqrt(n_nodes))))
        nc = max(3, int(round(n_nodes / nr)))
        res = build_grid(
            nr, nc, seed_i, oneway_fraction, removal_fraction, diagonal_fraction, curved_fraction, max_elev, max_incline
        )
        got = len(res["frm"])
        if best is None or abs(got - n_req) < abs(len(best[2]["frm"]) - n_req):
            best = (nr, nc, res)
        if abs(got - n_req) <= 0.02 * n_req or got == 0:
            break
        n_nodes = nr * nc * n_req / got
    assert best is not None
    nr, nc, res = best
    rng = np.random.default_rng([seed_i, nr, nc, 1])
    px, py = res["px"], res["py"]
    z_node = (
        terrain(px, py, res["extent"], rng, max_elev, max_incline)
        if max_elev > 0 and max_incline > 0
        else np.zeros_like(px)
    )

    frm, to, seg = res["frm"], res["to"], res["seg"]
    m = len(frm)
    # polylines in local metres: start, optional bend point, end
    curved = res["curved"][seg]
    npts = np.where(curved, 3, 2)
    ends = np.cumsum(npts)
    xy = np.empty((int(ends[-1]), 2))
    starts = ends - npts
    xy[starts, 0], xy[starts, 1] = px[frm], py[frm]
    xy[ends - 1, 0], xy[ends - 1, 1] = px[to], py[to]
    mid = starts[curved] + 1
    xy[mid, 0], xy[mid, 1] = res["mx"][seg[curved]], res["my"][seg[curved]]
    coslat = np.cos(np.radians(lat0))
    lonlat = np.column_stack(
        [lon0 + np.degrees(xy[:, 0] / (EARTH_RADIUS_M * coslat)), lat0 + np.degrees(xy[:, 1] / EARTH_RADIUS_M)]
    )
    # packed: polyline i is lonlat[starts[i]:ends[i]], no array object per edge (evroute.network.polylines)
    geometry = Polylines.from_counts(lonlat, npts)
    cls = res["seg_cls"][seg]
    speed = np.asarray(CLASS_SPEEDS_KMH)[cls] / 3.6
    label = name or f"synthetic:{n_req}:{seed_i}"
    meta = {
        "loader": "synthetic",
        "crs": "EPSG:4326",
        "seed": seed_i,
        "requested_edges": n_req,
        "grid": (nr, nc),
        "origin_lonlat": (lon0, lat0),
        "road_class": np.array(["residential", "urban", "arterial", "expressway"])[cls],
        "oneway": np.bincount(seg, minlength=int(seg.max()) + 1)[seg] == 1,
        "elevation": "synthetic terrain",
    }
    return RoadNetwork(
        name=label,
        edge_ids=np.char.add("e", np.arange(m).astype(str)),
        from_node=np.char.add("n", frm.astype(str)),
        to_node=np.char.add("n", to.astype(str)),
        length_m=slope_length(res["seg_len"][seg], z_node[to] - z_node[frm]),
        speed_mps=speed,
        z_from_m=z_node[frm],
        z_to_m=z_node[to],
        geometry=geometry,
        turns=res["turns"],
        meta=meta,
    )
