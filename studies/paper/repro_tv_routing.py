"""Time-varying routing study (issue 5, item 5): time-aware GP-TS with BOLT pruning vs static GP-TS and BI-TS.

Every edge's expected energy drifts (``env="drifting"``, ``environment={"drift": "daily", ...}``,
:mod:`evroute.environments.drifting`) and regret is measured per round against the current optimal route. Methods:
``GP-TV-TS`` (model ``gp-tv``: exact GP with a Matérn-3/2 time kernel, BOLT cap ``n*`` and integrated-W2 pruning),
``GP-TS`` (static SVGP, model ``gp``) and ``BI-TS`` (static independent edges). Resumable: results go to
RUNS/<network>-<route>/<METHOD>/ through the experiment runner (re-run the same command to continue). Writes
docs/results/archive/tv_routing_generated.md (table with the command) and docs/results/archive/tv_routing.png
(regret per round and per-round model latency vs round).

    OMP_NUM_THREADS=1 .venv/bin/python -m studies.paper.repro_tv_routing
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from evroute.experiments.config import ExperimentConfig
from evroute.experiments.runner import load_rounds, run_experiment
from evroute.stats import format_mean_se

ROOT = Path(__file__).resolve().parents[2]
METHODS = {"GP-TV-TS": "gp-tv", "GP-TS": "gp", "BI-TS": "bi"}


def method_config(network: str, route: str, model: str, args: argparse.Namespace) -> ExperimentConfig:
    """Experiment config of one method on one route."""
    env = {"drift": "daily", "drift_period": args.period}
    params = {"time_lengthscale": args.time_lengthscale} if model == "gp-tv" else {}
    return ExperimentConfig(
        network=network,
        route=route,
        model=model,
        policy="ts",
        model_params=params,
        env="drifting",
        environment=env,
        horizon=args.horizon,
        seeds=tuple(args.seeds),
    )


def window_means(x: np.ndarray, width: int) -> np.ndarray:
    """Means of consecutive ``width``-round windows of ``(T,)`` ``x`` -> ``(T // width,)``."""
    n = len(x) // width
    return x[: n * width].reshape(n, width).mean(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["synthetic:300:0:A"], help="NETWORK:ROUTE items")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--period", type=float, default=100.0, help="rounds per daily cycle")
    ap.add_argument("--time-lengthscale", type=float, default=40.0, help="gp-tv temporal lengthscale (rounds)")
    ap.add_argument("--window", type=int, default=50, help="rounds per table column")
    ap.add_argument("--runs", default="results/tv_routing")
    ap.add_argument("--out", default=str(ROOT / "docs" / "results"))
    args = ap.parse_args()
    command = "OMP_NUM_THREADS=1 .venv/bin/python -m studies.paper.repro_tv_routing " + shlex.join(sys.argv[1:])

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = [
        "# Time-varying routing (generated)",
        "",
        f"Command: `{command}`",
        "",
        f"Drift: daily cycle of {args.period:g} rounds + slow drift; T = {args.horizon}, seeds {args.seeds}. "
        f"Mean regret per round (Wh) in windows of {args.window} rounds (mean over seeds), and mean model "
        "latency per round (posterior + update, ms) in the first and last window.",
        "",
    ]
    fig, axes = plt.subplots(2, len(args.routes), figsize=(6 * len(args.routes), 7), squeeze=False)
    for col, item in enumerate(args.routes):
        network, route = item.rsplit(":", 1)
        nw = args.horizon // args.window
        lines += [
            f"## {network} route {route}",
            "",
            "| method | "
            + " | ".join(f"{i * args.window + 1}-{(i + 1) * args.window}" for i in range(nw))
            + " | cumulative | ms first | ms last |",
            "|---" * (nw + 4) + "|",
        ]
        for name in args.methods:
            out = Path(args.runs) / f"{network.replace(':', '_')}-{route}" / name
            summary = run_experiment(method_config(network, route, METHODS[name], args), out, progress=False)
            df = load_rounds(out)
            reg = df.pivot(index="round", columns="seed", values="regret_wh").to_numpy()
            lat = (
                df.assign(ms=df.posterior_ms + df.update_ms)
                .pivot(index="round", columns="seed", values="ms")
                .to_numpy()
            )
            mean_reg, mean_lat = reg.mean(axis=1), lat.mean(axis=1)
            w = window_means(mean_reg, args.window)
            wl = window_means(mean_lat, args.window)
            lines.append(
                f"| {name} | "
                + " | ".join(f"{v:.2f}" for v in w)
                + f" | {format_mean_se(summary['mean_final_regret_wh'], summary['se_final_regret_wh'], 0)}"
                + f" | {wl[0]:.1f} | {wl[-1]:.1f} |"
            )
            rounds = np.arange(1, len(mean_reg) + 1)
            smooth = np.convolve(mean_reg, np.ones(10) / 10, mode="same")
            axes[0, col].plot(rounds, smooth, label=name)
            axes[1, col].plot(rounds, np.convolve(mean_lat, np.ones(10) / 10, mode="same"), label=name)
        lines.append("")
        axes[0, col].set(title=f"{network} {route}: regret per round (10-round mean)", xlabel="round", ylabel="Wh")
        axes[1, col].set(
            title="model latency per round (posterior + update)", xlabel="round", ylabel="ms", yscale="log"
        )
        axes[0, col].legend()
    fig.tight_layout()
    out_dir = Path(args.out)
    fig.savefig(out_dir / "tv_routing.png", dpi=110)
    (out_dir / "tv_routing_generated.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
