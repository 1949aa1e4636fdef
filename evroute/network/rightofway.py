"""Right of way where a network says nothing: netconvert's guessed junction types and major roads.

A SUMO network carries its link states (:func:`evroute.network.junctions.sumo_turn_controls`); a graph from osmnx or
built by hand has only road classes (``meta["osm_road_class"]``) and limits.  :func:`priority_yields` applies the
rules netconvert applies to such junctions (SUMO's ``NBNodeTypeComputer::computeNodeTypes`` and
``NBEdgePriorityComputer::setPriorityJunctionPriorities`` in ``src/netbuild/NBAlgorithms.cpp``), so that the two
OSM loaders give the same junctions the same controls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from evroute.network.headings import end_headings

if TYPE_CHECKING:  # pragma: no cover
    from evroute.network.road_network import RoadNetwork

#: netconvert's edge priority by OSM road class (SUMO's ``data/typemap/osmNetconvert.typ.xml``, eclipse-sumo 1.28:
#: the ``_link`` classes rank below every main class down to tertiary); unknown classes 0
NETCONVERT_PRIORITY: dict[str, int] = {
    "motorway": 14,
    "trunk": 13,
    "primary": 12,
    "secondary": 11,
    "tertiary": 10,
    "motorway_link": 9,
    "trunk_link": 8,
    "primary_link": 7,
    "secondary_link": 6,
    "tertiary_link": 5,
    "unclassified": 4,
    "residential": 3,
    "living_street": 2,
    "service": 1,
}
#: netconvert's ``--junctions.right-before-left.speed-threshold`` default (m/s: 49 km/h)
RIGHT_BEFORE_LEFT_MAX_MPS = 49.0 / 3.6
#: most different speeds (m/s) of two approaches of a right-before-left junction (netconvert: 9.5 km/h)
RIGHT_BEFORE_LEFT_SPEED_DIFF_MPS = 9.5 / 3.6
_COS135 = -np.cos(np.pi / 4)


def _major_approaches(inc: list[int], prio: np.ndarray, speed: np.ndarray, end: np.ndarray) -> set[int]:
    """The major approaches of a priority junction among the incoming edges ``inc`` (netconvert's
    ``NBEdgePriorityComputer::setPriorityJunctionPriorities``): the approaches ranked best (priority, then the
    whole m/s of the limit) and, of those, the most opposite pair; a single best approach and the approach most
    opposite it when more than 135 degrees apart.  Not reproduced: netconvert's lane counts in the ranking (an osmnx
    graph has no per-direction lane count) and its second rule for a single best approach (a counterpart 75-135
    degrees off of the same priority where the other approaches differ)."""
    key = {e: (int(prio[e]), int(speed[e])) for e in inc}
    top = max(key.values())
    best = [e for e in inc if key[e] == top]
    if len(best) == 1:
        others = [e for e in inc if e != best[0]]
        if not others:
            return set(best)
        opp = min(others, key=lambda e: float(end[e] @ end[best[0]]))
        return {best[0], opp} if float(end[opp] @ end[best[0]]) < _COS135 else {best[0]}
    pairs = [(float(end[a] @ end[b]), a, b) for i, a in enumerate(best) for b in best[i + 1 :]]
    _, a, b = min(pairs)
    return {a, b}


def _right_before_left(inc: list[int], prio: np.ndarray, speed: np.ndarray, end: np.ndarray) -> bool:
    """Whether netconvert makes the junction of the incoming edges ``inc`` right-before-left
    (``NBNodeTypeComputer::computeNodeTypes``): every two approaches (but opposite ones where there are more than
    two) of the same priority, limits within 9.5 km/h of each other and below 49 km/h."""
    for i, a in enumerate(inc):
        for b in inc[i + 1 :]:
            if len(inc) > 2 and float(end[a] @ end[b]) < _COS135:
                continue
            s1, s2 = speed[a], speed[b]
            if (
                prio[a] != prio[b]
                or abs(s1 - s2) > RIGHT_BEFORE_LEFT_SPEED_DIFF_MPS
                or max(s1, s2) >= RIGHT_BEFORE_LEFT_MAX_MPS
            ):
                return False
    return len(inc) > 1


def priority_yields(network: RoadNetwork) -> np.ndarray:
    """``(C,)`` whether each turn yields by the right-of-way rules netconvert applies where the network says nothing
    (its guessed junction types), at an intersection (three or more neighbouring junctions):

    * a right-before-left junction (every two approaches, opposite ones aside, of the same class priority,
      :data:`NETCONVERT_PRIORITY`, with limits below 49 km/h and within 9.5 km/h): every turn yields;
    * a priority junction: the major road is the best-ranked approach (class priority, then limit) with the approach
      most opposite it, or of several equally ranked approaches the most opposite pair (:func:`_major_approaches`);
      every other approach yields, and a left turn (more than 45 degrees, right-hand traffic) from a major approach
      yields to the oncoming major approach.

    Vectorised over the turns, with one Python call per intersection (its rule) on integer junction codes
    (:meth:`RoadNetwork.junction_codes`): no per-turn loop and no per-turn string arrays (a million edges: seconds
    and megabytes, where a loop over 2.8 M turns took a minute and 1.5 GB).
    """
    t = network.turns
    classes = network.meta.get("osm_road_class") or {}
    prio = (
        np.array([NETCONVERT_PRIORITY.get(str(classes.get(e, "")), 0) for e in network.edge_ids.tolist()])
        if classes
        else np.zeros(network.n_edges, dtype=np.int64)  # every class unknown: priority 0
    )
    speed = np.asarray(network.speed_limit_mps, dtype=np.float64)
    fi, ti, ids = network.junction_codes()
    n = len(ids)
    out = np.zeros(len(t), dtype=bool)
    if not len(t):
        return out
    # distinct neighbouring junctions of every junction (an edge's own ends; self-loops do not count)
    ends, other = np.concatenate([fi, ti]), np.concatenate([ti, fi])
    keep = ends != other
    pairs = np.sort(ends[keep] * n + other[keep])  # sorted, then unique (np.unique's hash path: seconds here)
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]
    n_neigh = np.bincount(pairs // n, minlength=n)
    node = ti[t[:, 0]]  # the junction of every turn
    at = n_neigh[node] >= 3  # an intersection
    if not at.any():
        return out
    start, end = end_headings(network)
    order = np.argsort(ti, kind="stable")  # the incoming edges of each junction, in index order
    bounds = np.searchsorted(ti[order], np.arange(n + 1))
    n_inc = np.diff(bounds)
    rbl = np.zeros(n, dtype=bool)  # the junction is right-before-left
    major = np.zeros(network.n_edges, dtype=bool)  # the edge is a major approach of its (priority) end junction
    opposed = np.zeros(network.n_edges, dtype=bool)  # ... and another major approach is more than 135 degrees off
    for j in np.flatnonzero(np.bincount(node[at], minlength=n)).tolist():  # each intersection with a turn, once
        inc = order[bounds[j] : bounds[j + 1]].tolist()
        if _right_before_left(inc, prio, speed, end):
            rbl[j] = True
            continue
        majors = _major_approaches(inc, prio, speed, end)
        for a in majors:
            major[a] = True
            opposed[a] = any(e != a and float(end[e] @ end[a]) < _COS135 for e in majors)
    # a left turn (more than 45 degrees, right-hand traffic) from a major approach yields to the oncoming one
    h1, h2 = end[t[:, 0]], start[t[:, 1]]
    left = h1[:, 0] * h2[:, 1] - h1[:, 1] * h2[:, 0] > np.sin(np.pi / 4)
    minor = rbl[node] | ~major[t[:, 0]]
    return at & np.where(minor, rbl[node] | (n_inc[node] > 1), left & opposed[t[:, 0]])


__all__ = ["NETCONVERT_PRIORITY", "RIGHT_BEFORE_LEFT_MAX_MPS", "RIGHT_BEFORE_LEFT_SPEED_DIFF_MPS", "priority_yields"]
