"""Reports of the paper-reproduction studies: command-line options, config construction, the sweep, aggregation,
tables and figures shared by ``studies/paper/`` (``repro_fig2.py``, ``repro_fig3.py``, ``repro_lengthscale.py``,
``repro_maps.py``, ``report_fig2_exact.py``) and ``studies/paper/summarise_runs.py``.  Statistics (mean, s.e.,
paired differences) come from :mod:`evroute.stats` and follow its conventions (a NaN s.e. for one seed).

Raw runs live under ``RUNS/<network>-<route>/<NAME>/seed_<s>/`` (ignored ``results/`` folder by default).  The
folder of a run depends only on its route and its *name*, and a name always denotes the same configuration, so
the scripts share runs: Fig. 3's GP-UCB and GP-BUCB (xi = 1, omega = 1) are Fig. 2's runs, and the lengthscale
study's l = 1 runs are Fig. 2's too (the environment's default lengthscale is 1).  The sweep is resumable: re-run
the same command and finished seeds are skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evroute.stats import format_mean_se, mean_se, mean_se_along, paired_differences

#: Fig. 2 methods in the paper's order (model, policy).
FIG2_METHODS = ("gp-ucb", "gp-bucb", "gp-ts", "bi-ucb", "bi-bucb", "bi-ts")
#: Suffix of run names that use the elevation potential (our improvement; the paper's Algorithm 2 has none).
ELEV = "+pot"


def command_line() -> str:
    """The exact command that is running (for the result files)."""
    exe = sys.executable
    try:
        exe = str(Path(exe).relative_to(Path.cwd()))
    except ValueError:
        pass
    return " ".join(shlex.quote(a) for a in [exe, *sys.argv])


def add_common_args(ap: argparse.ArgumentParser, *, runs: str, seeds: int = 5, horizon: int = 500) -> None:
    """Options every sweep script takes (defaults: the paper's protocol)."""
    ap.add_argument("--seeds", type=int, default=seeds, help="seeds 0..N-1 (paper: 5)")
    ap.add_argument("--horizon", type=int, default=horizon, help="rounds T (paper: 500)")
    ap.add_argument(
        "--model-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="GP model parameter (JSON value), e.g. n_inducing=250 (paper: M = 1000)",
    )
    ap.add_argument(
        "--potential",
        default="none",
        choices=["none", "elevation"],
        help="index rectification of the main runs: none = the paper's Algorithm 2 (default)",
    )
    ap.add_argument(
        "--env",
        default="paper",
        choices=["paper", "consistent"],
        help="environment: paper = the reference paper's GP environment (default, the reproductions); "
        "consistent = its physically consistent version (exact optimum)",
    )
    ap.add_argument("--executor", default="process", choices=["serial", "process", "ray"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--gp-model",
        default="gp",
        choices=["gp", "gp-exact"],
        help="edge model of the GP methods: gp = the paper's SVGP (default), gp-exact = exact GP posterior "
        "(runs named GP-EXACT-*)",
    )
    ap.add_argument("--runs", default=runs, help="raw results folder (not committed)")
    ap.add_argument("--docs", default="docs/results", help="figures and tables folder")
    ap.add_argument("--tag", default="", help="suffix of the figure/table names")
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing; report the seeds already finished (partial results are marked)",
    )


def gp_params(args: argparse.Namespace) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.model_param)}


def parse_routes(items: Sequence[str]) -> list[tuple[str, str]]:
    """``NETWORK:ROUTE`` items -> ``(network, route)`` (the network may contain colons, e.g. synthetic:2000:0)."""
    return [tuple(item.rsplit(":", 1)) for item in items]  # type: ignore[misc]


def resolve_method(method: str, args: argparse.Namespace) -> str:
    """``gp-<policy>`` -> ``gp-exact-<policy>`` under ``--gp-model gp-exact`` (other methods unchanged)."""
    model, policy = method.lower().rsplit("-", 1)
    if model == "gp" and getattr(args, "gp_model", "gp") != "gp":
        return f"{args.gp_model}-{policy}"
    return method.lower()


def route_key(network: str, route: str) -> str:
    return f"{network.replace(':', '_')}-{route}"


