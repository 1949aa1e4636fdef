"""Exploration maps (paper Figs. 6-9): how often each edge was driven, start/goal and the optimal route.

:func:`drive_counts` turns the per-round records of a results folder into per-edge counts;
:func:`exploration_map_html` draws an interactive ``folium`` map and :func:`exploration_map_png` a
static matplotlib figure of the same data.  Geometry is the network's lon/lat polylines (EPSG:4326).

The HTML maps are self-contained: Leaflet's JavaScript, CSS and icons are inlined from the copy this
package ships (``evroute/resources/leaflet``, fetched from the npm registry by
``scripts/tools/fetch_map_assets.py``, licence alongside), so a map renders with no network access.  Only the
basemap tiles (OpenStreetMap, no API key) are loaded online; offline the routes, markers and legend
still render on a blank background.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evroute.errors import DataError
from evroute.io import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    import folium
    import pandas as pd

    from evroute.linegraph import LineGraph

#: Basemaps that need no API key: name -> (tile URL template, attribution).
TILES: dict[str, tuple[str, str]] = {
    "openstreetmap": (
        "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors',
    ),
}
_CMAP = "plasma"
LEGEND_WIDTH_PX = 220  #: the fitted view keeps this many pixels on the right free for the legend
_CMAP_LO = 0.15  # start of the colour map used for the least-driven edges (the darkest purple is hard to see)
_EXTERNAL_ASSET = re.compile(r"<(?:script[^>]*\ssrc|link[^>]*\shref)\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)


def drive_counts(linegraph: LineGraph, rounds: pd.DataFrame) -> np.ndarray:
    """``(E,)`` number of times each edge was driven, summed over the rounds (and seeds) in ``rounds``."""
    net = linegraph.network
    counts = np.zeros(linegraph.n_nodes)
    for route, n in rounds["route"].value_counts().items():
        idx = [net.index_of(e) for e in str(route).split()]
        np.add.at(counts, idx, n)
    return counts


def _colour(frac: float) -> str:
    import matplotlib

    r, g, b, _ = matplotlib.colormaps[_CMAP](_CMAP_LO + (1 - _CMAP_LO) * frac)
    return f"#{int(255 * r):02x}{int(255 * g):02x}{int(255 * b):02x}"


@lru_cache(maxsize=1)
def leaflet_inline() -> tuple[str, str]:
    """``(css, js)`` of the shipped Leaflet, ready to inline: CSS images as data URIs, no source-map comment."""
    root = resources.files("evroute") / "resources" / "leaflet"
    css = (root / "leaflet.css").read_text(encoding="utf-8")

    def data_uri(m: re.Match[str]) -> str:
        png = (root / m.group(1)).read_bytes()
        return f"url(data:image/png;base64,{base64.b64encode(png).decode()})"

    css = re.sub(r"url\((images/[\w.-]+\.png)\)", data_uri, css)
    js = (root / "leaflet.js").read_text(encoding="utf-8")
    js = re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", js)
    return css, js


def external_assets(page: str) -> list[str]:
    """The ``<script src>`` / ``<link href>`` tags of an HTML page that point at another host (none for our maps)."""
    return [page[m.start() : page.find(">", m.start()) + 1] for m in _EXTERNAL_ASSET.finditer(page)]


def offline_map(**kwargs: Any) -> folium.Map:
    """A :class:`folium.Map` whose Leaflet comes inlined from the package instead of CDN links.

    Only Leaflet itself is inlined: the maps here use plain Leaflet layers (polylines, GeoJSON, circle
    markers, tooltips, layer control), none of the jQuery / Bootstrap / Font Awesome plugins folium links by
    default, so those links are dropped.  ``kwargs`` go to :class:`folium.Map`.
    """
    import folium

    m = folium.Map(**kwargs)
    m.default_js, m.default_css = [], []  # instance attributes shadow folium's CDN lists
    css, js = leaflet_inline()
    _page(m).header.add_child(folium.Element(f"<style>{css}</style>\n<script>{js}</script>"), name="leaflet")
    return m


def _page(m: folium.Map) -> folium.Figure:
    """The HTML page of a map (folium puts every new :class:`folium.Map` in a :class:`branca.element.Figure`)."""
    import folium

    root = m.get_root()
    if not isinstance(root, folium.Figure):
        raise TypeError(f"folium map root is a {type(root).__name__}, not a Figure")
    return root


_LINE = "display:inline-block;width:28px;height:0;vertical-align:middle;margin-right:6px;"
_DOT = "display:inline-block;width:11px;height:11px;border-radius:50%;vertical-align:middle;margin:0 9px 0 8px;"
_MARKERS = (("start", "#00c000", "#006000"), ("goal", "#e00000", "#700000"))
#: Line colours of the routes of :func:`route_map_html`, in order.
ROUTE_COLOURS = ("#1a9850", "#2166ac", "#f46d43", "#762a83", "#000000")


def _unbroken(label: str) -> str:
    """``label`` as HTML whose line breaks fall only between its comma-separated parts: ``"shortest: 1.69 km,
    1.5 min"`` never wraps inside ``1.69 km`` (each part is a ``white-space:nowrap`` span)."""
    chunks = [html.escape(c) for c in label.split(", ")]
    return ", ".join(f"<span class='evroute-value' style='white-space:nowrap'>{c}</span>" for c in chunks)


