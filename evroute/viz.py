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

    if "/" in prefix or "\\" in prefix or prefix in (".", "..") or "\0" in prefix:
        from evroute.errors import ParameterError

        raise ParameterError(
            f"--prefix must be a file-name prefix without a folder (use --into for the folder), got {prefix!r}"
        )
    out = Path(out_dir)
    if not (out / "config.json").is_file():
        raise DataError(f"{out} is not an evroute results folder (no config.json; make one with `evroute run`)")
    cfg = ExperimentConfig.from_file(out / "config.json")
    rounds = usable_rounds(load_rounds(out), out)
    seeds = sorted(int(s) for s in rounds["seed"].unique())
    target = Path(into) if into is not None else out
    route = cfg.route if cfg.start is None else f"{cfg.start}->{cfg.goal}"
    horizon = int(rounds["round"].max())
    what = f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''} x T = {horizon}"
    from evroute.io import file_lock

    target.mkdir(parents=True, exist_ok=True)
    # two plots into the same files run one after the other: the figures of one folder come from one run
    with file_lock(target / f"{prefix}regret.png", what=f"figures {target / prefix}*"):
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


def usable_rounds(rounds: pd.DataFrame, out: str | Path) -> pd.DataFrame:
    """The rows of a results folder's ``seed_*/rounds.csv`` a plot can trust; the others are dropped with one
    :class:`~evroute.errors.DataWarning` per seed file (a run killed mid-write, a hand-edited or corrupted file).

    A row is kept when its ``round`` is the next integer of its seed (1, 2, ...), ``regret_wh`` and
    ``cumulative_regret_wh`` are finite numbers and the cumulative regret is the previous row's plus this round's
    regret (relative tolerance ``1e-6``: the CSV keeps 17 significant digits), and ``route`` is text.  Raises
    :class:`~evroute.errors.DataError` when no row is left.
    """
    import warnings

    import pandas as pd

    from evroute.errors import DataError, DataWarning

    need = ("round", "route", "regret_wh", "cumulative_regret_wh")
    missing = [c for c in need if c not in rounds.columns]
    if missing:
        raise DataError(f"{out}: rounds.csv lacks column(s) {', '.join(missing)}")
    keep = []
    for seed, df in rounds.groupby("seed", sort=True):
        rnd = pd.to_numeric(df["round"], errors="coerce").to_numpy(dtype=np.float64)
        reg = pd.to_numeric(df["regret_wh"], errors="coerce").to_numpy(dtype=np.float64)
        cum = pd.to_numeric(df["cumulative_regret_wh"], errors="coerce").to_numpy(dtype=np.float64)
        ok = np.zeros(len(df), dtype=bool)
        last_round, last_cum = 0, 0.0
        for i in range(len(df)):
            if not (rnd[i] == last_round + 1 and np.isfinite(reg[i]) and np.isfinite(cum[i])):
                continue
            if not np.isclose(cum[i], last_cum + reg[i], rtol=1e-6, atol=1e-9 * max(1.0, abs(last_cum))):
                continue
            if not isinstance(df["route"].iloc[i], str):
                continue
            ok[i] = True
            last_round, last_cum = last_round + 1, float(cum[i])
        if not ok.all():
            warnings.warn(
                DataWarning(
                    f"{Path(out) / f'seed_{seed}' / 'rounds.csv'}: {int((~ok).sum())} of {len(df)} rows dropped "
                    "(not the next round, a non-finite regret, a cumulative regret that is not the running sum, "
                    "or no route)"
                ),
                stacklevel=2,
            )
        keep.append(df[ok])
    result = pd.concat(keep) if keep else rounds.iloc[:0]
    if result.empty:
        raise DataError(f"{out}: no usable round in seed_*/rounds.csv")
    result = result.copy()
    result["round"] = result["round"].astype(np.int64)
    result["cumulative_regret_wh"] = result["cumulative_regret_wh"].astype(np.float64)
    return result
