"""Vectorised graph helpers shared by the loaders: junction turns and strongly connected parts of the line graph."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def junction_turns(from_idx: np.ndarray, to_idx: np.ndarray, *, n_nodes: int | None = None) -> np.ndarray:
    """All legal turns at junctions, as a ``(C, 2)`` int64 array of edge-index pairs ``(e1, e2)``.

    A turn ``e1 -> e2`` exists when ``e1`` ends where ``e2`` starts.  U-turns (``e1 = u -> v`` followed by
    ``e2 = v -> u``) are dropped unless ``v`` is a dead end, i.e. ``u`` is the only junction adjacent to ``v``
    (in either direction).  Turns are sorted by ``(e1, e2)``.

    Args:
        from_idx: ``(E,)`` integer junction index where each edge starts.
        to_idx: ``(E,)`` integer junction index where each edge ends.
        n_nodes: number of junctions (default ``max index + 1``).
    """
    from_idx = np.asarray(from_idx, dtype=np.int64)
    to_idx = np.asarray(to_idx, dtype=np.int64)
    n_edges = len(from_idx)
    if n_edges == 0:
        return np.empty((0, 2), dtype=np.int64)
    n = int(n_nodes if n_nodes is not None else max(from_idx.max(), to_idx.max()) + 1)
    order = np.argsort(from_idx, kind="stable")
    out_deg = np.bincount(from_idx, minlength=n)
    start = np.cumsum(out_deg) - out_deg  # each junction's first edge in ``order``
    counts = out_deg[to_idx]
    first = np.cumsum(counts) - counts  # each edge's first turn
    e1 = np.repeat(np.arange(n_edges, dtype=np.int64), counts)
    e2 = order[np.arange(len(e1), dtype=np.int64) + np.repeat(start[to_idx] - first, counts)]
    uturn = to_idx[e2] == np.repeat(from_idx, counts)
    if uturn.any():
        # junctions with at most one distinct neighbour (self-loops do not count): the least and the greatest
        # neighbour agree (no neighbour: greatest -1 < least n); no sort of the 2E (junction, neighbour) pairs
        a = np.concatenate([from_idx, to_idx])
        b = np.concatenate([to_idx, from_idx])
        keep = a != b
        a, b = a[keep], b[keep]
        least, greatest = np.full(n, n, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        np.minimum.at(least, a, b)
        np.maximum.at(greatest, a, b)
        dead_end = greatest <= least
        ok = ~uturn | np.repeat(dead_end[to_idx], counts)
        e1, e2 = e1[ok], e2[ok]
    # already sorted by (e1, e2): e1 ascends, and each e1's e2 are a run of the stable argsort ``order``, ascending
    return np.stack([e1, e2], axis=1)


def turn_components(n_edges: int, turns: np.ndarray) -> np.ndarray:
    """Label of the strongly connected component of every edge in the line graph defined by ``turns``."""
    turns = np.asarray(turns, dtype=np.int64).reshape(-1, 2)
    a = coo_matrix((np.ones(len(turns), dtype=np.int8), (turns[:, 0], turns[:, 1])), shape=(n_edges, n_edges))
    _, labels = connected_components(a.tocsr(), directed=True, connection="strong")
    return labels


def largest_scc_edges(n_edges: int, turns: np.ndarray) -> np.ndarray:
    """Sorted indices of the edges in the largest strongly connected component of the line graph."""
    labels = turn_components(n_edges, turns)
    big = np.bincount(labels).argmax()
    return np.flatnonzero(labels == big)


def node_codes(*arrays: np.ndarray | Sequence[str]) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer codes for node ids appearing in ``arrays`` (same id -> same code) and the array of unique ids."""
    allv = np.concatenate([np.asarray(a).astype(str) for a in arrays])
    uniq, inv = np.unique(allv, return_inverse=True)
    out, k = [], 0
    for a in arrays:
        out.append(inv[k : k + len(a)].astype(np.int64))
        k += len(a)
    return out, uniq
