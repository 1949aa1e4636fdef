"""Charging stations as data: read from OSM, CSV or GeoJSON, and snapped to the road network.

Formats (one charging station per row / feature / OSM object):

* **CSV**, header row with the columns ``id, lon, lat, power_kw`` (required) and ``connector``, ``capacity``,
  ``availability``, ``note`` (optional): ``lon``/``lat`` in degrees (WGS84), ``power_kw`` the station's highest
  output (kW, ``> 0``), ``connector`` free text (``ccs``, ``chademo``, ``type2``...), ``capacity`` the number of cars
  it charges at once (integer ``>= 1``, default 1), ``availability`` the probability it is free on arrival (``[0,
  1]``, default 1; carried to the answers, and stations below ``--min-availability`` are left out).
* **GeoJSON**, a ``FeatureCollection`` of ``Point`` features whose ``properties`` hold the same fields (the position
  is the geometry; ``id`` may also be the feature's ``id``).
* **OSM** XML (``.osm``, ``.osm.gz``, ``.osm.bz2``): nodes and ways tagged ``amenity=charging_station`` (a way at
  the mean of its nodes); the power is the largest ``socket:*:output`` (``"50 kW"``, ``"22kW"``, ``"3700 W"``; a
  plain number is kW), else ``charging_station:output``; ``capacity`` from its tag; the connector from the
  ``socket:<type>`` tags.  Stations with no usable output are skipped and counted (OSM is incomplete; a
  CSV / GeoJSON row without a power is an error instead).

A bad row is one :class:`~evroute.errors.DataError` line naming the file, the row (CSV line number, feature index)
and the field.

Snapping (:func:`snap_chargers`): each station goes to its nearest edge by true geometry
(:func:`evroute.network.snap.nearest_edges`); a car reaches it by a detour from that edge of twice the snapping
distance (there and back), driven at :data:`DETOUR_SPEED_MPS`.  Stations farther than ``max_snap_m`` from every
edge (outside the network) are left out and counted.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError, ParameterError

#: speed of the detour between a road edge and a charging station (m/s): a car park, 20 km/h
DETOUR_SPEED_MPS = 20.0 / 3.6
_POWER = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(kw|w|mw)?\s*$", re.IGNORECASE)


@dataclass
class Chargers:
    """Charging stations (arrays of one length ``n``).

    Attributes:
        ids: station ids; lon, lat: position (degrees); power_kw: highest output (kW); connector: free text;
        capacity: cars at once; availability: probability free on arrival; source: the file read.
        edge: ``(n,)`` nearest edge (line-graph index) and snap_m its distance (m), after :func:`snap_chargers`.
    """

    ids: list[str]
    lon: np.ndarray
    lat: np.ndarray
    power_kw: np.ndarray
    connector: list[str]
    capacity: np.ndarray
    availability: np.ndarray
    source: str = ""
    skipped: int = 0  # OSM stations without an output
    edge: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    snap_m: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, keep: np.ndarray) -> Chargers:
        """The stations where ``keep`` (bool or indices) holds."""
        idx = np.arange(len(self))[keep]
        return Chargers(
            [self.ids[i] for i in idx],
            self.lon[idx],
            self.lat[idx],
            self.power_kw[idx],
            [self.connector[i] for i in idx],
            self.capacity[idx],
            self.availability[idx],
            self.source,
            self.skipped,
            self.edge[idx] if len(self.edge) else self.edge,
            self.snap_m[idx] if len(self.snap_m) else self.snap_m,
        )

    @property
    def detour_m(self) -> np.ndarray:
        """``(n,)`` detour from the snapped edge to the station and back (m)."""
        return 2.0 * self.snap_m


def _from_records(records: list[tuple[str, dict[str, Any]]], source: str, skipped: int = 0) -> Chargers:
    """Stations from ``(where, fields)`` pairs (``where`` names the row in errors), each field checked."""
    ids, lon, lat, power, conn, cap, avail = [], [], [], [], [], [], []
    seen: dict[str, str] = {}
    for where, rec in records:
        missing = [k for k in ("id", "lon", "lat", "power_kw") if rec.get(k) in (None, "")]
        if missing:
            raise DataError(f"{source}: {where}: missing {', '.join(missing)}")
        sid = str(rec["id"]).strip()
        if sid in seen:
            raise DataError(f"{source}: {where}: id {sid!r} repeats {seen[sid]}")
        seen[sid] = where
        vals = {}
        for k, lo, hi in (("lon", -180.0, 180.0), ("lat", -90.0, 90.0), ("power_kw", 0.0, 1e4)):
            try:
                v = float(rec[k])
            except (TypeError, ValueError):
                raise DataError(f"{source}: {where}: {k} {rec[k]!r} is not a number") from None
            if not (math.isfinite(v) and lo <= v <= hi) or (k == "power_kw" and v <= 0):
                rng = "> 0 and <= 10000 kW" if k == "power_kw" else f"in [{lo:g}, {hi:g}]"
                raise DataError(f"{source}: {where}: {k} {rec[k]!r} must be {rng}")
            vals[k] = v
        c = rec.get("capacity")
        try:
            c_int = 1 if c in (None, "") else int(str(c).strip())
        except ValueError:
            raise DataError(f"{source}: {where}: capacity {c!r} is not a whole number") from None
        if c_int < 1:
            raise DataError(f"{source}: {where}: capacity {c!r} must be >= 1")
        a = rec.get("availability")
        try:
            a_f = 1.0 if a in (None, "") else float(a)
        except (TypeError, ValueError):
            raise DataError(f"{source}: {where}: availability {a!r} is not a number") from None
        if not 0.0 <= a_f <= 1.0:
            raise DataError(f"{source}: {where}: availability {a!r} must be in [0, 1]")
        ids.append(sid)
        lon.append(vals["lon"])
        lat.append(vals["lat"])
        power.append(vals["power_kw"])
        conn.append(str(rec.get("connector") or ""))
        cap.append(c_int)
        avail.append(a_f)
    return Chargers(
        ids,
        np.asarray(lon, dtype=np.float64),
        np.asarray(lat, dtype=np.float64),
        np.asarray(power, dtype=np.float64),
        conn,
        np.asarray(cap, dtype=np.int64),
        np.asarray(avail, dtype=np.float64),
        source,
        skipped,
    )


def read_csv(path: str | Path) -> Chargers:
    """Stations from a CSV file (module doc)."""
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            cols = reader.fieldnames or []
            need = [c for c in ("id", "lon", "lat", "power_kw") if c not in cols]
            if need:
                raise DataError(f"{p}: the header lacks the column(s) {', '.join(need)} (need id, lon, lat, power_kw)")
            rows = [(f"line {reader.line_num}", dict(r)) for r in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read charger file {p}: {exc}") from None
    return _from_records(rows, str(p))


def read_geojson(path: str | Path) -> Chargers:
    """Stations from a GeoJSON FeatureCollection of Points (module doc)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read charger file {p}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("type") != "FeatureCollection" or not isinstance(doc.get("features"), list):
        raise DataError(f"{p}: not a GeoJSON FeatureCollection")
    rows = []
    for i, ft in enumerate(doc["features"]):
        if not isinstance(ft, dict) or not isinstance(ft.get("properties") or {}, dict):
            raise DataError(f"{p}: feature {i}: not a GeoJSON Feature with properties")
        props = dict(ft.get("properties") or {})
        props.setdefault("id", ft.get("id"))
        where = f"feature {i}" + (f" (id {props['id']})" if props.get("id") is not None else "")
        geom = ft.get("geometry")
        if not isinstance(geom, dict) or geom.get("type") != "Point" or len(geom.get("coordinates") or []) < 2:
            raise DataError(f"{p}: {where}: the geometry must be a Point [lon, lat]")
        props["lon"], props["lat"] = geom["coordinates"][:2]
        rows.append((where, props))
    return _from_records(rows, str(p))


