"""Summaries of saved runs: the Table 3 reproduction (average regret +- s.e., normalised overall score) and figures.

``average regret`` of a run = mean of its instantaneous regrets over all queries (initial design included);
the table gives its mean +- standard error over replications (:mod:`evroute.stats`: ddof = 1, none for one
replication).  The overall score follows the paper's Fig. 3: per problem the best algorithm scores 0 and the worst
1 (linear in between), averaged over problems (+- s.e. over problems).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from evroute.bo.timevarying.policies import ALGORITHMS
from evroute.bo.timevarying.problems import PROBLEM_LABELS
from evroute.stats import format_mean_se, standard_error

__all__ = ["PAPER_TABLE3", "load_runs", "normalised_scores", "ranking_comparison", "summary_table", "write_figures"]

ALGO_LABELS = {
    "gp-ucb": "GP-UCB",
    "et-gp-ucb": "ET-GP-UCB",
    "r-gp-ucb": "R-GP-UCB",
    "tv-gp-ucb": "TV-GP-UCB",
    "abo": "ABO",
    "w-dbo": "W-DBO",
    "bolt": "BOLT",
    "bolt-exact": "BOLT (exact Eq. 12)",
}
#: Table 3 of the paper (mean average regret), columns in :data:`ALGORITHMS` order.
PAPER_TABLE3: dict[str, tuple[float, ...]] = {
    "shekel": (2.51, 2.57, 2.33, 2.63, 2.25, 2.06, 1.83),
    "hartmann3": (1.45, 1.45, 0.42, 1.70, 0.54, 0.47, 0.30),
    "ackley": (4.27, 4.39, 4.28, 5.31, 4.76, 3.42, 2.92),
    "griewank": (0.59, 0.61, 0.61, 0.60, 0.69, 0.57, 0.54),
    "eggholder": (516, 521, 298, 573, 546, 275, 262),
    "schwefel": (590, 588, 1024, 543, 793, 615, 524),
    "hartmann6": (1.66, 1.67, 1.44, 1.72, 1.32, 0.69, 0.74),
    "powell": (3669, 2957, 2317, 3022, 3491, 1363, 1235),
    "temperature": (1.51, 1.20, 0.96, 1.64, 1.68, 1.13, 0.99),
    "wlan": (20.2, 21.3, 10.4, 35.2, 17.3, 8.9, 8.1),
}


def load_runs(out_dir: str | Path) -> tuple[pd.DataFrame, dict[tuple[str, str, int], dict[str, np.ndarray]]]:
    """Per-run summary rows (problem, algorithm, seed, avg_regret, iterations, final/mean data-set size) and logs."""
    rows, logs = [], {}
    for path in sorted(Path(out_dir).glob("runs/*/*/seed*.npz")):
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            log = {k: data[k] for k in ("t", "regret", "dataset_size", "compute")}
        key = (meta["problem"], meta["algorithm"], int(meta["seed"]))
        logs[key] = log
        rows.append(
            {
                "problem": key[0],
                "algorithm": key[1],
                "seed": key[2],
                "avg_regret": float(np.mean(log["regret"])),
                "iterations": int(log["t"].size),
                "final_size": int(log["dataset_size"][-1]),
                "compute_s": float(np.sum(log["compute"])),
            }
        )
    return pd.DataFrame(rows), logs


def _order(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    probs = [p for p in PROBLEM_LABELS if p in set(df["problem"])]
    algs = [a for a in ALGORITHMS if a in set(df["algorithm"])]
    return probs, algs


def normalised_scores(means: pd.DataFrame) -> pd.DataFrame:
    """Per-problem min-max normalised mean regrets (problems x algorithms, best 0, worst 1)."""
    lo, hi = means.min(axis=1), means.max(axis=1)
    return means.sub(lo, axis=0).div((hi - lo).replace(0.0, 1.0), axis=0)


def summary_table(df: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """Markdown table (mean +- s.e., best in bold, overall normalised score) and the problems x algorithms means."""
    probs, algs = _order(df)
    g = df.groupby(["problem", "algorithm"])["avg_regret"]
    means = g.mean().unstack()[algs].loc[probs]
    ses = g.agg(standard_error).unstack()[algs].loc[probs]  # NaN for one replication (evroute.stats)
    counts = g.count().unstack()[algs].loc[probs]

    def fmt(v: float) -> str:
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"

    head = "| Problem | " + " | ".join(ALGO_LABELS[a] for a in algs) + " |"
    lines = [head, "|" + "---|" * (len(algs) + 1)]
    for p in probs:
        best = means.loc[p].idxmin()
        cells = []
        for a in algs:
            cell = f"{fmt(means.loc[p, a])} ± {fmt(ses.loc[p, a])}" if counts.loc[p, a] > 1 else fmt(means.loc[p, a])
            cells.append(f"**{cell}**" if a == best else cell)
        lines.append(f"| {PROBLEM_LABELS[p]} | " + " | ".join(cells) + " |")
    norm = normalised_scores(means)
    overall_m, overall_s = norm.mean(axis=0), norm.agg(standard_error, axis=0)
    best = overall_m.idxmin()
    cells = [format_mean_se(overall_m[a], overall_s[a], 2, " ± ") for a in algs]
    cells = [f"**{c}**" if a == best else c for a, c in zip(algs, cells, strict=True)]
    lines.append("| Overall (normalised) | " + " | ".join(cells) + " |")
    return "\n".join(lines), means


def ranking_comparison(means: pd.DataFrame) -> str:
    """Markdown: per problem our best / BOLT's rank vs the paper's best / BOLT's rank."""
    algs = list(means.columns)
    lines = ["| Problem | best (ours) | BOLT rank (ours) | best (paper) | BOLT rank (paper) |", "|---|---|---|---|---|"]
    ours_best = paper_best = 0
    for p in means.index:
        ours = means.loc[p].rank(method="min")
        paper = pd.Series([PAPER_TABLE3[p][list(ALGORITHMS).index(a)] for a in algs], index=algs).rank(method="min")
        ob, pb = ours.idxmin(), paper.idxmin()
        ours_best += int(ours.get("bolt", 99) == 1)
        paper_best += int(paper.get("bolt", 99) == 1)
        lines.append(
            f"| {PROBLEM_LABELS[p]} | {ALGO_LABELS[ob]} | {int(ours.get('bolt', 0))} | {ALGO_LABELS[pb]} | "
            f"{int(paper.get('bolt', 0))} |"
        )
    lines.append(f"| **BOLT best on** | | **{ours_best} / {len(means)}** | | **{paper_best} / {len(means)}** |")
    return "\n".join(lines)


