"""Exploration maps (paper Figs. 6-9): how often each edge was driven, start/goal and the optimal route.

:func:`drive_counts` turns the per-round records of a results folder into per-edge counts;
:func:`exploration_map_html` draws an interactive ``folium`` map and :func:`exploration_map_png` a
static matplotlib figure of the same data.  Geometry is the network's lon/lat polylines (EPSG:4326).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from evroute.io import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from evroute.linegraph import LineGraph


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

    r, g, b, _ = matplotlib.colormaps["plasma"](0.15 + 0.85 * frac)
    return f"#{int(255 * r):02x}{int(255 * g):02x}{int(255 * b):02x}"


def exploration_map_html(linegraph: LineGraph, counts: np.ndarray, path: str | Path, *, start: int, goal: int,
                         optimal: Sequence[int] = (), title: str = "") -> Path:
    """Interactive folium map: driven edges coloured by (log) count, optimal route, start and goal markers."""
    import folium

    geom = linegraph.network.geometry
    mids = np.array([g.mean(axis=0) for g in geom])
    m = folium.Map(location=[float(mids[:, 1].mean()), float(mids[:, 0].mean())], zoom_start=14,
                   tiles="cartodbpositron")
    if title:
        m.get_root().html.add_child(folium.Element(f"<h4 style='position:absolute;z-index:1000;left:60px'>"
                                                   f"{title}</h4>"))
    base = folium.FeatureGroup(name="network")
    # the whole network as ONE multi-polyline of straight end-to-end segments rounded to ~1 m (the tiles show the
    # street shapes; driven edges below keep their full geometry): a per-edge PolyLine with every vertex made
    # real-city maps several MB each
    folium.PolyLine([[(round(float(y), 5), round(float(x), 5)) for x, y in g[[0, -1]]] for g in geom],
                    color="#999999", weight=1, opacity=0.5).add_to(base)
    base.add_to(m)
    driven = folium.FeatureGroup(name="driven edges")
    cmax = np.log1p(counts.max()) if counts.max() > 0 else 1.0
    features = []
    for e in np.flatnonzero(counts > 0):
        frac = float(np.log1p(counts[e]) / cmax)
        features.append({
            "type": "Feature",
            "geometry": {"type": "LineString",
                         "coordinates": [[round(float(x), 5), round(float(y), 5)] for x, y in geom[e]]},
            "properties": {"label": f"{linegraph.network.edge_ids[e]}: driven {int(counts[e])}x",
                           "color": _colour(frac), "weight": round(2 + 4 * frac, 1)},
        })
    if features:  # one GeoJSON layer (compact) instead of one PolyLine object per edge
        folium.GeoJson({"type": "FeatureCollection", "features": features}, name="driven edges",
                       style_function=lambda f: {"color": f["properties"]["color"],
                                                 "weight": f["properties"]["weight"], "opacity": 0.9},
                       tooltip=folium.GeoJsonTooltip(fields=["label"], labels=False)).add_to(driven)
    driven.add_to(m)
    if len(optimal):
        pts = np.concatenate([geom[int(e)] for e in optimal])
        folium.PolyLine([(y, x) for x, y in pts], color="#00a000", weight=3, dash_array="6 6",
                        tooltip="optimal route").add_to(folium.FeatureGroup(name="optimal route").add_to(m))
    for e, label, colour in ((start, "start", "green"), (goal, "goal", "red")):
        x, y = mids[e]
        folium.Marker([float(y), float(x)], tooltip=f"{label}: {linegraph.network.edge_ids[e]}",
                      icon=folium.Icon(color=colour)).add_to(m)
    folium.LayerControl().add_to(m)
    return atomic_write_text(path, m.get_root().render())


def exploration_map_png(linegraph: LineGraph, counts: np.ndarray, path: str | Path, *, start: int, goal: int,
                        optimal: Sequence[int] = (), title: str = "") -> Path:
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
        lc = LineCollection([geom[e] for e in idx], array=np.log1p(counts[idx]), cmap="plasma",
                            linewidths=1 + 2.5 * np.log1p(counts[idx]) / np.log1p(counts.max()))
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