def method_config(
    network: str,
    route: str,
    method: str,
    args: argparse.Namespace,
    *,
    policy_params: Mapping[str, float] | None = None,
    environment: Mapping[str, Any] | None = None,
    potential: str | None = None,
) -> Any:
    """The :class:`ExperimentConfig` of ``method`` (``gp-ts``, ``bi-bucb``, ...) under the script's settings.

    GP model parameters (``--model-param``) only go to GP methods; ``environment`` is left empty for the
    paper's defaults, so that runs with default settings are shared between scripts.
    """
    from evroute.experiments import ExperimentConfig

    model, policy = method.lower().rsplit("-", 1)
    return ExperimentConfig(
        network=network,
        route=route,
        model=model,
        policy=policy,
        env=args.env,
        policy_params=dict(policy_params or {}),
        model_params=gp_params(args) if model.startswith("gp") else {},
        environment=dict(environment or {}),
        horizon=args.horizon,
        seeds=tuple(range(args.seeds)),
        potential=potential or args.potential,
    )


def run_grid(configs: Mapping[str, Any], args: argparse.Namespace) -> None:
    """Run (or resume) ``RUNS/<key>`` for every ``key -> config`` (keys are ``<route key>/<name>``)."""
    if args.report_only:
        return
    from evroute.experiments.sweep import run_sweep

    run_sweep(configs, Path(args.runs), executor=args.executor, workers=args.workers, progress=False)


def seed_finals(run_dir: Path) -> dict[int, float]:
    """Final cumulative regret (Wh) of every finished seed of a run folder."""
    out = {}
    for p in sorted(run_dir.glob("seed_*/summary.json")):
        s = json.loads(p.read_text())
        out[int(s["seed"])] = float(s["final_cumulative_regret_wh"])
    return out


def seed_summary(run_dir: Path, seed: int) -> dict[str, Any]:
    p = run_dir / f"seed_{seed}" / "summary.json"
    return json.loads(p.read_text()) if p.exists() else {}


def finished_frames(run_root: Path, names: Sequence[str], seeds: int) -> dict[str, Any]:
    """``name -> rounds`` of the finished seeds (``< seeds``) of each run that has any."""
    import pandas as pd

    from evroute.experiments import load_rounds

    frames = {}
    for name in names:
        d = run_root / name
        done = [s for s in seed_finals(d) if s < seeds]
        if not done:
            continue
        df = load_rounds(d)
        frames[name] = df[df["seed"].isin(done)].reset_index(drop=True) if isinstance(df, pd.DataFrame) else df
    return frames


def optimal_methods(run_dir: Path) -> set[str]:
    return {json.loads(p.read_text()).get("optimal_method", "?") for p in run_dir.glob("seed_*/summary.json")}


def reference_label(run_dirs: Sequence[Path]) -> str:
    """What the regret of these runs is measured against, for axis labels: the exact optimum or not."""
    from evroute.oracle import EXACT_METHODS

    meth = set().union(*(optimal_methods(d) for d in run_dirs)) - {"?"}
    if meth and meth <= EXACT_METHODS:
        return "vs the exact optimal route"
    if meth == {"rectified"}:
        return "vs the rectified reference route (not an optimum)"
    return "vs the best route known (" + ", ".join(sorted(meth)) + ")"


def fmt(m: float, se: float) -> str:
    """``"mean +- s.e."`` with one decimal (the mean alone for one seed, ``--`` for none)."""
    return format_mean_se(m, se, 1)


def regret_row(run_dir: Path, seeds: int) -> tuple[float, float, int]:
    """Mean, s.e. and number of the finished seeds (``< seeds``) of one run folder."""
    finals = [v for s, v in seed_finals(run_dir).items() if s < seeds]
    m, se = mean_se(finals)
    return m, se, len(finals)


def timing_row(run_dir: Path) -> dict[str, float]:
    """Median per-round latency (ms) of the finished seeds: update, posterior, index, oracle and total."""
    import pandas as pd

    frames = [pd.read_csv(p) for p in sorted(run_dir.glob("seed_*/rounds.csv"))]
    if not frames:
        return {}
    df = pd.concat(frames, ignore_index=True)
    cols = ["update_ms", "posterior_ms", "index_ms", "oracle_ms"]
    tot = df[cols].sum(axis=1)
    return {
        **{c: float(df[c].median()) for c in cols},
        "total_ms": float(tot.median()),
        "mean_ms": float(tot.mean()),
        "rounds": len(df),
    }


