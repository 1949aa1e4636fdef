"""One size of the country-scale benchmark (:mod:`studies.bench.benchmark_scale`), measured in THIS process.

:func:`measure` runs, on ``synthetic:EDGES:SEED`` (:func:`evroute.network.synthetic.synthetic_city`) or
``synthetic-country:EDGES:SEED`` (:func:`evroute.network.country.synthetic_country`), through the registry and the
compute cache as ``evroute run`` does, the set-up of a BI-TS run stage by stage (network, line graph, route,
environment draw, bandit, round 1: :func:`evroute.experiments.runner.make_bandit`), then further
BI-TS rounds, then the served-model queries: the reduced costs of the BI posterior means
(:meth:`evroute.driver.query.QueryContext.least_mean_arcs`), CCH preprocessing and customization
(:mod:`evroute.cch`, on the line graph; :mod:`evroute.cch_junction`, on the junction graph, falling back to the line
graph's router: ``junction CCH ...`` rows with its fallback count), point-to-point queries by both CCHs and by
Dijkstra (:class:`evroute.oracle.RouteOracle`) on the same arcs, and the reachable area
(:func:`evroute.driver.reach.reachable`).  Every step records CPU seconds (``time.process_time``) and wall
seconds, and the process's peak resident memory (``ru_maxrss``) after it.  With ``profile=True`` each step runs
once under cProfile instead and only its top functions are recorded.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def peak_mb() -> float:
    """Peak resident memory of this process so far (MB; Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _top(prof: cProfile.Profile, n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` functions with the most own CPU time (``tottime``) in ``prof``."""
    st = pstats.Stats(prof)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:n]  # type: ignore[attr-defined]
    out = []
    for (file, line, fn), (_cc, _nc, tt, ct, _callers) in rows:
        where = "~" if file == "~" else f"{os.path.basename(os.path.dirname(file))}/{os.path.basename(file)}:{line}"
        out.append({"function": fn, "where": where, "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)})
    return out


class Steps:
    """Records each step's CPU/wall seconds and the peak memory after it (or its profile)."""

    def __init__(self, profile: bool) -> None:
        self.profile = profile
        self.rows: dict[str, dict[str, Any]] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        print(f"step {name}", file=sys.stderr, flush=True)  # names the step a killed child was in
        if self.profile:
            prof = cProfile.Profile()
            c0 = time.process_time()
            value = prof.runcall(fn)
            self.rows[name] = {"cpu_s": time.process_time() - c0, "top": _top(prof)}
            return value
        c0, w0 = time.process_time(), time.perf_counter()
        value = fn()
        self.rows[name] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "peak_mb": peak_mb()}
        return value

    def repeat(self, name: str, fn: Callable[[int], Any], n: int) -> None:
        """``fn(i)`` for ``i < n``: the median CPU and wall seconds of one call (one profiled call with ``profile``)."""
        if self.profile:
            self.run(name, lambda: fn(0))
            return
        print(f"step {name}", file=sys.stderr, flush=True)
        cpu, wall = [], []
        for i in range(n):
            c0, w0 = time.process_time(), time.perf_counter()
            fn(i)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
        self.rows[name] = {
            "cpu_s": statistics.median(cpu),
            "wall_s": statistics.median(wall),
            "n": n,
            "peak_mb": peak_mb(),
        }


#: the set-up stages of a BI-TS run, as :mod:`studies.bench.env_setup` names them
SETUP_STAGES = ("network", "line graph", "route", "environment", "bandit", "round 1")


def settled_share(lg: Any, arc_weights: np.ndarray, start: int, goal: int) -> float:
    """Share of the line-graph nodes whose distance from ``start`` is at most the goal's under ``(C,)`` arc weights
    (in :meth:`evroute.linegraph.LineGraph.arc_pattern` order): what any exact one-directional search settles."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    indptr, heads, _ = lg.arc_pattern()
    g = sp.csr_matrix((arc_weights, heads, indptr), shape=(lg.n_nodes, lg.n_nodes))
    dist = dijkstra(g, directed=True, indices=start)
    return float(np.mean(dist <= dist[goal]))


def lazy_probe(lg: Any, bandit: Any, start: int, goal: int) -> dict[str, Any] | None:
    """One uncapped round of the lazy bidirectional Thompson search (:class:`evroute.search.LazyThompsonEngine`) on
    the bandit's posterior: its CPU seconds (a second round: the first loads the compiled kernels), the nodes the two
    searches settle over the line-graph nodes (one settled by both counts twice), the weights drawn; ``None`` without
    numba or for another model."""
    from evroute.search import LazyThompsonEngine, numba_available

    if not numba_available() or not callable(getattr(bandit.model, "conjugate_state", None)):
        return None
    eng = LazyThompsonEngine(lg)
    state, pot = bandit.model.conjugate_state(), bandit.potential_wh
    eng.route(state, 1, start, goal, pot)
    c0 = time.process_time()
    eng.route(state, 2, start, goal, pot)
    cpu = time.process_time() - c0
    st = eng.last_stats
    settled = st["settled_forward"] + st["settled_backward"]
    return {"cpu_s": cpu, "settled_share": settled / lg.n_nodes, "draws": st["draws"], "arcs": st["arcs_scanned"]}


def round_parts(lg: Any, bandit: Any, reps: int = 3) -> dict[str, Any] | None:
    """The parts of a compiled full-draw BI-TS round (:class:`evroute.search.full_draw.FullDrawThompson`) on the
    bandit's posterior, median CPU seconds over ``reps``: ``normals`` (``E`` standard normals from NumPy's generator),
    ``weights`` (posterior, draw and rectified weights in compiled passes) and ``search`` (the bucket search on those
    weights); ``graph`` the graph searched (``junction``: the hybrid junction graph, its ``search_nodes`` and
    ``search_arcs``; ``line``), ``fallbacks`` the searches answered on the line graph instead; ``None`` where the
    bandit does not run such rounds."""
    from evroute.search.full_draw import FullDrawThompson
    from evroute.search.junction import junction_graph

    if getattr(bandit, "_full_draw", None) is None:
        return None
    eng = FullDrawThompson(lg)
    n, rng = lg.n_nodes, np.random.default_rng(0)
    state, pot = bandit.model.conjugate_state(), bandit.potential_wh
    parts: dict[str, list[float]] = {"normals": [], "weights": [], "search": []}
    for _ in range(reps):
        c0 = time.process_time()
        z = rng.standard_normal(n)
        c1 = time.process_time()
        eng.weights(state, z, pot)
        c2 = time.process_time()
        eng.search(bandit.start, bandit.goal)
        c3 = time.process_time()
        for k, v in zip(parts, (c1 - c0, c2 - c1, c3 - c2), strict=True):
            parts[k].append(v)
    out: dict[str, Any] = {k: statistics.median(v) for k, v in parts.items()}
    jg = junction_graph(lg)
    out["graph"] = "line" if jg is None else "junction"
    if jg is not None:
        out["search_nodes"], out["search_arcs"] = jg.n_nodes, len(jg.heads)
    out["fallbacks"] = eng.fallbacks
    return out


def goal_directed_probe(lg: Any, bandit: Any, start: int, goal: int, ks: tuple[float, ...] = (3.0, 4.0)) -> Any:
    """What an exact goal-directed (A*) Thompson round could save on the bandit's route, at its present posterior.

    The potential of such a search is ``pi(v)``, the least sum from ``v`` to the goal of the lower bounds ``l_e =
    max(E[max(0, N(mu_e - k sigma_e - p_e, s_n^2))], MIN_WEIGHT_WH)`` (a draw is below its bound with probability
    ``Phi(-k)``: those exceptions, ``E Phi(-k)`` expected per round, are drawn first and handled by a slack).  For one
    full draw ``w`` (seed 0) and each ``k`` of ``ks``: ``pi(start)`` over the route's cost ``d(goal)``, and the share of
    nodes with ``d(v) + pi(v) <= d(goal)``, which an exact A* settles at least (with no exception at all); and the
    quantiles 0.1, 0.5, 0.9 of ``sigma_e / |mu_e - p_e|``.  ``None`` for a model without ``conjugate_state``."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra
    from scipy.special import ndtr

    from evroute.oracle import MIN_WEIGHT_WH, rectified_gaussian_mean

    if not callable(getattr(bandit.model, "conjugate_state", None)):
        return None
    post = bandit.model.posterior()
    n = lg.n_nodes
    x = post.mean - (0.0 if bandit.potential_wh is None else bandit.potential_wh)
    indptr, heads, _ = lg.arc_pattern()

    def weigh(m: np.ndarray) -> np.ndarray:
        return np.maximum(rectified_gaussian_mean(m, post.noise_var), MIN_WEIGHT_WH)

    def graph(nodes: np.ndarray) -> Any:  # the arc u -> v weighs its head
        return sp.csr_matrix((nodes[heads], heads, indptr), shape=(n, n))

    w = weigh(x + post.std * np.random.default_rng(0).standard_normal(n))
    d = dijkstra(graph(w), directed=True, indices=start)
    cost = float(d[goal])
    rows = []
    for k in ks:
        pi = dijkstra(graph(weigh(x - k * post.std)).T.tocsr(), directed=True, indices=goal)
        rows.append(
            {
                "k": k,
                "bound_share": float(pi[start] / cost),
                "settled_share": float(np.mean(d + pi <= cost)),
                "exceptions": float(n * ndtr(-k)),
            }
        )
    cv = post.std / np.maximum(np.abs(x), 1e-12)
    return {"sigma_over_mean": [float(q) for q in np.quantile(cv, [0.1, 0.5, 0.9])], "ks": rows}


def cch_search_space(lg: Any, nodes: np.ndarray) -> dict[str, float]:
    """What bounds a CCH query (:mod:`evroute.cch`): the size of the root's separator and, for each of ``nodes``, the
    separator nodes of the cells that contain it (its own and every enclosing cell's: all are its ancestors in the
    elimination tree, so an elimination-tree search from it visits at least these); the median over ``nodes``."""
    from evroute.cch import dissection, junction_frame

    depth, path, sep = dissection(*junction_frame(lg))
    key = depth * 2**40 + path  # (level, cell) of each separator node
    cells, size = np.unique(key[sep], return_counts=True)
    lookup = dict(zip(cells.tolist(), size.tolist(), strict=True))
    visited = []
    for v in nodes.tolist():
        d, p = int(depth[v]), int(path[v])
        visited.append(sum(lookup.get((d - k) * 2**40 + (p >> k), 0) for k in range(d + 1)))
    return {
        "root_separator": float(lookup.get(0, 0)),
        "separator_share": float(sep.mean()),
        "ancestor_separator_nodes_median": float(np.median(visited)),
    }


def measure(
    n_edges: int,
    seed: int = 0,
    *,
    setup_only: bool = False,
    profile: bool = False,
    queries: int = 200,
    cch: bool = True,
    family: str = "synthetic",
) -> dict[str, Any]:
    """All steps on ``FAMILY:n_edges:seed`` (module doc; ``family`` ``synthetic``, the city, or
    ``synthetic-country``, :func:`evroute.network.country.synthetic_country`); ``setup_only`` stops after the set-up
    (the warm-cache run); ``cch=False`` skips the CCH steps (too slow to preprocess at 5M edges).  Sizes of the
    repeated steps shrink with the network so that a million edges stays within minutes."""
    from evroute.cch import CCHIndex
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

    network = f"{family}:{n_edges}:{seed}"
    cfg = ExperimentConfig(
        network=network, route="A", model="bi", policy="ts", env="consistent", potential="elevation", seeds=(seed,)
    )
    out: dict[str, Any] = {"network": network, "load_start": os.getloadavg()[0], "pid_cpu_start": time.process_time()}
    s = Steps(profile)
    net = s.run("network", lambda: load_network(network))
    lg = s.run("line graph", lambda: build_line_graph(net))
    rs = s.run("route", lambda: resolve_route(lg, network, "A", None, None))
    env = s.run(
        "environment",
        lambda: R._environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), seed),
    )
    bandit = s.run("bandit", lambda: R.make_bandit(cfg, R.Problem(lg, env, rs), seed))
    s.run("round 1", bandit.step)
    out["edges"], out["turns"] = int(lg.n_nodes), int(lg.n_arcs)
    if net.meta.get("loader") == "synthetic-country" and not setup_only:
        from evroute.network.country import country_stats

        out["country_stats"] = country_stats(net)
    out["setup_peak_mb"] = peak_mb()
    if not setup_only:
        big = lg.n_nodes >= 500_000
        s.repeat("BI-TS round", lambda i: bandit.step(), 5 if big else 15)
        vehicle = VehicleProfile.load(cfg.vehicle)
        belief = make_belief(lg, bandit.model, vehicle)
        ctx = QueryContext(lg, belief, vehicle, engine="cch")
        arcs = s.run("reduced costs", ctx.least_mean_arcs)
        rng = np.random.default_rng(seed)
        pairs = rng.integers(0, lg.n_nodes, size=(queries, 2))
        if cch:
            from evroute.cch import CUT_QUANTILES

            out["cch_cut_quantiles"] = list(CUT_QUANTILES)  # the dissection's cut positions (evroute.cch)
            index = s.run("CCH preprocessing", lambda: CCHIndex(lg))
            router = s.run("CCH customization", lambda: index.customize(arcs))
            s.repeat("CCH query", lambda i: router.route(int(pairs[i, 0]), int(pairs[i, 1])), queries)
            from evroute.cch_junction import JunctionCCHIndex

            jindex = s.run("junction CCH preprocessing", lambda: JunctionCCHIndex(lg))
            jrouter = s.run("junction CCH customization", lambda: jindex.customize(arcs, lambda: router))
            s.repeat("junction CCH query", lambda i: jrouter.route(int(pairs[i, 0]), int(pairs[i, 1])), queries)
            out["junction_cch"] = {
                "junctions": jindex.n_junctions,
                "hybrid_nodes": jindex.n_hybrid,
                "queries": jrouter.queries,
                "fallbacks": jrouter.fallbacks,
                "error_bound": jrouter.junction_bound,
            }
        oracle = RouteOracle(lg)
        s.repeat("Dijkstra query", lambda i: oracle.shortest_route_arcs(arcs, int(pairs[i, 0]), int(pairs[i, 1])), 3)
        battery = BatteryState.from_vehicle(vehicle, 0.8)
        s.repeat("reach", lambda i: reachable(lg, belief, int(pairs[i, 0]), battery, h0=ctx.h0), 3)
        if not profile:  # what bounds the searches: how much of the graph an exact search must settle
            out["route_settled_share"] = settled_share(lg, arcs, rs.start, rs.goal)
            out["route_lazy"] = lazy_probe(lg, bandit, rs.start, rs.goal)
            out["round_parts"] = round_parts(lg, bandit)
            out["route_goal_directed"] = goal_directed_probe(lg, bandit, rs.start, rs.goal)
            out["reach_reached_share"] = float(
                reachable(lg, belief, int(pairs[0, 0]), battery, h0=ctx.h0).reachable.mean()
            )
        if cch:  # the same routes from both engines (costs within the CCH's stated quantization bound)
            gaps = []
            jgaps = []
            for a, b in pairs[:3]:
                c, d = router.route(int(a), int(b)).cost, oracle.shortest_route_arcs(arcs, int(a), int(b)).cost
                gaps.append(abs(c - d))
                jgaps.append(abs(jrouter.route(int(a), int(b)).cost - d))
            out["cch_vs_dijkstra"] = {"max_cost_gap": max(gaps), "error_bound": router.error_bound}
            out["junction_cch"]["max_cost_gap"] = max(jgaps)  # against Dijkstra, the same 3 pairs
            out["cch_search_space"] = cch_search_space(lg, pairs[:, 0])
    out["steps"] = s.rows
    out["cpu_total_s"] = time.process_time() - out.pop("pid_cpu_start")
    out["peak_mb"] = peak_mb()
    out["load_end"] = os.getloadavg()[0]
    return out


__all__ = [
    "SETUP_STAGES",
    "Steps",
    "cch_search_space",
    "goal_directed_probe",
    "lazy_probe",
    "measure",
    "peak_mb",
    "round_parts",
    "settled_share",
]
