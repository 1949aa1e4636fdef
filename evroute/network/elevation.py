"""Elevation and length of road edges that describe the same stretch of road.

Every loader gives an edge the elevation of its two junctions and a length measured between the same two points
(junction centre to junction centre, along the road's geometry), as the slope length ``sqrt(h^2 + dz^2)`` of the
horizontal length ``h``.  Then

* the incline ``dz / length`` is the sine of the slope angle and never exceeds 1 in magnitude (no clipping);
* consecutive edges share the elevation of their junction, so the elevation potential
  (:func:`evroute.energy.elevation_potential_wh`) telescopes along every route, and the physics energy minus that
  potential (the reduced cost, :func:`evroute.energy.reduced_cost_wh`) is non-negative on every edge.

Bridges and tunnels (OSM ``bridge``, ``tunnel`` or a non-zero ``layer``) do not follow the terrain: the elevation
of a junction that only bridge/tunnel edges touch is interpolated between the structure's ends (harmonic
interpolation with weights ``1 / length``, i.e. linear along a chain of edges) instead of being sampled from a DEM.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

#: tag values that do NOT make a way a bridge or tunnel
_NO = {"", "no", "0", "false", "none"}


def slope_length(horizontal_m: np.ndarray, dz_m: np.ndarray) -> np.ndarray:
    """``(E,)`` slope length ``sqrt(h^2 + dz^2)`` (m) of edges with horizontal length ``h`` and rise ``dz``."""
    return np.hypot(np.asarray(horizontal_m, dtype=np.float64), np.asarray(dz_m, dtype=np.float64))


def polyline_length_m(xy: np.ndarray) -> float:
    """Length (m) of a polyline in planar metres, ``(k, 2)``."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    return float(np.hypot(*np.diff(xy, axis=0).T).sum()) if len(xy) > 1 else 0.0


def is_structure(tags: dict[str, Any]) -> bool:
    """Whether OSM-style way tags (``bridge``, ``tunnel``, ``layer``; values or lists of values) mark a bridge or
    tunnel."""

    def vals(key: str) -> list[str]:
        v = tags.get(key)
        if v is None:
            return []
        return [str(x).strip().lower() for x in (v if isinstance(v, list | tuple) else [v])]

    if any(v not in _NO for v in vals("bridge") + vals("tunnel")):
        return True
    for v in vals("layer"):
        try:
            if float(v) != 0.0:
                return True
        except ValueError:
            continue
    return False


def structure_interior(from_idx: np.ndarray, to_idx: np.ndarray, structure: np.ndarray, n_nodes: int) -> np.ndarray:
    """``(N,)`` bool: junctions that only bridge/tunnel edges touch (``structure``: ``(E,)`` bool per edge)."""
    fi, ti = np.asarray(from_idx, dtype=np.int64), np.asarray(to_idx, dtype=np.int64)
    structure = np.asarray(structure, dtype=bool)
    touches_plain = np.zeros(n_nodes, dtype=bool)
    touches_plain[fi[~structure]] = True
    touches_plain[ti[~structure]] = True
    touches_struct = np.zeros(n_nodes, dtype=bool)
    touches_struct[fi[structure]] = True
    touches_struct[ti[structure]] = True
    return touches_struct & ~touches_plain


def interpolate_structures(
    from_idx: np.ndarray, to_idx: np.ndarray, z_node: np.ndarray, length_m: np.ndarray, structure: np.ndarray
) -> tuple[np.ndarray, int]:
    """Junction elevations with the inside of bridges and tunnels interpolated between their ends.

    A junction is *inside* a structure when every edge touching it is a bridge/tunnel edge.  Inside junctions get
    the harmonic interpolation of the other junctions' elevations over the structure edges (weights
    ``1 / length``): linear in distance along a chain of edges.  Components of inside junctions with no end outside
    keep their elevations.

    Args:
        from_idx, to_idx: ``(E,)`` junction index of each edge's start and end.
        z_node: ``(N,)`` junction elevations (m).
        length_m: ``(E,)`` horizontal edge lengths (m, > 0).
        structure: ``(E,)`` bool, bridge/tunnel edges.

    Returns:
        The ``(N,)`` elevations and the number of junctions interpolated.
    """
    z = np.asarray(z_node, dtype=np.float64).copy()
    structure = np.asarray(structure, dtype=bool)
    if not structure.any():
        return z, 0
    n = len(z)
    fi, ti = np.asarray(from_idx, dtype=np.int64), np.asarray(to_idx, dtype=np.int64)
    inside = structure_interior(fi, ti, structure, n)
    if not inside.any():
        return z, 0
    a, b = fi[structure], ti[structure]
    w = 1.0 / np.maximum(np.asarray(length_m, dtype=np.float64)[structure], 1e-3)
    keep = a != b
    a, b, w = a[keep], b[keep], w[keep]
    adj = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(n, n))
    adj = adj.tocsr()
    lap = sp.diags(np.asarray(adj.sum(axis=1)).ravel()) - adj
    u = np.flatnonzero(inside)
    k = np.flatnonzero(~inside)
    luu = lap[u][:, u].tocsc()
    rhs = -(lap[u][:, k] @ z[k])
    # inside junctions connected to no end: their rows are singular; pin them to their own elevation
    from scipy.sparse.csgraph import connected_components

    bound = np.asarray(abs(lap[u][:, k]).sum(axis=1)).ravel() > 0
    ncomp, lab = connected_components(luu, directed=False)
    anchored = np.bincount(lab, weights=bound.astype(float), minlength=ncomp) > 0
    free = ~anchored[lab]
    if free.any():
        luu = luu.tolil()
        for i in np.flatnonzero(free):
            luu.rows[i], luu.data[i] = [i], [1.0]
        luu = luu.tocsc()
        rhs[free] = z[u[free]]
    z[u] = np.atleast_1d(spsolve(luu, rhs))
    return z, int((~free).sum())


def inconsistent_edges(length_m: np.ndarray, dz_m: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Indices of edges whose rise exceeds their length (``|dz| > length``): their incline must be clipped and their
    physics energy can fall below the elevation potential (negative reduced cost)."""
    return np.flatnonzero(np.abs(np.asarray(dz_m)) > np.asarray(length_m) * (1.0 + tol) + tol)


def warn_inconsistent(name: str, edge_ids: Iterable[str], length_m: np.ndarray, dz_m: np.ndarray) -> np.ndarray:
    """Warn (``UserWarning``) naming the edges with ``|dz| > length``; returns their indices."""
    bad = inconsistent_edges(length_m, dz_m)
    if len(bad):
        ids = np.asarray(list(edge_ids))[bad]
        shown = ", ".join(
            f"{i} (length {length_m[j]:.2f} m, rise {dz_m[j]:+.2f} m)" for i, j in zip(ids[:5], bad[:5], strict=False)
        )
        warnings.warn(
            f"network {name!r}: {len(bad)} edge(s) rise more than their length, so their incline is "
            f"clipped and their physics energy is below the elevation potential (negative reduced cost): "
            f"{shown}{' ...' if len(bad) > 5 else ''}",
            UserWarning,
            stacklevel=3,
        )
    return bad
