"""Trip logs in other formats than CSV: GPX tracks with time, and SUMO's FCD output with its battery output.

Both give :class:`~evroute.traces.reader.Trace` arrays and validate every value like the CSV reader: a problem raises
:class:`~evroute.errors.DataError` with one line naming the file, the line and the field (a GPX element or attribute,
a SUMO XML attribute), before anything is returned.

* **GPX** (``.gpx``, read with ``gpxpy``): every ``<trkpt>`` of every track and segment in document order, with
  ``lat``, ``lon``, ``<time>`` (required), ``<ele>`` (altitude, m; 0 when absent), a speed (the GPX 1.0 ``<speed>``
  element in m/s, else the distance between consecutive points over their time difference) and the state of charge in
  % from an extension element named ``soc`` (any namespace, e.g. ``<extensions><ev:soc>81.5</ev:soc></extensions>``);
  a track without it has no energy readings and is refused (``require_soc``) when energy is to be learned.
* **SUMO** FCD output written with ``--fcd-output.geo true`` (``x`` = longitude, ``y`` = latitude; ``z`` altitude
  when the net has elevations) and the battery output of the same run (``--battery-output``:
  ``actualBatteryCapacity`` / ``maximumBatteryCapacity`` is the state of charge, in Wh).  One trace per vehicle that
  appears in both, joined on the time step.
"""

from __future__ import annotations

import math
import re
import xml.parsers.expat
from collections.abc import Callable
from pathlib import Path

import numpy as np

from evroute.errors import DataError
from evroute.traces.reader import Trace

_EARTH_RADIUS_M = 6_371_008.8


def haversine_m(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    """Great-circle distance (m) between ``(lat1, lon1)`` and ``(lat2, lon2)`` (degrees, broadcast)."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return np.asarray(2 * _EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0))))


def _check_point(path: Path, line: int, lat: float, lon: float, soc: float | None) -> None:
    if not (math.isfinite(lat) and abs(lat) <= 90):
        raise DataError(f"{path}:{line}: field 'lat': latitude {lat} outside [-90, 90]")
    if not (math.isfinite(lon) and abs(lon) <= 180):
        raise DataError(f"{path}:{line}: field 'lon': longitude {lon} outside [-180, 180]")
    if soc is not None and not (math.isfinite(soc) and 0.0 <= soc <= 100.0):
        raise DataError(f"{path}:{line}: field 'soc': state of charge {soc} outside [0, 100]")


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


def read_trace_gpx(path: str | Path, *, require_soc: bool = True, name: str | None = None) -> Trace:
    """Read a GPX track (module doc) into a :class:`Trace`, time shifted to start at 0.

    Args:
        require_soc: refuse a point without the ``soc`` extension (else its state of charge is NaN).

    Raises:
        DataError: unreadable XML, a point without time, a value out of range, time not increasing, < 2 points.
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
        lines = [0] * len(points)
    if len(points) < 2:
        raise DataError(f"{p}: needs at least 2 track points (<trkpt>), got {len(points)}")
    n = len(points)
    t, lat, lon, alt, soc, spd = (np.empty(n) for _ in range(6))
    for i, pt in enumerate(points):
        line = lines[i]
        if pt.time is None:
            raise DataError(f"{p}:{line}: field 'time': track point without <time>")
        t[i] = pt.time.timestamp()
        if i and t[i] <= t[i - 1]:
            raise DataError(f"{p}:{line}: field 'time': time does not increase ({pt.time.isoformat()})")
        value: float | None = None
        for ext in pt.extensions:
            for el in ext.iter():
                if _local_name(el.tag) == "soc":
                    try:
                        value = float((el.text or "").strip())
                    except ValueError:
                        raise DataError(f"{p}:{line}: field 'soc': not a number: {el.text!r}") from None
        if value is None and require_soc:
            raise DataError(f"{p}:{line}: field 'soc': track point without a state-of-charge extension <soc>")
        _check_point(p, line, float(pt.latitude), float(pt.longitude), value)
        lat[i], lon[i] = pt.latitude, pt.longitude
        alt[i] = 0.0 if pt.elevation is None else float(pt.elevation)
        soc[i] = math.nan if value is None else value
        spd[i] = math.nan if pt.speed is None else float(pt.speed)
        if not (math.isfinite(alt[i]) and (math.isnan(spd[i]) or 0 <= spd[i] < 1e3)):
            raise DataError(f"{p}:{line}: field 'ele'/'speed': not a finite altitude or a speed >= 0")
    if np.isnan(spd).any():  # distance over time, the first point takes the second's
        step = haversine_m(lat[:-1], lon[:-1], lat[1:], lon[1:]) / np.diff(t)
        spd = np.where(np.isnan(spd), np.concatenate([step[:1], step]), spd)
    return Trace(t_s=t - t[0], speed_mps=spd, altitude_m=alt, soc_pct=soc, lat=lat, lon=lon, name=name or p.stem)


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
