"""Reach at scale phase by phase, in a fresh process and in one that ran the benchmark's steps first (issue 39).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python -m studies.bench.reach_profile \\
        --network city --size 1000000 --repeats 3 --out /tmp/reach_profile.json

Two child processes, one after the other, each set up as :func:`studies.bench.scale_measure.measure` sets up
``synthetic:SIZE:SEED`` (``--network country``: ``synthetic-country``) from the compute cache (network, line graph,
route A, environment, BI-TS bandit, one round, :func:`evroute.driver.query.make_belief`, the context's ``h0``, the
battery at 80 %):

* ``fresh``: reach right after that set-up;
* ``bench``: first what the benchmark runs before reach (``--rounds`` more BI-TS rounds, the reduced costs, with
  ``--cch`` the CCH preprocessing and customization, three Dijkstra queries), then reach.

In each, after a first call (the search order, the compiled kernels), :func:`evroute.driver.reach.reachable` runs
``--repeats`` times from the benchmark's random starts, side by side: with the quantile arcs kept from the previous
call (what the benchmark's ``reach`` row times: its median of three calls on one belief), with them computed afresh
(a new belief), and the code before this work (``d5ee1c3``: every call computes them, the breadth-first order,
numpy for the costs; its reachable sets and costs are checked equal); then the compiled reach's phases one by one
(:func:`evroute.driver.reach.reach_phases`): CPU seconds (``time.process_time``), of them system seconds, and minor
page faults (``ru_minflt``) of each.  ``tree sums`` (:attr:`ReachResult.mean_wh`) is timed once on its own; reach
does not run it.  Writes ``--out`` (JSON) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from evroute.io import atomic_write_text


def _usage() -> tuple[float, float, int]:
    """``(CPU s, system s, minor page faults)`` of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return time.process_time(), r.ru_stime, r.ru_minflt


def _timed(fn: Any) -> tuple[Any, dict[str, float]]:
    c0, s0, f0 = _usage()
    value = fn()
    c1, s1, f1 = _usage()
    return value, {"cpu_s": c1 - c0, "sys_s": s1 - s0, "faults": f1 - f0}


def _vs_scipy(c: Any, s: Any, h0: np.ndarray) -> dict[str, Any]:
    """The compiled reach ``c`` against SciPy's ``s`` from the same start: the same reachable set, the largest
    relative difference of the quantile costs, and how many predecessors differ and, of those, the largest gap
    between the two route costs through them (0: an equal-cost alternative)."""
    fin = np.isfinite(s.quantile_wh)
    rel = np.abs(c.quantile_wh[fin] - s.quantile_wh[fin]) / np.maximum(np.abs(s.quantile_wh[fin]), 1.0)
    differ = np.flatnonzero(c.pred != s.pred)
    # both predecessors are reached: the route cost through each is the predecessor's cost plus the edge's quantile
    cq = c.quantile_wh
    gap = np.abs(cq[c.pred[differ]] - cq[s.pred[differ]]) if len(differ) else np.zeros(0)
    return {
        "same_reachable": bool(np.array_equal(c.reachable, s.reachable)),
        "same_finite": bool(np.array_equal(np.isfinite(c.quantile_wh), fin)),
        "max_rel_cost_diff": float(rel.max()) if len(rel) else 0.0,
        "pred_differ": len(differ),
        "pred_cost_gap_max_wh": float(gap.max()) if len(gap) else 0.0,
        "same_exact": c.exact == s.exact,
    }