def parse_power_kw(text: str) -> float | None:
    """``"50 kW"`` -> 50, ``"3700 W"`` -> 3.7, ``"22"`` -> 22 (kW); the largest of ``;``-separated values; None if
    nothing parses."""
    best = None
    for part in str(text).replace(",", ".").split(";"):
        m = _POWER.match(part)
        if m:
            unit = (m.group(2) or "kw").lower()
            v = float(m.group(1)) * {"kw": 1.0, "w": 1e-3, "mw": 1e3}[unit]
            best = v if best is None else max(best, v)
    return best


def _osm_open(p: Path):
    name = p.name.lower()
    if name.endswith(".gz"):
        import gzip

        return gzip.open(p, "rb")
    if name.endswith(".bz2"):
        import bz2

        return bz2.open(p, "rb")
    return p.open("rb")


def read_osm(path: str | Path) -> Chargers:
    """Stations tagged ``amenity=charging_station`` in an OSM XML file (module doc)."""
    import xml.etree.ElementTree as ET

    p = Path(path)
    coords: dict[str, tuple[float, float]] = {}
    found: list[tuple[str, dict[str, str], list[str], tuple[float, float] | None]] = []
    try:
        with _osm_open(p) as f:
            for _, el in ET.iterparse(f, events=("end",)):
                if el.tag == "node":
                    try:
                        coords[el.get("id", "")] = (float(el.get("lon", "nan")), float(el.get("lat", "nan")))
                    except ValueError:
                        pass
                if el.tag in ("node", "way"):
                    tags = {t.get("k", ""): t.get("v", "") for t in el.iter("tag")}
                    if tags.get("amenity") == "charging_station":
                        refs = [n.get("ref", "") for n in el.iter("nd")]
                        pos = coords.get(el.get("id", "")) if el.tag == "node" else None
                        found.append((f"{el.tag}/{el.get('id')}", tags, refs, pos))
                if el.tag in ("node", "way", "relation"):
                    el.clear()
    except (OSError, EOFError, ET.ParseError) as exc:
        raise DataError(f"cannot read OSM file {p}: {exc}") from None
    rows, skipped = [], 0
    for sid, tags, refs, pos in found:
        parsed = [parse_power_kw(v) for k, v in tags.items() if k.startswith("socket:") and k.endswith(":output")]
        if not any(parsed):
            parsed = [parse_power_kw(tags.get("charging_station:output", ""))]
        outs = [o for o in parsed if o is not None and o > 0]
        if pos is None and refs:
            pts = np.asarray([coords[r] for r in refs if r in coords])
            pos = (float(pts[:, 0].mean()), float(pts[:, 1].mean())) if len(pts) else None
        if not outs or pos is None:
            skipped += 1
            continue
        sockets = sorted({k.split(":")[1] for k in tags if k.startswith("socket:") and k.count(":") == 1})
        cap = tags.get("capacity", "")
        rows.append(
            (
                sid,
                {
                    "id": sid,
                    "lon": pos[0],
                    "lat": pos[1],
                    "power_kw": max(outs),
                    "connector": ";".join(sockets),
                    "capacity": cap if cap.strip().isdigit() and int(cap) >= 1 else None,
                },
            )
        )
    return _from_records(rows, str(p), skipped)


