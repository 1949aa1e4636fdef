"""BI-TS rounds and reach at scale, engine against engine in one process (issue 39 item 3 and reach).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python -m studies.bench.scale_rounds \\
        --edges 1000000 --rounds 5

On ``synthetic:EDGES:SEED``, set up as :mod:`studies.bench.scale_measure` does (route A, consistent environment, BI,
TS, elevation potential), each candidate is timed (CPU seconds, ``time.process_time``; median over ``--rounds``):

* ``scipy``: today's BI-TS round (posterior of every edge, one Thompson draw each, rectified weights, SciPy's
  one-directional Dijkstra): :class:`evroute.bandit.RoutingBandit` with ``lazy_ts=False``;
* ``scipy-limit``: candidate (a): every weight drawn as in the lazy engine (:func:`evroute.search.thompson_weights`),
  then SciPy's Dijkstra from both ends with ``limit = U/2`` (``U`` = the previous route's cost under this round's
  weights) joined over the turns (:func:`limited_bidirectional`);
* ``lazy``: candidate (b): :class:`evroute.bandit.RoutingBandit` with ``lazy_ts=True``
  (:class:`evroute.search.LazyThompsonEngine`), with its counters (nodes settled, arcs scanned, weights drawn);
* ``auto``: the default (``lazy_ts=None``), which leaves the lazy search after a round that settles more than
  :data:`evroute.bandit.LAZY_TS_MAX_SHARE` of the nodes;
* ``random_pairs``: the lazy search against the full round for ``--pairs`` random (start, goal) pairs;
* ``reach``: :func:`evroute.driver.reach.reachable` with SciPy's and with the compiled Dijkstra, and their
  largest difference.

Agreement: the lazy route of a round key against SciPy's Dijkstra on every weight of that key (same route, same
cost), and candidate (a)'s route against the same.  Writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from evroute.io import atomic_write_text
from studies.common.bench import machine_line


def cpu_median(fn: Callable[[int], Any], n: int) -> float:
    """Median CPU seconds of ``fn(i)``, ``i < n``."""
    out = []
    for i in range(n):
        c0 = time.process_time()
        fn(i)
        out.append(time.process_time() - c0)
    return statistics.median(out)


def limited_bidirectional(
    graph: sp.csr_matrix, rgraph: sp.csr_matrix, w: np.ndarray, start: int, goal: int, upper: float
) -> tuple[float, np.ndarray]:
    """Candidate (a): the minimum route cost (start's weight excluded) and route by two SciPy Dijkstras limited to
    ``upper / 2`` each, joined over the turns.

    ``graph`` carries ``w[head]`` on turn ``u -> v``; ``rgraph`` is its transpose (so its distances from ``goal`` are
    ``db(u)`` = the least sum of the weights of the edges after ``u`` up to and including the goal).
    Exact when ``upper`` is at least the optimum ``d*``: on a minimum route the forward distance grows from 0 to
    ``d*`` and the backward one falls from ``d*`` to 0 along it, by non-negative steps, so some turn ``u -> v`` of it
    has ``df(u) <= d*/2 <= upper/2`` and ``db(v) <= d*/2 <= upper/2`` (the first turn whose head has
    ``df(v) > d*/2``, or the last turn if none); both ends are labelled, and the join
    ``min over turns of df(u) + w_v + db(v)`` reads that turn's value ``d*``.
    """
    df = dijkstra(graph, directed=True, indices=start, limit=upper / 2, return_predecessors=True)
    db = dijkstra(rgraph, directed=True, indices=goal, limit=upper / 2, return_predecessors=True)
    dist_f, pred_f = df
    dist_b, pred_b = db
    live_u = np.flatnonzero(np.isfinite(dist_f))
    lo, hi = graph.indptr[live_u], graph.indptr[live_u + 1]
    counts = hi - lo
    arcs = np.repeat(lo - np.cumsum(np.r_[0, counts[:-1]]), counts) + np.arange(counts.sum())
    tails = np.repeat(live_u, counts)
    heads = graph.indices[arcs]
    cand = dist_f[tails] + w[heads] + dist_b[heads]
    j = int(np.argmin(cand))
    u, v = int(tails[j]), int(heads[j])
    fwd = [u]
    while fwd[-1] != start:
        fwd.append(int(pred_f[fwd[-1]]))
    bwd = [v]
    while bwd[-1] != goal:
        bwd.append(int(pred_b[bwd[-1]]))
    return float(cand[j]), np.asarray(fwd[::-1] + bwd, dtype=np.int64)


def measure(n_edges: int, seed: int, rounds: int, pairs_n: int) -> dict[str, Any]:
    """All candidates on ``synthetic:n_edges:seed`` (module doc)."""
    from evroute.driver.answers import BatteryState
    from evroute.driver.query import QueryContext, make_belief
    from evroute.driver.reach import reachable
    from evroute.energy import VehicleProfile
    from evroute.experiments import ExperimentConfig
    from evroute.experiments import runner as R
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route
    from evroute.search import thompson_weights

    network = f"synthetic:{n_edges}:{seed}"
    cfg = ExperimentConfig(
        network=network, route="A", model="bi", policy="ts", env="consistent", potential="elevation", seeds=(seed,)
    )
    out: dict[str, Any] = {"network": network, "load_start": os.getloadavg()[0]}
    lg = build_line_graph(load_network(network))
    rs = resolve_route(lg, network, "A", None, None)
    env = R._environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), seed)
    base = R.make_bandit(cfg, R.Problem(lg, env, rs), seed)
    out["edges"], out["turns"] = int(lg.n_nodes), int(lg.n_arcs)

    full, lazy = _copy_bandit(base, False), _copy_bandit(base, True)
    c0 = time.process_time()
    lazy.step()  # the first call loads (or compiles) the kernels
    out["lazy_first_round_cpu_s"] = time.process_time() - c0
    full.step()
    out["scipy_round_cpu_s"] = cpu_median(lambda i: full.step(), rounds)
    stats: list[dict[str, int]] = []

    def lazy_step(i: int) -> None:
        lazy.step()
        stats.append(dict(lazy._lazy.last_stats))

    out["lazy_round_cpu_s"] = cpu_median(lazy_step, rounds)
    out["lazy_stats"] = stats
    # agreement and candidate (a) on fixed keys, against SciPy on every weight
    oracle = RouteOracle(lg)
    indptr, heads, _ = lg.arc_pattern()
    state = lazy.model.conjugate_state()
    pot = lazy._arm_potential
    agree, a_times, a_agree, lazy_search = [], [], [], []
    prev = None
    for key in range(1, rounds + 2):
        c0 = time.process_time()
        r_lazy = lazy._lazy.route(state, key, rs.start, rs.goal, pot)
        lazy_search.append(time.process_time() - c0)
        w = thompson_weights(state, key, pot)
        ref = oracle.shortest_route(w, rs.start, rs.goal)
        agree.append(bool(np.array_equal(r_lazy.edges, ref.edges)) and abs(r_lazy.cost - ref.cost) <= 1e-9 * ref.cost)
        if prev is not None:  # candidate (a): weights of every edge, then the limited searches
            c0 = time.process_time()
            w = thompson_weights(state, key, pot)
            g = sp.csr_matrix((w[heads], heads, indptr), shape=(lg.n_nodes, lg.n_nodes))
            upper = float(w[prev].sum() - w[rs.start])
            cost, route = limited_bidirectional(g, g.T.tocsr(), w, rs.start, rs.goal, upper)
            a_times.append(time.process_time() - c0)
            a_agree.append(bool(abs(cost + w[rs.start] - ref.cost) <= 1e-9 * ref.cost))
        prev = ref.edges
    out["lazy_agrees"] = agree
    out["lazy_search_only_cpu_s"] = statistics.median(lazy_search)
    out["scipy_limit_cpu_s"] = statistics.median(a_times)
    out["scipy_limit_agrees"] = a_agree
    # the default (lazy_ts=None): gives up on route A in its first round, then draws every edge
    auto = _copy_bandit(base, None)
    auto.step()
    out["auto_lazy_after_round_1"] = auto._lazy is not None
    out["auto_round_cpu_s"] = cpu_median(lambda i: auto.step(), rounds)
    out["random_pairs"] = random_pairs(lg, lazy, full, oracle, pairs_n, seed)
    # reach, SciPy against compiled
    vehicle = VehicleProfile.load(cfg.vehicle)
    belief = make_belief(lg, lazy.model, vehicle)
    ctx = QueryContext(lg, belief, vehicle, engine="dijkstra")
    battery = BatteryState.from_vehicle(vehicle, 0.8)
    pairs = np.random.default_rng(seed).integers(0, lg.n_nodes, size=3)
    reach_c = [reachable(lg, belief, int(p), battery, h0=ctx.h0, compiled=True) for p in pairs[:1]]
    reach_s = [reachable(lg, belief, int(p), battery, h0=ctx.h0, compiled=False) for p in pairs[:1]]
    q_c, q_s = reach_c[0].quantile_wh, reach_s[0].quantile_wh
    fin = np.isfinite(q_s)
    out["reach_same_reached"] = bool(np.array_equal(fin, np.isfinite(q_c)))
    out["reach_max_rel_diff"] = float(np.max(np.abs(q_c[fin] - q_s[fin]) / np.maximum(np.abs(q_s[fin]), 1.0)))
    out["reach_same_reachable"] = bool(np.array_equal(reach_c[0].reachable, reach_s[0].reachable))
    out["reach_scipy_cpu_s"] = cpu_median(
        lambda i: reachable(lg, belief, int(pairs[i]), battery, h0=ctx.h0, compiled=False), 3
    )
    out["reach_compiled_cpu_s"] = cpu_median(
        lambda i: reachable(lg, belief, int(pairs[i]), battery, h0=ctx.h0, compiled=True), 3
    )
    out["load_end"] = os.getloadavg()[0]
    return out


def random_pairs(lg: Any, lazy: Any, full: Any, oracle: Any, n: int, seed: int) -> list[dict[str, Any]]:
    """For ``n`` random (start, goal) pairs: the lazy search's CPU seconds, nodes settled and draws, against the full
    round's (every posterior, one draw each, rectified weights, SciPy's Dijkstra), under the same posterior."""
    from evroute.errors import UnreachableError

    rng = np.random.default_rng(seed + 1)
    state = lazy.model.conjugate_state()
    pot = lazy._arm_potential
    rows = []
    for i, (s, g) in enumerate(rng.integers(0, lg.n_nodes, size=(n, 2))):
        try:
            c0 = time.process_time()
            r = lazy._lazy.route(state, 10_000 + i, int(s), int(g), pot)
            c1 = time.process_time()
            w = full.policy.weights(full.model.posterior(), 1, full.rng_policy, full._arm_potential)
            oracle.shortest_route(w, int(s), int(g))
            c2 = time.process_time()
        except UnreachableError:
            continue
        st = lazy._lazy.last_stats
        rows.append(
            {
                "lazy_cpu_s": c1 - c0,
                "full_cpu_s": c2 - c1,
                "settled_share": (st["settled_forward"] + st["settled_backward"]) / lg.n_nodes,
                "draws": st["draws"],
                "route_edges": len(r.edges) if r is not None else 0,
            }
        )
    return rows


def _copy_bandit(base: Any, lazy: bool | None) -> Any:
    """A fresh bandit like ``base`` (same model prior, policy, start, goal, reference, potential), ``lazy_ts=lazy``."""
    import copy

    from evroute.bandit import RoutingBandit

    return RoutingBandit(
        base.env,
        copy.deepcopy(base.model),
        base.policy,
        base.start,
        base.goal,
        seed=0,
        optimal=base.optimal,
        potential_wh=base.potential_wh,
        lazy_ts=lazy,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=10, help="random (start, goal) pairs for the lazy search")
    ap.add_argument("--out", type=Path, default=Path("docs/data/scale_rounds.json"))
    a = ap.parse_args(argv)
    if a.edges < 100 or a.rounds < 1:
        print("evroute: error: --edges must be >= 100 and --rounds >= 1", file=sys.stderr)
        return 2
    res = measure(a.edges, a.seed, a.rounds, a.pairs)
    res["machine"] = machine_line()
    d = json.loads(a.out.read_text()) if a.out.is_file() else {}
    d[str(a.edges)] = res
    atomic_write_text(a.out, json.dumps(d, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k not in ("lazy_stats", "random_pairs")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
