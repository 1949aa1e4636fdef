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
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evroute.errors import DataError, DataWarning
from evroute.traces.logformats import TWIZY_COLUMNS as TWIZY_COLUMNS  # re-exported: the presets live there
from evroute.traces.logformats import TraceColumns as TraceColumns


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

    @classmethod
    def from_samples(cls, a: np.ndarray, name: str) -> Trace:
        """The trace of ``(N, 6)`` samples ``[t_s, speed_mps, altitude_m, soc_pct, lat, lon]`` (the readers' row
        layout), time shifted to start at 0."""
        return cls(
            t_s=a[:, 0] - a[0, 0],
            speed_mps=a[:, 1],
            altitude_m=a[:, 2],
            soc_pct=a[:, 3],
            lat=a[:, 4],
            lon=a[:, 5],
            name=name,
        )

    def __len__(self) -> int:
        return int(self.t_s.shape[0])

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0])

    @property
    def distance_m(self) -> float:
        """Distance driven (m), integrating speed with the trapezoid rule."""
        return float(np.sum(0.5 * (self.speed_mps[1:] + self.speed_mps[:-1]) * np.diff(self.t_s)))


def read_trace_csv(path: str | Path, columns: TraceColumns | None = None, *, name: str | None = None) -> Trace:
    """Read one trip log (CSV with a header row) into a :class:`Trace`, dropping implausible rows.

    File checks (a failure raises :class:`~evroute.errors.DataError` naming the file): the file exists and is UTF-8
    CSV, every mapped column is in the header, at least two usable rows.  Row checks (a failing row is **dropped**,
    and one :class:`~evroute.errors.DataWarning` per file counts the drops per reason with the first line of each):
    the row has the header's number of fields; every value is a finite number (time: see :class:`TraceColumns`);
    speed >= 0; state of charge in [0, 100]; latitude in [-90, 90] and longitude in [-180, 180]; time increases
    over the last kept row (a time of day may wrap past midnight); then the plausibility checks of
    :mod:`evroute.traces.clean` (speed, altitude, short glitches of speed, position and charge).  Blank lines are
    skipped.  The file is read in chunks (:mod:`evroute.traces.csvstream`, :mod:`evroute.traces.stream`); the
    trace it returns holds every kept row (a log too long for memory is learned block by block instead,
    :class:`evroute.traces.stream.LogStream`).

    Args:
        path: the CSV file.
        columns: the column mapping (default: detected from the header, :mod:`evroute.traces.logformats`).
        name: the trip's name (default: the file's stem).

    Returns:
        The trace, time shifted to start at 0.
    """
    from evroute.traces.csvstream import CsvRows, PlausibilityFilter

    p = Path(path)
    rows = CsvRows(p, columns)
    keep = PlausibilityFilter(rows.drops)
    parts = [keep.feed(chunk) for chunk in rows]
    parts.append(keep.finish())
    a = np.concatenate(parts)
    if len(a) < 2:
        why = rows.drops.brief()
        raise DataError(f"{p}: needs at least 2 usable samples, got {len(a)} of {rows.n_rows} rows{why}")
    if rows.drops:
        warnings.warn(DataWarning(rows.drops.text(str(p), rows.n_rows)), stacklevel=2)
    return Trace.from_samples(a, name or p.stem)


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