def write_figures(
    logs: dict[tuple[str, str, int], dict[str, np.ndarray]], out: str | Path, horizon: float
) -> list[Path]:
    """Regret and data-set size over time (one panel per problem, mean over replications, 30 time bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = [p for p in PROBLEM_LABELS if any(k[0] == p for k in logs)]
    algs = [a for a in ALGORITHMS if any(k[1] == a for k in logs)]
    edges = np.linspace(0.0, horizon, 31)
    centres = 0.5 * (edges[1:] + edges[:-1])
    paths = []
    for field, ylabel, fname, logy in (
        ("regret", "instantaneous regret (bin mean)", "tvbo_regret.png", False),
        ("dataset_size", "data-set size |D|", "tvbo_dataset_size.png", True),
    ):
        fig, axes = plt.subplots(2, 5, figsize=(20, 7), squeeze=False)
        for ax, p in zip(axes.ravel(), probs, strict=False):
            for a in algs:
                curves = []
                for (pp, aa, _), log in logs.items():
                    if pp != p or aa != a:
                        continue
                    idx = np.digitize(log["t"], edges) - 1
                    v = np.array([np.mean(log[field][idx == b]) if np.any(idx == b) else np.nan for b in range(30)])
                    curves.append(v)
                if curves:
                    arr = np.array(curves)
                    seen = np.any(np.isfinite(arr), axis=0)  # bins after a run's last query stay empty
                    mean = np.full(arr.shape[1], np.nan)
                    mean[seen] = np.nanmean(arr[:, seen], axis=0)
                    ax.plot(centres, mean, label=ALGO_LABELS[a])
            ax.set_title(PROBLEM_LABELS[p])
            ax.set_xlabel("time (s)")
            if logy:
                ax.set_yscale("log")
        axes[0, 0].set_ylabel(ylabel)
        axes[1, 0].set_ylabel(ylabel)
        axes[0, 0].legend(fontsize=8)
        fig.tight_layout()
        path = Path(out) / fname
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(path)
    return paths
