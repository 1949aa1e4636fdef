"""Latency of the risk-aware route and the reachable area on a real network (issue 22 items 4 and 5).

    EVROUTE_DATA=/work/shared/data python scripts/driver_latency.py --network luxembourg --queries 20

For each model (the BI physics prior; BI after 2000 noisy observations of random edges; the exact GP, low-rank
with local graph solves as ``evroute route --model`` serves it, after 500), ``--queries`` random start/goal
pairs: the risk-aware route with the budget set to the least-mean route's mean plus ``z`` times a random 0.8-1.2
of its sd (so the constraint binds on about half the queries), and one reachable-area query (2 kWh) per start.
Prints per-query wall times (median, max), the routes the search listed and how many answers are certified.
Model building is not timed (done once when a model is loaded).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evroute.driver.answers import BatteryState
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import PathEnumerator, potential_h
from evroute.driver.reach import reachable
from evroute.driver.risk import risk_aware_route
from evroute.experiments.runner import load_linegraph
from evroute.models.store import prior_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--network", default="luxembourg")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    lg = load_linegraph(a.network)
    h0 = potential_h(lg.network)
    rng = np.random.default_rng(a.seed)
    m = prior_model("bi", lg)
    models = {"bi-prior": prior_model("bi", lg)}
    e = rng.integers(0, lg.n_nodes, 2000)
    m.update(e, m.posterior().mean[e] + rng.normal(0, np.sqrt(m.noise_var[0]), len(e)))
    models["bi-2000obs"] = m
    gp = prior_model("gp-exact", lg, method="lowrank", graph_solver="local", learn_hyper=False, refresh_every=1)
    e = rng.integers(0, lg.n_nodes, 500)
    gp.update(e, gp.posterior().mean[e] + rng.normal(0, np.sqrt(gp.noise_var), len(e)))
    models["gp-exact-500obs"] = gp
    print(f"{lg.network.name}: {lg.n_nodes} edges, {lg.n_arcs} turns; {a.queries} queries per model")
    for name, model in models.items():
        b = RouteBelief(model)
        t_risk, t_reach, listed, cert, feas = [], [], [], 0, 0
        for _ in range(a.queries):
            s, g = (int(x) for x in rng.choice(lg.n_nodes, 2, replace=False))
            mean0, first = next(PathEnumerator(lg, b.mean, h0).paths(s, g))
            sd0 = float(np.sqrt(b.route_moments(first)[1]))
            budget = mean0 + 1.645 * sd0 * rng.uniform(0.8, 1.2)
            bat = BatteryState(1e5, 0.5, 0.5 - budget / 1e5)
            t0 = time.perf_counter()
            r = risk_aware_route(lg, b, s, g, bat, 0.05, h0=h0, max_paths=2000)
            t_risk.append(time.perf_counter() - t0)
            listed.append(r.paths)
            cert += r.certified
            feas += r.feasible
            t0 = time.perf_counter()
            reachable(lg, b, s, BatteryState(1e5, 0.5, 0.5 - 2000 / 1e5), 0.05, h0=h0)
            t_reach.append(time.perf_counter() - t0)
        print(
            f"{name}: risk-aware route median {np.median(t_risk):.3f} s, max {np.max(t_risk):.3f} s "
            f"(routes listed median {int(np.median(listed))}, max {max(listed)}; certified {cert}/{a.queries}, "
            f"feasible {feas}/{a.queries}); "
            f"reach median {np.median(t_reach):.3f} s, max {np.max(t_reach):.3f} s"
        )


if __name__ == "__main__":
    main()