def _legend_html(title: str, lines: Sequence[tuple[str, str]], cmax: int | None = None) -> str:
    """A fixed legend (bottom right): optional colour bar of drive counts up to ``cmax`` (log scale), then one row
    per ``(css border-top of a line sample, label)`` and the start / goal markers."""
    parts = [f"<div style='font-weight:bold;margin-bottom:4px'>{html.escape(title)}</div>"] if title else []
    if cmax is not None:
        stops = ", ".join(_colour(f) for f in np.linspace(0, 1, 9))
        ticks = sorted({1, max(1, int(round(np.expm1(np.log1p(cmax) / 2)))), max(1, cmax)})
        # the colour of an edge driven t times is frac = log1p(t) / log1p(cmax), so ticks sit at that fraction
        pos = [0.0 if cmax <= 1 else np.log1p(t) / np.log1p(cmax) * 100 for t in ticks]
        tick_html = "".join(
            f"<span style='position:absolute;left:{p:.1f}%;transform:translateX(-50%)'>{t}</span>"
            for t, p in zip(ticks, pos, strict=True)
        )
        parts += [
            "<div>times driven (colour, log scale)</div>",
            f"<div style='height:10px;width:180px;background:linear-gradient(to right, {stops})'></div>",
            f"<div style='position:relative;height:16px;width:180px'>{tick_html}</div>",
        ]
    parts += [f"<div><span style='{_LINE}border-top:{css}'></span>{_unbroken(label)}</div>" for css, label in lines]
    parts += [
        f"<div><span style='{_DOT}background:{fill};border:2px solid {edge}'></span>{label}</div>"
        for label, fill, edge in _MARKERS
    ]
    return (
        "<div id='evroute-legend' style='position:absolute;bottom:26px;right:10px;z-index:1000;background:white;"
        f"width:{LEGEND_WIDTH_PX - 20}px;padding:8px 10px;border-radius:4px;box-shadow:0 1px 5px rgba(0,0,0,0.4);"
        f"font:12px/1.5 sans-serif'>{''.join(parts)}</div>"
    )


