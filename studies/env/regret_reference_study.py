"""How often negative-energy cycles occur, and what rectification costs, on our networks.

Usage::

    python -m studies.env.regret_reference_study --markdown docs/regret_study.md
    python -m studies.env.regret_reference_study --networks synthetic:2000:0 --seeds 3 --horizon 100

For each network, route A and environment seed: the share of edges with negative true expected energy,
raw and after subtracting the elevation potential; whether a negative cycle is reachable from the start
edge (so that the exact reference needs the integer program); the true energy of the exact route (Johnson,
when defined) and of the route the rectified oracle picks with perfect knowledge, with and without the
potential; and the mean per-round regret of BI-TS over the last quarter of ``--horizon`` rounds against the
``auto`` reference, with ``potential=none`` (the paper's Algorithm 2) and ``potential=elevation``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from evroute.bandit import RoutingBandit, regret_reference_route
from evroute.energy import elevation_potential_wh
from evroute.environments import PaperEnvironment
from evroute.experiments.runner import load_linegraph
from evroute.io import atomic_write_text
from evroute.models import BayesianEdgeModel
from evroute.oracle import has_negative_cycle, optimal_route, rectified_reference_route
from evroute.policies import ThompsonSampling
from evroute.routes import resolve_route
from studies.common.bench import available_networks


def study(network: str, seed: int, horizon: int) -> dict[str, object]:
    lg = load_linegraph(network)
    route = resolve_route(lg, network, "A")
    env = PaperEnvironment.sample(lg, seed=seed)
    pot = elevation_potential_wh(lg.network)
    f = env.true_mean_wh
    neg_cycle = has_negative_cycle(lg, f, route.start)
    exact = None if neg_cycle else optimal_route(lg, f, route.start, route.goal).cost
    row: dict[str, object] = {
        "network": network,
        "seed": seed,
        "neg_raw": float(np.mean(f < 0)),
        "neg_reduced": float(np.mean(f - pot < 0)),
        "neg_cycle": neg_cycle,
        "exact_wh": exact,
        "rect_none_wh": rectified_reference_route(lg, f, env.noise_var, route.start, route.goal).cost,
        "rect_elev_wh": rectified_reference_route(lg, f, env.noise_var, route.start, route.goal, pot).cost,
    }
    for name, p in (("none", None), ("elevation", pot)):
        ref = regret_reference_route(env, route.start, route.goal, "auto", p)
        bandit = RoutingBandit(
            env,
            BayesianEdgeModel(env.prior_mean_wh, env.prior_var, env.noise_var),
            ThompsonSampling(),
            route.start,
            route.goal,
            seed=seed,
            potential_wh=p,
            optimal=ref,
        )
        regret = np.array([bandit.step().regret_wh for _ in range(horizon)])
        row[f"late_regret_{name}"] = float(regret[-max(1, horizon // 4) :].mean())
        row[f"ref_{name}"] = ref.method
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default="synthetic:2000:0,monaco,luxembourg")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--horizon", type=int, default=300)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    rows = []
    for net in available_networks(args.networks):
        for seed in range(args.seeds):
            rows.append(study(net, seed, args.horizon))
            print(rows[-1], flush=True)

    def fmt(v: object) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1 else f"{v:.1f}"
        return str(v)

    cols = [
        "network",
        "seed",
        "neg_raw",
        "neg_reduced",
        "neg_cycle",
        "exact_wh",
        "rect_none_wh",
        "rect_elev_wh",
        "ref_none",
        "late_regret_none",
        "ref_elevation",
        "late_regret_elevation",
    ]
    cmd = "python -m studies.env.regret_reference_study " + " ".join(argv if argv is not None else sys.argv[1:])
    text = (
        f"Command: `{cmd}`\n\nRoute A, BI-TS, T = {args.horizon}; "
        "late regret = mean regret per round (Wh) over the last quarter.\n\n"
        "| "
        + " | ".join(cols)
        + " |\n|"
        + "---|" * len(cols)
        + "\n"
        + "".join("| " + " | ".join(fmt(r[c]) for c in cols) + " |\n" for r in rows)
    )
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
