"""Read timestamped EV trip logs (GPS + speed + altitude + state of charge) into :class:`Trace` arrays.

A log is a CSV file with one row per sample.  Which column holds what is given by a :class:`TraceColumns`
mapping (the defaults are the project's documented schema; :data:`TWIZY_COLUMNS` maps the RSK Twizy data set's
analysed logs).  Every value is validated as it is read: a problem raises :class:`~evroute.errors.DataError` with
one line naming the file, the line number and the column, so a driver's log either loads completely or not at all.
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


def _number(path: Path, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{path}:{line}: column {column!r}: not a number: {text!r}") from None
    if not math.isfinite(value):
        raise DataError(f"{path}:{line}: column {column!r}: not finite: {text!r}")
    return value


def _parse_time(path: Path, line: int, cols: TraceColumns, text: str) -> float:
    """Seconds: a number, ISO 8601, or ``time_format`` (a time of day when the format has no date)."""
    if cols.time_format is None:
        try:
            return float(text)
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            raise DataError(f"{path}:{line}: column {cols.time!r}: not seconds or an ISO 8601 time: {text!r}") from None
    try:
        stamp = datetime.strptime(text, cols.time_format)
    except ValueError:
        raise DataError(f"{path}:{line}: column {cols.time!r}: {text!r} does not match {cols.time_format!r}") from None
    if stamp.year == 1900:  # no date in the format: a time of day
        return float(stamp.hour * 3600 + stamp.minute * 60 + stamp.second + stamp.microsecond * 1e-6)
    return stamp.timestamp()


def read_trace_csv(path: str | Path, columns: TraceColumns | None = None, *, name: str | None = None) -> Trace:
    """Read one trip log (CSV with a header row) into a :class:`Trace`.

    Checks: the file exists and is UTF-8 CSV; every mapped column is present; every value is a finite number
    (time: see :class:`TraceColumns`); speed >= 0; state of charge in [0, 100]; latitude in [-90, 90] and
    longitude in [-180, 180]; time strictly increasing (a time of day may wrap past midnight); at least two rows.
    Any violation raises :class:`~evroute.errors.DataError` naming ``file:line`` and the column.

    Args:
        path: the CSV file.
        columns: the column mapping (default: :class:`TraceColumns`' documented schema).
        name: the trip's name (default: the file's stem).

    Returns:
        The trace, time shifted to start at 0.
    """
    cols = columns or TraceColumns()
    p = Path(path)
    if not p.is_file():
        raise DataError(f"trip log {p} not found")
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read trip log {p}: {exc}") from None
    if not rows:
        raise DataError(f"{p}: empty file (expected a header row)")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in cols.required() if c not in header]
    if missing:
        raise DataError(f"{p}: missing column(s) {', '.join(map(repr, missing))} (header: {', '.join(header)})")
    idx = {c: header.index(c) for c in cols.required()}
    data = rows[1:]
    if len(data) < 2:
        raise DataError(f"{p}: needs at least 2 samples, got {len(data)}")
    n = len(data)
    t = np.empty(n)
    vals = {k: np.empty(n) for k in ("speed", "altitude", "soc", "lat", "lon")}
    factor = _SPEED_FACTORS[cols.speed_unit]
    day = 0.0
    for i, row in enumerate(data):
        line = i + 2
        if len(row) != len(header):
            raise DataError(f"{p}:{line}: {len(row)} fields, the header has {len(header)}")
        ti = _parse_time(p, line, cols, row[idx[cols.time]].strip()) + day
        if i and ti <= t[i - 1]:
            if cols.time_format is not None and "%d" not in cols.time_format and ti + 86400 > t[i - 1]:
                day += 86400.0  # a time of day that passed midnight
                ti += 86400.0
            else:
                raise DataError(f"{p}:{line}: column {cols.time!r}: time does not increase ({row[idx[cols.time]]!r})")
        t[i] = ti
        for key, col in (("speed", cols.speed), ("altitude", cols.altitude), ("soc", cols.soc)):
            vals[key][i] = _number(p, line, col, row[idx[col]].strip())
        for key, col in (("lat", cols.lat), ("lon", cols.lon)):
            vals[key][i] = _number(p, line, col, row[idx[col]].strip())
        if vals["speed"][i] < 0:
            raise DataError(f"{p}:{line}: column {cols.speed!r}: negative speed {vals['speed'][i]}")
        if not 0.0 <= vals["soc"][i] <= 100.0:
            raise DataError(f"{p}:{line}: column {cols.soc!r}: state of charge {vals['soc'][i]} outside [0, 100]")
        if abs(vals["lat"][i]) > 90 or abs(vals["lon"][i]) > 180:
            raise DataError(f"{p}:{line}: columns {cols.lat!r}/{cols.lon!r}: position outside WGS 84 range")
    return Trace(
        t_s=t - t[0],
        speed_mps=vals["speed"] * factor,
        altitude_m=vals["altitude"],
        soc_pct=vals["soc"],
        lat=vals["lat"],
        lon=vals["lon"],
        name=name or p.stem,
    )


def read_traces(paths: Sequence[str | Path], columns: TraceColumns | None = None) -> list[Trace]:
    """Read several trip logs (all validated before any is returned)."""
    return [read_trace_csv(p, columns) for p in paths]


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
