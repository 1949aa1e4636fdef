"""Plausibility of trip-log rows, and charging stops split off: logs as they come.

A real log has bad rows (a GPS fix at ``LON=1555.63``, a speed of 1,000,000 km/h, a gauge that reads 5 % for one
second) and may span a charging stop.  One bad row must not abort a batch of logs, and a charging stop must not be
learned as negative driving energy.  So a row that fails a check below is **dropped** (the trace keeps its other
rows) and counted per reason; the reader emits one :class:`~evroute.errors.DataWarning` per file with the counts
and the first line of each reason (:func:`warn_dropped`).  A file is refused only when fewer than two rows remain.

Row checks, thresholds (module constants; generous, so that no real drive trips them):

* value checks (in the CSV reader, :mod:`evroute.traces.reader`): a field that is not a finite number or a time,
  a row with the wrong number of fields, negative speed, a state of charge outside ``[0, 100]`` %, a position
  outside WGS 84 (``|lat| <= 90``, ``|lon| <= 180``), time that does not increase (a time of day may wrap past
  midnight);
* ``speed`` above :data:`MAX_SPEED_MPS` (250 km/h: above any road EV's top speed);
* ``altitude`` outside :data:`ALTITUDE_RANGE_M` (-500 m, below the Dead Sea shore; 9,000 m, above any road);
* a **glitch** (:func:`glitches`) -- a run of at most :data:`MAX_RUN` = 5 rows that jumps away from the row before
  it and back to the row after it, while those two rows are plausible together (at an end of the trace: a run that
  jumps against a consistent rest) -- in speed (a change faster than :data:`MAX_ACCEL_MPS2` = 12 m/s^2, above any
  car's braking, plus :data:`SPEED_SLACK_MPS` = 2 m/s of logging resolution), position (a **GPS teleport**: a jump
  faster than :data:`MAX_GPS_SPEED_MPS` = 100 m/s plus :data:`GPS_SLACK_M` = 100 m of GPS error) or state of charge
  (a change faster than :data:`MAX_SOC_RATE_PCT_S` = 1 %/s, five times a 350 kW charger on a 50 kWh battery, plus
  :data:`SOC_SLACK_PCT` = 2 % of gauge steps).  A jump that does not come back (a GPS fix that was stale for a few
  seconds, then catches up) drops nothing; longer runs of bad positions are left to the map matcher, which matches
  the trace in pieces around them (:mod:`evroute.traces.mapmatch`).

Distance (:func:`distance_mismatch`, a warning, nothing dropped): the distance driven by the speed column and by the
positions must agree within a factor :data:`DISTANCE_RATIO` = 1.5 on a trace of more than :data:`DISTANCE_MIN_M` =
500 m by GPS, the positions taken every :data:`DISTANCE_STEP_S` = 10 s (a speed logged in mph read as km/h is a
factor 1.61; GPS noise adds a few %, chords across turns take a few % off).

Charging (:func:`split_charging`): the state of charge cannot rise while driving except by recuperation, which
gives back a fraction of the potential and kinetic energy lost.  A rise of more than :data:`SOC_RISE_PCT` = 3 %
above the lowest reading since the start of the segment (a charging stop, a log that spans a charge, a gauge reset)
ends the segment at the foot of that rise (the first row of the strictly increasing run of readings that ends above
the threshold); the next segment starts at its top (the first highest reading).  Each segment is its own trace
(named ``<name>#1``, ``#2``, ...), the rise between them is left out, and a warning says where.  Recuperation on a
long descent can exceed 3 % of a small battery (a Twizy's 6.1 kWh: a 150 m descent); such a trip is split too,
which costs the windows across the descent, never a negative energy learned as driving.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from evroute.errors import DataWarning

if TYPE_CHECKING:  # annotations only: reader calls split_all, so a runtime import would be a circle
    from evroute.traces.reader import Trace

MAX_SPEED_MPS = 250 / 3.6
ALTITUDE_RANGE_M = (-500.0, 9000.0)
MAX_ACCEL_MPS2 = 12.0
SPEED_SLACK_MPS = 2.0
MAX_GPS_SPEED_MPS = 100.0
GPS_SLACK_M = 100.0
MAX_SOC_RATE_PCT_S = 1.0
SOC_SLACK_PCT = 2.0
SOC_RISE_PCT = 3.0
MAX_RUN = 5
DISTANCE_RATIO = 1.5
DISTANCE_MIN_M = 500.0
DISTANCE_STEP_S = 10.0

_EARTH_RADIUS_M = 6_371_008.8


def _haversine_m(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return np.asarray(2 * _EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0))))


def glitches(jumps: Callable[[np.ndarray, np.ndarray], np.ndarray], n: int, max_run: int = 5) -> np.ndarray:
    """``(n,)`` rows inside a **glitch**: a run of at most ``max_run`` consecutive rows that jumps away from the row
    before it and back to the row after it, while those two rows do not jump against each other.  At either end of
    the trace, a run of at most ``max_run`` rows that jumps against a consistent rest (the next two rows do not jump)
    is a glitch too.

    Args:
        jumps: ``jumps(i, k)`` for index arrays ``i < k``: whether rows ``i`` and ``k`` are implausible together.
        n: rows.
        max_run: longest run (rows).
    """
    out = np.zeros(n, dtype=bool)
    if n < 3:
        return out
    steps = np.flatnonzero(jumps(np.arange(n - 1), np.arange(1, n)))  # step j: rows j, j + 1
    if not len(steps):
        return out
    inner = [(a, b) for a, b in zip(steps[:-1], steps[1:], strict=True) if b - a <= max_run]
    explained: set[int] = set()  # steps that bound a glitch inside the trace
    if inner:
        a, b = (np.array(x) for x in zip(*inner, strict=True))
        ok = ~jumps(a, b + 1)
        for lo, hi in zip(a[ok], b[ok], strict=True):
            out[lo + 1 : hi + 1] = True
            explained.update((int(lo), int(hi)))
    first, last = int(steps[0]), int(steps[-1])
    if first not in explained and first < max_run and first + 2 < n:
        if not jumps(np.array([first + 1]), np.array([first + 2]))[0]:
            out[: first + 1] = True
    if last not in explained and n - 1 - last <= max_run and last >= 1:
        if not jumps(np.array([last - 1]), np.array([last]))[0]:
            out[last + 1 :] = True
    return out


def range_masks(speed_mps: np.ndarray, altitude_m: np.ndarray) -> dict[str, np.ndarray]:
    """``reason -> (n,) bool`` rows whose speed or altitude is out of range (module doc)."""
    return {
        f"speed above {MAX_SPEED_MPS * 3.6:g} km/h": speed_mps > MAX_SPEED_MPS,
        f"altitude outside [{ALTITUDE_RANGE_M[0]:g}, {ALTITUDE_RANGE_M[1]:g}] m": (altitude_m < ALTITUDE_RANGE_M[0])
        | (altitude_m > ALTITUDE_RANGE_M[1]),
    }


def spike_masks(t: np.ndarray, v: np.ndarray, s: np.ndarray, la: np.ndarray, lo: np.ndarray) -> dict[str, np.ndarray]:
    """``reason -> (n,) bool`` rows inside a glitch of speed, position or state of charge (module doc), for ``n``
    consecutive rows that passed the range checks (a NaN state of charge -- a log without one -- never jumps)."""

    def speed_jump(i: np.ndarray, k: np.ndarray) -> np.ndarray:
        return np.abs(v[k] - v[i]) > MAX_ACCEL_MPS2 * (t[k] - t[i]) + SPEED_SLACK_MPS

    def teleport(i: np.ndarray, k: np.ndarray) -> np.ndarray:
        return _haversine_m(la[i], lo[i], la[k], lo[k]) > MAX_GPS_SPEED_MPS * (t[k] - t[i]) + GPS_SLACK_M

    def soc_jump(i: np.ndarray, k: np.ndarray) -> np.ndarray:
        return np.abs(s[k] - s[i]) > MAX_SOC_RATE_PCT_S * (t[k] - t[i]) + SOC_SLACK_PCT

    checks = {
        "speed glitch (a jump faster than 12 m/s^2 and back)": speed_jump,
        "GPS teleport (a jump faster than 100 m/s and back)": teleport,
        "state-of-charge glitch (a jump faster than 1 %/s and back)": soc_jump,
    }
    n = len(t)
    if n < 3:
        return {k: np.zeros(n, dtype=bool) for k in checks}
    return {reason: glitches(jumps, n, MAX_RUN) for reason, jumps in checks.items()}


def implausible_rows(
    t_s: np.ndarray,
    speed_mps: np.ndarray,
    altitude_m: np.ndarray,
    soc_pct: np.ndarray,
    lat: np.ndarray,
    lon: np.ndarray,
) -> dict[str, np.ndarray]:
    """``reason -> (n,) bool`` mask of the rows each check rejects (module doc), for ``n`` rows of valid values
    (finite, time increasing).  A row may fail several checks; the masks of the spike checks are computed on the rows
    the range checks keep (a range failure next to a good row is no spike of the good row)."""
    n = len(t_s)
    out = range_masks(speed_mps, altitude_m)
    ok = ~np.logical_or.reduce(list(out.values())) if n else np.ones(0, dtype=bool)
    idx = np.flatnonzero(ok)
    if len(idx) < 3:
        return out
    for reason, m in spike_masks(t_s[idx], speed_mps[idx], soc_pct[idx], lat[idx], lon[idx]).items():
        mask = np.zeros(n, dtype=bool)
        mask[idx] = m
        out[reason] = mask
    return out


def drop_text(source: str, dropped: dict[str, list[int]], n_rows: int, unit: str = "line") -> str:
    """One line: ``<source>: dropped K of N rows: <reason> (k, first at <unit> L); ...``."""
    total = len({i for rows in dropped.values() for i in rows})
    parts = [f"{reason} ({len(rows)}, first at {unit} {min(rows)})" for reason, rows in dropped.items() if rows]
    return f"{source}: dropped {total} of {n_rows} rows: {'; '.join(parts)}"


def warn_dropped(source: str, dropped: dict[str, list[int]], n_rows: int, unit: str = "line") -> None:
    """The per-file :class:`DataWarning` of :func:`drop_text` (nothing when no row was dropped)."""
    if any(dropped.values()):
        warnings.warn(DataWarning(drop_text(source, dropped, n_rows, unit)), stacklevel=3)


def select(trace: Trace, rows: np.ndarray, name: str | None = None) -> Trace:
    """The trace restricted to ``rows`` (indices or a mask), time shifted to start at 0 (a ``depart_s`` in the
    meta moves with it)."""
    idx = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, dtype=np.int64)
    t0 = float(trace.t_s[idx[0]])
    meta = dict(trace.meta)
    if "depart_s" in meta:
        meta["depart_s"] = float(meta["depart_s"]) + t0
    return replace(
        trace,
        t_s=trace.t_s[idx] - t0,
        speed_mps=trace.speed_mps[idx],
        altitude_m=trace.altitude_m[idx],
        soc_pct=trace.soc_pct[idx],
        lat=trace.lat[idx],
        lon=trace.lon[idx],
        name=trace.name if name is None else name,
        meta=meta,
    )


def clean_trace(trace: Trace, source: str) -> Trace | None:
    """``trace`` without the rows :func:`implausible_rows` rejects (warning with the sample numbers, 1-based), or
    ``None`` when fewer than two rows remain.  For logs read without line numbers (GPX, SUMO FCD)."""
    masks = implausible_rows(trace.t_s, trace.speed_mps, trace.altitude_m, trace.soc_pct, trace.lat, trace.lon)
    bad = np.logical_or.reduce(list(masks.values())) if masks else np.zeros(len(trace), dtype=bool)
    if not bad.any():
        return trace
    dropped = {k: (np.flatnonzero(m) + 1).tolist() for k, m in masks.items()}
    warn_dropped(f"{source} (trace {trace.name})", dropped, len(trace), unit="sample")
    return select(trace, ~bad) if int((~bad).sum()) >= 2 else None


def charging_segments(soc_pct: np.ndarray, rise_pct: float = SOC_RISE_PCT) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]`` half-open row ranges of the segments between charging rises (module doc)."""
    s = np.asarray(soc_pct, dtype=np.float64)
    n = len(s)
    out: list[tuple[int, int]] = []
    lo, low_i = 0, 0
    i = 1
    while i < n:
        if s[i] < s[low_i]:
            low_i = i
        elif s[i] - s[low_i] > rise_pct:
            foot = i  # s[i - 1] < s[i] (else the rise had passed the threshold at i - 1)
            while foot > lo and s[foot - 1] < s[foot]:  # back to the foot of the rise
                foot -= 1
            out.append((lo, foot + 1))
            while i + 1 < n and s[i + 1] > s[i]:  # on to the top of the rise
                i += 1
            lo = low_i = i
        i += 1
    out.append((lo, n))
    return out