def _base_map(linegraph: LineGraph, focus: Sequence[int], tiles: str | None) -> tuple[folium.Map, list[list[float]]]:
    """Map with the basemap and the whole road network in grey; bounds ``[[S, W], [N, E]]`` of the ``focus`` edges."""
    import folium

    if tiles is not None and tiles not in TILES:
        raise ValueError(f"unknown basemap {tiles!r}; known: {', '.join(TILES)}")
    crs = linegraph.network.meta.get("crs", "EPSG:4326")
    if crs != "EPSG:4326":
        raise DataError(f"network {linegraph.network.name!r} has no lon/lat geometry ({crs}): it cannot be mapped")
    geom = linegraph.network.geometry
    pts = np.concatenate([geom[int(e)] for e in focus])
    (west, south), (east, north) = pts.min(axis=0), pts.max(axis=0)
    m = offline_map(
        location=[float(south + north) / 2, float(west + east) / 2], zoom_start=14, tiles=None, control_scale=True
    )
    if tiles is not None:
        url, attribution = TILES[tiles]
        folium.TileLayer(url, attr=attribution, name=tiles, max_zoom=19).add_to(m)
    base = folium.FeatureGroup(name="road network")
    # the whole network as ONE multi-polyline of straight end-to-end segments rounded to ~1 m (the tiles show the
    # street shapes; highlighted edges keep their full geometry): a per-edge PolyLine with every vertex made
    # real-city maps several MB each
    folium.PolyLine(
        [[(round(float(y), 5), round(float(x), 5)) for x, y in g[[0, -1]]] for g in geom],
        color="#999999",
        weight=1,
        opacity=0.5,
    ).add_to(base)
    base.add_to(m)
    return m, [[float(south), float(west)], [float(north), float(east)]]


def _finish(
    m: folium.Map,
    bounds: list[list[float]],
    linegraph: LineGraph,
    start: int,
    goal: int | None,
    legend: str,
    path: str | Path,
) -> Path:
    """Add start/goal markers (no goal marker for ``goal=None``), layer control and legend, fit the view to
    ``bounds``, check and write the page."""
    import folium

    net = linegraph.network
    ends = (start,) if goal is None else (start, goal)
    for e, (label, fill, edge) in zip(ends, _MARKERS[: len(ends)], strict=True):
        x, y = net.geometry[e].mean(axis=0)
        folium.CircleMarker(
            [float(y), float(x)],
            radius=7,
            color=edge,
            weight=2,
            fill=True,
            fill_color=fill,
            fill_opacity=1.0,
            tooltip=f"{label}: {net.edge_ids[e]}",
        ).add_to(m)
    folium.LayerControl().add_to(m)
    _page(m).html.add_child(folium.Element(legend))
    # keep the data clear of the legend (bottom right, LEGEND_WIDTH_PX wide) and of the zoom / layer controls
    m.fit_bounds(bounds, padding_top_left=(60, 60), padding_bottom_right=(LEGEND_WIDTH_PX + 30, 30))
    page = m.get_root().render()
    if external_assets(page):  # a folium upgrade that adds a CDN dependency must not silently break offline maps
        raise RuntimeError(f"map would load assets from the network: {external_assets(page)[:3]}")
    return atomic_write_text(path, page)


def _polyline(geom: Sequence[np.ndarray], edges: Sequence[int] | np.ndarray) -> list[tuple[float, float]]:
    pts = np.concatenate([geom[int(e)] for e in edges])
    return [(round(float(y), 6), round(float(x), 6)) for x, y in pts]


