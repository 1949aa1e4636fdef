"""How much the replay's truth moves with the time of day: per-bin statistics of a recorded SUMO day.

For each time-of-day bin of ``sumo-replay`` with ``bin_hours`` (:class:`evroute.environments.sumo_replay`): the
edges with a mean of their own in that bin (at least ``bin_min_samples`` traversals; the others use the whole
day's mean), the RMS and mean of (bin mean - whole-day mean) over those edges next to the RMS that sampling
alone would give (bin means of traversals that do not depend on the time of day), and the true energy of the
named route's perfect-knowledge rectified route in that bin.  Prints a Markdown table.

    nice -n 10 .venv/bin/python -m studies.sumo.sumo_tod_profile --network monaco --route A --bin-hours 1
"""

from __future__ import annotations

import argparse

import numpy as np

from evroute.bandit import regret_reference_route
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.experiments import ExperimentConfig
from evroute.experiments.runner import build_problem


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="monaco")
    ap.add_argument("--route", default="A")
    ap.add_argument("--bin-hours", type=float, default=1.0)
    args = ap.parse_args()
    cfg = ExperimentConfig(
        network=args.network,
        route=args.route,
        env="sumo-replay",
        environment={"bin_hours": args.bin_hours, "rounds_per_day": 24},
    )
    problem = build_problem(cfg, 0)
    env = problem.env
    pot = elevation_potential_wh(problem.linegraph.network, VehicleProfile.load(cfg.vehicle))
    pooled, own = env.day_mean_wh, env.own_cells
    print(
        f"{args.network} {args.route}: {env.n_edges} edges, {env.config.n_bins} bins of {args.bin_hours:g} h, "
        f"{env.fallback_cells} of {env.bin_means.size} (bin, edge) cells use the whole day's mean\n"
    )
    print(
        "| bin | own-mean edges | RMS(bin - day) Wh | same from sampling alone | mean(bin - day) Wh | "
        "rectified route (Wh) |"
    )
    print("|---|---|---|---|---|---|")
    h0 = env.config.window[0]
    for b in range(env.config.n_bins):
        env.advance(b + 1)  # rounds_per_day = bins: round b + 1 is in bin b
        d = env.bin_means[b, own[b]] - pooled[own[b]]
        rect = regret_reference_route(env, problem.route.start, problem.route.goal, "rectified", pot)
        rms = float(np.sqrt(np.mean(d**2))) if len(d) else float("nan")
        # if an edge's traversals did not depend on the time of day, its bin mean of n draws out of N would
        # scatter around the day mean with variance var (1/n - 1/N)
        n, n_day = env.cell_counts[b, own[b]], env.counts[own[b]]
        noise = float(np.sqrt(np.mean(env.edge_var_wh2[own[b]] * (1 / n - 1 / n_day)))) if len(d) else float("nan")
        mean = float(d.mean()) if len(d) else float("nan")
        lo = h0 + b * args.bin_hours
        print(
            f"| {lo:g}-{lo + args.bin_hours:g} h | {int(own[b].sum())} | {rms:.1f} | {noise:.1f} | {mean:+.1f} | "
            f"{rect.cost:.1f} |"
        )


if __name__ == "__main__":
    main()