def split_charging(trace: Trace, source: str, rise_pct: float = SOC_RISE_PCT) -> list[Trace]:
    """``trace`` cut at every rise of the state of charge above ``rise_pct`` % (module doc): its segments with at least
    two rows, named ``<name>#k``, and one :class:`DataWarning` naming the rises; ``[trace]`` when there is none."""
    segs = charging_segments(trace.soc_pct, rise_pct)
    if len(segs) == 1:
        return [trace]
    rises = [
        f"{trace.soc_pct[a - 1]:g} % -> {trace.soc_pct[b]:g} % (samples {a} to {b + 1})"
        for (_, a), (b, _) in zip(segs[:-1], segs[1:], strict=True)
    ]
    kept = [(lo, hi) for lo, hi in segs if hi - lo >= 2]
    warnings.warn(
        DataWarning(
            f"{source}: state of charge rises by more than {rise_pct:g} % with no charging flag: "
            f"{'; '.join(rises)}; split into {len(kept)} segment(s), the rises left out"
        ),
        stacklevel=2,
    )
    return [select(trace, np.arange(lo, hi), f"{trace.name}#{k + 1}") for k, (lo, hi) in enumerate(kept)]


def distance_mismatch(trace: Trace) -> tuple[float, float] | None:
    """``(from speed, from GPS)`` distances driven (m) when they disagree by more than :data:`DISTANCE_RATIO` (either
    way) on a trace whose GPS distance exceeds :data:`DISTANCE_MIN_M`; ``None`` when they agree.  A disagreement
    means a wrong ``speed_unit`` or a speed column that is not the vehicle's (GPS noise adds a few % at most)."""
    if len(trace) < 2:
        return None
    by_speed = trace.distance_m
    # positions every DISTANCE_STEP_S seconds (and the last): the sum of 1 s steps would add up the GPS noise
    k = np.unique(np.append(np.searchsorted(trace.t_s, np.arange(0.0, trace.t_s[-1], DISTANCE_STEP_S)), len(trace) - 1))
    la, lo = trace.lat[k], trace.lon[k]
    by_gps = float(_haversine_m(la[:-1], lo[:-1], la[1:], lo[1:]).sum())
    if by_gps < DISTANCE_MIN_M:
        return None
    ratio = by_speed / by_gps if by_gps > 0 else float("inf")
    return (by_speed, by_gps) if not 1 / DISTANCE_RATIO <= ratio <= DISTANCE_RATIO else None


