"""Served route queries on the junction graph against the line graph (issue 39: a CCH query at 1M edges <= 5 ms).

Usage::

    OMP_NUM_THREADS=1 nice -n 15 python -m studies.bench.junction_cch --networks synthetic:1000000:0
    OMP_NUM_THREADS=1 nice -n 15 python -m studies.bench.junction_cch --networks monaco luxembourg

For each network (one at a time, in this process): the line graph, the served belief of a BI prior
(:func:`evroute.driver.query.make_belief`) and its least-mean turn weights (the potential's reduced costs,
:meth:`evroute.driver.query.QueryContext.least_mean_arcs`); then, for the line-graph CCH (:mod:`evroute.cch`, the
"old" engine) and the junction-graph CCH (:mod:`evroute.cch_junction`, the "new" one, with the old router as its
fallback): preprocessing, customization and ``--pairs`` random start/goal queries, each in CPU time
(``time.process_time``); the new engine's fallback rate on those weights and on the edge lengths; and the largest
cost gap between the two engines' routes against their stated bounds.  Results are merged into ``--data`` by network
(resumable) and printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np


def _cpu(f: Any) -> tuple[Any, float]:
    t = time.process_time()
    out = f()
    return out, time.process_time() - t


def _queries(router: Any, pairs: np.ndarray) -> tuple[list[float], list[float]]:
    """CPU seconds of each query and each route's cost."""
    times, costs = [], []
    for s, g in pairs.tolist():
        t = time.process_time()
        costs.append(router.route(int(s), int(g)).cost)
        times.append(time.process_time() - t)
    return times, costs


def _stats(times: list[float]) -> dict[str, float]:
    a = np.asarray(times)
    return {"median_s": float(np.median(a)), "mean_s": float(a.mean()), "p90_s": float(np.quantile(a, 0.9))}


def measure(network: str, pairs_n: int, seed: int = 0) -> dict[str, Any]:
    """Old (line graph) and new (junction graph) CCH on ``network`` (module doc)."""
    from evroute.cch import CCHIndex
    from evroute.cch_junction import JunctionCCHIndex
    from evroute.driver.query import QueryContext, make_belief
    from evroute.energy import VehicleProfile
    from evroute.linegraph import build_line_graph
    from evroute.models.store import prior_model
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network(network))
    vehicle = VehicleProfile()
    ctx = QueryContext(lg, make_belief(lg, prior_model("bi", lg, vehicle), vehicle), vehicle, engine="dijkstra")
    arcs = ctx.least_mean_arcs()
    pairs = np.random.default_rng(seed).integers(0, lg.n_nodes, size=(pairs_n, 2))
    out: dict[str, Any] = {"network": network, "edges": lg.n_nodes, "turns": lg.n_arcs, "pairs": pairs_n}
    old_ix, out["old_preprocessing_s"] = _cpu(lambda: CCHIndex(lg))
    old, out["old_customization_s"] = _cpu(lambda: old_ix.customize(arcs))
    t_old, c_old = _queries(old, pairs)
    out["old_query"] = _stats(t_old)
    out["old_error_bound"] = old.error_bound
    new_ix, out["new_preprocessing_s"] = _cpu(lambda: JunctionCCHIndex(lg))
    out["junctions"], out["hybrid_nodes"] = new_ix.n_junctions, new_ix.n_hybrid
    out["restricted_junctions"] = int(new_ix.restricted.sum())
    out["turn_free"] = new_ix.turn_free(arcs)
    new, out["new_customization_s"] = _cpu(lambda: new_ix.customize(arcs, lambda: old))
    t_new, c_new = _queries(new, pairs)
    out["new_query"] = _stats(t_new)
    out["new_error_bound"] = new.junction_bound
    out["fallbacks"] = new.fallbacks
    gap = np.abs(np.asarray(c_new) - np.asarray(c_old))
    out["max_cost_gap"] = float(gap.max())
    out["gap_within_bounds"] = bool(np.all(gap <= old.error_bound + new.error_bound + 1e-9 * np.abs(c_old).max()))
    by_len = new_ix.customize_nodes(lg.network.length_m, lambda: CCHIndex(lg).customize_nodes(lg.network.length_m))
    t_len, _ = _queries(by_len, pairs)
    out["length_query"], out["length_fallbacks"] = _stats(t_len), by_len.fallbacks
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["load"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--networks", nargs="+", required=True)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--data", type=Path, default=Path("docs/data/junction_cch.json"))
    a = p.parse_args(argv)
    data = json.loads(a.data.read_text()) if a.data.exists() else {}
    for net in a.networks:
        row = measure(net, a.pairs)
        data[net] = row
        a.data.parent.mkdir(parents=True, exist_ok=True)
        a.data.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
