"""Latency of the risk-aware route and the reachable area on a real network (issue 22 items 4 and 5).

    EVROUTE_DATA=/work/shared/data python -m studies.driver.driver_latency --network luxembourg --queries 20

For each model (the BI physics prior; BI after 2000 noisy observations of random edges; the exact GP, low-rank
with local graph solves as ``evroute route --model`` serves it, after 500), ``--queries`` random start/goal
pairs, each with two budgets for the risk-aware route: ``near`` = the least-mean route's mean plus ``z`` times a
random 0.8-1.2 of its sd (the least-mean route is feasible or nearly so), and ``binding`` = the mean of the
least-variance route (one Dijkstra on the variance floor) plus ``z`` times 1.0-1.1 of its sd (a feasible route
exists, the least-mean one often is not: the search has to list routes); and one reachable-area query (2 kWh).
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
from evroute.energy import elevation_potential_wh
from evroute.experiments.runner import load_linegraph
from evroute.models.store import prior_model
from evroute.oracle import RouteOracle


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--network", default="luxembourg")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="bi-prior,bi-2000obs,gp-exact-500obs", help="comma-separated subset")
    ap.add_argument("--max-paths", type=int, default=200, help="routes the risk-aware search may list")
    a = ap.parse_args()
    lg = load_linegraph(a.network)
    h0 = potential_h(lg.network)
    rng = np.random.default_rng(a.seed)
    wanted = a.models.split(",")
    models = {}
    if "bi-prior" in wanted:
        models["bi-prior"] = prior_model("bi", lg, prior="eq8")
    if "bi-2000obs" in wanted:
        m = prior_model("bi", lg, prior="eq8")
        e = rng.integers(0, lg.n_nodes, 2000)
        m.update(e, m.posterior().mean[e] + rng.normal(0, np.sqrt(m.noise_var[0]), len(e)))
        models["bi-2000obs"] = m
    if "gp-exact-500obs" in wanted:
        gp = prior_model(
            "gp-exact", lg, prior="eq8", method="lowrank", graph_solver="local", learn_hyper=False, refresh_every=1
        )
        e = rng.integers(0, lg.n_nodes, 500)
        gp.update(e, gp.posterior().mean[e] + rng.normal(0, np.sqrt(gp.noise_var), len(e)))
        models["gp-exact-500obs"] = gp
    print(f"{lg.network.name}: {lg.n_nodes} edges, {lg.n_arcs} turns; {a.queries} queries per model")
    for name, model in models.items():
        b = RouteBelief(model, elevation_potential_wh(lg.network))  # as evroute route serves it
        t_reach: list[float] = []
        stats = {k: {"t": [], "listed": [], "cert": 0, "feas": 0} for k in ("near", "binding")}
        for _ in range(a.queries):
            s, g = (int(x) for x in rng.choice(lg.n_nodes, 2, replace=False))
            mean0, first = next(PathEnumerator(lg, b.mean, h0, exact=False).paths(s, g))
            sd0 = float(np.sqrt(b.route_moments(first)[1]))
            floor = b.noise_var if b.joint else b.noise_var + b.var
            low = RouteOracle(lg).shortest_route(floor, s, g).edges
            m1, v1 = b.route_moments(low)
            budgets = {
                "near": mean0 + 1.645 * sd0 * rng.uniform(0.8, 1.2),
                "binding": m1 + 1.645 * np.sqrt(v1) * rng.uniform(1.0, 1.1),
            }
            for kind, budget in budgets.items():
                bat = BatteryState(1e5, 0.5, 0.5 - budget / 1e5)
                t0 = time.perf_counter()
                r = risk_aware_route(lg, b, s, g, bat, 0.05, h0=h0, max_paths=a.max_paths)
                stats[kind]["t"].append(time.perf_counter() - t0)
                stats[kind]["listed"].append(r.paths)
                stats[kind]["cert"] += r.certified
                stats[kind]["feas"] += r.feasible
            t0 = time.perf_counter()
            reachable(lg, b, s, BatteryState(1e5, 0.5, 0.5 - 2000 / 1e5), 0.05, h0=h0)
            t_reach.append(time.perf_counter() - t0)
        for kind, st in stats.items():
            print(
                f"{name}, {kind} budgets: risk-aware route median {np.median(st['t']):.3f} s, "
                f"max {np.max(st['t']):.3f} s "
                f"(routes listed median {int(np.median(st['listed']))}, max {max(st['listed'])}; certified "
                f"{st['cert']}/{a.queries}, feasible {st['feas']}/{a.queries})"
            )
        print(f"{name}: reach median {np.median(t_reach):.3f} s, max {np.max(t_reach):.3f} s")


if __name__ == "__main__":
    main()
