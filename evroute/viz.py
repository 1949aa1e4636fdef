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


def plot_results(
    out_dir: str | Path,
    into: str | Path | None = None,
    *,
    prefix: str = "",
    html: bool = True,
    tiles: str | None = "openstreetmap",
) -> dict[str, Path]:
    """The figures of a results folder (``evroute plot OUT``): cumulative regret (mean +- 1 s.e. over the seeds
    found) and the exploration map (paper Figs. 6-9: every edge coloured by how often it was driven, summed over the
    seeds; start, goal and the first seed's regret-reference route dashed), as HTML (self-contained, needs lon/lat
    geometry) and PNG.

    Args:
        out_dir: a folder written by ``evroute run`` (``config.json`` and ``seed_*/rounds.csv``).
        into: folder for the figures (default ``out_dir``).
        prefix: prepended to the file names ``regret.png``, ``exploration.html``, ``exploration.png``.
        html: also write the HTML map.
        tiles: basemap of the HTML map (``None``: none).

    Returns:
        ``{"regret": path, "map_png": path, "map_html": path (if written), "distinct_edges": ...}`` -- the last an
        ``int``, the number of distinct edges driven.
    """
    from evroute.bandit import regret_reference_route
    from evroute.energy import VehicleProfile, elevation_potential_wh
    from evroute.errors import DataError
    from evroute.experiments import ExperimentConfig, build_problem, load_rounds
    from evroute.maps import drive_counts, exploration_map_html, exploration_map_png

    out = Path(out_dir)
    if not (out / "config.json").is_file():
        raise DataError(f"{out} is not an evroute results folder (no config.json; make one with `evroute run`)")
    cfg = ExperimentConfig.from_file(out / "config.json")
    rounds = load_rounds(out)
    seeds = sorted(int(s) for s in rounds["seed"].unique())
    target = Path(into) if into is not None else out
    route = cfg.route if cfg.start is None else f"{cfg.start}->{cfg.goal}"
    horizon = int(rounds["round"].max())
    what = f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''} x T = {horizon}"
    files: dict[str, Path] = {
        "regret": plot_regret({cfg.label: rounds}, target / f"{prefix}regret.png", title=f"{cfg.network} {route}")
    }
    pb = build_problem(cfg, seeds[0])
    vehicle = VehicleProfile.load(cfg.vehicle)
    pot = elevation_potential_wh(pb.linegraph.network, vehicle) if cfg.potential == "elevation" else None
    ref = regret_reference_route(pb.env, pb.route.start, pb.route.goal, cfg.regret_reference, pot)
    counts = drive_counts(pb.linegraph, rounds)
    title = f"{cfg.label}, {cfg.network} {route}: edges driven ({what})"
    kw = {"start": pb.route.start, "goal": pb.route.goal, "optimal": ref.edges, "title": title}
    files["map_png"] = exploration_map_png(pb.linegraph, counts, target / f"{prefix}exploration.png", **kw)
    if html:
        files["map_html"] = exploration_map_html(
            pb.linegraph, counts, target / f"{prefix}exploration.html", tiles=tiles, **kw
        )
    files["distinct_edges"] = int((counts > 0).sum())  # type: ignore[assignment]
    return files
