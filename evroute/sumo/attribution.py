"""Energy of a simulation step split over the lanes the vehicle covered in it, in proportion to distance.

SUMO reports, per vehicle and step, the lane and position at the *end* of the step and the energy drawn *during*
it.  At 1 s steps a vehicle at 14 m/s crosses short edges and junctions without ever being reported on them, so
charging each step's energy to the lane it ends on gives those edges no traversal and overcharges the edge after
them.  Here a step that starts at position ``p0`` on lane ``a`` and ends at ``p1`` on lane ``b`` covers
``len(a) - p0`` metres of ``a``, every lane between them in full (the shortest connection path of the net's lane
graph) and ``p1`` metres of ``b``; its energy is split in those proportions (:func:`split_energy`), and the
vehicle is taken to enter each lane at the time interpolated at constant speed within the step.

Two entry points:

* :func:`split_energy` -- one step, the lengths of the lanes/edges covered known (e.g. from the vehicle's route);
* :func:`attribute_steps` -- all steps of a simulation (vectorised), with the lanes in between found on a
  :class:`LaneGraph` (:func:`lane_graph` reads it from a ``.net.xml``); its output feeds
  :func:`evroute.sumo.record.steps_to_traversals`.

Energy is conserved exactly: the shares of a step sum to its energy, so a vehicle's total is unchanged.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


def split_energy(energy_wh: float, lengths_m: Sequence[float], start_pos_m: float, end_pos_m: float) -> np.ndarray:
    """Split one step's energy over the ``k`` lanes (or edges) it covered, in proportion to distance.

    Args:
        energy_wh: energy drawn in the step (Wh; negative when recuperating).
        lengths_m: ``(k,)`` lengths of the lanes covered, in driving order: the lane the step started on first,
            the lane it ended on last (``k = 1``: the step stayed on one lane).
        start_pos_m: position on the first lane at the start of the step (m from the lane's start).
        end_pos_m: position on the last lane at the end of the step.

    Returns:
        ``(k,)`` energy per lane (Wh), summing to ``energy_wh``: distances covered are ``len[0] - start_pos``,
        the middle lengths, and ``end_pos`` (for ``k = 1``, all of it).  If the distance covered is zero, all
        the energy goes to the last lane.
    """
    lengths = np.asarray(lengths_m, dtype=np.float64)
    k = len(lengths)
    if k == 0:
        raise ValueError("a step covers at least one lane")
    out = np.zeros(k)
    if k == 1:
        out[0] = energy_wh
        return out
    d = lengths.copy()
    d[0] = lengths[0] - start_pos_m
    d[-1] = end_pos_m
    d = np.maximum(d, 0.0)
    total = d.sum()
    if total <= 0.0:
        out[-1] = energy_wh
        return out
    return energy_wh * d / total


@dataclass
class LaneGraph:
    """Lanes of a SUMO net (internal junction lanes included) and the moves between them.

    Attributes:
        length: lane id -> length (m).
        succ: lane id -> lanes reachable from its end (a connection, or its internal ``via`` lane).
        edge: lane id -> its edge id (``"a_0" -> "a"``, ``":j_0_1" -> ":j_0"``); lanes of one edge are
            joined by lateral lane changes of zero length.
    """

    length: dict[str, float]
    succ: dict[str, list[str]]
    edge: dict[str, str] = field(default_factory=dict)
    _paths: dict[tuple[str, str, float], list[str] | None] = field(default_factory=dict, repr=False)
    _lanes_of_edge: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for lane in self.length:
            self.edge.setdefault(lane, lane.rsplit("_", 1)[0])
        for lane, e in self.edge.items():
            self._lanes_of_edge.setdefault(e, []).append(lane)

    def path(self, a: str, b: str, max_gap_m: float = 100.0) -> list[str] | None:
        """Lanes covered from lane ``a`` to lane ``b``: ``[a, between..., b]``, one lane per edge.

        The shortest path by the length of the lanes in between (lateral changes within an edge are free),
        ``None`` when ``b`` is not reached within ``max_gap_m`` metres of lanes in between (a teleport).  The
        first lane is the lane of ``a``'s edge that the vehicle leaves it by.  Cached per pair and gap.
        """
        key = (a, b, float(max_gap_m))
        if key in self._paths:
            return self._paths[key]
        found: list[str] | None = None
        if a in self.length and b in self.length:
            if self.edge[a] == self.edge[b]:
                found = [b]
            else:
                found = self._search(a, b, max_gap_m)
        self._paths[key] = found
        return found

    def _search(self, a: str, b: str, max_gap_m: float) -> list[str] | None:
        # Dijkstra over lanes: entering a lane of another edge costs the lengths of the lanes in between
        dist = {a: 0.0}
        prev: dict[str, str] = {}
        heap = [(0.0, a)]
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist.get(u, np.inf):
                continue
            if u == b:
                break
            cost_u = 0.0 if self.edge[u] == self.edge[a] else self.length[u]
            moves = [(w, 0.0) for w in self._lanes_of_edge[self.edge[u]] if w != u]
            moves += [(w, cost_u) for w in self.succ.get(u, ())]
            for w, c in moves:
                nd = d + c
                if nd <= max_gap_m and nd < dist.get(w, np.inf):
                    dist[w], prev[w] = nd, u
                    heapq.heappush(heap, (nd, w))
        if b not in dist:
            return None
        chain = [b]
        while chain[-1] != a:
            chain.append(prev[chain[-1]])
        chain.reverse()
        # one lane per edge: the last lane of each run of lateral changes (the lane the edge is left by)
        return [
            lane for i, lane in enumerate(chain) if i == len(chain) - 1 or self.edge[chain[i + 1]] != self.edge[lane]
        ]


def lane_graph(net_file: str | os.PathLike[str]) -> LaneGraph:
    """The :class:`LaneGraph` of a SUMO ``.net.xml[.gz]`` (via sumolib's fast parser)."""
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    check_xml_file(net_file, "SUMO network file")  # no DTD, no bomb (evroute.network.xmlguard)

    length = {ln.id: float(ln.length) for ln in sumolib.xml.parse_fast(str(net_file), "lane", ["id", "length"])}
    succ: dict[str, list[str]] = {}
    for c in sumolib.xml.parse_fast(
        str(net_file), "connection", ["from", "to", "fromLane", "toLane", "via"], optional=True
    ):
        dst = c.via if c.via else f"{c.to}_{c.toLane}"
        succ.setdefault(f"{c.attr_from}_{c.fromLane}", []).append(dst)
    return LaneGraph(length=length, succ=succ)


def attribute_steps(
    time_s: np.ndarray,
    vehicle: Any,
    lane: Any,
    pos_m: np.ndarray,
    energy_wh: np.ndarray,
    graph: LaneGraph,
    *,
    max_gap_m: float = 100.0,
) -> tuple[np.ndarray, pd.Categorical, pd.Categorical, np.ndarray]:
    """Split every step's energy over the lanes covered in it (:func:`split_energy`), adding rows for lanes crossed.

    Args:
        time_s, vehicle, lane, pos_m: ``(S,)`` per-step records of any order, as SUMO writes them: step time (s),
            vehicle id, lane and position on it (m) at the end of the step; ids as arrays of str or pandas
            Categoricals (null rows are dropped).
        energy_wh: ``(S,)`` energy drawn in the step (Wh), or ``(S, k)``: ``k`` per-step quantities split alike
            (e.g. energy and the step's change of kinetic energy, :func:`evroute.sumo.record.record_traversals`).
        graph: the net's lanes (:func:`lane_graph`).
        max_gap_m: lanes in between longer than this in total: a teleport, the energy stays on the last lane.

    Returns:
        ``(time_s, vehicle, lane, energy_wh)`` of ``S' >= S`` rows sorted by vehicle and time (``energy_wh``
        ``(S',)`` or ``(S', k)`` as given): a step that changed edge keeps its row on the lane it ended on, with
        that lane's share and, as time, the interpolated time of entering it; the share of the lane it started on
        is added to the previous row; every lane crossed in between gets a row of its own.  Per vehicle, every
        quantity sums to the input's.  A quantity that is a difference of a state (``K_i - K_{i-1}``) is thereby
        interpolated linearly in distance inside the step: the state at a lane boundary at fraction ``f`` of the
        step's distance is ``K_{i-1} + f (K_i - K_{i-1})``.
    """
    t = np.asarray(time_s, dtype=np.float64)
    pos = np.asarray(pos_m, dtype=np.float64)
    en = np.asarray(energy_wh, dtype=np.float64)
    one_d = en.ndim == 1
    en = en.reshape(len(en), -1)
    veh_code, veh_names = pd.factorize(vehicle)
    lane_code, lane_names = pd.factorize(lane)
    keep = (veh_code >= 0) & (lane_code >= 0)
    order = np.flatnonzero(keep)
    order = order[np.lexsort((t[order], veh_code[order]))]
    v, ln, t, pos, en = veh_code[order], lane_code[order], t[order], pos[order], en[order]
    lane_names = [str(x) for x in lane_names]
    n = len(v)
    changed = np.zeros(n, dtype=bool)
    changed[1:] = (v[1:] == v[:-1]) & (ln[1:] != ln[:-1])
    steps = np.flatnonzero(changed)
    # the path of every distinct (from lane, to lane) pair, as lane codes (new lanes appended to the names)
    names = list(lane_names)
    code_of = {name: i for i, name in enumerate(names)}
    pair = ln[steps - 1].astype(np.int64) * len(lane_names) + ln[steps]
    uniq, inv = np.unique(pair, return_inverse=True)
    first_len = np.zeros(len(uniq))
    mids: list[list[int]] = []
    split_ok = np.zeros(len(uniq), dtype=bool)
    for j, pc in enumerate(uniq):
        a, b = lane_names[pc // len(lane_names)], lane_names[pc % len(lane_names)]
        p = graph.path(a, b, max_gap_m)
        if p is None or len(p) < 2:
            mids.append([])
            continue
        split_ok[j] = True
        first_len[j] = graph.length[p[0]]
        mids.append([code_of.setdefault(m, len(code_of)) for m in p[1:-1]])
    names = list(code_of)
    mid_len = np.array([graph.length.get(name, 0.0) for name in names])
    n_mid = np.array([len(m) for m in mids], dtype=np.int64)[inv]
    ok = split_ok[inv]
    # distances covered per step: first lane, lanes in between (ragged), last lane
    d_first = np.where(ok, np.maximum(first_len[inv] - pos[steps - 1], 0.0), 0.0)
    mid_offsets = np.concatenate([[0], np.cumsum([len(m) for m in mids])])
    flat_mids = np.array([c for m in mids for c in m], dtype=np.int64)
    rep = np.repeat(np.arange(len(steps)), n_mid)  # step of each lane in between
    within = np.arange(len(rep)) - np.repeat(np.cumsum(n_mid) - n_mid, n_mid)
    mid_codes = flat_mids[mid_offsets[inv[rep]] + within] if len(rep) else np.zeros(0, dtype=np.int64)
    mid_d = mid_len[mid_codes]
    d_mid_sum = np.bincount(rep, weights=mid_d, minlength=len(steps))
    d_last = np.where(ok, np.maximum(pos[steps], 0.0), 1.0)
    total = d_first + d_mid_sum + d_last
    zero = total <= 0.0
    d_last = np.where(zero, 1.0, d_last)
    total = np.where(zero, 1.0, total)
    e_step, t0, dt = en[steps], t[steps - 1], t[steps] - t[steps - 1]
    new_en = en.copy()
    new_en[steps] = e_step * (d_last / total)[:, None]
    np.add.at(new_en, steps - 1, e_step * (d_first / total)[:, None])
    new_t = t.copy()
    new_t[steps] = np.where(ok & ~zero, t0 + dt * (total - d_last) / total, t[steps])  # else: enters at the end
    # rows of the lanes in between: entered after the first lane and the lanes before them
    cum_before = np.cumsum(mid_d) - mid_d - np.repeat(np.cumsum(d_mid_sum) - d_mid_sum, n_mid)
    mid_t = t0[rep] + dt[rep] * (d_first[rep] + cum_before) / total[rep]
    mid_e = e_step[rep] * (mid_d / total[rep])[:, None]
    # merge: every in-between row sits just before the step row it belongs to
    seq = np.concatenate([np.arange(n, dtype=np.float64), steps[rep] - 1.0 + (within + 1.0) / (n_mid[rep] + 1.0)])
    idx = np.argsort(seq, kind="stable")
    out_t = np.concatenate([new_t, mid_t])[idx]
    out_v = np.concatenate([v, v[steps][rep]])[idx]
    out_l = np.concatenate([ln, mid_codes])[idx]
    out_e = np.concatenate([new_en, mid_e])[idx]
    return (
        out_t,
        pd.Categorical.from_codes(out_v, categories=pd.Index(veh_names).astype(str)),
        pd.Categorical.from_codes(out_l, categories=names),
        out_e[:, 0] if one_d else out_e,
    )


__all__ = ["LaneGraph", "attribute_steps", "lane_graph", "split_energy"]