def exploration_map_html(
    linegraph: LineGraph,
    counts: np.ndarray,
    path: str | Path,
    *,
    start: int,
    goal: int,
    optimal: Sequence[int] = (),
    title: str = "",
    tiles: str | None = "openstreetmap",
) -> Path:
    """Self-contained interactive map: driven edges coloured by (log) count, optimal route, start/goal, legend.

    The view is fitted to the driven edges, the optimal route and the start and goal edges.

    Args:
        linegraph: the line graph the counts refer to (its network's geometry is lon/lat).
        counts: ``(E,)`` times each edge was driven.
        path: HTML file to write.
        start, goal: edge indices of the start and goal edges.
        optimal: edge indices of the optimal route (drawn dashed).
        title: shown at the top of the legend.
        tiles: basemap (a key of :data:`TILES`) or ``None`` for none.
    """
    import folium

    net = linegraph.network
    geom = net.geometry
    m, bounds = _base_map(linegraph, [*np.flatnonzero(counts > 0), *optimal, start, goal], tiles)
    driven = folium.FeatureGroup(name="driven edges")
    cmax = np.log1p(counts.max()) if counts.max() > 0 else 1.0
    features = []
    for e in np.flatnonzero(counts > 0):
        frac = float(np.log1p(counts[e]) / cmax)
        features.append(
            {
                "type": "Feature",
                "geometry": {
                    "type": "LineString",
                    "coordinates": [[round(float(x), 5), round(float(y), 5)] for x, y in geom[int(e)]],
                },
                "properties": {
                    "label": f"{net.edge_ids[e]}: driven {int(counts[e])}x",
                    "color": _colour(frac),
                    "weight": round(2 + 4 * frac, 1),
                },
            }
        )
    if features:  # one GeoJSON layer (compact) instead of one PolyLine object per edge
        folium.GeoJson(
            {"type": "FeatureCollection", "features": features},
            name="driven edges",
            style_function=lambda f: {
                "color": f["properties"]["color"],
                "weight": f["properties"]["weight"],
                "opacity": 0.9,
            },
            tooltip=folium.GeoJsonTooltip(fields=["label"], labels=False),
        ).add_to(driven)
    driven.add_to(m)
    lines = [("2px solid #999999", "road network")]
    if len(optimal):
        folium.PolyLine(
            _polyline(geom, optimal), color="#00a000", weight=3, dash_array="6 6", tooltip="optimal route"
        ).add_to(folium.FeatureGroup(name="optimal route").add_to(m))
        lines.append(("3px dashed #00a000", "optimal route"))
    return _finish(m, bounds, linegraph, start, goal, _legend_html(title, lines, int(counts.max())), path)


def route_map_html(
    linegraph: LineGraph,
    routes: Mapping[str, Sequence[int] | np.ndarray],
    path: str | Path,
    *,
    start: int,
    goal: int,
    labels: Mapping[str, str] | None = None,
    title: str = "",
    tiles: str | None = "openstreetmap",
) -> Path:
    """Self-contained interactive map of named routes (e.g. energy-optimal, shortest, fastest) from start to goal.

    Each route is one line in :data:`ROUTE_COLOURS` order, in its own layer, with ``labels[name]`` (e.g. its
    length and energy) as tooltip and legend text; the view is fitted to all routes.

    Args:
        linegraph: line graph whose network holds the lon/lat geometry.
        routes: route name -> edge indices from ``start`` to ``goal``.
        path: HTML file to write.
        start, goal: edge indices of the start and goal edges.
        labels: route name -> text (default: the name).
        title: shown at the top of the legend.
        tiles: basemap (a key of :data:`TILES`) or ``None`` for none.
    """
    import folium

    geom = linegraph.network.geometry
    m, bounds = _base_map(linegraph, [start, goal, *(int(e) for r in routes.values() for e in r)], tiles)
    lines = [("2px solid #999999", "road network")]
    # drawn widest first so that routes sharing streets stay visible; a route equal to an earlier one is drawn
    # dashed on top of it at the same width (the two colours alternate along it) and says so in the legend
    seen: dict[tuple[int, ...], tuple[str, int]] = {}
    for k, (name, edges) in enumerate(routes.items()):
        colour, text = ROUTE_COLOURS[k % len(ROUTE_COLOURS)], (labels or {}).get(name, name)
        key = tuple(int(e) for e in edges)
        weight, dash = 9 - 2 * min(k, 3), None
        if key in seen:
            first, weight = seen[key]
            dash = f"{2 * weight} {2 * weight}"  # with butt caps: equal lengths of both colours
            text = f"{text}, same route as {first}"
        else:
            seen[key] = (name, weight)
        folium.PolyLine(
            _polyline(geom, edges),
            color=colour,
            weight=weight,
            opacity=1.0 if dash else 0.8,
            dash_array=dash,
            line_cap="butt" if dash else "round",
            tooltip=text,
        ).add_to(folium.FeatureGroup(name=name).add_to(m))
        lines.append((f"{weight}px {'dashed' if dash else 'solid'} {colour}", text))
    return _finish(m, bounds, linegraph, start, goal, _legend_html(title, lines), path)