def read_chargers(path: str | Path) -> Chargers:
    """Stations from ``path`` by its extension: ``.csv``, ``.geojson`` / ``.json``, ``.osm`` (``.gz``, ``.bz2``)."""
    p = Path(path)
    name = p.name.lower()
    if not p.is_file():
        raise DataError(f"charger file {p} not found")
    if name.endswith(".csv"):
        return read_csv(p)
    if name.endswith((".geojson", ".json")):
        return read_geojson(p)
    if name.endswith((".osm", ".osm.gz", ".osm.bz2", ".xml")):
        return read_osm(p)
    raise DataError(f"charger file {p}: unknown format (use .csv, .geojson or .osm)")


def snap_chargers(network: Any, chargers: Chargers, max_snap_m: float = 250.0) -> Chargers:
    """The stations within ``max_snap_m`` of ``network`` (a :class:`~evroute.network.road_network.RoadNetwork`
    with lon/lat geometry; edge indices = line-graph indices), with :attr:`Chargers.edge` and
    :attr:`Chargers.snap_m` set (module doc)."""
    if not max_snap_m > 0:
        raise ParameterError(f"the maximum snapping distance must be > 0 m, got {max_snap_m}")
    if not len(chargers):
        return chargers
    from evroute.network.snap import nearest_edges

    edge, dist = nearest_edges(network, chargers.lon, chargers.lat)
    snapped = chargers.subset(np.arange(len(chargers)))  # a copy: the stations given stay as they were
    snapped.edge, snapped.snap_m = edge, dist
    return snapped.subset(dist <= max_snap_m)


__all__ = [
    "DETOUR_SPEED_MPS",
    "Chargers",
    "parse_power_kw",
    "read_chargers",
    "read_csv",
    "read_geojson",
    "read_osm",
    "snap_chargers",
]