def save_fig(fig: Any, path: Path) -> Path:
    import io

    import matplotlib.pyplot as plt

    from evroute.io import atomic_write_bytes

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())


def plot_curves(
    ax: Any, frames: Mapping[str, Any], column: str = "cumulative_regret_wh", *, per_seed_constant: bool = False
) -> None:
    """Mean +- 1 s.e. over seeds of ``column`` against the round, one line per name."""
    for label, df in frames.items():
        piv = df.pivot_table(index="round", columns="seed", values=column)
        t = piv.index.to_numpy()
        y = piv.to_numpy()
        mean, se, _ = mean_se_along(y, axis=1)  # no band where fewer than two seeds (NaN s.e.)
        (line,) = ax.plot(t, mean, label=label, ls="--" if ELEV in label else "-")
        if not per_seed_constant:
            ax.fill_between(t, mean - se, mean + se, alpha=0.2, color=line.get_color())
    ax.set_xlabel("round t")
    ax.grid(alpha=0.3)


def new_axes(ncols: int = 1, width: float = 6.4) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=(width * ncols, 4.2), squeeze=False)


def write_markdown(path: Path, lines: Sequence[str]) -> None:
    from evroute.io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def settings_lines(args: argparse.Namespace) -> list[str]:
    gp = gp_params(args)
    return [
        f"Settings: {args.seeds} seeds (0..{args.seeds - 1}), T = {args.horizon}, "
        f"GP model parameters {gp or 'paper defaults (M = 1000, batch 2500, 1 step/round)'}, "
        f"potential = {args.potential!r} (`none` = the paper's Algorithm 2), executor {args.executor} "
        f"x {args.workers}."
    ]


def common_reference_finals(
    run_root: Path, names: Sequence[str], seeds: int
) -> tuple[dict[str, list[float]], dict[int, float]]:
    """Final cumulative regret of every finished seed against one reference per seed shared by all ``names``.

    Runs with different ``potential`` settings measure regret against different rectified reference routes (the
    exact best route is NP-hard to find with negative cycles), so their recorded regrets are not comparable.
    Here the reference of seed ``s`` (same environment for every method) is the cheapest route known for it:
    the lowest expected energy among the runs' reference routes and every route any of the runs drove.
    Returns ``name -> [final regret per finished seed]`` and ``seed -> reference energy (Wh)``.
    """
    import pandas as pd

    energy: dict[str, dict[int, tuple[float, int]]] = {}
    ref: dict[int, float] = {}
    for name in names:
        d = run_root / name
        for s in seed_finals(d):
            if s >= seeds:
                continue
            summ = json.loads((d / f"seed_{s}" / "summary.json").read_text())
            df = pd.read_csv(d / f"seed_{s}" / "rounds.csv", usecols=["expected_wh"])
            energy.setdefault(name, {})[s] = (float(df["expected_wh"].sum()), len(df))
            best = min(float(summ["optimal_wh"]), float(df["expected_wh"].min()))
            ref[s] = min(ref.get(s, math.inf), best)
    finals = {name: [tot - n * ref[s] for s, (tot, n) in sorted(per.items())] for name, per in energy.items()}
    return finals, ref


def per_seed_lines(run_root: Path, names: Sequence[str], seeds: int, title: str) -> list[str]:
    """Markdown table of the final cumulative regret (Wh) of every seed and the median, one row per run name.

    With the rectified regret reference a single environment whose reference route is far from its best route
    can dominate a mean (regret can be strongly negative); the per-seed values and the median show it.
    """
    import statistics

    lines = [
        f"| {title} | " + " | ".join(f"seed {s}" for s in range(seeds)) + " | median |",
        "|---|" + "---|" * (seeds + 1),
    ]
    for name in names:
        finals = {s: v for s, v in seed_finals(run_root / name).items() if s < seeds}
        if not finals:
            continue
        cells = [f"{finals[s]:.0f}" if s in finals else "--" for s in range(seeds)]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {statistics.median(finals.values()):.0f} |")
    return lines


