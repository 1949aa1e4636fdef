"""Inclines that describe roads: elevation smoothed along the roads, and a plausibility report of steep edges.

**Smoothing.**  Junction elevations from a DEM (SRTM: 30-90 m posts, metres of vertical noise) or from OSM ``ele``
tags derived from one are noisy, and the noise of two junctions 15 m apart becomes a grade of tens of percent.
:func:`smooth_elevations` replaces the junction elevations ``z0`` by the minimiser of

    sum_i  w_i (z_i - z0_i)^2  +  ell^2  sum_{roads (u, v)}  (z_u - z_v)^2 / h_uv

where ``h_uv`` is the horizontal length of the road piece between junctions ``u`` and ``v`` (both directions of a
two-way road count once) and ``w_i`` is half the length of the road pieces touching junction ``i`` (the stretch of
road it stands for).  On a long road this is the continuous problem ``min int (z - z0)^2 + ell^2 z'^2 ds``, whose
solution ``z - ell^2 z'' = z0`` is the moving average of ``z0`` with the distance weights
``exp(-|s| / ell) / (2 ell)``: a distance-weighted moving window of scale ``ell`` along the road, independent of how
the road is split into edges.  It is solved on the road graph, so a junction keeps one elevation (the potential
still telescopes along every route), a road is smoothed through the junctions it passes, and roads that only cross
(a bridge over a road, no shared junction) never mix.  Why this and not a max-grade-constrained fit: a cap would
make every edge plausible by construction and hide the data errors the plausibility report must name; the window
removes noise (white noise of s.d. ``sigma`` at spacing ``h`` leaves a grade s.d. of ``sigma sqrt(h / (4 ell^3))``,
3 % for ``sigma = 5 m``, ``h = 20 m``, ``ell = 50 m``), keeps grades that last longer than ``ell`` and keeps the
elevation change between junctions much further apart than ``ell``.

Junctions inside bridges and tunnels (touched only by ``meta["structures"]`` edges) get no data weight: their
elevation is the harmonic interpolation between the structure's ends, i.e. linear along the structure
(as :func:`evroute.network.elevation.interpolate_structures`), so a tunnel's grade is its portal-to-portal grade.

**Grade.**  :func:`grade` is the road-sign grade ``rise / run`` (``dz`` over the horizontal length); the
:attr:`RoadNetwork.incline` the energy model uses is ``dz`` over the slope length (the sine).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from evroute.network._graph import node_codes
from evroute.network.elevation import slope_length, structure_interior
from evroute.network.road_network import RoadNetwork

#: Smoothing scale ``ell`` (m) of the distance-weighted window along the roads (0 disables smoothing).
SMOOTH_LENGTH_M = 50.0
#: Grade (``rise / run``) above which an edge is reported as implausible for a public road.
STEEP_GRADE = 0.25
#: Steep edges named in the one-line load warning.
WARN_MAX_LISTED = 5


def horizontal_length_m(net: RoadNetwork) -> np.ndarray:
    """``(E,)`` horizontal length (m) of every edge, ``sqrt(length^2 - dz^2)`` (floored at 1 mm)."""
    dz = net.z_to_m - net.z_from_m
    return np.maximum(np.sqrt(np.maximum(net.length_m**2 - dz**2, 0.0)), 1e-3)


def grade(net: RoadNetwork) -> np.ndarray:
    """``(E,)`` signed road grade ``dz / horizontal length`` (dimensionless; 0.25 is a 25 % grade)."""
    return (net.z_to_m - net.z_from_m) / horizontal_length_m(net)


def smooth_junction_elevations(
    from_idx: np.ndarray,
    to_idx: np.ndarray,
    z_node: np.ndarray,
    horizontal_m: np.ndarray,
    length_scale_m: float,
    free: np.ndarray | None = None,
) -> np.ndarray:
    """Junction elevations smoothed along the roads (the minimiser in the module docstring).

    Args:
        from_idx, to_idx: ``(E,)`` junction index of each edge's start and end.
        z_node: ``(N,)`` junction elevations ``z0`` (m).
        horizontal_m: ``(E,)`` horizontal edge lengths (m, > 0).
        length_scale_m: window scale ``ell`` (m); 0 returns ``z_node`` unchanged.
        free: ``(N,)`` bool, junctions without data weight (inside bridges/tunnels): interpolated, not fitted.

    Returns:
        ``(N,)`` smoothed elevations (m).
    """
    z0 = np.asarray(z_node, dtype=np.float64)
    if length_scale_m <= 0 or len(z0) < 2:
        return z0.copy()
    n = len(z0)
    fi, ti = np.asarray(from_idx, dtype=np.int64), np.asarray(to_idx, dtype=np.int64)
    h = np.maximum(np.asarray(horizontal_m, dtype=np.float64), 1e-3)
    keep = fi != ti
    a, b, h = np.minimum(fi, ti)[keep], np.maximum(fi, ti)[keep], h[keep]
    pair, inv = np.unique(a * n + b, return_inverse=True)  # both directions of a road count once
    h_pair = np.bincount(inv, weights=h) / np.bincount(inv)
    pa, pb = pair // n, pair % n
    w = 0.5 * (np.bincount(pa, weights=h_pair, minlength=n) + np.bincount(pb, weights=h_pair, minlength=n))
    if free is not None:
        # no data weight inside structures; a tiny one keeps a structure with no end outside solvable
        w = np.where(np.asarray(free, dtype=bool), 1e-9 * max(float(w.mean()), 1.0), w)
    w = np.maximum(w, 1e-9)
    c = length_scale_m**2 / h_pair
    adj = sp.coo_matrix((np.concatenate([c, c]), (np.concatenate([pa, pb]), np.concatenate([pb, pa]))), shape=(n, n))
    adj = adj.tocsr()
    system = sp.diags(w + np.asarray(adj.sum(axis=1)).ravel()) - adj
    return np.atleast_1d(spsolve(system.tocsc(), w * z0))


def smooth_elevations(net: RoadNetwork, length_scale_m: float = SMOOTH_LENGTH_M) -> RoadNetwork:
    """Copy of ``net`` with junction elevations smoothed along the roads and slope lengths to match.

    Bridge/tunnel interiors (``net.meta["structures"]``) are interpolated between the structure ends.  The
    horizontal lengths are kept; ``length_m`` becomes the slope length of the new rise.  ``meta["elevation_smoothing"]``
    records the scale.  ``length_scale_m <= 0`` or a flat network returns ``net`` itself.
    """
    if length_scale_m <= 0 or not (np.any(net.z_from_m != 0) or np.any(net.z_to_m != 0)):
        return net
    (fi, ti), uniq = node_codes(net.from_node, net.to_node)
    n = len(uniq)
    z0 = np.zeros(n)
    z0[fi], z0[ti] = net.z_from_m, net.z_to_m  # consistent input: one elevation per junction
    structure = np.isin(net.edge_ids, np.asarray(net.meta.get("structures", []), dtype=str))
    horizontal = horizontal_length_m(net)
    free = structure_interior(fi, ti, structure, n)
    z = smooth_junction_elevations(fi, ti, z0, horizontal, length_scale_m, free=free)
    meta = dict(net.meta)
    meta["elevation_smoothing"] = f"distance-weighted window along the roads, scale {length_scale_m:g} m"
    return RoadNetwork(
        name=net.name,
        edge_ids=net.edge_ids,
        from_node=net.from_node,
        to_node=net.to_node,
        length_m=slope_length(horizontal, z[ti] - z[fi]),
        speed_mps=net.speed_mps,
        z_from_m=z[fi],
        z_to_m=z[ti],
        geometry=net.geometry,
        turns=net.turns,
        meta=meta,
    ).with_speed_limits(net.speed_limit_mps)


def steep_edges(net: RoadNetwork, threshold: float = STEEP_GRADE) -> list[dict[str, Any]]:
    """Edges whose grade magnitude exceeds ``threshold``, steepest first.

    Each entry: ``edge`` (id), ``grade`` (signed, dimensionless), ``length_m`` (horizontal), ``rise_m``,
    ``structure`` (bridge/tunnel edge).  Both directions of a two-way road are listed.
    """
    g = grade(net)
    idx = np.flatnonzero(np.abs(g) > threshold)
    idx = idx[np.argsort(-np.abs(g[idx]), kind="stable")]
    structures = set(net.meta.get("structures", []))
    h = horizontal_length_m(net)
    return [
        {
            "edge": str(net.edge_ids[i]),
            "grade": float(g[i]),
            "length_m": float(h[i]),
            "rise_m": float(net.z_to_m[i] - net.z_from_m[i]),
            "structure": str(net.edge_ids[i]) in structures,
        }
        for i in idx
    ]


def format_steep(rows: list[dict[str, Any]], limit: int = WARN_MAX_LISTED) -> str:
    """``"id (+31.2 %, 15.6 m), ..."`` for the first ``limit`` rows, ``" ..."`` when more."""
    shown = ", ".join(f"{r['edge']} ({100 * r['grade']:+.1f} %, {r['length_m']:.1f} m)" for r in rows[:limit])
    return shown + (" ..." if len(rows) > limit else "")


def warn_steep(net: RoadNetwork, threshold: float = STEEP_GRADE) -> list[dict[str, Any]]:
    """Warn (one ``UserWarning`` line) naming the edges steeper than ``threshold``; returns them (steepest first)."""
    rows = steep_edges(net, threshold)
    if rows:
        warnings.warn(
            f"network {net.name!r}: {len(rows)} edge(s) steeper than {100 * threshold:g} % (implausible for a road; "
            f"check the elevation data): {format_steep(rows)}",
            UserWarning,
            stacklevel=3,
        )
    return rows
