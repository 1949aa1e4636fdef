"""Road speeds from OpenStreetMap: posted limits, defaults by road class and urban/rural context, free-flow speed.

One set of rules serves both OSM loaders (netconvert and osmnx), so the same way gets the same speed whichever
builds the graph (:func:`resolve_way_speeds`; ``docs/speeds.md`` lists the tables and their sources):

1. **Posted speed** (``maxspeed``, ``maxspeed:forward`` / ``maxspeed:backward`` for one direction):
   :func:`parse_maxspeed` reads numbers in km/h, ``"30 mph"``, ``"10 knots"``, ``"none"`` (no limit:
   :data:`NO_LIMIT_KMH`), ``"walk"`` (:data:`WALK_KMH`) and zone values ``"FR:urban"``, ``"DE:rural"``,
   ``"DE:zone30"``, ``"BE:motorway"`` (:data:`ZONE_SPEEDS_KMH`, the legal defaults by country); several values
   (``"50;30"``) average, as osmnx does.  ``signals`` / ``variable`` count as untagged.
2. **Default by road class and context** where no usable limit is tagged: :data:`URBAN_SPEEDS_KMH` inside built-up
   areas, :data:`RURAL_SPEEDS_KMH` outside.  The context is the way's own zone tag (``maxspeed:type``,
   ``source:maxspeed``, ``zone:maxspeed``, ``zone:traffic`` = ``XX:urban`` / ``XX:rural`` / ...), else its
   surroundings: a way is urban when at least :data:`URBAN_MIN_JUNCTIONS` road junctions lie within
   :data:`URBAN_RADIUS_M` metres of its middle node (:func:`urban_ways`).
3. **Free-flow speed**: what a car drives when free to: ``limit * free_flow_factor`` (:func:`free_flow_factor`,
   :data:`RURAL_FREE_FLOW_FACTOR` on rural single carriageways, 1 elsewhere).  Junction and signal delays are *not*
   in it: the energy model's speed profile adds them.

The netconvert loader hands netconvert a copy of the OSM file whose drivable ways carry the resolved posted limit as
a plain number (:func:`write_resolved_osm`), so the ``.net.xml`` that SUMO simulates holds the same limits.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

#: Default posted speed (km/h) of untagged ways inside built-up areas: SUMO's urban type map
#: ``data/typemap/osmNetconvertUrbanDe.typ.xml`` (motorway 27.78 m/s, motorway_link 16.67 m/s, trunk to tertiary and
#: their links 13.89 m/s); the classes it does not list take SUMO's default map ``osmNetconvert.typ.xml``
#: (unclassified and residential 13.89 m/s, living_street 2.78 m/s, service 5.56 m/s); ``road`` (unknown class) as
#: unclassified.
URBAN_SPEEDS_KMH: dict[str, float] = {
    "motorway": 100.0,
    "motorway_link": 60.0,
    "trunk": 50.0,
    "trunk_link": 50.0,
    "primary": 50.0,
    "primary_link": 50.0,
    "secondary": 50.0,
    "secondary_link": 50.0,
    "tertiary": 50.0,
    "tertiary_link": 50.0,
    "unclassified": 50.0,
    "residential": 50.0,
    "living_street": 10.0,
    "service": 20.0,
    "road": 50.0,
}
#: Default posted speed (km/h) of untagged ways outside built-up areas: SUMO's default type map
#: ``osmNetconvert.typ.xml`` (netconvert's own defaults: tertiary and all links 22.22 m/s; unclassified, residential
#: 13.89 m/s; living_street 2.78 m/s; service 5.56 m/s) capped at :data:`RURAL_CAP_KMH`, the legal rural limit of most
#: European countries (SUMO's 27.78 m/s on trunk, primary and secondary roads is the German 100 km/h), and 130 km/h
#: on motorways (SUMO's 39.44 m/s stands for "no limit"; 130 km/h is the limit of most European motorways and the
#: German advisory speed).
RURAL_CAP_KMH = 90.0
RURAL_SPEEDS_KMH: dict[str, float] = {
    "motorway": 130.0,
    "motorway_link": 80.0,
    "trunk": RURAL_CAP_KMH,
    "trunk_link": 80.0,
    "primary": RURAL_CAP_KMH,
    "primary_link": 80.0,
    "secondary": RURAL_CAP_KMH,
    "secondary_link": 80.0,
    "tertiary": 80.0,
    "tertiary_link": 80.0,
    "unclassified": 50.0,
    "residential": 50.0,
    "living_street": 10.0,
    "service": 20.0,
    "road": 50.0,
}
#: Speed (km/h) of a way of a class neither table knows (osmnx's ``fallback`` argument plays this role there).
FALLBACK_SPEED_KMH = 30.0
#: ``maxspeed=none`` (no limit, German Autobahn): the German advisory speed (Autobahn-Richtgeschwindigkeits-Verordnung).
NO_LIMIT_KMH = 130.0
#: ``maxspeed=walk`` / living streets in zone tags: walking pace; German courts read "Schrittgeschwindigkeit" as at most
#: 4-7 km/h (OSM wiki, Key:maxspeed); the upper end is taken.
WALK_KMH = 7.0
#: Legal default limits (km/h) by country for zone values ``CC:urban`` / ``CC:rural`` / ``CC:trunk`` /
#: ``CC:motorway`` (OpenStreetMap wiki "Default speed limits", passenger cars, dry weather); ``""`` is the default
#: for countries not listed.  GB values are 30/60/70/70 mph.
ZONE_SPEEDS_KMH: dict[str, dict[str, float]] = {
    "": {"urban": 50.0, "rural": 90.0, "trunk": 110.0, "motorway": 130.0},
    "AT": {"urban": 50.0, "rural": 100.0, "trunk": 100.0, "motorway": 130.0},
    "BE": {"urban": 50.0, "rural": 90.0, "trunk": 120.0, "motorway": 120.0},
    "CH": {"urban": 50.0, "rural": 80.0, "trunk": 100.0, "motorway": 120.0},
    "DE": {"urban": 50.0, "rural": 100.0, "trunk": NO_LIMIT_KMH, "motorway": NO_LIMIT_KMH},
    "ES": {"urban": 50.0, "rural": 90.0, "trunk": 120.0, "motorway": 120.0},
    "FR": {"urban": 50.0, "rural": 80.0, "trunk": 110.0, "motorway": 130.0},
    "GB": {"urban": 48.28, "rural": 96.56, "trunk": 112.65, "motorway": 112.65},
    "IT": {"urban": 50.0, "rural": 90.0, "trunk": 110.0, "motorway": 130.0},
    "LU": {"urban": 50.0, "rural": 90.0, "trunk": 90.0, "motorway": 130.0},
    "NL": {"urban": 50.0, "rural": 80.0, "trunk": 100.0, "motorway": 100.0},
}
#: Free-flow factor on rural single carriageways (posted limit above :data:`BUILT_UP_MAX_KMH`, not a motorway or
#: trunk road).  UK DfT "Vehicle speed compliance statistics for Great Britain" (free-flow sites away from junctions,
#: bends and cameras): only 11-12 % of cars exceed 60 mph on national-speed-limit single carriageways (2020-2022),
#: whose average free-flow speeds are "under the speed limit"; 0.85 (51 mph of 60) is our rounded reading of that, an
#: assumption, not a fit.  On built-up roads (30 mph: averages of 28-33 mph, "very close to the limit") and on
#: motorways (45-53 % above 70 mph) the factor is 1.
RURAL_FREE_FLOW_FACTOR = 0.85
#: Highest posted limit (km/h) of a built-up road: DfT's definition, 40 mph.
BUILT_UP_MAX_KMH = 64.4
#: Road classes that are dual carriageways by design (free-flow factor 1).
DUAL_CARRIAGEWAY_CLASSES = frozenset({"motorway", "motorway_link", "trunk", "trunk_link"})
#: Radius (m) and junction count of the urban test of untagged ways (:func:`urban_ways`): 8 junctions within 300 m
#: is ~28 junctions per km^2, a suburban street grid (a 150 m block grid has ~44 per km^2, a rural road network
#: well under 5).
URBAN_RADIUS_M = 300.0
URBAN_MIN_JUNCTIONS = 8
#: Tags whose ``CC:context`` value names the way's legal context.
CONTEXT_KEYS = ("maxspeed:type", "source:maxspeed", "zone:maxspeed", "zone:traffic", "maxspeed")
#: ``oneway`` values meaning travel against the way's node order only.
REVERSED_ONEWAY = frozenset({"-1", "reverse", "T"})
_ONEWAY = frozenset({"yes", "true", "1"})

_NUMBER = re.compile(r"^\s*(\d+(?:[.,]\d+)?)\s*(km/h|kmh|kph|mph|knots)?\s*$")
_ZONE = re.compile(r"^\s*([A-Za-z]{2})(?:-[A-Za-z0-9]+)?:([A-Za-z_:]+?)(\d+)?\s*$")
_UNIT_KMH = {None: 1.0, "km/h": 1.0, "kmh": 1.0, "kph": 1.0, "mph": 1.609344, "knots": 1.852}


def _zone_speed(country: str, kind: str, number: str | None) -> float | None:
    """Speed (km/h) of a zone value ``country:kind[number]`` (``DE:zone30``, ``FR:rural``); None if unknown."""
    kind = kind.lower().rstrip(":")
    if number is not None and kind in ("zone", "zone:"):  # DE:zone30, DE:zone:30
        return float(number)
    if kind in ("living_street", "pedestrian", "walk"):
        return 20.0 if country in ("FR", "BE") else WALK_KMH  # FR/BE "zone de rencontre": 20 km/h
    if kind == "bicycle_road":
        return 30.0
    table = ZONE_SPEEDS_KMH.get(country, ZONE_SPEEDS_KMH[""])
    kind = {"expressway": "trunk", "motorroad": "trunk"}.get(kind, kind)
    return table.get(kind)


def parse_maxspeed(value: str | None) -> float | None:
    """Posted speed in km/h of a ``maxspeed`` value, or None when it gives none (see the module docstring).

    >>> parse_maxspeed("30 mph"), parse_maxspeed("FR:urban"), parse_maxspeed("DE:zone30"), parse_maxspeed("signals")
    (48.28032, 50.0, 30.0, None)
    """
    if value is None:
        return None
    vals: list[float] = []
    for part in re.split(r"[;|]", str(value)):
        s = part.strip()
        low = s.lower()
        if not s or low in ("signals", "variable", "unknown"):
            continue
        if low == "none":
            vals.append(NO_LIMIT_KMH)
        elif low == "walk":
            vals.append(WALK_KMH)
        elif m := _NUMBER.match(low):
            v = float(m.group(1).replace(",", ".")) * _UNIT_KMH[m.group(2)]
            if 0 < v < 400:
                vals.append(v)
        elif m := _ZONE.match(s):
            z = _zone_speed(m.group(1).upper(), m.group(2), m.group(3))
            if z is not None:
                vals.append(z)
    return float(np.mean(vals)) if vals else None


def tag_context(tags: dict[str, str]) -> str | None:
    """``"urban"`` / ``"rural"`` from a way's zone tags (``CC:urban``, ``CC:zone30`` ... ``CC:rural``,
    ``CC:motorway``), or None when they say nothing."""
    for key in CONTEXT_KEYS:
        m = _ZONE.match(tags.get(key, ""))
        if m:
            kind = m.group(2).lower()
            if kind.startswith(("urban", "zone", "living_street", "bicycle_road", "pedestrian")):
                return "urban"
            if kind.startswith(("rural", "motorway", "trunk", "expressway", "motorroad")):
                return "rural"
    return None


def base_class(highway: str) -> str:
    """The road class of a ``highway`` value: itself, or ``CLASS`` for the ``CLASS_tunnel`` / ``CLASS_bridge`` values
    some scenario files use (Monaco's MoST file: ``primary_tunnel``, ``motorway_bridge``, ...)."""
    for suffix in ("_tunnel", "_bridge"):
        if highway.endswith(suffix) and highway.removesuffix(suffix) in URBAN_SPEEDS_KMH:
            return highway.removesuffix(suffix)
    return highway


def default_speed_kmh(highway: str, context: str) -> float:
    """Default posted speed (km/h) of an untagged way of class ``highway`` (:func:`base_class`) in ``context``
    (``urban`` / ``rural``)."""
    table = URBAN_SPEEDS_KMH if context == "urban" else RURAL_SPEEDS_KMH
    return table.get(base_class(highway), FALLBACK_SPEED_KMH)


@dataclass(frozen=True)
class WaySpeed:
    """Resolved posted speeds of one OSM way: ``forward_kmh`` along its node order, ``backward_kmh`` against it
    (equal on one-way ways, which only carry one direction), where they came from (``"maxspeed"``, ``"zone"``
    or ``"default"``), the context used for defaults (``"urban"`` / ``"rural"``) and the way's ``highway`` class."""

    forward_kmh: float
    backward_kmh: float
    source: str
    context: str
    highway: str = ""


def _open(path: Path) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressing ``.gz`` / ``.bz2``."""
    import bz2

    suffix = path.suffix.lower()
    if suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]  # GzipFile reads bytes
    return bz2.open(path, "rb") if suffix == ".bz2" else path.open("rb")


def _iter_top(path: Path) -> Iterator[tuple[str, ET.Element | None]]:
    """``("root", el)`` for the ``<osm>`` start, then ``(tag, el)`` for each complete child (cleared after use)."""
    depth = 0
    root: ET.Element | None = None
    with _open(path) as fh:
        for event, el in ET.iterparse(fh, events=("start", "end")):
            if event == "start":
                depth += 1
                if depth == 1:
                    root = el
                    yield "root", el
                continue
            depth -= 1
            if depth == 1:
                yield el.tag, el
                el.clear()
                if root is not None:
                    root.clear()


def _scan(path: Path) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[list[str], dict[str, str]]]]:
    """Node lon/lat and the ``highway`` ways (node refs, tags) of an OSM XML file, by id."""
    nodes: dict[str, tuple[float, float]] = {}
    ways: dict[str, tuple[list[str], dict[str, str]]] = {}
    for tag, el in _iter_top(path):
        if el is None:
            continue
        if tag == "node":
            try:
                nodes[el.get("id", "")] = (float(el.get("lon", "nan")), float(el.get("lat", "nan")))
            except ValueError:
                continue
        elif tag == "way":
            tags = {t.get("k", ""): t.get("v", "") for t in el.iter("tag")}
            if "highway" in tags:
                ways[el.get("id", "")] = ([n.get("ref", "") for n in el.iter("nd")], tags)
    return nodes, ways


def urban_ways(
    nodes: dict[str, tuple[float, float]],
    ways: dict[str, tuple[list[str], dict[str, str]]],
    radius_m: float = URBAN_RADIUS_M,
    min_junctions: int = URBAN_MIN_JUNCTIONS,
) -> set[str]:
    """Ids of the ways with at least ``min_junctions`` road junctions (nodes shared by two or more road ways, or
    used twice by one) within ``radius_m`` of their middle node; road ways are those of the classes of
    :data:`URBAN_SPEEDS_KMH`."""
    from scipy.spatial import cKDTree

    ways = {w: v for w, v in ways.items() if base_class(v[1].get("highway", "")) in URBAN_SPEEDS_KMH}
    use: dict[str, int] = {}
    for refs, _ in ways.values():
        closed = len(refs) > 1 and refs[0] == refs[-1]
        for r in refs[:-1] if closed else refs:
            use[r] = use.get(r, 0) + 1
    junctions = np.array([nodes[r] for r, k in use.items() if k >= 2 and r in nodes], dtype=np.float64)
    mids = {w: nodes.get(refs[len(refs) // 2]) for w, (refs, _) in ways.items() if refs}
    mids = {w: p for w, p in mids.items() if p is not None}
    if not len(junctions) or not mids:
        return set()
    lat0 = float(np.nanmean(junctions[:, 1]))
    scale = np.array([111_320.0 * math.cos(math.radians(lat0)), 110_540.0])  # metres per degree lon, lat
    tree = cKDTree(junctions * scale)
    ids = list(mids)
    pts = np.array([mids[w] for w in ids], dtype=np.float64) * scale
    counts = np.array([len(c) for c in tree.query_ball_point(pts, r=radius_m)])
    return {w for w, c in zip(ids, counts, strict=True) if c >= min_junctions}


def _direction_speed(tags: dict[str, str], key: str) -> tuple[float | None, str]:
    """Speed (km/h) of tag ``key`` and where it came from (``"maxspeed"`` / ``"zone"``), or ``(None, "")``."""
    v = parse_maxspeed(tags.get(key))
    if v is None:
        return None, ""
    return v, "zone" if _ZONE.match(tags.get(key, "")) else "maxspeed"


def resolve_way_speeds(path: str | os.PathLike[str]) -> dict[str, WaySpeed]:
    """Posted speeds of every ``highway`` way of an OSM XML file (plain, ``.gz`` or ``.bz2``), by way id (classes
    the tables do not know take :data:`FALLBACK_SPEED_KMH` unless tagged)."""
    nodes, ways = _scan(Path(path))
    urban = urban_ways(nodes, ways)
    out: dict[str, WaySpeed] = {}
    for wid, (_, tags) in ways.items():
        context = tag_context(tags) or ("urban" if wid in urban else "rural")
        both, src = _direction_speed(tags, "maxspeed")
        fwd, src_f = _direction_speed(tags, "maxspeed:forward")
        bwd, src_b = _direction_speed(tags, "maxspeed:backward")
        default = default_speed_kmh(tags["highway"], context)
        f = fwd if fwd is not None else both if both is not None else default
        b = bwd if bwd is not None else both if both is not None else default
        source = src_f or src_b or src or "default"
        oneway = tags.get("oneway", "")
        if oneway in REVERSED_ONEWAY:
            f = b
        elif (
            oneway in _ONEWAY
            or tags.get("junction") in ("roundabout", "circular")
            or base_class(tags["highway"]) == "motorway"
        ):
            if oneway != "no":
                b = f
        out[wid] = WaySpeed(float(f), float(b), source, context, tags["highway"])
    return out


def write_resolved_osm(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], speeds: dict[str, WaySpeed] | None = None
) -> dict[str, WaySpeed]:
    """Copy OSM XML ``src`` to ``dst`` with the ``maxspeed*`` tags (netconvert reads ``maxspeed:type`` too) of every
    way of a class of :data:`URBAN_SPEEDS_KMH` replaced by its resolved posted speed in
    km/h (``maxspeed``, or ``maxspeed:forward`` / ``maxspeed:backward`` when the directions differ), so that
    netconvert needs no defaults of its own.  Returns the resolved speeds (``speeds`` or :func:`resolve_way_speeds`).
    """
    speeds = resolve_way_speeds(src) if speeds is None else speeds
    with open(dst, "wb") as out:
        out.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
        for tag, el in _iter_top(Path(src)):
            if el is None:
                continue
            if tag == "root":
                attrs = "".join(f" {k}={_quote(v)}" for k, v in el.attrib.items())
                out.write(f"<{el.tag}{attrs}>\n".encode())
                continue
            ws = speeds.get(el.get("id", "")) if tag == "way" else None
            if ws is not None and base_class(ws.highway) in URBAN_SPEEDS_KMH:
                for t in [t for t in el.findall("tag") if t.get("k", "").startswith("maxspeed")]:
                    el.remove(t)
                pairs = (
                    [("maxspeed", ws.forward_kmh)]
                    if ws.forward_kmh == ws.backward_kmh
                    else [("maxspeed:forward", ws.forward_kmh), ("maxspeed:backward", ws.backward_kmh)]
                )
                for k, v in pairs:
                    ET.SubElement(el, "tag", {"k": k, "v": f"{v:.4f}".rstrip("0").rstrip(".")})
            el.tail = "\n"
            out.write(ET.tostring(el, encoding="utf-8", short_empty_elements=True).split(b"?>", 1)[-1].lstrip())
        out.write(b"</osm>\n")
    return speeds


def _quote(v: str) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr(v)


def road_class(type_or_highway: object) -> str:
    """The OSM ``highway`` class (:func:`base_class`) of a SUMO edge type (``"highway.primary"``,
    ``"highway.primary|railway.tram"``) or an osmnx ``highway`` attribute (a string or a list of strings: the
    first); ``""`` when there is none."""
    v = type_or_highway[0] if isinstance(type_or_highway, list) and type_or_highway else type_or_highway
    for part in str(v or "").split("|"):
        cls = base_class(part.removeprefix("highway."))
        if cls in URBAN_SPEEDS_KMH:
            return cls
    return ""


def free_flow_factor(limit_mps: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """``(E,)`` ratio of the free-flow driving speed to the posted limit: :data:`RURAL_FREE_FLOW_FACTOR` on roads of a
    known non-dual-carriageway class posted above :data:`BUILT_UP_MAX_KMH`, 1 elsewhere (unknown classes included).

    Args:
        limit_mps: ``(E,)`` posted limits (m/s).
        classes: ``(E,)`` OSM highway classes (:func:`road_class`; ``""`` for unknown).
    """
    limit_kmh = np.asarray(limit_mps, dtype=np.float64) * 3.6
    cls = np.asarray(classes, dtype=object).astype(str)
    rural = (limit_kmh > BUILT_UP_MAX_KMH) & (cls != "") & ~np.isin(cls, list(DUAL_CARRIAGEWAY_CLASSES))
    return np.where(rural, RURAL_FREE_FLOW_FACTOR, 1.0)