def reach_map_html(
    linegraph: LineGraph,
    reachable: np.ndarray,
    energy_wh: np.ndarray,
    path: str | Path,
    *,
    start: int,
    budget_wh: float,
    title: str = "",
    tiles: str | None = "openstreetmap",
) -> Path:
    """Self-contained interactive map of a reachable area (:func:`evroute.driver.reach.reachable`): every reachable
    edge coloured by the share of the energy budget its route uses (plasma, dark = near the start), the start marked.

    Args:
        reachable: ``(E,)`` bool; energy_wh: ``(E,)`` the energy (Wh) shown per edge (e.g. the route's quantile).
        budget_wh: the energy budget (Wh) that colours are relative to.
    """
    import folium

    net = linegraph.network
    geom = net.geometry
    idx = np.flatnonzero(reachable)
    m, bounds = _base_map(linegraph, [start, *idx.tolist()], tiles)
    features = []
    for e in idx:
        frac = float(np.clip(energy_wh[e] / budget_wh, 0.0, 1.0)) if budget_wh > 0 else 1.0
        features.append(
            {
                "type": "Feature",
                "geometry": {
                    "type": "LineString",
                    "coordinates": [[round(float(x), 5), round(float(y), 5)] for x, y in geom[int(e)]],
                },
                "properties": {
                    "label": f"{net.edge_ids[e]}: {energy_wh[e]:.0f} Wh of {budget_wh:.0f}",
                    "color": _colour(frac),
                },
            }
        )
    layer = folium.FeatureGroup(name="reachable")
    if features:
        folium.GeoJson(
            {"type": "FeatureCollection", "features": features},
            name="reachable",
            style_function=lambda f: {"color": f["properties"]["color"], "weight": 4, "opacity": 0.9},
            tooltip=folium.GeoJsonTooltip(fields=["label"], labels=False),
        ).add_to(layer)
    layer.add_to(m)
    lines = [("2px solid #999999", "road network"), (f"4px solid {_colour(1.0)}", "reachable (share of budget)")]
    return _finish(m, bounds, linegraph, start, None, _legend_html(title, lines), path)


def exploration_map_png(
    linegraph: LineGraph,
    counts: np.ndarray,
    path: str | Path,
    *,
    start: int,
    goal: int,
    optimal: Sequence[int] = (),
    title: str = "",
) -> Path:
    """Static PNG of the same map (matplotlib, lon/lat axes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    geom = linegraph.network.geometry
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.add_collection(LineCollection(geom, colors="#d0d0d0", linewidths=0.5))
    idx = np.flatnonzero(counts > 0)
    if len(idx):
        lc = LineCollection(
            [geom[int(e)] for e in idx],
            array=np.log1p(counts[idx]),
            cmap="plasma",
            linewidths=1 + 2.5 * np.log1p(counts[idx]) / np.log1p(counts.max()),
        )
        ax.add_collection(lc)
        cb = fig.colorbar(lc, ax=ax, shrink=0.7)
        cb.set_label("log(1 + times driven)")
    if len(optimal):
        pts = np.concatenate([geom[int(e)] for e in optimal])
        ax.plot(pts[:, 0], pts[:, 1], "--", color="#00a000", lw=1.5, label="optimal route")
    for e, label, c in ((start, "start", "green"), (goal, "goal", "red")):
        x, y = geom[e].mean(axis=0)
        ax.plot(x, y, "o", color=c, ms=8, label=label)
    ax.autoscale()
    ax.set_aspect(1 / np.cos(np.deg2rad(np.mean([g[:, 1].mean() for g in geom]))))
    ax.set_xlabel("longitude")
    ax.set_ylabel("latitude")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())
