"""Trip logs in other formats than CSV: GPX tracks with time, and SUMO's FCD output with its battery output.

Both give :class:`~evroute.traces.reader.Trace` arrays and validate every value.  GPX is read like the CSV logs: a
bad track point is dropped and counted per reason with its line (one warning per file), never the whole file; a file
that is not GPX or keeps fewer than two points is a :class:`~evroute.errors.DataError` of one line naming it.  In
SUMO output a bad value raises :class:`~evroute.errors.DataError` naming the file, the line and the attribute.

* **GPX** (``.gpx``, read with ``gpxpy``): every ``<trkpt>`` of every track and segment in document order, with
  ``lat``, ``lon``, ``<time>`` (required), ``<ele>`` (altitude, m; 0 when absent), a speed (the GPX 1.0 ``<speed>``
  element in m/s, else the distance between consecutive points over their time difference) and the state of charge in
  % from an extension element named ``soc`` (any namespace, e.g. ``<extensions><ev:soc>81.5</ev:soc></extensions>``);
  a track without it has no energy readings (its state of charge is NaN; ``require_soc`` drops such points).
* **SUMO** FCD output written with ``--fcd-output.geo true`` (``x`` = longitude, ``y`` = latitude; ``z`` altitude
  when the net has elevations) and the battery output of the same run (``--battery-output``:
  ``actualBatteryCapacity`` / ``maximumBatteryCapacity`` is the state of charge, in Wh).  One trace per vehicle that
  appears in both, joined on the time step.
"""

from __future__ import annotations

import math
import re
import warnings
import xml.parsers.expat
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from evroute.errors import DataError, DataWarning
from evroute.traces.csvstream import DropCounts
from evroute.traces.reader import Trace, TraceColumns, read_trace_csv

_EARTH_RADIUS_M = 6_371_008.8