def _before(lg: Any, belief: Any, start: int, battery: Any, h0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(reachable, quantile_wh)`` of the compiled reach as it was at ``d5ee1c3``: quantiles and arcs every call,
    the breadth-first order, the costs by numpy in the original names (the baseline, timed side by side)."""
    from scipy.special import ndtri

    from evroute.search import reduced_one_to_all

    q = belief.mean + float(ndtri(0.95)) * belief.edge_sd()
    h = np.asarray(h0, dtype=np.float64)
    dist, _, _ = reduced_one_to_all(lg, q, h, start)
    qv = np.where(np.isfinite(dist), q[start] + dist - h[start] + h, np.inf)
    return qv <= battery.budget_wh, qv


def _orders(lg: Any, belief: Any, h0: np.ndarray, starts: list[int]) -> dict[str, Any]:
    """The one-to-all on reach's arcs in each search order (:data:`evroute.search.order.ORDER_KINDS`), side by side
    from each start: median CPU seconds, the median slots between a turn's two ends, and whether the labels agree."""
    from evroute.driver.reach import _quantiles
    from evroute.search import ordered_one_to_all, reduced_arcs
    from evroute.search.order import ORDER_KINDS

    q, h = _quantiles(belief, 0.05), np.asarray(h0, dtype=np.float64)
    made = {k: reduced_arcs(lg, q, h, k) for k in ORDER_KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in ORDER_KINDS}
    same = True
    for s in starts:
        labels = []
        for k, (o, arcs, st) in made.items():
            (dist, _), t = _timed(lambda o=o, arcs=arcs, st=st, s=s: ordered_one_to_all(o, arcs, st, s))
            cpu[k].append(t["cpu_s"])
            labels.append(dist[o.inv])
        same = same and all(np.array_equal(labels[0], x) for x in labels[1:])
    out: dict[str, Any] = {"same_labels": same}
    for k, (o, _, _) in made.items():
        tails = np.repeat(np.arange(lg.n_nodes), np.diff(o.indptr))
        out[k] = {"cpu_s": statistics.median(cpu[k]), "turn_gap_median": float(np.median(np.abs(o.heads - tails)))}
    return out


def _median(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def child(network: str, size: int, seed: int, mode: str, repeats: int, rounds: int, cch: bool) -> dict[str, Any]:
    """One process's measurements (module doc)."""
    from evroute.driver.answers import BatteryState
    from evroute.driver.query import QueryContext, make_belief
    from evroute.driver.reach import _REACH_ARCS, reach_phases, reachable
    from evroute.energy import VehicleProfile
    from evroute.experiments import ExperimentConfig
    from evroute.experiments import runner as R
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.oracle import RouteOracle
    from evroute.routes import resolve_route

    family = "synthetic" if network == "city" else "synthetic-country"
    name = f"{family}:{size}:{seed}"
    cfg = ExperimentConfig(
        network=name, route="A", model="bi", policy="ts", env="consistent", potential="elevation", seeds=(seed,)
    )
    c0 = time.process_time()
    lg = build_line_graph(load_network(name))
    rs = resolve_route(lg, name, "A", None, None)
    env = R._environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), seed)
    bandit = R.make_bandit(cfg, R.Problem(lg, env, rs), seed)
    bandit.step()
    out: dict[str, Any] = {"mode": mode, "network": name, "setup_cpu_s": time.process_time() - c0}
    vehicle = VehicleProfile.load(cfg.vehicle)
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, lg.n_nodes, size=(200, 2))  # the benchmark's pairs (its queries = 200)
    if mode == "bench":
        c0 = time.process_time()
        for _ in range(rounds):
            bandit.step()
    belief = make_belief(lg, bandit.model, vehicle)
    ctx = QueryContext(lg, belief, vehicle, engine="cch")
    if mode == "bench":
        arcs = ctx.least_mean_arcs()
        if cch:
            from evroute.cch import CCHIndex

            CCHIndex(lg).customize(arcs)
        oracle = RouteOracle(lg)
        for i in range(3):
            oracle.shortest_route_arcs(arcs, int(pairs[i, 0]), int(pairs[i, 1]))
        out["before_reach_cpu_s"] = time.process_time() - c0
    battery = BatteryState.from_vehicle(vehicle, 0.8)
    whole, fresh_arcs, before = [], [], []
    res = reachable(lg, belief, int(pairs[0, 0]), battery, h0=ctx.h0)  # the first call: the order, the kernels
    _before(lg, belief, int(pairs[0, 0]), battery, ctx.h0)  # and the breadth-first order
    for i in range(repeats):  # side by side: kept arcs (the benchmark's calls 2, 3), arcs afresh, the code before
        start = int(pairs[i % 3, 0])
        res, t = _timed(lambda s=start: reachable(lg, belief, s, battery, h0=ctx.h0))
        whole.append(t)
        _REACH_ARCS.pop(belief, None)
        _, t = _timed(lambda s=start: reachable(lg, belief, s, battery, h0=ctx.h0))
        fresh_arcs.append(t)
        old, t = _timed(lambda s=start: _before(lg, belief, s, battery, ctx.h0))
        before.append(t)
        if not (np.array_equal(old[0], res.reachable) and np.array_equal(old[1], res.quantile_wh)):
            raise AssertionError("reach differs from the code before issue 39's reach work")
    out["reach"] = whole
    out["one_to_all_by_order"] = _orders(lg, belief, ctx.h0, [int(pairs[i % 3, 0]) for i in range(repeats)])
    out["vs_scipy"] = _vs_scipy(res, reachable(lg, belief, res.start, battery, h0=ctx.h0, compiled=False), ctx.h0)
    out["reach_median"] = _median(whole)
    out["reach_arcs_afresh_median"] = _median(fresh_arcs)
    out["reach_before_median"] = _median(before)
    out["reached_share"] = float(res.reachable.mean())
    phases: list[dict[str, dict[str, float]]] = []
    for i in range(repeats):
        phases.append(reach_phases(lg, belief, int(pairs[i % 3, 0]), battery, h0=ctx.h0, clock=_usage))
    out["phases_median"] = {k: _median([p[k] for p in phases]) for k in phases[0]}
    _, out["tree_sums"] = _timed(lambda: res.mean_wh)
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out["load"] = os.getloadavg()[0]
    out["anon_huge_mb"] = _anon_huge_mb()
    return out


