"""Read timestamped EV trip logs (GPS + speed + altitude + state of charge) into :class:`Trace` arrays.

A log is a CSV file with one row per sample.  Which column holds what is given by a :class:`TraceColumns`
mapping (the defaults are the project's documented schema; :data:`TWIZY_COLUMNS` maps the RSK Twizy data set's
analysed logs).  Every value is validated as it is read: a file that cannot be a log (missing, not CSV, a column
missing, fewer than two usable rows) raises :class:`~evroute.errors.DataError` with one line naming the file; a bad
row is dropped and counted, with one warning per file naming the reasons and their first lines
(:mod:`evroute.traces.clean`), so one bad GPS fix never aborts a batch of logs.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from evroute.errors import DataError

_SPEED_FACTORS = {"km/h": 1 / 3.6, "m/s": 1.0, "mph": 0.44704}


@dataclass(frozen=True)
class TraceColumns:
    """Column names and units of a trip-log CSV file.

    Attributes:
        time: column with the sample time: seconds (a number), an ISO 8601 timestamp, or text parsed with
            ``time_format``.
        time_format: ``strptime`` format of ``time`` (``None``: a number of seconds or ISO 8601).  A format without
            a date (``"%H:%M:%S"``) is a time of day; it may wrap past midnight once per day.
        speed: vehicle speed column, in ``speed_unit``.
        speed_unit: ``"km/h"``, ``"m/s"`` or ``"mph"``.
        altitude: altitude above sea level (m), e.g. from GPS.
        soc: battery state of charge in percent of usable capacity (0-100).
        lat, lon: WGS 84 position in degrees.
    """

    time: str = "time"
    time_format: str | None = None
    speed: str = "speed_kmh"
    speed_unit: str = "km/h"
    altitude: str = "altitude_m"
    soc: str = "soc_pct"
    lat: str = "lat"
    lon: str = "lon"

    def __post_init__(self) -> None:
        if self.speed_unit not in _SPEED_FACTORS:
            raise DataError(f"speed_unit must be one of {sorted(_SPEED_FACTORS)}, got {self.speed_unit!r}")

    def required(self) -> tuple[str, ...]:
        return (self.time, self.speed, self.altitude, self.soc, self.lat, self.lon)


#: The RSK Twizy data set's analysed logs (`Date, Time, Soc, Speed, Mode, LAT, LON, ALT, ...`).  Their ``Date`` column
#: is corrupted on some rows (e.g. ``02/00/2090``) while ``Time`` stays a valid 1 Hz clock, so time is read from
#: ``Time`` alone (time of day).
TWIZY_COLUMNS = TraceColumns(
    time="Time", time_format="%H:%M:%S", speed="Speed", altitude="ALT", soc="Soc", lat="LAT", lon="LON"
)


@dataclass(frozen=True)
class Trace:
    """One logged trip as arrays of ``N`` samples (SI units).

    Attributes:
        t_s: ``(N,)`` strictly increasing time since the first sample (s).
        speed_mps: ``(N,)`` speed (m/s), >= 0.
        altitude_m: ``(N,)`` altitude (m) as logged (noisy for GPS; see :func:`evroute.traces.energy.smooth_altitude`).
        soc_pct: ``(N,)`` state of charge (% of usable capacity).
        lat, lon: ``(N,)`` position (degrees).
        name: the trip's name (file stem by default).
    """

    t_s: np.ndarray
    speed_mps: np.ndarray
    altitude_m: np.ndarray
    soc_pct: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    name: str = ""
    meta: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.t_s.shape[0])

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0])

    @property
    def distance_m(self) -> float:
        """Distance driven (m), integrating speed with the trapezoid rule."""
        return float(np.sum(0.5 * (self.speed_mps[1:] + self.speed_mps[:-1]) * np.diff(self.t_s)))


class _BadRow(Exception):
    """A row that fails a value check: ``reason`` counts it (:mod:`evroute.traces.clean`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _number(column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _BadRow(f"column {column!r} not a number") from None
    if not math.isfinite(value):
        raise _BadRow(f"column {column!r} not finite")
    return value


def _parse_time(cols: TraceColumns, text: str) -> float:
    """Seconds: a number, ISO 8601, or ``time_format`` (a time of day when the format has no date)."""
    if cols.time_format is None:
        try:
            value = float(text)
        except ValueError:
            try:
                return datetime.fromisoformat(text).timestamp()
            except (ValueError, OverflowError, OSError):
                raise _BadRow(f"column {cols.time!r} not seconds or an ISO 8601 time") from None
        if not math.isfinite(value):
            raise _BadRow(f"column {cols.time!r} not finite")
        return value
    try:
        stamp = datetime.strptime(text, cols.time_format)
    except ValueError:
        raise _BadRow(f"column {cols.time!r} does not match {cols.time_format!r}") from None
    if stamp.year == 1900:  # no date in the format: a time of day
        return float(stamp.hour * 3600 + stamp.minute * 60 + stamp.second + stamp.microsecond * 1e-6)
    try:
        return stamp.timestamp()
    except (OverflowError, OSError, ValueError):
        raise _BadRow(f"column {cols.time!r} out of range") from None


def _parse_row(row: list[str], idx: dict[str, int], cols: TraceColumns) -> tuple[float, ...]:
    """``(time, speed, altitude, soc, lat, lon)`` of one row, in the log's units; :class:`_BadRow` on a value that
    fails a check (not a number, negative speed, state of charge outside [0, 100], position outside WGS 84)."""
    t = _parse_time(cols, row[idx[cols.time]].strip())
    speed, alt, soc, lat, lon = (
        _number(c, row[idx[c]].strip()) for c in (cols.speed, cols.altitude, cols.soc, cols.lat, cols.lon)
    )
    if speed < 0:
        raise _BadRow(f"column {cols.speed!r} negative speed")
    if not 0.0 <= soc <= 100.0:
        raise _BadRow(f"column {cols.soc!r} state of charge outside [0, 100]")
    if abs(lat) > 90 or abs(lon) > 180:
        raise _BadRow(f"columns {cols.lat!r}/{cols.lon!r} position outside WGS 84 range")
    return t, speed, alt, soc, lat, lon


def read_trace_csv(path: str | Path, columns: TraceColumns | None = None, *, name: str | None = None) -> Trace:
    """Read one trip log (CSV with a header row) into a :class:`Trace`, dropping implausible rows.

    File checks (a failure raises :class:`~evroute.errors.DataError` naming the file): the file exists and is UTF-8
    CSV, every mapped column is in the header, at least two usable rows.  Row checks (a failing row is **dropped**,
    and one :class:`~evroute.errors.DataWarning` per file counts the drops per reason with the first line of each):
    the row has the header's number of fields; every value is a finite number (time: see :class:`TraceColumns`);
    speed >= 0; state of charge in [0, 100]; latitude in [-90, 90] and longitude in [-180, 180]; time increases
    over the last kept row (a time of day may wrap past midnight); then the plausibility checks of
    :mod:`evroute.traces.clean` (speed, altitude, short glitches of speed, position and charge).  Blank lines are
    skipped.

    Args:
        path: the CSV file.
        columns: the column mapping (default: :class:`TraceColumns`' documented schema).
        name: the trip's name (default: the file's stem).

    Returns:
        The trace, time shifted to start at 0.
    """
    from evroute.traces.clean import implausible_rows, warn_dropped

    cols = columns or TraceColumns()
    p = Path(path)
    if not p.is_file():
        raise DataError(f"trip log {p} not found")
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read trip log {p}: {' '.join(str(exc).split())[:120]}") from None
    if not rows:
        raise DataError(f"{p}: empty file (expected a header row)")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in cols.required() if c not in header]
    if missing:
        shown = ", ".join(header)[:200]
        raise DataError(f"{p}: missing column(s) {', '.join(map(repr, missing))} (header: {shown})")
    idx = {c: header.index(c) for c in cols.required()}
    dropped: dict[str, list[int]] = {}
    values: list[tuple[float, ...]] = []
    lines: list[int] = []
    day = 0.0
    n_rows = 0
    wraps = cols.time_format is not None and "%d" not in cols.time_format
    for i, row in enumerate(rows[1:]):
        line = i + 2
        if not row:
            continue
        n_rows += 1
        try:
            if len(row) != len(header):
                raise _BadRow("wrong number of fields")
            v = _parse_row(row, idx, cols)
            t = v[0] + day
            if values and t <= values[-1][0]:
                if not (wraps and t + 86400 > values[-1][0]):
                    raise _BadRow(f"column {cols.time!r} time does not increase")
                day += 86400.0  # a time of day that passed midnight
                t += 86400.0
        except _BadRow as exc:
            dropped.setdefault(exc.reason, []).append(line)
            continue
        values.append((t, *v[1:]))
        lines.append(line)
    a = np.array(values, dtype=np.float64).reshape(-1, 6)
    a[:, 1] *= _SPEED_FACTORS[cols.speed_unit]
    masks = implausible_rows(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], a[:, 5])
    bad = np.zeros(len(a), dtype=bool)
    for reason, mask in masks.items():
        if mask.any():
            dropped[reason] = [lines[j] for j in np.flatnonzero(mask)]
            bad |= mask
    a = a[~bad]
    if len(a) < 2:
        why = f"; {', '.join(f'{k}: {len(r)}' for k, r in dropped.items())} dropped" if dropped else ""
        raise DataError(f"{p}: needs at least 2 usable samples, got {len(a)} of {n_rows} rows{why}")
    warn_dropped(str(p), dropped, n_rows)
    return Trace(
        t_s=a[:, 0] - a[0, 0],
        speed_mps=a[:, 1],
        altitude_m=a[:, 2],
        soc_pct=a[:, 3],
        lat=a[:, 4],
        lon=a[:, 5],
        name=name or p.stem,
    )


def read_traces(paths: Sequence[str | Path], columns: TraceColumns | None = None) -> list[Trace]:
    """Read several trip logs (all validated before any is returned); a log that spans a charging stop becomes
    one trace per segment, and a speed column that disagrees with the positions is warned about
    (:func:`evroute.traces.clean.split_all`)."""
    from evroute.traces.clean import split_all

    return [seg for p in paths for seg in split_all([read_trace_csv(p, columns)], str(p))]


def write_trace_csv(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` in the documented schema (``time`` in s, ``speed_kmh``, ``altitude_m``, ``soc_pct``, ``lat``,
    ``lon``; :func:`read_trace_csv` with the default columns reads it back)."""
    p = Path(path)
    with p.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time", "speed_kmh", "altitude_m", "soc_pct", "lat", "lon"])
        for row in zip(
            trace.t_s, trace.speed_mps * 3.6, trace.altitude_m, trace.soc_pct, trace.lat, trace.lon, strict=True
        ):
            w.writerow(
                [f"{row[0]:g}", f"{row[1]:.2f}", f"{row[2]:.1f}", f"{row[3]:.6g}", f"{row[4]:.7f}", f"{row[5]:.7f}"]
            )
    return p
