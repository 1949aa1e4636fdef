"""The towns of a synthetic country (:mod:`evroute.network.country`): each a rotated street grid of the synthetic
city (:func:`evroute.network.synthetic.grid_streets`) cut to its largest strongly connected part.

:func:`town_grids` makes every town's streets first, then finds the strongly connected parts of all towns in ONE
pass over their joint line graph (the towns share no junction, so the parts are each town's own): the same edges
as :func:`~evroute.network.synthetic.build_grid` keeps per town (the largest part; where two parts of a town tie, the
town's own pass decides, as it did), without a pass of :func:`~evroute.network._graph.junction_turns` and of SciPy's
components per town (about 2 s of a million-edge country's generation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.network._graph import junction_turns, largest_scc_edges, turn_components
from evroute.network.country_layout import TOWN_EDGES_PER_NODE
from evroute.network.synthetic import grid_streets

#: town grid options (:func:`~evroute.network.synthetic.grid_streets`): one-way, removed, diagonal and curved shares.
TOWN_REMOVAL, TOWN_ONEWAY, TOWN_DIAGONAL, TOWN_CURVED = 0.3, 0.1, 0.04, 0.25


def town_grid(k: int, size: float, seed: int) -> dict[str, Any]:
    """The streets of settlement ``k``, a town of about ``size`` directed edges (:func:`grid_streets`, before the
    largest strongly connected part is taken), with its junction count ``n_nodes``."""
    nodes = max(size / TOWN_EDGES_PER_NODE, 9.0)
    aspect = float(np.random.default_rng([seed, k, 2]).uniform(0.7, 1.4))
    nr = max(3, int(round(np.sqrt(nodes * aspect))))
    nc = max(3, int(round(nodes / nr)))
    g = grid_streets(nr, nc, seed * 1_000_003 + k, TOWN_ONEWAY, TOWN_REMOVAL, TOWN_DIAGONAL, TOWN_CURVED)
    g["n_nodes"] = nr * nc
    return g


def largest_parts(grids: list[dict[str, Any]]) -> list[np.ndarray]:
    """For each grid of :func:`town_grid`, the sorted indices of its edges in its largest strongly connected part of
    the line graph: ``largest_scc_edges(E_k, junction_turns(frm_k, to_k, n_nodes=N_k))`` of each, computed at once."""
    n_edges = np.array([len(g["frm"]) for g in grids], dtype=np.int64)
    n_nodes = np.array([g["n_nodes"] for g in grids], dtype=np.int64)
    node_off = np.cumsum(n_nodes) - n_nodes
    edge_off = np.cumsum(n_edges) - n_edges
    frm = np.concatenate([g["frm"] + o for g, o in zip(grids, node_off.tolist(), strict=True)])
    to = np.concatenate([g["to"] + o for g, o in zip(grids, node_off.tolist(), strict=True)])
    labels = turn_components(len(frm), junction_turns(frm, to, n_nodes=int(n_nodes.sum())))
    town = np.repeat(np.arange(len(grids)), n_edges)
    size = np.bincount(labels)
    label_town = np.zeros(len(size), np.int64)
    label_town[labels] = town  # a part never spans two towns: no turn joins them
    best = np.zeros(len(grids), np.int64)
    np.maximum.at(best, label_town, size)
    is_best = size == best[label_town]
    ties = np.bincount(label_town[is_best], minlength=len(grids))
    chosen = np.full(len(grids), -1, np.int64)
    chosen[label_town[is_best]] = np.flatnonzero(is_best)  # one label per town without a tie
    out = []
    for k, g in enumerate(grids):
        if ties[k] != 1:  # parts of equal size: the town's own pass picks one by SciPy's labels, as build_grid
            out.append(largest_scc_edges(int(n_edges[k]), junction_turns(g["frm"], g["to"], n_nodes=g["n_nodes"])))
            continue
        lo = int(edge_off[k])
        out.append(np.flatnonzero(labels[lo : lo + int(n_edges[k])] == chosen[k]))
    return out


def place_town(parts: Any, k: int, g: dict[str, Any], kept: np.ndarray, centre: np.ndarray, angle: float) -> np.ndarray:
    """Add settlement ``k`` to ``parts`` (:class:`evroute.network.country._Parts`): the ``kept`` edges of its grid
    ``g``, rotated by ``angle`` (radians) around its centre and moved to ``centre`` (m); its junction ids."""
    frm, to, seg = g["frm"][kept], g["to"][kept], g["seg"][kept]
    used = np.flatnonzero(np.bincount(np.concatenate([frm, to]), minlength=len(g["px"])))
    local = np.full(len(g["px"]), -1, np.int64)
    local[used] = np.arange(len(used))
    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    xy = np.stack([g["px"][used], g["py"][used]], axis=1) @ rot.T + centre
    ids: np.ndarray = parts.nodes(xy)
    bend = np.stack([g["mx"][seg], g["my"][seg]], axis=1) @ rot.T + centre
    bend[~g["curved"][seg]] = np.nan
    parts.add(ids[local[frm]], ids[local[to]], g["seg_cls"][seg], bend, k, True)
    return ids


__all__ = ["TOWN_CURVED", "TOWN_DIAGONAL", "TOWN_ONEWAY", "TOWN_REMOVAL", "largest_parts", "place_town", "town_grid"]
