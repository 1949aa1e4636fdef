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

Boundaries closer than ``min_window_m`` to the previous one are merged (a stop: the charge drawn while standing
belongs to the edge the vehicle stands on, which the next window covers).  Samples the matcher left unmatched are
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evroute.errors import DataError, ParameterError
from evroute.traces.mapmatch import MatchedTrace
from evroute.traces.reader import Trace


@dataclass(frozen=True)
class Readings:
    """The linear observations of one trace: ``y = A f[edges] + eps``, ``eps ~ N(0, noise_cov)``.

    Attributes:
        edges: ``(k,)`` distinct edges (indices) the windows cover.
        a: ``(m, k)`` driven share of each edge in each window.
        y: ``(m,)`` battery energy drawn in each window, Wh.
        noise_cov: ``(m, m)`` noise covariance, Wh^2.
        positions_m: ``(m + 1,)`` window boundaries along the driven path, m.
    """

    edges: np.ndarray
    a: np.ndarray
    y: np.ndarray
    noise_cov: np.ndarray
    positions_m: np.ndarray


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
    edge_noise_var: float,
    *,
    soc_step: float | None = None,
    min_window_m: float = 5.0,
) -> Readings | None:
    """The windows and readings of one matched trace (module doc); ``None`` if it has fewer than two matched samples
    or drives less than ``min_window_m``.

    Args:
        length_m: ``(E,)`` edge lengths the matcher's offsets refer to (:attr:`MatchIndex.length_m`).
        capacity_wh: usable battery capacity (Wh) that 100 % of the state of charge stands for.
        edge_noise_var: noise variance of one whole traversal of an edge, Wh^2.
        soc_step: the gauge's step in % (default: :func:`soc_step_pct` of the trace).
    """
    if matched.pieces > 1:
        raise DataError(f"trace {trace.name!r}: matched in {matched.pieces} pieces (a gap); split the log there")
    if not (capacity_wh > 0 and edge_noise_var >= 0 and min_window_m > 0):
        raise ParameterError("capacity_wh and min_window_m must be > 0, edge_noise_var >= 0")
    s_all, start = path_positions(matched, length_m)
    ok = np.isfinite(s_all)
    if ok.sum() < 2:
        return None
    s, r = s_all[ok], np.asarray(trace.soc_pct, dtype=np.float64)[ok]
    q = soc_step_pct(r) if soc_step is None else float(soc_step)
    if not np.isfinite(q):
        q = 0.0  # the reading never moved: only the end points, at the rounding of an unknown step (0)
    dist = s[-1] - s[0]
    if dist < min_window_m:
        return None
    rho = abs(r[0] - r[-1]) * capacity_wh / 100.0 / dist  # mean Wh per metre
    q_wh2 = (q * capacity_wh / 100.0) ** 2 / 12.0
    pos, lvl, var = [s[0]], [r[0]], [q_wh2]
    change = np.flatnonzero(np.abs(np.diff(r)) > 1e-9) + 1
    for i in change:
        p = 0.5 * (s[i - 1] + s[i])
        v = (rho * (s[i] - s[i - 1])) ** 2 / 12.0 + (max(abs(r[i] - r[i - 1]) - q, 0.0) * capacity_wh / 100.0) ** 2 / 12
        if p - pos[-1] < min_window_m:
            continue
        pos.append(p)
        lvl.append(0.5 * (r[i - 1] + r[i]))
        var.append(v)
    if s[-1] - pos[-1] < min_window_m and len(pos) > 1:
        pos.pop(), lvl.pop(), var.pop()
    pos.append(s[-1])
    lvl.append(r[-1])
    var.append(q_wh2)
    p = np.asarray(pos)
    y = -np.diff(np.asarray(lvl)) * capacity_wh / 100.0
    lengths = np.asarray(length_m, dtype=np.float64)[matched.path]
    lo = np.maximum(p[:-1, None], start[None, :])
    hi = np.minimum(p[1:, None], (start + lengths)[None, :])
    share = np.clip(hi - lo, 0.0, None) / np.maximum(lengths, 1e-9)[None, :]  # (m, M)
    edges, inv = np.unique(matched.path, return_inverse=True)
    a = np.zeros((len(y), len(edges)))
    np.add.at(a.T, inv, share.T)
    used = a.sum(axis=0) > 0
    edges, a = edges[used], a[:, used]
    v = np.asarray(var)
    cov = np.diag(v[:-1] + v[1:]) - np.diag(v[1:-1], 1) - np.diag(v[1:-1], -1)
    cov += np.diag(edge_noise_var * a.sum(axis=1) + 1e-9 * max(edge_noise_var, 1.0))
    return Readings(edges=edges, a=a, y=y, noise_cov=cov, positions_m=p)
