"""The legs of a charging plan: candidate routes between sites (origin, chargers, destination) with their energy
under the model's posterior.

Sites.  Site 0 is the origin edge, sites ``1..n`` the chargers (their snapped edge, :mod:`evroute.charging.chargers`),
site ``n + 1`` the destination edge.  A leg ``i -> j`` drives a route of line-graph nodes ``e_0 = edge(i), ...,
e_k = edge(j)``; it pays for ``e_1..e_k`` (and for ``e_0`` too when it starts at the origin, as ``evroute route``
does): arriving at a charger means having driven its edge.  A charger adds its one-way detour (snapping distance,
at :data:`~evroute.charging.chargers.DETOUR_SPEED_MPS`, energy at its edge's mean Wh per metre) to the leg that
arrives there and to the leg that leaves.

Candidates.  Per ordered pair, the fastest route (time at the speed limits) and the route of least posterior mean
energy (Dijkstra on the reduced costs, :mod:`evroute.driver.paths`), one if they coincide.

Energy of a leg.  ``E = sum_{e in leg} x_e`` with ``x_e = f_e + n_e``: ``f`` the posterior of the edges' expected
energies (joint for the exact GP: :class:`evroute.driver.belief.RouteBelief`) and ``n_e`` one traversal's noise,
``sd s_e``, with a trip-level random effect (:mod:`evroute.sumo.trip_interval`): ``Cov(n_t, n_t') = rho s_t s_t'``
for two traversals of one trip, so

    Var E = 1^T Sigma_f 1 + (1 - rho) sum s_e^2 + rho (sum s_e)^2 + tau^2 (sum m_e)^2,
    Cov(E_i, E_j) = 1^T Sigma_f[i, j] 1 + rho (sum_{leg i} s_e) (sum_{leg j} s_e)
                    + tau^2 (sum_{leg i} m_e) (sum_{leg j} m_e)                            (two legs of one trip).

``tau^2 (sum m_e)^2`` is the trip-level effect a model learned from logs carries (the driver, the day: every edge of
the trip scaled by one ``1 + beta``, ``beta ~ N(0, tau^2)``; ``m_e`` the edges' reduced means,
:attr:`RouteBelief.effect_mean`; :mod:`evroute.models.trip_effect`), as in ``evroute route``; 0 for other models.

With independent edges (BI) every sum is additive along a route, so all pairs' sums come from the shortest-path
trees by pointer doubling (:func:`tree_sums`, no route walked); with the exact GP each route's ``1^T Sigma_f 1`` is
:meth:`~evroute.driver.belief.RouteBelief.route_moments`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from evroute.charging.chargers import DETOUR_SPEED_MPS, Chargers
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import PathEnumerator
from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import LineGraph

KINDS = ("fastest", "energy")


@dataclass
class Sites:
    """Origin (0), chargers (1..n), destination (n + 1): ``(n + 2,)`` arrays.

    Attributes:
        edge: line-graph index of each site's edge; power_kw: charger power (nan at origin and destination);
        detour_m, detour_s, detour_wh: one-way detour to the charger (0 at origin and destination);
        names: display names (charger ids).
    """

    edge: np.ndarray
    power_kw: np.ndarray
    detour_m: np.ndarray
    detour_s: np.ndarray
    detour_wh: np.ndarray
    names: list[str]

    @property
    def n(self) -> int:
        return len(self.edge)

    @property
    def dest(self) -> int:
        return len(self.edge) - 1


@dataclass
class LegTable:
    """Candidate legs, ``(L,)`` arrays, sorted by ``src``.

    Attributes:
        src, dst: site indices; kind: index into :data:`KINDS`; time_s: driving time plus detours;
        length_m: route length plus detours; mean_wh: mean energy (detours included); var_wh2: variance of one
        drive's energy (module doc); reduced_wh: mean minus the elevation potential, clipped at 0 (Wh, the blend's
        energy term); sd_sum: ``sum s_e`` of its driven edges (Wh).
    """

    sites: Sites
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    time_s: np.ndarray
    length_m: np.ndarray
    mean_wh: np.ndarray
    var_wh2: np.ndarray
    reduced_wh: np.ndarray
    sd_sum: np.ndarray
    trip_rho: float
    routes: dict[int, np.ndarray] | None = None  # leg -> line-graph nodes; filled by :meth:`route`
    _pred: dict[str, np.ndarray] | None = None
    _first: np.ndarray | None = None  # per site: its row in the predecessor arrays (-1 for the destination)

    def __len__(self) -> int:
        return len(self.src)

    def route(self, leg: int) -> np.ndarray:
        """Line-graph nodes of leg ``leg`` (``e_0`` the source site's edge)."""
        if self.routes is not None and leg in self.routes:
            return self.routes[leg]
        if self._pred is None or self._first is None:
            raise ParameterError("this leg table keeps no routes")
        pred = self._pred[KINDS[int(self.kind[leg])]][self._first[int(self.src[leg])]]
        s, v = int(self.sites.edge[self.src[leg]]), int(self.sites.edge[self.dst[leg]])
        out = [v]
        while out[-1] != s:
            out.append(int(pred[out[-1]]))
        r = np.asarray(out[::-1], dtype=np.int64)
        self.routes = self.routes or {}
        self.routes[leg] = r
        return r

    def driven(self, leg: int) -> np.ndarray:
        """The nodes leg ``leg`` pays for (module doc)."""
        r = self.route(leg)
        return r if int(self.src[leg]) == 0 else r[1:]


def make_sites(lg: LineGraph, belief: RouteBelief, origin: int, dest: int, chargers: Chargers) -> Sites:
    """Sites of a plan from ``origin`` to ``dest`` (line-graph indices) through snapped ``chargers``."""
    net = lg.network
    n = len(chargers)
    if n and len(chargers.edge) != n:
        raise ParameterError("the chargers are not snapped to the network (snap_chargers)")
    edge = np.concatenate([[origin], chargers.edge if n else np.zeros(0, np.int64), [dest]]).astype(np.int64)
    one_way = np.concatenate([[0.0], chargers.snap_m if n else np.zeros(0), [0.0]])
    per_m = np.maximum(belief.mean[edge], 0.0) / np.maximum(net.length_m[edge], 1.0)
    return Sites(
        edge=edge,
        power_kw=np.concatenate([[np.nan], chargers.power_kw, [np.nan]]),
        detour_m=one_way,
        detour_s=one_way / DETOUR_SPEED_MPS,
        detour_wh=one_way * per_m,
        names=["origin", *chargers.ids, "destination"],
    )


def tree_sums(pred: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``(S, N, k)`` sums of ``values`` (``(N, k)``) over each shortest-path-tree path from the source to each node,
    the node included and the source not (``pred``: ``(S, N)`` Dijkstra predecessors, negative at the source and
    unreached nodes), by pointer doubling over all trees at once (``log2(depth)`` vectorised steps)."""
    n_s, n = pred.shape
    off = (np.arange(n_s, dtype=np.int64) * n)[:, None]
    anc = np.where(pred >= 0, pred + off, -1).reshape(-1)
    s = np.tile(np.asarray(values, dtype=np.float64), (n_s, 1))
    s[anc < 0] = 0.0  # the source (and unreached nodes) add nothing
    live = np.flatnonzero(anc >= 0)
    while len(live):
        up = anc[live]
        s[live] += s[up]
        anc[live] = anc[up]
        live = live[anc[live] >= 0]
    return s.reshape(n_s, n, -1)


def _arc_graph(lg: LineGraph, head_weight: np.ndarray) -> sp.csr_matrix:
    adj = lg.adjacency.tocsr()
    adj.sort_indices()
    return sp.csr_matrix((head_weight[adj.indices] + 0.0, adj.indices, adj.indptr), shape=adj.shape)


def build_legs(
    lg: LineGraph,
    belief: RouteBelief,
    sites: Sites,
    potential_wh: np.ndarray,
    *,
    trip_rho: float = 0.0,
    h0: np.ndarray | None = None,
) -> LegTable:
    """Every candidate leg between the sites (module doc).

    Args:
        potential_wh: ``(E,)`` elevation potential (:func:`evroute.energy.elevation_potential_wh`), for the blend's
            reduced energy.
        trip_rho: the trip-level correlation of traversal noise, in ``[0, 1]``.
        h0: first reweighting of the energy search (:func:`evroute.driver.paths.potential_h`).

    Raises:
        UnreachableError: the destination cannot be reached from the origin at all.
    """
    if not 0.0 <= trip_rho <= 1.0:
        raise ParameterError(f"the trip-level correlation must be in [0, 1], got {trip_rho}")
    net = lg.network
    time = net.length_m / net.speed_mps
    src_sites = np.arange(sites.n - 1)  # origin and chargers
    sources = sites.edge[src_sites]
    noise_sd = np.sqrt(belief.noise_var)
    vals = np.column_stack(
        [time, net.length_m, belief.mean, belief.var, belief.noise_var, noise_sd, potential_wh, belief.effect_mean]
    )
    graphs = {"fastest": _arc_graph(lg, time), "energy": PathEnumerator(lg, belief.mean, h0, exact=False).graph}
    preds, sums = {}, {}
    for name, g in graphs.items():
        _, pred = dijkstra(g, directed=True, indices=sources, return_predecessors=True)
        preds[name] = pred
        sums[name] = tree_sums(pred, vals)
    grid_i, grid_j = np.meshgrid(src_sites, np.arange(1, sites.n), indexing="ij")
    pair = grid_i.ravel() != grid_j.ravel()
    src_i, dst_j = grid_i.ravel()[pair], grid_j.ravel()[pair]
    v = sites.edge[dst_j]
    s0 = int(sources[0])
    first = np.where(src_i == 0, 1.0, 0.0)[:, None] * vals[s0][None, :]  # the origin edge is paid for too
    blocks = []
    for k_i, name in enumerate(KINDS):
        pred, tot = preds[name], sums[name]
        reach = (v == sources[src_i]) | (pred[src_i, v] >= 0)
        row = tot[src_i, v] + first
        blocks.append(np.column_stack([src_i, dst_j, np.full(len(v), k_i), row])[reach])
    a = np.concatenate(blocks)
    if not len(a) or not np.any(a[:, 0] == 0) or not np.any(a[:, 1] == sites.dest):
        ids = net.edge_ids
        raise UnreachableError(f"destination {ids[sites.edge[-1]]!r} is unreachable from origin {ids[sites.edge[0]]!r}")
    src, dst, kind = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64), a[:, 2].astype(np.int64)
    det_s = sites.detour_s[src] + sites.detour_s[dst]
    det_m = sites.detour_m[src] + sites.detour_m[dst]
    det_wh = sites.detour_wh[src] + sites.detour_wh[dst]
    table = LegTable(
        sites=sites,
        src=src,
        dst=dst,
        kind=kind,
        time_s=a[:, 3] + det_s,
        length_m=a[:, 4] + det_m,
        mean_wh=a[:, 5] + det_wh,
        var_wh2=np.zeros(len(a)),
        reduced_wh=np.maximum(a[:, 5] - a[:, 9] + det_wh, 0.0),
        sd_sum=a[:, 8],
        trip_rho=float(trip_rho),
        _pred=preds,
        _first=np.concatenate([src_sites, [-1]]),
    )
    var_f = a[:, 6]
    if belief.joint:  # correlated posterior: each route's 1^T Sigma 1
        var_f = np.array([belief.route_moments(table.driven(k), trip=False)[1] for k in range(len(table))])
    table.var_wh2 = var_f + (1.0 - trip_rho) * a[:, 7] + trip_rho * a[:, 8] ** 2 + belief.trip_rel_var * a[:, 10] ** 2
    return _dedupe(table)


def _dedupe(t: LegTable) -> LegTable:
    """Drop an energy leg identical in cost to the fastest leg of the same pair (the same route, twice)."""
    key = np.round(np.column_stack([t.src, t.dst, t.time_s, t.mean_wh, t.var_wh2]), 6)
    _, first = np.unique(key, axis=0, return_index=True)
    keep = np.sort(first)
    old_routes = t.routes or {}
    out = LegTable(
        t.sites,
        t.src[keep],
        t.dst[keep],
        t.kind[keep],
        t.time_s[keep],
        t.length_m[keep],
        t.mean_wh[keep],
        t.var_wh2[keep],
        t.reduced_wh[keep],
        t.sd_sum[keep],
        t.trip_rho,
        {int(n): old_routes[int(o)] for n, o in enumerate(keep) if int(o) in old_routes},
        t._pred,
        t._first,
    )
    return out


def leg_covariance(table: LegTable, belief: RouteBelief, legs: list[int]) -> np.ndarray:
    """``(m, m)`` covariance (Wh^2) of the energies of ``legs`` driven in one trip (module doc)."""
    parts = [table.driven(k) for k in legs]
    edges = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    member = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    if belief.joint:
        cf = belief.cov(edges)
    else:  # independent edges; one edge driven twice is the same f_e
        cf = np.where(edges[:, None] == edges[None, :], belief.var[edges][:, None], 0.0)
    s = np.sqrt(belief.noise_var[edges])
    rho = table.trip_rho
    m = belief.effect_mean[edges]
    cn = rho * np.outer(s, s) + (1.0 - rho) * np.diag(s * s) + belief.trip_rel_var * np.outer(m, m)
    a = np.zeros((len(parts), len(edges)))
    a[member, np.arange(len(edges))] = 1.0
    return a @ (cf + cn) @ a.T


__all__ = ["KINDS", "LegTable", "Sites", "build_legs", "leg_covariance", "make_sites", "tree_sums"]