def _anon_huge_mb() -> float:
    """Transparent huge pages this process holds (MB; 0 where ``/proc/self/smaps_rollup`` is missing)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| phase | " + " | ".join(f"{r['mode']}: CPU ms / sys ms / faults" for r in rows) + " |"]
    lines.append("|---" * (len(rows) + 1) + "|")
    whole = {
        "reach, arcs kept (calls 2+)": "reach_median",
        "reach, arcs afresh": "reach_arcs_afresh_median",
        "reach before (d5ee1c3)": "reach_before_median",
        "tree sums (not in reach)": "tree_sums",
    }
    names = [*list(whole)[:3], *rows[0]["phases_median"], list(whole)[3]]
    for name in names:
        cells = []
        for r in rows:
            t = r[whole[name]] if name in whole else r["phases_median"][name]
            cells.append(f"{1e3 * t['cpu_s']:.1f} / {1e3 * t['sys_s']:.1f} / {int(t['faults'])}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", choices=("city", "country"), default="city")
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5, help="BI-TS rounds before reach in the bench process")
    ap.add_argument("--cch", action="store_true", help="also build and customize the CCH in the bench process")
    ap.add_argument("--modes", default="fresh,bench")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if a.size < 100 or a.repeats < 1 or a.rounds < 0:
        print("evroute: error: --size must be >= 100, --repeats >= 1 and --rounds >= 0", file=sys.stderr)
        return 2
    if a.child:
        print(json.dumps(child(a.network, a.size, a.seed, a.child, a.repeats, a.rounds, a.cch)))
        return 0
    rows = []
    for mode in a.modes.split(","):
        if mode not in ("fresh", "bench"):
            print(f"evroute: error: unknown mode {mode!r} (fresh, bench)", file=sys.stderr)
            return 2
        cmd = [sys.executable, "-m", "studies.bench.reach_profile", "--child", mode, "--network", a.network]
        cmd += ["--size", str(a.size), "--seed", str(a.seed), "--repeats", str(a.repeats), "--rounds", str(a.rounds)]
        cmd += ["--cch"] if a.cch else []
        got = subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows.append(json.loads(got.stdout.strip().splitlines()[-1]))
    print(_table(rows))
    if a.out:
        atomic_write_text(a.out, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
