"""Energy readings of a map-matched trace: linear observations ``y = A f + eps`` of the driven edges' energies.

A battery gauge shows the state of charge rounded to a step ``q`` (% of capacity).  Where the shown value changes
between two samples, the true charge crossed the rounding threshold between them: half-way between the two shown
values (rounding to the nearest step).  So each change is a **boundary** with a known charge level and a position
on the driven path known to within the distance driven between the two samples (the midpoint is taken); the first
and the last sample are boundaries too, with a level known to within the rounding (``+- q / 2``).  Consecutive
boundaries bound a **window**; its reading is the charge drop times the usable capacity (Wh), and it observes

    y_w = sum_e a_we f_e + eps_w,    a_we = share of edge e's length driven inside the window

(``f_e`` the expected energy of a whole traversal of ``e``; a partly driven edge counts its share, i.e. the edge's
energy is taken as spread evenly along it).  Noise, in Wh^2, with ``v_b`` the variance of boundary ``b``'s level:

* rounding: ``v = (q C)^2 / 12`` at the first and last sample (uniform rounding error);
* a change boundary: ``v = (rho dS)^2 / 12 + (max(|dr| - q, 0) C)^2 / 12``, ``dS`` the distance between the two
  samples, ``rho`` the trace's mean energy per metre (the crossing is uniformly somewhere in ``dS``), the second term
  when the shown value jumped by more than one step (several thresholds crossed, the level is less certain);
* window ``w`` between boundaries ``b`` and ``b + 1`` has ``Var = v_b + v_(b+1)`` and consecutive windows share a
  boundary (covariance ``-v_(b+1)``): ``R = D diag(v) D^T`` plus the driving noise ``sum_e a_we s^2`` (``s^2`` the
  noise variance of one whole traversal).

With the vehicle's mechanical energy per sample (``mechanical_wh``, :mod:`evroute.traces.mechanical`) each
reading is a *reduced* energy: the window's battery energy minus ``M(b + 1) - M(b)``, which adds up along routes.

**Trip ends** (``drop_start`` / ``drop_end``): the windows that cover any part of the trace's first (last) path
edge are dropped.  ``evroute learn`` and the known-truth study drop the **start**: there the vehicle leaves a parking
place from rest, standing with its auxiliaries on before it moves, and a log's first samples are the likeliest to be
matched to the wrong edge (a departure that turns round out of a parking place is matched to the far end of the next
edge, the whole manoeuvre squeezed into metres of it): a window over a few per cent of an edge then reads tens of Wh,
and dividing by its share makes the edge's learned energy many times its true one (on the Luxembourg known-truth
study, a 101 m edge learned at 104 Wh against a prior of 8 Wh; the more trips, the more such edges).  The end is
kept: there the vehicle is on the road, matched with the trip's history, and stops at its destination as a route
served from rest to rest does, so its last edge's readings carry the stop that route pays.  Measured on the study's
1000 training trips (BI, exact logs, held-out RMSE against the route means): keeping both ends 36.2 Wh on Luxembourg
and 15.3 Wh on Monaco; dropping the start 25.4 and 13.6; dropping both 25.6 and 19.8 (``docs/results/
trip_logs_known_truth.md``).  A trace streamed in blocks drops them only at its true start (end).

Boundaries closer than ``min_window_m`` to the previous one are merged (a stop: the charge drawn while standing
belongs to the edge the vehicle stands on, which the next window covers).  Samples the matcher left unmatched are
skipped.

A trace matched in pieces (a GPS jump or gap with no feasible transition, :class:`MatchedTrace`) is learned piece by
piece: each piece's path is its own, the boundaries are the charge changes inside a piece (plus the trace's first and
last sample), and a window between boundaries on either side of a break is **dropped** -- the vehicle's way and
energy between the pieces are unknown, so its reading cannot be attributed to edges.  A change seen across the break
itself is no boundary (its position is unknown).  Windows inside a piece are kept, with the same noise as above
(``rho`` is the whole trace's mean).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

import numpy as np

from evroute.errors import ParameterError
from evroute.traces.mapmatch import MatchedTrace
from evroute.traces.reader import Trace


@dataclass(frozen=True)
class Readings:
    """The linear observations of one trace: ``y = A f[edges] + eps``, ``eps ~ N(0, noise_cov)``.

    Attributes:
        edges: ``(k,)`` distinct edges (indices) the windows cover.
        a: ``(m, k)`` driven share of each edge in each window.
        y: ``(m,)`` battery energy drawn in each window, Wh.
        noise_band: ``(2, m)`` the noise covariance, tridiagonal (consecutive windows share at most a boundary), in
            the lower banded form of :func:`scipy.linalg.cholesky_banded`: the diagonal, then the sub-diagonal (its last
            entry 0), Wh^2; :attr:`noise_cov` is the ``(m, m)`` matrix.
        positions_m: ``(b,)`` the kept windows' boundaries along the driven path, m (``b = m + 1`` for a trace
            matched in one piece: consecutive windows share a boundary).
        dropped: windows left out because they span a break between matched pieces (module doc).
        trimmed: windows left out because they cover the trace's first or last path edge (module doc, trip ends).
    """

    edges: np.ndarray
    a: np.ndarray
    y: np.ndarray
    noise_band: np.ndarray
    positions_m: np.ndarray
    dropped: int = 0
    trimmed: int = 0

    @property
    def noise_cov(self) -> np.ndarray:
        """``(m, m)`` the noise covariance, Wh^2 (from :attr:`noise_band`)."""
        d, off = self.noise_band[0], self.noise_band[1, :-1]
        return np.diag(d) + np.diag(off, -1) + np.diag(off, 1)

    def noise_sum(self) -> float:
        """``1^T R 1``: the variance of the readings' sum, Wh^2."""
        return float(self.noise_band[0].sum() + 2.0 * self.noise_band[1].sum())


