"""Trip-log formats: the column presets of CSV logs, and which one a file is (from its header), or GPX.

* ``evroute`` (the documented schema): ``time`` (s or ISO 8601), ``speed_kmh`` (km/h), ``altitude_m``, ``soc_pct``,
  ``lat``, ``lon``;
* ``generic``: ``time_s`` (s or ISO 8601), ``speed_mps`` (m/s), ``elevation_m``, ``soc_pct``, ``lat``, ``lon``;
* ``teslamate`` (its ``positions`` table exported as CSV): ``date`` (ISO 8601, UTC), ``speed`` (km/h),
  ``elevation`` (m), ``battery_level`` (%; else ``usable_battery_level``), ``latitude``, ``longitude``;
* ``twizy`` (the RSK Twizy data set): ``Time`` (``%H:%M:%S``, a time of day), ``Speed`` (km/h), ``ALT``, ``Soc``,
  ``LAT``, ``LON``;
* ``gpx``: ``<time>``, ``<speed>`` (else distance over time), ``<ele>``, an extension ``<soc>``, ``lat``, ``lon``
  (:func:`evroute.traces.formats.gpx_rows`).

Auto-detection (``--format auto``, the default): a ``.gpx`` file is GPX; a CSV file is the first format of the
list whose time, speed and position columns are all in its header; its altitude and state-of-charge columns are
used when present -- a log **without** a state-of-charge column is read with ``soc = None`` (it says where and how
fast the vehicle drove, not what energy it used), without altitude it is flat.  A header that matches none is a
one-line error naming the file, the columns the closest format misses and the header.  Other columns are ignored
(TeslaMate's ``power``, ``odometer``, the Twizy's weather ...).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from evroute.errors import DataError, ParameterError

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
        soc: battery state of charge in percent of usable capacity (0-100); ``None``: the log has none (the
            trace's ``soc_pct`` is NaN: it says where and how fast the vehicle drove, not what energy it used).
        altitude: ``None``: the log has none (altitude 0: flat).
        lat, lon: WGS 84 position in degrees.
    """

    time: str = "time"
    time_format: str | None = None
    speed: str = "speed_kmh"
    speed_unit: str = "km/h"
    altitude: str | None = "altitude_m"
    soc: str | None = "soc_pct"
    lat: str = "lat"
    lon: str = "lon"

    def __post_init__(self) -> None:
        if self.speed_unit not in _SPEED_FACTORS:
            raise DataError(f"speed_unit must be one of {sorted(_SPEED_FACTORS)}, got {self.speed_unit!r}")

    def required(self) -> tuple[str, ...]:
        """The mapped column names (those that are not ``None``)."""
        cols = (self.time, self.speed, self.altitude, self.soc, self.lat, self.lon)
        return tuple(c for c in cols if c is not None)


#: The RSK Twizy data set's analysed logs (`Date, Time, Soc, Speed, Mode, LAT, LON, ALT, ...`).  Their ``Date`` column
#: is corrupted on some rows (e.g. ``02/00/2090``) while ``Time`` stays a valid 1 Hz clock, so time is read from
#: ``Time`` alone (time of day).
TWIZY_COLUMNS = TraceColumns(
    time="Time", time_format="%H:%M:%S", speed="Speed", altitude="ALT", soc="Soc", lat="LAT", lon="LON"
)


#: the CSV presets, in the order auto-detection tries them
PRESETS: dict[str, TraceColumns] = {
    "evroute": TraceColumns(),
    "generic": TraceColumns(
        time="time_s", speed="speed_mps", speed_unit="m/s", altitude="elevation_m", soc="soc_pct", lat="lat", lon="lon"
    ),
    "teslamate": TraceColumns(
        time="date", speed="speed", altitude="elevation", soc="battery_level", lat="latitude", lon="longitude"
    ),
    "twizy": TWIZY_COLUMNS,
}
#: TeslaMate's other state-of-charge column (used when ``battery_level`` is absent)
TESLAMATE_USABLE = "usable_battery_level"
FORMATS = ("auto", *PRESETS, "gpx")


def is_gpx(path: str | Path, fmt: str = "auto") -> bool:
    """Whether ``path`` is read as GPX: ``fmt == "gpx"``, or ``auto`` and a ``.gpx`` suffix."""
    return fmt == "gpx" or (fmt == "auto" and Path(path).suffix.lower() == ".gpx")


def detect_columns(header: list[str], source: str) -> TraceColumns:
    """The preset of a CSV header (module doc), with ``soc`` / ``altitude`` ``None`` where the header lacks them.

    Raises:
        DataError: no preset's time, speed and position columns are all in the header (one line naming ``source``
            and the columns the closest preset misses).
    """
    names = set(header)
    for fmt, cols in PRESETS.items():
        if {cols.time, cols.speed, cols.lat, cols.lon} <= names:
            return fit_columns(cols, names, fmt)

    def missing(cols: TraceColumns) -> list[str]:
        return [c for c in (cols.time, cols.speed, cols.lat, cols.lon) if c not in names]

    fmt = min(PRESETS, key=lambda f: len(missing(PRESETS[f])))  # the closest (the first of equals)
    shown = ", ".join(header)[:200]
    raise DataError(
        f"{source}: missing column(s) {', '.join(map(repr, missing(PRESETS[fmt])))} of the closest log format, {fmt} "
        f"(header: {shown}; formats: {', '.join(PRESETS)}, docs/trip_logs.md; or --format)"
    )


def fit_columns(cols: TraceColumns, names: set[str], fmt: str = "") -> TraceColumns:
    """``cols`` with its state-of-charge and altitude columns set to ``None`` where ``names`` lacks them (for
    TeslaMate, ``usable_battery_level`` stands in for a missing ``battery_level``)."""
    soc = cols.soc
    if fmt == "teslamate" and soc not in names and TESLAMATE_USABLE in names:
        soc = TESLAMATE_USABLE
    return dataclasses.replace(
        cols,
        soc=soc if soc in names else None,
        altitude=cols.altitude if cols.altitude in names else None,
    )


def preset(fmt: str) -> TraceColumns | None:
    """The column preset named ``fmt`` (``None`` for ``auto`` and ``gpx``: detected per file / not CSV)."""
    if fmt not in FORMATS:
        raise ParameterError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return PRESETS.get(fmt)


__all__ = [
    "TWIZY_COLUMNS",
    "TraceColumns",
    "FORMATS",
    "PRESETS",
    "TESLAMATE_USABLE",
    "detect_columns",
    "fit_columns",
    "is_gpx",
    "preset",
]