def paired_lines(run_root: Path, pairs: Sequence[tuple[str, str]], seeds: int, title: str) -> list[str]:
    """Markdown table of paired differences ``A - B`` of final cumulative regret (Wh) over the seeds both finished.

    Seed ``s`` draws the same environment (and, with the same potential, the same regret reference) for every
    method, so the per-seed difference removes the environment-to-environment spread that dominates the s.e. of
    each method's own mean.
    """
    lines = [f"| {title}: A - B | mean +- s.e. (Wh) | seeds where A is lower |", "|---|---|---|"]
    for a, b in pairs:
        fa, fb = seed_finals(run_root / a), seed_finals(run_root / b)
        common = [s for s in sorted(set(fa) & set(fb)) if s < seeds]
        if not common:
            continue
        p = paired_differences(fa, fb, seeds=common)
        lines.append(f"| {a} - {b} | {fmt(p.mean, p.se)} | {p.k_lower} of {p.n} |")
    return lines


#: The script whose command line :func:`write_runs_summary` records (also when another script calls it).
SUMMARISE_MODULE = "studies.paper.summarise_runs"


def summarise_run_folder(folder: Path) -> tuple[str, dict[str, object], Any]:
    """``(label, table row, rounds)`` of one finished experiment folder (``config.json`` + ``seed_*``).

    The row: method, network, route, potential, seeds, T, final cumulative regret (Wh, mean +- s.e.), mean regret
    per round (Wh) in the first and last fifth of the horizon, the regret reference(s) and the median round (ms).
    """
    import numpy as np

    from evroute.experiments import load_rounds

    cfg = json.loads((folder / "config.json").read_text())
    df = load_rounds(folder)
    horizon = int(df["round"].max())
    fifth = max(1, horizon // 5)
    per_round = df.groupby("round").regret_wh.mean().to_numpy()
    final = df[df["round"] == horizon].cumulative_regret_wh.to_numpy()
    total_ms = df[["posterior_ms", "index_ms", "oracle_ms", "update_ms"]].sum(axis=1)
    method = f"{cfg['model'].upper()}-{cfg['policy'].upper()}" + ("-TURN" if cfg.get("arms") == "turn" else "")
    label = f"{method} {cfg['network']} {cfg.get('route') or ''}".strip()
    row = {
        "method": method,
        "network": cfg["network"],
        "route": cfg.get("route") or f"{cfg['start']}->{cfg['goal']}",
        "seeds": len(final),
        "T": horizon,
        "final": fmt(*mean_se(final)),
        "first": f"{per_round[:fifth].mean():.2f}",
        "last": f"{per_round[-fifth:].mean():.2f}",
        "reference": "/".join(sorted(optimal_methods(folder))),
        "potential": cfg.get("potential", "none"),
        "ms": f"{np.median(total_ms):.2f}",
    }
    return label, row, df


def write_runs_summary(folders: Sequence[Path], out: Path, title: str, argv: Sequence[str]) -> str:
    """Write ``OUT.md`` (one :func:`summarise_run_folder` row per folder) and ``OUT.png`` (regret curves).

    ``argv`` are the arguments of :data:`SUMMARISE_MODULE` that reproduce the files (recorded in the Markdown).
    Returns the Markdown text.
    """
    from evroute.io import atomic_write_text

    rows, frames = [], {}
    for f in folders:
        label, row, df = summarise_run_folder(Path(f))
        rows.append(row)
        frames[label] = df
    fig, axes = new_axes()
    ax = axes[0][0]
    plot_curves(ax, frames)
    ax.set_ylabel("cumulative regret (Wh)")
    ax.set_title(title)
    ax.legend()
    png = save_fig(fig, out.with_suffix(".png"))
    cols = ["method", "network", "route", "potential", "seeds", "T", "final", "first", "last", "reference", "ms"]
    head = (
        "| method | network | route | potential | seeds | T | final cumulative regret (Wh, mean +- s.e.) "
        "| regret/round, first fifth | regret/round, last fifth | regret reference | median round (ms) |\n"
        "|" + "---|" * len(cols) + "\n"
    )
    text = (
        f"Command: `python -m {SUMMARISE_MODULE} {' '.join(argv)}`\n\n"
        + head
        + "".join("| " + " | ".join(str(r[c]) for c in cols) + " |\n" for r in rows)
        + f"\n![cumulative regret]({png.name})\n"
    )
    atomic_write_text(out.with_suffix(".md"), text)
    return text
