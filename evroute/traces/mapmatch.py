"""Map matching: a GPS trace to the path of network edges it drove (hidden Markov model, Viterbi).

The model is Newson & Krumm's (2009) HMM: the hidden state of sample ``t`` is a position on an edge (edge ``e``,
offset ``o`` metres from its start); a sample at distance ``d`` from its projection on the edge has emission cost
``d^2 / (2 sigma^2)`` (Gaussian GPS error, ``sigma`` m); moving from ``(a, o_a)`` to ``(b, o_b)`` between two samples
has transition cost ``|route - straight| / beta`` (exponential in the difference between the driven route distance and
the great-circle distance of the two samples).  The route distance is

* ``o_b - o_a`` on the same edge (a backward move of at most ``back_tol_m``, GPS noise, counts as 0);
* ``D(a, b) - o_a + o_b`` otherwise, ``D(a, b)`` the shortest legal distance from the start of ``a`` to the start of
  ``b`` in the line graph (arc ``a -> b`` weighs the length of ``a``).

Everything per network is computed once in :class:`MatchIndex`: edge polylines in a local metric projection split into
pieces of at most ``piece_m`` metres, a ``scipy.spatial.cKDTree`` over the pieces' midpoints, and the table of all
``D(a, b) <= max_route_m`` (``scipy.sparse.csgraph.dijkstra`` with a distance limit, rows in blocks) as sorted
``a * E + b`` keys with distances and shortest-path predecessors.  A trace is then matched with array operations:
one k-nearest query for all samples, exact projections onto the candidate pieces, the best ``k`` edges per sample,
all ``T x k x k`` transition costs by one ``searchsorted`` into the table, and the Viterbi recursion (one small
``k x k`` step per sample).  Where no transition is feasible (a gap longer than ``max_route_m``, or a sample far from
every road) the trace is cut and matched in pieces.  The driven path joins consecutive matched edges by their
shortest path (the table's predecessors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra
from scipy.spatial import cKDTree

from evroute.errors import DataError, ParameterError
from evroute.linegraph import LineGraph

#: networks of at most this many edge pairs (``E^2``; 4 bytes each) keep a direct pair index (:attr:`MatchIndex.pos`)
DENSE_PAIRS = 3_000**2
#: paths between matched edges remembered per index (:meth:`MatchIndex.between`)
BETWEEN_CACHE = 100_000
_M_PER_DEG = 111_319.49  # metres per degree of latitude (WGS 84 mean), and of longitude at the equator


@dataclass(frozen=True)
class MatchOptions:
    """Parameters of the HMM (module doc).

    Attributes:
        sigma_m: GPS error standard deviation (m) of the emission.
        beta_m: scale (m) of the exponential transition cost.
        radius_m: candidate edges lie within this distance of a sample (m).
        candidates: at most this many candidate edges per sample (the closest).
        back_tol_m: a backward move on one edge up to this (m) is GPS noise, not a U-turn.
        max_route_m: longest route distance between two consecutive samples (m); sets the distance table's limit.
        thin_factor: samples closer than ``thin_factor * sigma_m`` to the previous kept sample are left out of the
            HMM and placed on the matched path by interpolation (0: keep every sample).  Newson & Krumm thin at
            2 sigma; 4 sigma matched more precisely on Monaco with 15 m noise at 1 Hz.
        uturn_cost: extra transition cost of turning onto the reverse of the edge (a U-turn; in units of the
            transition cost, i.e. ``beta_m`` metres each): on a two-way street a noisy sample lies as close to the
            opposite direction, and a real U-turn is rare.
    """

    sigma_m: float = 10.0
    beta_m: float = 10.0
    radius_m: float = 60.0
    candidates: int = 10
    back_tol_m: float = 30.0
    max_route_m: float = 1500.0
    uturn_cost: float = 10.0
    thin_factor: float = 4.0

    def __post_init__(self) -> None:
        if not (self.thin_factor >= 0 and np.isfinite(self.thin_factor)):
            raise ParameterError(f"map matching: thin_factor must be a finite number >= 0, got {self.thin_factor}")
        if not (self.uturn_cost >= 0 and np.isfinite(self.uturn_cost)):
            raise ParameterError(f"map matching: uturn_cost must be a finite number >= 0, got {self.uturn_cost}")
        for k in ("sigma_m", "beta_m", "radius_m", "back_tol_m", "max_route_m"):
            v = getattr(self, k)
            if not (v > 0 and np.isfinite(v)):
                raise ParameterError(f"map matching: {k} must be a finite number > 0, got {v}")
        if self.candidates < 1:
            raise ParameterError(f"map matching: candidates must be >= 1, got {self.candidates}")


@dataclass(frozen=True)
class MatchedTrace:
    """A matched trace of ``T`` samples.

    Attributes:
        edge: ``(T,)`` matched edge per sample (-1: unmatched, no road within ``radius_m``).
        offset_m: ``(T,)`` position along that edge from its start (m, along the edge's geometry).
        path: ``(M,)`` the driven edges in order (consecutive matched edges joined by shortest paths).
        path_index: ``(T,)`` index into ``path`` of each sample's edge (-1: unmatched).
        pieces: number of independently matched pieces (1 unless the trace had to be cut).
        piece: ``(T,)`` the piece (0 .. pieces - 1) of each sample (-1: unmatched); ``None``: one piece.  The pieces'
            paths follow each other in ``path``, not joined (the vehicle's way between them is unknown).
    """

    edge: np.ndarray
    offset_m: np.ndarray
    path: np.ndarray
    path_index: np.ndarray
    pieces: int
    piece: np.ndarray | None = None

    def sample_piece(self) -> np.ndarray:
        """``(T,)`` the piece of each sample (-1: unmatched), also when :attr:`piece` is ``None`` (one piece)."""
        if self.piece is not None:
            return self.piece
        return np.where(self.path_index >= 0, 0, -1)


class MatchIndex:
    """Per-network data of the matcher (module doc); build once, match many traces.

    Args:
        linegraph: the network's line graph (edges, geometry, legal turns).
        piece_m: longest piece of an edge polyline in the KD-tree (m).
        options: HMM parameters (``max_route_m`` sets the distance table).
    """

    def __init__(self, linegraph: LineGraph, options: MatchOptions | None = None, *, piece_m: float = 20.0) -> None:
        self.linegraph = linegraph
        self.options = options or MatchOptions()
        net = linegraph.network
        self.n_edges = net.n_edges
        allpts = np.concatenate([np.asarray(g, dtype=np.float64) for g in net.geometry])
        self.lon0, self.lat0 = float(allpts[:, 0].mean()), float(allpts[:, 1].mean())
        self.kx = _M_PER_DEG * np.cos(np.radians(self.lat0))
        # every edge's polyline in segments of positive length, each split into pieces of at most piece_m
        sizes = np.array([len(g) for g in net.geometry])
        xy = self.project(allpts[:, 1], allpts[:, 0])
        seg_edge = np.repeat(np.arange(self.n_edges), sizes - 1)
        inner = np.ones(len(xy) - 1, dtype=bool)
        inner[np.cumsum(sizes)[:-1] - 1] = False  # the step from one edge's last point to the next edge's first
        xa_all, xb_all = xy[:-1][inner], xy[1:][inner]
        seg_all = np.hypot(*(xb_all - xa_all).T)
        keep = seg_all > 1e-9
        xa, xb, seg, seg_edge = xa_all[keep], xb_all[keep], seg_all[keep], seg_edge[keep]
        bounds = np.searchsorted(seg_edge, np.arange(self.n_edges + 1))
        self.length_m = np.zeros(self.n_edges)
        start = np.empty(len(seg))
        for e in range(self.n_edges):  # per edge: its own sums, as the edge's polyline alone gives
            lo, hi = bounds[e], bounds[e + 1]
            if hi > lo:
                self.length_m[e] = float(seg[lo:hi].sum())
                start[lo:hi] = np.concatenate([[0.0], np.cumsum(seg[lo:hi])[:-1]])
        n_sub = np.maximum(np.ceil(seg / piece_m).astype(np.int64), 1)
        of = np.repeat(np.arange(len(seg)), n_sub)  # each piece's segment
        k = np.arange(len(of)) - np.repeat(np.cumsum(n_sub) - n_sub, n_sub)  # its place in the segment
        d_ab = xb[of] - xa[of]
        u_a, u_b = k / n_sub[of], (k + 1) / n_sub[of]
        self.piece_a = xa[of] + u_a[:, None] * d_ab
        self.piece_b = xa[of] + u_b[:, None] * d_ab
        self.piece_edge = seg_edge[of].astype(np.int64)
        self.piece_offset = start[of] + u_a * np.hypot(*(xb - xa).T)[of]
        self.piece_half = float(np.max(np.hypot(*(self.piece_b - self.piece_a).T))) / 2
        #: each piece's vector ``b - a`` (m), its squared length (floored at 1e-12 m^2) and length (m)
        self.piece_v = self.piece_b - self.piece_a
        self.piece_vv = np.maximum(np.einsum("ij,ij->i", self.piece_v, self.piece_v), 1e-12)
        self.piece_len = np.sqrt(self.piece_vv)
        self.tree = cKDTree(0.5 * (self.piece_a + self.piece_b))
        ends = {(u, v): e for e, (u, v) in enumerate(zip(net.from_node.tolist(), net.to_node.tolist(), strict=True))}
        #: ``(E,)`` the edge in the opposite direction between the same junctions (-1: none)
        self.reverse = np.array(
            [ends.get((v, u), -1) for u, v in zip(net.from_node.tolist(), net.to_node.tolist(), strict=True)]
        )
        self._distance_table()

    def project(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """``(n, 2)`` local metric coordinates (m, equirectangular about the network's centre) of WGS 84 points."""
        return np.column_stack([(np.asarray(lon) - self.lon0) * self.kx, (np.asarray(lat) - self.lat0) * _M_PER_DEG])

    def _distance_table(self, block: int = 256) -> None:
        adj = self.linegraph.adjacency.tocoo()
        w = sp.csr_matrix(
            (np.maximum(self.length_m[adj.row], 1e-3), (adj.row, adj.col)), shape=(self.n_edges, self.n_edges)
        )
        keys, dist, pred = [], [], []
        for lo in range(0, self.n_edges, block):
            rows = np.arange(lo, min(lo + block, self.n_edges))
            d, p = dijkstra(w, indices=rows, limit=self.options.max_route_m, return_predecessors=True)
            r, c = np.nonzero(np.isfinite(d) & (d > 0))
            keys.append(rows[r] * self.n_edges + c)
            dist.append(d[r, c])
            pred.append(p[r, c])
        k = np.concatenate(keys)
        order = np.argsort(k)
        self.keys, self.dist, self.pred = k[order], np.concatenate(dist)[order], np.concatenate(pred)[order]
        #: ``(E * E,)`` the index in ``keys`` of each pair ``a * E + b`` (-1: none) where ``E^2 <= DENSE_PAIRS``
        #: (Monaco: 18 MB), else None: pairs found by one look-up instead of a binary search
        self.pos: np.ndarray | None = None
        if self.n_edges**2 <= DENSE_PAIRS and len(self.keys):
            self.pos = np.full(self.n_edges**2, -1, dtype=np.int32)
            self.pos[self.keys] = np.arange(len(self.keys), dtype=np.int32)
        self._between: dict[int, list[int]] = {}  # paths found so far (at most BETWEEN_CACHE)

    def route_m(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``D(a, b)`` (m) for arrays of edges (``inf`` beyond ``max_route_m`` or unreachable; 0 for ``a == b``)."""
        key = np.asarray(a, dtype=np.int64) * self.n_edges + np.asarray(b, dtype=np.int64)
        if self.pos is not None:
            i = self.pos[key]
            found = i >= 0
            i = np.maximum(i, 0)
        else:
            i = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
            found = self.keys[i] == key
        return np.where(found, self.dist[i], np.where(key // self.n_edges == key % self.n_edges, 0.0, np.inf))

    def between(self, a: int, b: int) -> list[int]:
        """Edges strictly between ``a`` and ``b`` on the shortest legal path ``a -> b`` (empty if adjacent)."""
        known = self._between.get(a * self.n_edges + b)
        if known is not None:
            return list(known)
        out: list[int] = []
        node = b
        while True:
            key = a * self.n_edges + node
            if self.pos is not None:
                i = int(self.pos[key])
            else:
                i = int(np.searchsorted(self.keys, key))
                i = i if i < len(self.keys) and self.keys[i] == key else -1
            if i < 0:
                raise DataError(f"no path from edge {a} to edge {b} in the distance table")
            p = int(self.pred[i])
            if p == a:
                if len(self._between) >= BETWEEN_CACHE:
                    self._between.clear()
                self._between[a * self.n_edges + b] = out[::-1]
                return out[::-1]
            out.append(p)
            node = p

    def candidates(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(edge, offset_m, distance_m)``, each ``(T, k)``, the ``k`` closest edges of every sample (-1 / inf pad)."""
        opt = self.options
        t_n = xy.shape[0]
        k_q = min(16 * opt.candidates, len(self.piece_edge))
        dq, iq = self.tree.query(xy, k=k_q, distance_upper_bound=opt.radius_m + self.piece_half)
        ok = np.isfinite(dq)
        t_idx = np.broadcast_to(np.arange(t_n)[:, None], dq.shape)[ok]
        piece = iq[ok]
        pa, v, vv = self.piece_a[piece], self.piece_v[piece], self.piece_vv[piece]
        txy = xy[t_idx]
        u = np.clip(np.einsum("ij,ij->i", txy - pa, v) / vv, 0.0, 1.0)
        d = np.hypot(*(txy - (pa + u[:, None] * v)).T)
        e = self.piece_edge[piece]
        off = self.piece_offset[piece] + u * self.piece_len[piece]
        near = d <= opt.radius_m
        t_idx, e, off, d = t_idx[near], e[near], off[near], d[near]
        order = np.lexsort((d, t_idx * (self.n_edges + 1) + e))  # per (sample, edge), the closest piece first
        t_idx, e, off, d = t_idx[order], e[order], off[order], d[order]
        first = np.ones(len(e), dtype=bool)
        first[1:] = (t_idx[1:] != t_idx[:-1]) | (e[1:] != e[:-1])
        t_idx, e, off, d = t_idx[first], e[first], off[first], d[first]
        order = np.lexsort((d, t_idx))
        t_idx, e, off, d = t_idx[order], e[order], off[order], d[order]
        start = np.searchsorted(t_idx, t_idx, side="left")
        rank = np.arange(len(t_idx)) - start
        keep = rank < opt.candidates
        ce = np.full((t_n, opt.candidates), -1, dtype=np.int64)
        co = np.zeros((t_n, opt.candidates))
        cd = np.full((t_n, opt.candidates), np.inf)
        ce[t_idx[keep], rank[keep]] = e[keep]
        co[t_idx[keep], rank[keep]] = off[keep]
        cd[t_idx[keep], rank[keep]] = d[keep]
        return ce, co, cd

    def has_candidate(self, xy: np.ndarray) -> np.ndarray:
        """``(T,)`` whether each sample has an edge within the radius (``candidates(xy)[0][:, 0] >= 0``), by one
        nearest-piece query: a piece whose centre is within the radius is (a point's distance to a segment is at most
        its distance to the segment's centre), none within radius + half a piece means no edge; only the samples in
        between get the full candidate search."""
        opt = self.options
        d1, _ = self.tree.query(xy, k=1, distance_upper_bound=opt.radius_m + self.piece_half)
        has = d1 <= opt.radius_m
        unsure = np.flatnonzero(np.isfinite(d1) & ~has)
        if unsure.size:
            has[unsure] = self.candidates(xy[unsure])[0][:, 0] >= 0
        return has

    def transition_costs(self, ce: np.ndarray, co: np.ndarray, straight_m: np.ndarray) -> np.ndarray:
        """``(T - 1, k, k)`` transition costs between the candidates of consecutive samples (``inf``: infeasible)."""
        opt = self.options
        a, b = ce[:-1, :, None], ce[1:, None, :]
        oa, ob = co[:-1, :, None], co[1:, None, :]
        route = self.route_m(np.maximum(a, 0), np.maximum(b, 0)) - oa + ob
        same = a == b
        route = np.where(same, np.where(ob - oa >= -opt.back_tol_m, np.maximum(ob - oa, 0.0), np.inf), route)
        route = np.where((a < 0) | (b < 0) | (route > opt.max_route_m), np.inf, route)
        uturn = (a >= 0) & (self.reverse[np.maximum(a, 0)] == b)
        return np.abs(route - straight_m[:, None, None]) / opt.beta_m + opt.uturn_cost * uturn

    def match(self, lat: np.ndarray, lon: np.ndarray) -> MatchedTrace:
        """Match one trace (``(T,)`` WGS 84 degrees) to its driven edges (module doc)."""
        return self.match_many([(lat, lon)])[0]

    def match_many(self, traces: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[MatchedTrace]:
        """Match independent traces (``(lat, lon)``, each ``(T_i,)`` WGS 84 degrees) together, each exactly as
        :meth:`match` alone (bit for bit: every step is per sample, per pair of consecutive samples or per chain):
        one candidate search and one transition table over all their samples, and the Viterbi recursions side by
        side (one ``(B, k, k)`` array step per time step for ``B`` traces, where each step's cost is mostly
        NumPy's per-call overhead: a long log's blocks are matched a few at a time)."""
        opt = self.options
        xys = [self.project(np.asarray(la, dtype=np.float64), np.asarray(lo, dtype=np.float64)) for la, lo in traces]
        cut = np.cumsum([0] + [len(xy) for xy in xys])
        has = self.has_candidate(np.concatenate(xys)) if cut[-1] else np.zeros(0, dtype=bool)
        matched_idx = [np.flatnonzero(has[a:b]) for a, b in zip(cut[:-1], cut[1:], strict=True)]
        kept = [
            _thin(xy, i, opt.thin_factor * opt.sigma_m) if i.size else i for xy, i in zip(xys, matched_idx, strict=True)
        ]
        out = [self._unmatched(len(xy)) for xy in xys]
        live = [b for b, i in enumerate(kept) if i.size]
        if not live:
            return out
        sxy = np.concatenate([xys[b][kept[b]] for b in live])
        # the HMM's samples only (a sample's candidates do not depend on others), trace by trace (its sorts run
        # faster on one trace's samples than on all of them at once)
        ce, co, cd = (np.concatenate(c) for c in zip(*(self.candidates(xys[b][kept[b]]) for b in live), strict=True))
        emis = 0.5 * (cd / opt.sigma_m) ** 2
        trans = self.transition_costs(ce, co, np.hypot(*np.diff(sxy, axis=0).T))  # pairs across traces: unused
        at = np.cumsum([0] + [len(kept[b]) for b in live])
        spans = list(zip(at[:-1].tolist(), at[1:].tolist(), strict=True))
        chains = _viterbi_many([emis[a:b] for a, b in spans], [trans[a : b - 1] for a, b in spans])
        for b, a, (choice, cuts) in zip(live, at[:-1], chains, strict=True):
            rows = np.arange(len(kept[b]))
            sel = (a + rows, choice)
            out[b] = self._assemble(len(xys[b]), matched_idx[b], kept[b], ce[sel], co[sel], cuts)
        return out

    @staticmethod
    def _unmatched(t_n: int) -> MatchedTrace:
        no = np.full(t_n, -1, dtype=np.int64)
        return MatchedTrace(no, np.zeros(t_n), np.zeros(0, dtype=np.int64), no.copy(), 0, no.copy())

    def _assemble(
        self, t_n: int, matched_idx: np.ndarray, idx: np.ndarray, e_kept: np.ndarray, o_kept: np.ndarray, cuts: set[int]
    ) -> MatchedTrace:
        """The :class:`MatchedTrace` of ``t_n`` samples whose HMM samples ``idx`` (of the ``matched_idx`` with a
        candidate) were matched to edges ``e_kept`` at offsets ``o_kept``, the chain restarted at ``cuts``."""
        edge = np.full(t_n, -1, dtype=np.int64)
        offset = np.zeros(t_n)
        path_index = np.full(t_n, -1, dtype=np.int64)
        rows = np.arange(len(idx))
        edge[idx], offset[idx] = e_kept, o_kept
        # the path: each change of matched edge appends it, joined to the previous one by the shortest path (not
        # across a cut); a sample's path index is the path's last edge at its change
        ev = e_kept.tolist()
        changes = np.flatnonzero(np.r_[e_kept[:1] != -1, e_kept[1:] != e_kept[:-1]])
        path: list[int] = []
        last = np.empty(len(changes), dtype=np.int64)
        for n, j in enumerate(changes.tolist()):
            prev = ev[j - 1] if j > 0 else -1
            if prev >= 0 and j not in cuts:
                path.extend(self.between(prev, ev[j]))
            path.append(ev[j])
            last[n] = len(path) - 1
        which = np.searchsorted(changes, rows, side="right") - 1
        path_index[idx] = np.where(which >= 0, last[np.maximum(which, 0)] if len(last) else -1, -1)
        path_arr = np.asarray(path, dtype=np.int64)
        piece = np.full(t_n, -1, dtype=np.int64)
        piece[idx] = np.searchsorted(np.asarray(sorted(cuts), dtype=np.int64), rows, side="right")
        skipped = np.setdiff1d(matched_idx, idx)
        if skipped.size:  # thinned-out samples: interpolated along the path between their kept neighbours
            start = np.concatenate([[0.0], np.cumsum(self.length_m[path_arr])[:-1]])
            s_kept = np.maximum.accumulate(start[path_index[idx]] + offset[idx])
            s = np.interp(skipped, idx, s_kept)
            pi = np.clip(np.searchsorted(start, s, side="right") - 1, 0, len(path_arr) - 1)
            if cuts:  # across a cut the path coordinate jumps: take the previous kept sample's position instead
                prev_kept = idx[np.maximum(np.searchsorted(idx, skipped) - 1, 0)]
                pi, s = path_index[prev_kept], start[path_index[prev_kept]] + offset[prev_kept]
            path_index[skipped], edge[skipped], offset[skipped] = pi, path_arr[pi], s - start[pi]
            piece[skipped] = piece[idx[np.maximum(np.searchsorted(idx, skipped) - 1, 0)]]
        return MatchedTrace(edge, offset, path_arr, path_index, 1 + len(cuts), piece)


def _thin(xy: np.ndarray, idx: np.ndarray, min_step_m: float) -> np.ndarray:
    """The samples ``idx`` kept for the HMM: each at least ``min_step_m`` from the previous kept one (Newson & Krumm
    2009: closer samples carry the GPS noise more than the motion), and always the last."""
    pts = xy[idx].tolist()
    keep = [0]
    lx, ly = pts[0]
    for j in range(1, len(pts)):
        x, y = pts[j]
        if (x - lx) ** 2 + (y - ly) ** 2 >= min_step_m * min_step_m:
            keep.append(j)
            lx, ly = x, y
    if keep[-1] != len(pts) - 1:
        keep.append(len(pts) - 1)
    return idx[np.asarray(keep)]


def _viterbi_many(emis: list[np.ndarray], trans: list[np.ndarray]) -> list[tuple[np.ndarray, set[int]]]:
    """Cheapest state sequences of independent HMMs, side by side: chain ``b`` has ``emis[b]`` ``(T_b, k)`` and
    ``trans[b]`` ``(T_b - 1, k, k)`` costs (chains padded to the longest; a padded step keeps the score).

    Returns, per chain, ``(choice (T_b,), cuts)``: the state index per step, and the steps where no transition was
    feasible (the sequence restarts there).
    """
    if not emis:
        return []
    b_n, k = len(emis), emis[0].shape[1]
    lens = np.array([len(e) for e in emis])
    t_max = int(lens.max())
    em = np.zeros((b_n, t_max, k))
    tr = np.zeros((b_n, max(t_max - 1, 0), k, k))
    for b in range(b_n):
        em[b, : lens[b]] = emis[b]
        tr[b, : lens[b] - 1] = trans[b]
    back = np.zeros((b_n, t_max, k), dtype=np.int64)
    cuts: list[list[int]] = [[] for _ in range(b_n)]
    finals: list[list[np.ndarray]] = [[] for _ in range(b_n)]
    score = em[:, 0].copy()
    cols = np.arange(k)
    chain = np.arange(b_n)[:, None]
    for t in range(1, t_max):
        total = score[:, :, None] + tr[:, t - 1]
        best = np.argmin(total, axis=1)
        new = total[chain, best, cols] + em[:, t]
        live = lens > t
        dead = live & ~np.isfinite(new).any(axis=1)
        for b in np.flatnonzero(dead).tolist():  # no feasible move: restart the chain here
            cuts[b].append(t)
            finals[b].append(score[b].copy())
        new[dead], best[dead] = em[dead, t], cols
        new[~live], best[~live] = score[~live], cols
        back[:, t] = best
        score = new
    out = []
    for b in range(b_n):
        t_n, bk = int(lens[b]), back[b].tolist()
        choice = [0] * t_n
        for s, e_, fin in zip([0, *cuts[b]], [*cuts[b], t_n], [*finals[b], score[b]], strict=True):
            c = int(np.argmin(fin))
            choice[e_ - 1] = c
            for t in range(e_ - 1, s, -1):
                c = bk[t][c]
                choice[t - 1] = c
        out.append((np.asarray(choice, dtype=np.int64), set(cuts[b])))
    return out


def _viterbi(emis: np.ndarray, trans: np.ndarray) -> tuple[np.ndarray, set[int]]:
    """:func:`_viterbi_many` of one chain: ``emis`` ``(T, k)``, ``trans`` ``(T - 1, k, k)`` costs."""
    return _viterbi_many([emis], [trans])[0]