def soc_step_pct(soc_pct: np.ndarray) -> float:
    """The gauge's step: the smallest non-zero change between consecutive readings (%; ``nan`` if it never moves)."""
    d = np.abs(np.diff(np.asarray(soc_pct, dtype=np.float64)))
    d = d[d > 1e-9]
    return float(d.min()) if d.size else float("nan")


def path_positions(matched: MatchedTrace, length_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s (T,), start (M,))``: each sample's distance along the driven path (``nan``: unmatched; made
    non-decreasing) and the start of each path edge (m)."""
    lengths = np.asarray(length_m, dtype=np.float64)[matched.path]
    start = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
    ok = matched.path_index >= 0
    s = np.full(matched.edge.shape, np.nan)
    s[ok] = start[matched.path_index[ok]] + np.minimum(matched.offset_m[ok], lengths[matched.path_index[ok]])
    s[ok] = np.maximum.accumulate(s[ok])
    return s, start


def trace_readings(
    trace: Trace,
    matched: MatchedTrace,
    length_m: np.ndarray,
    capacity_wh: float,
    edge_noise_var: float | np.ndarray,
    *,
    soc_step: float | None = None,
    min_window_m: float = 5.0,
    mechanical_wh: np.ndarray | None = None,
    drop_start: bool = False,
    drop_end: bool = False,
) -> Readings | None:
    """The windows and readings of one matched trace, piece by piece (module doc); ``None`` if it has fewer than two
    matched samples, drives less than ``min_window_m``, or has no window inside a piece.

    Args:
        length_m: ``(E,)`` edge lengths the matcher's offsets refer to (:attr:`MatchIndex.length_m`).
        capacity_wh: usable battery capacity (Wh) that 100 % of the state of charge stands for.
        edge_noise_var: noise variance of one whole traversal of an edge, Wh^2: one for every edge, or ``(E,)`` per
            edge (indexed like ``length_m``; e.g. :meth:`~evroute.models.linear_obs.LinearObsEdgeModel.
            traversal_noise_var`); a window's driving noise is ``sum_e a_we s_e^2``.
        soc_step: the gauge's step in % (default: :func:`soc_step_pct` of the trace).
        mechanical_wh: ``(N,)`` the vehicle's mechanical energy at each sample (Wh,
            :func:`evroute.traces.mechanical.sample_mechanical_wh`): when given, each window's reading is its battery
            energy minus the change of mechanical energy between its boundaries (a *reduced* energy, which adds up
            along routes; at a change boundary ``M`` is the mean of the two samples', with the variance
            ``dM^2 / 12`` of where in between the crossing happened).  ``None``: battery energies.
        drop_start, drop_end: the trace starts (ends) a trip: drop the windows that cover its first (last) path edge
            (module doc, trip ends; ``None`` when nothing is left).
    """
    nv = np.asarray(edge_noise_var, dtype=np.float64)
    if nv.ndim and nv.shape != np.shape(length_m):
        raise ParameterError(f"edge_noise_var has shape {nv.shape}, the edges {np.shape(length_m)}")
    if not (capacity_wh > 0 and np.all(nv >= 0) and np.isfinite(nv).all() and min_window_m > 0):
        raise ParameterError("capacity_wh and min_window_m must be > 0, edge_noise_var finite and >= 0")
    s_all, start = path_positions(matched, length_m)
    ok = np.isfinite(s_all)
    if ok.sum() < 2:
        return None
    s, r = s_all[ok], np.asarray(trace.soc_pct, dtype=np.float64)[ok]
    if mechanical_wh is None:
        mech = np.zeros(len(s))
    else:
        mech = np.asarray(mechanical_wh, dtype=np.float64)
        if mech.shape != s_all.shape:
            raise ParameterError(f"mechanical_wh has shape {mech.shape}, the trace {s_all.shape}")
        mech = mech[ok]
        if not np.isfinite(mech).all():
            raise ParameterError("mechanical_wh is not finite at a matched sample")
    piece = matched.sample_piece()[ok]
    q = soc_step_pct(r) if soc_step is None else float(soc_step)
    if not np.isfinite(q):
        q = 0.0  # the reading never moved: only the end points, at the rounding of an unknown step (0)
    dist = s[-1] - s[0]
    if dist < min_window_m:
        return None
    rho = abs(r[0] - r[-1]) * capacity_wh / 100.0 / dist  # mean Wh per metre (of the battery energy: the bound)
    scale = capacity_wh / 100.0
    cuts = np.flatnonzero(piece[1:] != piece[:-1]) + 1  # first sample of each piece after the first
    bounds = np.concatenate([[0], cuts, [len(s)]])
    pos: list[float] = []
    lvl: list[float] = []
    var: list[float] = []
    mec: list[float] = []
    win: list[int] = []  # windows kept: index of their first boundary in pos
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
        pb, lb, vb, mb = _piece_boundaries(
            s[lo:hi], r[lo:hi], mech[lo:hi], q, rho, scale, min_window_m, first=k == 0, last=hi == len(s)
        )
        win.extend(range(len(pos), len(pos) + len(pb) - 1))
        pos.extend(pb)
        lvl.extend(lb)
        var.extend(vb)
        mec.extend(mb)
    if not win:
        return None
    w = np.asarray(win)
    p = np.asarray(pos)
    mv = np.asarray(mec)
    lengths = np.asarray(length_m, dtype=np.float64)[matched.path]
    lo_ = np.maximum(p[w, None], start[None, :])
    hi_ = np.minimum(p[w + 1, None], (start + lengths)[None, :])
    share = np.clip(hi_ - lo_, 0.0, None) / np.maximum(lengths, 1e-9)[None, :]  # (m, M)
    keep = np.ones(len(w), dtype=bool)
    if drop_start:
        keep &= share[:, 0] <= 0.0
    if drop_end:
        keep &= share[:, -1] <= 0.0
    if not keep.any():
        return None
    trimmed = int((~keep).sum())
    w, share = w[keep], share[keep]
    y = (np.asarray(lvl)[w] - np.asarray(lvl)[w + 1]) * scale - (mv[w + 1] - mv[w])
    edges, first, inv = np.unique(matched.path, return_index=True, return_inverse=True)
    a = np.zeros((len(y), len(edges)))
    a[:, inv[first]] = share[:, first]  # each edge's first traversal; the later ones added in path order
    again = np.setdiff1d(np.arange(len(inv)), first, assume_unique=True)
    if again.size:
        np.add.at(a.T, inv[again], share.T[again])
    used = a.sum(axis=0) > 0
    edges, a = edges[used], a[:, used]
    v = np.asarray(var)
    band = np.zeros((2, len(y)))
    driving = a @ nv[edges] if nv.ndim else float(nv) * a.sum(axis=1)
    band[0] = (v[w] + v[w + 1]) + (driving + 1e-9 * max(float(nv.max()), 1.0))
    shared = np.flatnonzero(w[1:] == w[:-1] + 1)  # consecutive windows with a common boundary
    band[1, shared] = -v[w[shared] + 1]
    return Readings(
        edges=edges,
        a=a,
        y=y,
        noise_band=band,
        positions_m=p[np.union1d(w, w + 1)],
        dropped=len(pos) - 1 - len(win),
        trimmed=trimmed,
    )


def _first_at_least(p: np.ndarray, a: np.ndarray, gap: float) -> np.ndarray:
    """For each ``a_j``: the first index ``k`` of the non-decreasing ``p`` with ``p_k - a_j >= gap`` (``len(p)`` if
    none), decided by that difference itself (a search on ``a_j + gap``, then moved where rounding differs)."""
    n = len(p)
    k = np.searchsorted(p, a + gap, side="left")
    if n == 0:
        return k
    for _ in range(2):
        fwd = (k < n) & (p[np.minimum(k, n - 1)] - a < gap)
        k = k + fwd
        back = (k > 0) & (p[np.maximum(k - 1, 0)] - a >= gap)
        k = k - back
    return k


def _piece_boundaries(
    s: np.ndarray,
    r: np.ndarray,
    mech: np.ndarray,
    q: float,
    rho: float,
    scale: float,
    min_window_m: float,
    *,
    first: bool,
    last: bool,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Boundaries ``(position m, level %, variance Wh^2, mechanical energy Wh)`` of one matched piece (``(n,)``
    path positions ``s``, gauge readings ``r`` and mechanical energies ``mech``): its charge changes, and the trace's
    first / last sample where the piece has them (``first``, ``last``).  A piece's other end is a break: the window
    across it is not bounded, so it has no boundary there."""
    q_wh2 = (q * scale) ** 2 / 12.0
    pos, lvl, var, mec = ([float(s[0])], [float(r[0])], [q_wh2], [float(mech[0])]) if first else ([], [], [], [])
    i = np.flatnonzero(np.abs(np.diff(r)) > 1e-9) + 1  # the charge changes, all at once
    p = 0.5 * (s[i - 1] + s[i])
    dm = mech[i] - mech[i - 1]
    v = (rho * (s[i] - s[i - 1])) ** 2 / 12.0 + (np.maximum(np.abs(r[i] - r[i - 1]) - q, 0.0) * scale) ** 2 / 12
    # a change closer than min_window_m to the last kept boundary is skipped: follow the chain of next kept ones
    # (positions are non-decreasing, so the next kept after j is the first at >= p_j + min_window_m)
    nxt_a = _first_at_least(p, p, min_window_m)
    nxt = nxt_a.tolist()
    skips = np.flatnonzero(nxt_a != np.arange(1, len(p) + 1)).tolist()  # where the chain passes over a change
    j = int(_first_at_least(p, np.array([pos[-1]]), min_window_m)[0]) if pos else 0
    keep: list[int] = []
    at = 0
    while j < len(p):  # j, j + 1, ... up to the next skip are all kept, then the chain jumps
        at = bisect.bisect_left(skips, j, at)
        if at == len(skips):
            keep.extend(range(j, len(p)))
            break
        keep.extend(range(j, skips[at] + 1))
        j = nxt[skips[at]]
    k = np.asarray(keep, dtype=np.int64)
    pos += p[k].tolist()
    lvl += (0.5 * (r[i[k] - 1] + r[i[k]])).tolist()
    var += (v[k] + dm[k] ** 2 / 12.0).tolist()
    mec += (0.5 * (mech[i[k] - 1] + mech[i[k]])).tolist()
    if last:
        if len(pos) > (1 if first else 0) and s[-1] - pos[-1] < min_window_m:
            pos.pop(), lvl.pop(), var.pop(), mec.pop()
        pos.append(float(s[-1]))
        lvl.append(float(r[-1]))
        var.append(q_wh2)
        mec.append(float(mech[-1]))
    return pos, lvl, var, mec