def haversine_m(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    """Great-circle distance (m) between ``(lat1, lon1)`` and ``(lat2, lon2)`` (degrees, broadcast)."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return np.asarray(2 * _EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0))))


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


def gpx_rows(path: str | Path, drops: DropCounts, *, require_soc: bool = False) -> tuple[np.ndarray, int]:
    """``(rows, points)``: the ``(n, 7)`` rows (:data:`~evroute.traces.csvstream.ROW_FIELDS`, time in s since the
    epoch, the line of each ``<trkpt>``) of the valid track points of a GPX file, and the number of points.

    A point that fails a check is dropped and counted in ``drops`` by its line (never the whole file): no ``<time>``,
    time not increasing, a state of charge that is not a number or outside [0, 100] (or missing, with
    ``require_soc``), a position outside WGS 84, an altitude or speed that is not finite (speed < 0).  A point's
    speed is ``<speed>`` (m/s), else the distance from the previous kept point over the time between them.

    Raises:
        DataError: the file is missing or not GPX (one line naming it).
    """
    import gpxpy
    import gpxpy.gpx

    from evroute.network.xmlguard import check_xml_file

    p = Path(path)
    if not p.is_file():
        raise DataError(f"trip log {p} not found")
    check_xml_file(p, "GPX trip log")  # no DTD, no entity, no bomb reaches gpxpy's parser
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read trip log {p}: {exc}") from None
    # line of the k-th <trkpt: gpxpy keeps no line numbers, and it yields the points in document order
    lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(r"<(?:\w+:)?trkpt\b", text)]
    try:
        gpx = gpxpy.parse(text)
    except gpxpy.gpx.GPXException as exc:
        raise DataError(f"{p}: not a GPX file: {' '.join(str(exc).split())[:120]}") from None
    points = [pt for trk in gpx.tracks for seg in trk.segments for pt in seg.points]
    if len(points) != len(lines):
        lines = list(range(1, len(points) + 1))
    rows: list[tuple[float, ...]] = []
    last_t = -math.inf
    for pt, line in zip(points, lines, strict=True):
        soc: float | None = None
        reason = None
        for ext in pt.extensions:
            for el in ext.iter():
                if _local_name(el.tag) == "soc":
                    try:
                        soc = float((el.text or "").strip())
                    except ValueError:
                        reason = "field 'soc': not a number"
        lat, lon = float(pt.latitude), float(pt.longitude)
        alt = 0.0 if pt.elevation is None else float(pt.elevation)
        spd = math.nan if pt.speed is None else float(pt.speed)
        t = math.nan if pt.time is None else pt.time.timestamp()
        if reason is not None:
            pass
        elif pt.time is None:
            reason = "field 'time': track point without <time>"
        elif soc is None and require_soc:
            reason = "field 'soc': track point without a state-of-charge extension <soc>"
        elif soc is not None and not (math.isfinite(soc) and 0.0 <= soc <= 100.0):
            reason = "field 'soc': state of charge outside [0, 100]"
        elif not (math.isfinite(lat) and abs(lat) <= 90 and math.isfinite(lon) and abs(lon) <= 180):
            reason = "field 'lat'/'lon': position outside WGS 84 range"
        elif not (math.isfinite(alt) and (math.isnan(spd) or 0 <= spd < 1e3)):
            reason = "field 'ele'/'speed': not a finite altitude or a speed >= 0"
        elif t <= last_t:
            reason = "field 'time': time does not increase"
        if reason is not None:
            drops.add(reason, [line])
            continue
        last_t = t
        rows.append((t, spd, alt, math.nan if soc is None else soc, lat, lon, float(line)))
    a = np.array(rows, dtype=np.float64).reshape(-1, 7)
    nan = np.isnan(a[:, 1])
    if nan.any() and len(a) >= 2:  # distance over time, the first point takes the second's
        step = haversine_m(a[:-1, 4], a[:-1, 5], a[1:, 4], a[1:, 5]) / np.diff(a[:, 0])
        a[:, 1] = np.where(nan, np.concatenate([step[:1], step]), a[:, 1])
    elif nan.any():
        a[:, 1] = 0.0
    return a, len(points)


def read_trace_gpx(path: str | Path, *, require_soc: bool = True, name: str | None = None) -> Trace:
    """Read a GPX track (module doc) into a :class:`Trace`, time shifted to start at 0; bad points are dropped
    (:func:`gpx_rows`) with one :class:`~evroute.errors.DataWarning` counting them per reason.

    Args:
        require_soc: drop a point without the ``soc`` extension (else its state of charge is NaN).

    Raises:
        DataError: unreadable or not GPX, fewer than 2 usable points (naming the reasons of the drops).
    """
    p = Path(path)
    drops = DropCounts()
    a, n = gpx_rows(p, drops, require_soc=require_soc)
    if len(a) < 2:
        raise DataError(f"{p}: needs at least 2 usable track points (<trkpt>), got {len(a)} of {n}{drops.brief()}")
    if drops:
        warnings.warn(DataWarning(drops.text(str(p), n)), stacklevel=2)
    return Trace.from_samples(a, name or p.stem)


def read_traces(paths: Sequence[str | Path], columns: TraceColumns | None = None) -> list[Trace]:
    """Read several trip logs (all validated before any is returned); a log that spans a charging stop becomes
    one trace per segment, and a speed column that disagrees with the positions is warned about
    (:func:`evroute.traces.clean.split_all`).  A ``.gpx`` file is read as GPX (its points without a state of
    charge kept, with NaN), its implausible points dropped (:func:`evroute.traces.clean.clean_trace`)."""
    from evroute.traces.clean import clean_trace, split_all

    out: list[Trace] = []
    for p in paths:
        if Path(p).suffix.lower() == ".gpx":
            tr = clean_trace(read_trace_gpx(p, require_soc=False), str(p))
            traces = [] if tr is None else [tr]
        else:
            traces = [read_trace_csv(p, columns)]
        out += split_all(traces, str(p))
    return out


def _scan_xml(path: Path, tag: str, handle: Callable[[int, float, dict[str, str]], None]) -> None:
    """Call ``handle(line, time, attributes)`` for every ``<vehicle>`` of every ``<timestep>`` of a SUMO output."""
    from evroute.network.xmlguard import check_xml_file

    check_xml_file(path, f"SUMO {tag} output")  # no DTD, no entity, no bomb reaches expat
    state = {"time": math.nan}
    parser = xml.parsers.expat.ParserCreate()

    def start(name: str, attrs: dict[str, str]) -> None:
        line = parser.CurrentLineNumber
        if name == "timestep":
            try:
                state["time"] = float(attrs["time"])
            except (KeyError, ValueError):
                raise DataError(f"{path}:{line}: field 'time': <timestep> without a numeric time") from None
        elif name == "vehicle":
            if math.isnan(state["time"]):
                raise DataError(f"{path}:{line}: <vehicle> outside a <timestep>")
            handle(line, state["time"], attrs)

    parser.StartElementHandler = start
    try:
        with path.open("rb") as fh:
            parser.ParseFile(fh)
    except xml.parsers.expat.ExpatError as exc:
        raise DataError(
            f"{path}:{exc.lineno}: not a SUMO {tag} output: {xml.parsers.expat.ErrorString(exc.code)}"
        ) from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}") from None


def _attr(path: Path, line: int, attrs: dict[str, str], key: str, hint: str = "") -> float:
    if key not in attrs:
        raise DataError(f"{path}:{line}: field {key!r}: missing{hint}")
    try:
        value = float(attrs[key])
    except ValueError:
        raise DataError(f"{path}:{line}: field {key!r}: not a number: {attrs[key]!r}") from None
    if not math.isfinite(value):
        raise DataError(f"{path}:{line}: field {key!r}: not finite: {attrs[key]!r}")
    return value


def read_sumo_fcd(fcd_path: str | Path, battery_path: str | Path, *, min_samples: int = 2) -> list[Trace]:
    """Read SUMO FCD (geo) + battery outputs of one run: one :class:`Trace` per vehicle found in both (module doc).

    Vehicles with fewer than ``min_samples`` joint samples are left out.  Trace names are the vehicle ids.

    Raises:
        DataError: a file missing or not SUMO XML, non-geographic FCD, a value missing, not a number or out of range
            (file, line and attribute named), or no vehicle in both files.
    """
    fcd, bat = Path(fcd_path), Path(battery_path)
    for f in (fcd, bat):
        if not f.is_file():
            raise DataError(f"SUMO output {f} not found")
    pos: dict[str, list[tuple[float, float, float, float, float]]] = {}

    def on_fcd(line: int, t: float, a: dict[str, str]) -> None:
        lon = _attr(fcd, line, a, "x")
        lat = _attr(fcd, line, a, "y")
        if "lon" in a or not (abs(lat) <= 90 and abs(lon) <= 180):
            raise DataError(f"{fcd}:{line}: field 'x'/'y': not geographic positions (run sumo with --fcd-output.geo)")
        speed = _attr(fcd, line, a, "speed")
        if speed < 0:
            raise DataError(f"{fcd}:{line}: field 'speed': negative speed {speed}")
        z = _attr(fcd, line, a, "z") if "z" in a else 0.0
        pos.setdefault(a.get("id", ""), []).append((t, lat, lon, speed, z))

    charge: dict[str, dict[float, float]] = {}

    def on_battery(line: int, t: float, a: dict[str, str]) -> None:
        cap = _attr(bat, line, a, "maximumBatteryCapacity", " (not a SUMO battery output?)")
        level = _attr(bat, line, a, "actualBatteryCapacity", " (not a SUMO battery output?)")
        if not (cap > 0 and 0 <= level <= cap * (1 + 1e-9)):
            raise DataError(f"{bat}:{line}: field 'actualBatteryCapacity': {level} outside [0, {cap}]")
        charge.setdefault(a.get("id", ""), {})[t] = 100.0 * level / cap

    _scan_xml(fcd, "FCD", on_fcd)
    _scan_xml(bat, "battery", on_battery)
    traces = []
    for vid, rows in pos.items():
        soc_by_t = charge.get(vid)
        if not soc_by_t:
            continue
        joint = [(r, soc_by_t[r[0]]) for r in rows if r[0] in soc_by_t]
        if len(joint) < min_samples:
            continue
        a = np.array([r for r, _ in joint], dtype=np.float64)
        traces.append(
            Trace(
                t_s=a[:, 0] - a[0, 0],
                speed_mps=a[:, 3],
                altitude_m=a[:, 4],
                soc_pct=np.array([s for _, s in joint]),
                lat=a[:, 1],
                lon=a[:, 2],
                name=vid,
                meta={"depart_s": float(a[0, 0])},
            )
        )
    if not traces:
        raise DataError(f"{fcd} and {bat}: no vehicle with at least {min_samples} samples in both outputs")
    return traces