def split_all(traces: Sequence[Trace], source: str) -> list[Trace]:
    """:func:`split_charging` of each trace (a SUMO FCD file holds several), after a warning for a trace whose speed
    and positions disagree on the distance driven (:func:`distance_mismatch`)."""
    for tr in traces:
        bad = distance_mismatch(tr)
        if bad is not None:
            warnings.warn(
                DataWarning(
                    f"{source}: trace {tr.name}: the speed column gives {bad[0] / 1000:.3g} km, the positions "
                    f"{bad[1] / 1000:.3g} km (more than a factor {DISTANCE_RATIO:g} apart: a wrong speed unit?)"
                ),
                stacklevel=2,
            )
    return [seg for tr in traces for seg in split_charging(tr, source)]


__all__ = [
    "ALTITUDE_RANGE_M",
    "GPS_SLACK_M",
    "MAX_ACCEL_MPS2",
    "MAX_GPS_SPEED_MPS",
    "MAX_RUN",
    "MAX_SOC_RATE_PCT_S",
    "MAX_SPEED_MPS",
    "SOC_RISE_PCT",
    "SOC_SLACK_PCT",
    "SPEED_SLACK_MPS",
    "DISTANCE_MIN_M",
    "DISTANCE_RATIO",
    "DISTANCE_STEP_S",
    "charging_segments",
    "distance_mismatch",
    "clean_trace",
    "drop_text",
    "implausible_rows",
    "range_masks",
    "spike_masks",
    "select",
    "glitches",
    "split_all",
    "split_charging",
    "warn_dropped",
]
