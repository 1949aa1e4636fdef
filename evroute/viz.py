"""Plots of bandit results (matplotlib) and route maps (folium, GeoJSON)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from evroute.io import atomic_write_bytes

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from evroute.linegraph import LineGraph


def regret_curves(rounds: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and standard error over seeds of the cumulative regret: ``(rounds, mean, se)``, each ``(n_rounds,)``.

    The s.e. follows :mod:`evroute.stats` (NaN where fewer than two seeds reached the round: no band is drawn).
    """
    from evroute.stats import mean_se_along

    piv = rounds.pivot_table(index="round", columns="seed", values="cumulative_regret_wh")
    mean, se, _ = mean_se_along(piv.to_numpy(), axis=1)
    return piv.index.to_numpy(), mean, se


def plot_regret(results: Mapping[str, pd.DataFrame], path: str | Path, *, title: str = "") -> Path:
    """Cumulative regret (mean +- 1 s.e. over seeds) per method, saved as PNG at ``path``."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, df in results.items():
        t, mean, se = regret_curves(df)
        ax.plot(t, mean, label=label)
        ax.fill_between(t, mean - se, mean + se, alpha=0.2)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret (Wh)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def routes_geodataframe(linegraph: LineGraph, routes: Mapping[str, np.ndarray], **columns: Mapping[str, float]):
    """One LineString row per named route (edge-index arrays) in EPSG:4326, with extra per-route columns."""
    import geopandas as gpd
    from shapely.geometry import LineString

    geoms, names = [], []
    for name, edges in routes.items():
        pts = np.concatenate([linegraph.network.geometry[int(e)] for e in edges])
        geoms.append(LineString(pts))
        names.append(name)
    data: dict[str, Sequence[object]] = {"route": names}
    for col, values in columns.items():
        data[col] = [values[n] for n in names]
    return gpd.GeoDataFrame(data, geometry=geoms, crs="EPSG:4326")
