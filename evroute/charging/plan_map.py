"""Offline HTML map of a charging plan: the legs, the stops (tooltip: arrival charge with its 90 % interval,
P(reach), charge-to level, charging time), start and destination, and the charge along the route as an inline SVG
chart (mean, 90 % band, reserve line, stops).  Leaflet is inlined as in :mod:`evroute.maps` (no CDN; only basemap
tiles load online).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError
from evroute.io import atomic_write_text
from evroute.maps import ROUTE_COLOURS, TILES, external_assets, offline_map

CHART_W, CHART_H = 320, 150


def profile_svg(profile: dict[str, Any], reserve: float, stops_km: list[float]) -> str:
    """An inline SVG chart of the charge (%) against distance (km): 90 % band, mean, reserve, stops."""
    km = np.asarray(profile["km"], dtype=np.float64)
    mean, lo, hi = (np.asarray(profile[k], dtype=np.float64) * 100 for k in ("mean", "lo", "hi"))
    if not len(km):
        return ""
    pad_l, pad_b, pad_t, pad_r = 34, 22, 8, 8
    x_max = max(float(km[-1]), 1e-6)
    y_lo = min(0.0, float(lo.min()), 100 * reserve)
    y_hi = max(float(hi.max()), 100 * reserve) + 1
    w, h = CHART_W - pad_l - pad_r, CHART_H - pad_t - pad_b

    def x(v: np.ndarray | float) -> np.ndarray:
        return pad_l + np.asarray(v) / x_max * w

    def y(v: np.ndarray | float) -> np.ndarray:
        return pad_t + (y_hi - np.asarray(v)) / (y_hi - y_lo) * h

    def pts(xs: np.ndarray, ys: np.ndarray) -> str:
        return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x(xs), y(ys), strict=True))

    band = pts(np.concatenate([km, km[::-1]]), np.concatenate([hi, lo[::-1]]))
    parts = [
        f"<svg id='evroute-charge-profile' width='{CHART_W}' height='{CHART_H}' xmlns='http://www.w3.org/2000/svg' "
        "style='font:10px sans-serif'>",
        f"<polygon points='{band}' fill='#9ecae1' opacity='0.6'><title>90 % interval</title></polygon>",
        f"<polyline points='{pts(km, mean)}' fill='none' stroke='#08519c' stroke-width='2'/>",
        f"<line x1='{pad_l}' x2='{pad_l + w}' y1='{y(100 * reserve):.1f}' y2='{y(100 * reserve):.1f}' "
        "stroke='#d7301f' stroke-dasharray='4 3'><title>reserve</title></line>",
    ]
    for k in stops_km:
        parts.append(
            f"<line x1='{x(k):.1f}' x2='{x(k):.1f}' y1='{pad_t}' y2='{pad_t + h}' stroke='#238b45' stroke-width='2'>"
            "<title>charging stop</title></line>"
        )
    parts += [
        f"<line x1='{pad_l}' x2='{pad_l}' y1='{pad_t}' y2='{pad_t + h}' stroke='#333'/>",
        f"<line x1='{pad_l}' x2='{pad_l + w}' y1='{pad_t + h}' y2='{pad_t + h}' stroke='#333'/>",
        f"<text x='2' y='{pad_t + 8}'>{y_hi:.0f} %</text><text x='2' y='{pad_t + h}'>{y_lo:.0f} %</text>",
        f"<text x='{pad_l}' y='{CHART_H - 6}'>0 km</text>",
        f"<text x='{pad_l + w - 40}' y='{CHART_H - 6}'>{x_max:.1f} km</text>",
        "</svg>",
    ]
    return "".join(parts)


def plan_map_html(
    d: dict[str, Any], lg: Any, path: str | Path, *, title: str = "", tiles: str | None = "openstreetmap"
) -> Path:
    """Write the map of :func:`evroute.charging.answers.plan_dict`'s answer ``d`` to ``path`` (module doc)."""
    import folium

    net = lg.network
    if net.meta.get("crs", "EPSG:4326") != "EPSG:4326":
        raise DataError(f"network {net.name!r} has no lon/lat geometry: it cannot be mapped")
    polys = [
        [
            (round(float(b), 6), round(float(a), 6))
            for a, b in np.concatenate([net.geometry[net.index_of(e)] for e in leg["edges"]])
        ]
        for leg in d["legs"]
    ]
    allpts = np.asarray([p for poly in polys for p in poly] + [(s["lat"], s["lon"]) for s in d["stops"]])
    (south, west), (north, east) = allpts.min(axis=0), allpts.max(axis=0)
    m = offline_map(
        location=[float(south + north) / 2, float(west + east) / 2], zoom_start=13, tiles=None, control_scale=True
    )
    if tiles is not None:
        url, attribution = TILES[tiles]
        folium.TileLayer(url, attr=attribution, name=tiles, max_zoom=19).add_to(m)
    legend = []
    for n, (leg, poly) in enumerate(zip(d["legs"], polys, strict=True)):
        colour = ROUTE_COLOURS[n % len(ROUTE_COLOURS)]
        lo, hi = leg["arrival_charge_90"]
        text = (
            f"leg {n + 1}: {leg['from']} -> {leg['to']}, {leg['length_m'] / 1000:.2f} km, "
            f"{leg['time_s'] / 60:.1f} min, arrive {100 * leg['arrival_charge']:.1f} % [{100 * lo:.1f}, "
            f"{100 * hi:.1f}], P(reach) {leg['p_reach']:.4f}"
        )
        folium.PolyLine(poly, color=colour, weight=6, opacity=0.85, tooltip=text).add_to(
            folium.FeatureGroup(name=f"leg {n + 1}").add_to(m)
        )
        legend.append(
            f"<div><span style='display:inline-block;width:24px;border-top:5px solid {colour};"
            f"vertical-align:middle;margin-right:6px'></span>{html.escape(text)}</div>"
        )
    stops = folium.FeatureGroup(name="charging stops").add_to(m)
    for n, st in enumerate(d["stops"]):
        lo, hi = st["arrival_charge_90"]
        tip = (
            f"stop {n + 1}: {st['charger']} ({st['power_kw']:g} kW), arrive {100 * st['arrival_charge']:.1f} % "
            f"[{100 * lo:.1f}, {100 * hi:.1f}], P(reach) {st['p_reach']:.4f}, charge to {100 * st['charge_to']:.0f} %, "
            f"{st['charging_time_s'] / 60:.1f} min"
        )
        folium.CircleMarker(
            [st["lat"], st["lon"]],
            radius=8,
            color="#00441b",
            weight=2,
            fill=True,
            fill_color="#41ab5d",
            fill_opacity=1.0,
            tooltip=tip,
        ).add_to(stops)
    for label, (lat, lon), fill in (("start", polys[0][0], "#00c000"), ("destination", polys[-1][-1], "#e00000")):
        folium.CircleMarker(
            [lat, lon], radius=7, color="#333", weight=2, fill=True, fill_color=fill, fill_opacity=1.0, tooltip=label
        ).add_to(m)
    folium.LayerControl().add_to(m)
    ends = np.cumsum(
        [
            sum(net.length_m[net.index_of(e)] for e in leg["edges"][1 if n else 0 :]) / 1000.0
            for n, leg in enumerate(d["legs"])
        ]
    )
    svg = profile_svg(d["charge_profile"], d["reserve"], [float(k) for k in ends[:-1]])
    status = "feasible" if d["feasible"] else "NO FEASIBLE PLAN"
    panel = (
        "<div id='evroute-legend' style='position:absolute;bottom:26px;right:10px;z-index:1000;background:white;"
        "width:340px;padding:8px 10px;border-radius:4px;box-shadow:0 1px 5px rgba(0,0,0,0.4);font:12px/1.4 "
        f"sans-serif'><div style='font-weight:bold'>{html.escape(title)}</div>"
        f"<div>{status}: {d['total_time_s'] / 60:.1f} min, {len(d['stops'])} stop(s), P(reserve kept everywhere) "
        f"{d['p_all_reserve']:.4f}</div>{''.join(legend)}<div style='margin-top:4px'>charge along the route "
        f"(mean, 90 % band, reserve dashed, stops green)</div>{svg}</div>"
    )
    page_root = m.get_root()
    if not isinstance(page_root, folium.Figure):
        raise TypeError(f"folium map root is a {type(page_root).__name__}, not a Figure")
    page_root.html.add_child(folium.Element(panel))
    m.fit_bounds(
        [[float(south), float(west)], [float(north), float(east)]],
        padding_top_left=(40, 40),
        padding_bottom_right=(380, 40),
    )
    page = m.get_root().render()
    if external_assets(page):
        raise RuntimeError(f"map would load assets from the network: {external_assets(page)[:3]}")
    return atomic_write_text(path, page)


__all__ = ["plan_map_html", "profile_svg"]
