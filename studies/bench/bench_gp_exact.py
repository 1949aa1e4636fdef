"""Exact GP (``gp-exact``) next to the SVGP (``gp``): per-round latency of UCB / BUCB / TS, set-up time, peak RSS.

The table of ``docs/benchmark_gp.md``::

    EVROUTE_DATA=/work/shared/data OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 .venv/bin/python \
        studies/bench/bench_gp_exact.py --networks monaco luxembourg synthetic:20000:0 synthetic:100000:0 \
        --rounds 30 --svgp-rounds 10 --repeats 2 --cell 'synthetic:20000:0/*/*=10x1' \
        'synthetic:100000:0/gp-exact/*=8x1' 'synthetic:100000:0/gp/*=0' 'synthetic:100000:0/gp/ts=5x1' \
        --out results/bench_gp_exact_final.md

Every (network, model, policy, repeat) runs in its own child process (so its peak RSS is its own), and the models
alternate within each repeat (exact, SVGP, exact, SVGP, ...) so both see the same machine load.  Each child times
the set-up stages (network + line graph, environment sampling, model construction with its kernel and first
posterior) and then ``--rounds`` bandit rounds (``--svgp-rounds`` for the SVGP, whose UCB/BUCB rounds take seconds)
against a cheap stand-in optimal route (Dijkstra on the clipped true energies: the regret reference does not affect
latency; ``--reference`` times the real one once per network instead).  Reported: medians over all rounds of all
repeats of update, posterior, index + oracle and their total; the median set-up; the largest peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info

from evroute.environments import DEFAULT_ENVIRONMENT
from studies.bench.bench_gp_exact_checks import diag_probing_error, local_columns_error, rank_k
from studies.bench.gp_check import check, check_table
from studies.common.bench import machine_line

LABEL = {"gp-exact": "exact", "gp": "SVGP"}


def child(
    network: str,
    model: str,
    policy: str,
    rounds: int,
    route: str,
    reference: bool,
    environment: str,
    params: dict,
    profile: list | None = None,
) -> dict:
    """One run (see the module docstring); ``profile``: ``[path, first, last]`` writes a CPU-time cProfile of rounds
    ``first..last`` (1-based) to ``path``."""
    import cProfile
    import resource

    from evroute.bandit import RoutingBandit, regret_reference_route
    from evroute.experiments.registry import make_model
    from evroute.experiments.runner import _environment, load_linegraph
    from evroute.oracle import RouteOracle
    from evroute.policies import make_policy
    from evroute.routes import resolve_route

    load0 = os.getloadavg()[0]
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    lg = load_linegraph(network)
    t1 = time.perf_counter()
    cpu_t1 = time.process_time()
    env = _environment(lg, "sumo_ev", environment, "{}", 0)
    t2 = time.perf_counter()
    cpu_t2 = time.process_time()
    rs = resolve_route(lg, network, route, None, None)
    if reference:
        opt = regret_reference_route(env, rs.start, rs.goal, "auto")
    else:
        opt = RouteOracle(lg).shortest_route(np.maximum(env.true_mean_wh, 1e-9), rs.start, rs.goal)
    t3 = time.perf_counter()
    cpu_t3 = time.process_time()
    m = make_model(model.split("+")[0], env, seed=0, **params)
    m.posterior()
    t4 = time.perf_counter()
    cpu_t4 = time.process_time()
    bandit = RoutingBandit(env, m, make_policy(policy), rs.start, rs.goal, seed=0, optimal=opt)
    c0, w0 = time.process_time(), time.perf_counter()
    recs, cpu_round, cpu_setup1, work = [], [], 0.0, []
    prof = cProfile.Profile(time.process_time) if profile else None
    for i in range(rounds):  # = bandit.run(rounds), with each round's CPU time
        on = profile is not None and profile[1] <= i + 1 <= profile[2]
        if prof is not None and on:
            prof.enable()
        c1 = time.process_time()
        recs.append(bandit.step())
        cpu_round.append(1e3 * (time.process_time() - c1))
        if prof is not None and on:
            prof.disable()
        post = getattr(m, "_post", None)  # the exact model's posterior: its work counters (cumulative per object)
        work.append(
            {
                "object": id(post),
                **getattr(post, "counters", {}),
                "madds_by": dict(getattr(post, "madds_by", {})),
                "cpu_by": dict(getattr(post, "cpu_by", {})),
                "visited": len(getattr(m, "order", [])),
            }
        )
        if i == 0:
            cpu_setup1 = time.process_time() - cpu0  # everything from the line graph's load through round 1
    share = (time.process_time() - c0) / max(time.perf_counter() - w0, 1e-9)
    if prof is not None and profile is not None:
        prof.dump_stats(profile[0])
    cols = ["update_ms", "posterior_ms", "index_ms", "oracle_ms"]
    per = {c: [getattr(r, c) for r in recs] for c in cols}
    edges = {e for r in recs for e in r.route.split()}
    return {
        "network": network,
        "model": model,
        "policy": policy,
        "edges": lg.n_nodes,
        "rounds": rounds,
        "linegraph_s": t1 - t0,
        "env_s": t2 - t1,
        ("reference_s" if reference else "standin_s"): t3 - t2,
        "model_s": t4 - t3,
        "cpu_stages_s": {  # CPU seconds: line graph, environment, stand-in route, model set-up
            "linegraph": cpu_t1 - cpu0,
            "environment": cpu_t2 - cpu_t1,
            "route": cpu_t3 - cpu_t2,
            "model": cpu_t4 - cpu_t3,
        },
        **per,
        "cpu_round_ms": cpu_round,
        "work": work,
        "route_edges": [r.route_edges for r in recs],
        "cpu_prep_s": cpu_t4 - cpu0,
        "cpu_setup1_s": cpu_setup1,
        "distinct_edges": len(edges),
        "cpu_share": share,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load": (load0, os.getloadavg()[0]),
    }


def work_per_round(work: list[dict]) -> dict[str, np.ndarray]:
    """Per-round increments of the incremental posterior's work counters (``child``'s ``work``; a counter restarts
    with a new posterior object, after a refit).  Empty for models without counters."""
    keys = ("fresh", "hits", "catch_up", "snapshots", "madds")
    if not work or "madds" not in work[-1]:
        return {}
    out: dict[str, list[float]] = {k: [] for k in keys}
    prev: dict = {}
    for w in work:
        same = prev.get("object") == w["object"]
        for k in keys:
            out[k].append(w.get(k, 0.0) - (prev.get(k, 0.0) if same else 0.0))
        prev = w
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def _work_cells(rs: list[dict], lo: int, hi: int) -> str:
    """Table cells of the work counters over rounds ``lo..hi``: fresh / hits columns, multiply-adds and their rate
    (``2 madds / CPU s`` of the round, median)."""
    per = [work_per_round(r.get("work", [])) for r in rs]
    if not all(per):
        return "- | -"
    cat = {k: np.concatenate([w[k][lo - 1 : hi] for w in per]) for k in per[0]}
    cpu = np.concatenate([np.asarray(r["cpu_round_ms"][lo - 1 : hi]) for r in rs])
    rate = 2.0 * cat["madds"] / np.maximum(1e-3 * cpu, 1e-9) / 1e9
    return (
        f"{np.median(cat['fresh']):.0f} / {np.median(cat['hits']):.0f} | {np.median(cat['madds']) / 1e9:.1f}, "
        f"{np.median(rate):.0f}"
    )


def _stage_cells(rs: list[dict]) -> str:
    """CPU seconds of the set-up stages and of round 1 (medians over the repeats)."""
    st = [r.get("cpu_stages_s", {}) for r in rs]
    if not all(st):
        return "-"
    vals = [np.median([s[k] for s in st]) for k in ("linegraph", "environment", "model")]
    vals.append(np.median([1e-3 * r["cpu_round_ms"][0] for r in rs]))
    return " / ".join(f"{v:.1f}" for v in vals)


def _variant(mod: str) -> dict:
    """Parameters of a model variant ``MODEL+NAME=VALUE+...`` (e.g. ``gp-exact+graph_solver=global``)."""
    return {
        k: json.loads(v) if v[:1] in "0123456789-[{tf" else v
        for k, v in (item.split("=", 1) for item in mod.split("+")[1:])
    }


def _cell(args: argparse.Namespace, net: str, mod: str, pol: str) -> tuple[int, int]:
    """``(rounds, repeats)`` of one cell: the defaults, then the last matching ``--cell`` override."""
    out = (args.rounds if mod.startswith("gp-exact") else args.svgp_rounds, args.repeats)
    for item in args.cell:
        key, val = item.rsplit("=", 1)
        n, m, p = key.rsplit("/", 2)
        if all(a in ("*", b) for a, b in ((n, net), (m, mod), (p, pol))):
            rounds, _, reps = val.partition("x")
            out = (int(rounds), int(reps) if reps else out[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--networks", nargs="+", default=["monaco", "luxembourg", "synthetic:20000:0", "synthetic:100000:0"]
    )
    ap.add_argument(
        "--models",
        nargs="+",
        default=["gp-exact", "gp"],
        help="models, or variants MODEL+NAME=VALUE (e.g. gp-exact+graph_solver=global)",
    )
    ap.add_argument("--policies", nargs="+", default=["ucb", "bucb", "ts"])
    ap.add_argument("--rounds", type=int, default=40, help="rounds per exact-model run")
    ap.add_argument("--svgp-rounds", type=int, default=12, help="rounds per SVGP run (UCB ~2 s per round)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--route", default="A")
    ap.add_argument("--environment", default=DEFAULT_ENVIRONMENT, help="environment the rounds are drawn from")
    ap.add_argument("--reference", action="store_true", help="time the real regret reference (once per child)")
    ap.add_argument(
        "--model-param", action="append", default=[], metavar="MODEL:NAME=VALUE", help="e.g. gp-exact:threads=2"
    )
    ap.add_argument("--out", default=None, help="append the Markdown table to this file")
    ap.add_argument(
        "--rank-k",
        nargs=2,
        type=int,
        metavar=("E", "K"),
        default=None,
        help="only time one rank-K update of an E x E covariance (dsyrk vs GEMM vs torch)",
    )
    ap.add_argument(
        "--diag-hops",
        nargs="+",
        type=int,
        default=None,
        help="only measure the probed graph prior variances at these hop distances (first --networks)",
    )
    ap.add_argument(
        "--cell",
        nargs="+",
        default=[],
        metavar="NETWORK/MODEL/POLICY=ROUNDSxREPEATS",
        help="per-cell rounds and repeats ('*' matches any; 0 rounds skips the cell), e.g. "
        "'synthetic:100000:0/gp/*=0' 'synthetic:100000:0/gp/ts=5x1'; the last match wins",
    )
    ap.add_argument(
        "--local-tol",
        nargs="+",
        type=float,
        default=None,
        help="only measure local graph-kernel columns against the dense kernel (first --networks)",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="run the previous (--old-param) and current (--model-param gp-exact:...) exact GP side by side in one "
        "process per (network, policy), interleaved round by round: CPU and wall ms per round, posterior deviation",
    )
    ap.add_argument(
        "--old-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="--check: the previous implementation (default method=lowrank switch_edges=quarter, i.e. E // 4)",
    )
    ap.add_argument(
        "--median-rounds",
        nargs=2,
        type=int,
        default=[10, 60],
        metavar=("FROM", "TO"),
        help="rounds (1-based, inclusive) of the CPU medians per round",
    )
    ap.add_argument(
        "--table-from", default=None, metavar="JSON", help="only render the table of an earlier run's --out .json"
    )
    ap.add_argument(
        "--profile",
        default=None,
        metavar="PREFIX",
        help="write a CPU-time cProfile of the --median-rounds of every run to PREFIX.NETWORK.MODEL.POLICY.REPEAT",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.check:
        old = {"method": "lowrank", "switch_edges": "quarter"}
        old.update(_variant("+" + "+".join(args.old_param)) if args.old_param else {})
        new = {
            k: json.loads(v) if v[:1] in "0123456789-[{tf" else v
            for k, v in (i.split(":", 1)[1].split("=", 1) for i in args.model_param if i.startswith("gp-exact:"))
        }
        res = []
        for net in args.networks:
            for pol in args.policies:
                res.append(check(net, pol, args.rounds, args.route, args.environment, old, new))
                print(check_table(res[-1:], *args.median_rounds), flush=True)
        blas = "; ".join(f"{p['internal_api']} {p['num_threads']} thread(s)" for p in threadpool_info())
        text = f"\n{machine_line()}; BLAS: {blas}\n`{' '.join(sys.argv)}`\n\n{check_table(res, *args.median_rounds)}\n"
        print(text)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(text)
        return
    if args.rank_k or args.diag_hops or args.local_tol:
        body = (
            rank_k(*args.rank_k, max(args.repeats, 5))
            if args.rank_k
            else diag_probing_error(args.networks[0], args.diag_hops)
            if args.diag_hops
            else local_columns_error(args.networks[0], args.local_tol, args.route)
        )
        text = f"\n{machine_line()}\n`{' '.join(sys.argv)}`\n\n{body}\n"
        print(text)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(text)
        return
    if args.child:
        spec = json.loads(args.child)
        print("RESULT " + json.dumps(child(**spec)), flush=True)
        return
    params: dict[str, dict] = {m: {} for m in args.models}
    for item in args.model_param:
        mod, kv = item.split(":", 1)
        k, v = kv.split("=", 1)
        params.setdefault(mod, {})[k] = json.loads(v)
    results: dict[tuple, list[dict]] = {}
    if args.table_from:  # re-render the table of an earlier run's raw results (its --out .json, last line)
        with open(args.table_from) as fh:
            raw = json.loads(fh.read().strip().splitlines()[-1])
        results = {tuple(k.split("/", 2)[i] for i in (0, 2, 1)): v for k, v in raw.items()}
    for net in [] if args.table_from else args.networks:
        for pol in args.policies:
            plan = {mod: _cell(args, net, mod, pol) for mod in args.models}
            for rep in range(max(r for _, r in plan.values())):
                for mod in args.models:  # alternate the models: same load for both
                    if rep >= plan[mod][1] or plan[mod][0] == 0:
                        continue
                    spec = {
                        "network": net,
                        "model": mod,
                        "policy": pol,
                        "route": args.route,
                        "rounds": plan[mod][0],
                        "reference": args.reference,
                        "environment": args.environment,
                        "params": {**params.get(mod.split("+")[0], {}), **_variant(mod)},
                        "profile": None
                        if args.profile is None
                        else [f"{args.profile}.{net}.{mod}.{pol}.{rep}", *args.median_rounds],
                    }
                    proc = subprocess.run(
                        [sys.executable, __file__, "--child", json.dumps(spec)],
                        capture_output=True,
                        text=True,
                        env=os.environ,
                    )
                    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    if not line:
                        print(f"{net} {mod} {pol}: failed\n{proc.stderr[-2000:]}", flush=True)
                        continue
                    r = json.loads(line[0][7:])
                    results.setdefault((net, pol, mod), []).append(r)
                    tot = np.sum([r[c] for c in ("update_ms", "posterior_ms", "index_ms", "oracle_ms")], axis=0)
                    print(
                        f"{net} {mod} {pol}: median {np.median(tot):.0f} ms/round, model set-up "
                        f"{r['model_s']:.1f} s, RSS {r['peak_rss_mb']:.0f} MB, load {r['load']}; CPU: "
                        f"{np.median(r['cpu_round_ms'][1:]):.0f} ms/round (rounds 2-), through round 1 "
                        f"{r['cpu_setup1_s']:.1f} s",
                        flush=True,
                    )
    head = (
        "| network | edges | policy | model | rounds x repeats | **total ms (median)** | update | posterior | "
        "index + oracle | p90 total | rounds s (mean of sums) | distinct edges | line graph s | environment s | "
        "model set-up s | "
        "peak RSS MB | load avg | CPU share | **CPU ms / round (median)** | p90 CPU ms | CPU s before round 1 | "
        "**CPU s through round 1** | of which line graph / environment / model / round 1 | "
        "fresh / hits per round (median) | Gmadd per round (median), GFLOP/s |"
    )
    lo, hi = args.median_rounds
    lines = [
        f"\n### {time.strftime('%Y-%m-%d %H:%M')} -- {machine_line()}\n",
        f"`{' '.join(sys.argv)}`\n",
        head,
        "|" + "---|" * 25,
    ]
    for (net, pol, mod), rs in results.items():

        def cat(c: str, rs: list[dict] = rs) -> np.ndarray:
            return np.concatenate([r[c] for r in rs])

        def med(k: str, rs: list[dict] = rs) -> float:
            return float(np.median([r[k] for r in rs]))

        tot = cat("update_ms") + cat("posterior_ms") + cat("index_ms") + cat("oracle_ms")
        cpu = np.concatenate([r["cpu_round_ms"][lo - 1 : hi] for r in rs])  # rounds lo..hi (1-based)
        loads = [x for r in rs for x in r["load"]]
        label = LABEL.get(mod, mod.replace("gp-exact+", "exact, "))
        lines.append(
            f"| {net} | {rs[0]['edges']} | {pol.upper()} | {label} | {rs[0]['rounds']} x {len(rs)} | "
            f"**{np.median(tot):.0f}** | {np.median(cat('update_ms')):.0f} | {np.median(cat('posterior_ms')):.1f} | "
            f"{np.median(cat('index_ms') + cat('oracle_ms')):.1f} | {np.percentile(tot, 90):.0f} | "
            f"{1e-3 * tot.sum() / len(rs):.1f} | "
            f"{max(r['distinct_edges'] for r in rs)} | {med('linegraph_s'):.1f} | {med('env_s'):.1f} | "
            f"{med('model_s'):.1f} | {max(r['peak_rss_mb'] for r in rs):.0f} | {min(loads):.1f}-{max(loads):.1f} | "
            f"{med('cpu_share'):.2f} | **{np.median(cpu):.0f}** | {np.percentile(cpu, 90):.0f} | "
            f"{med('cpu_prep_s'):.1f} | **{med('cpu_setup1_s'):.1f}** | {_stage_cells(rs)} | "
            f"{_work_cells(rs, lo, hi)} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out and not args.table_from:
        with open(args.out + ".json", "a") as fh:  # every child's raw result (per-round CPU, work counters)
            fh.write(json.dumps({f"{k[0]}/{k[2]}/{k[1]}": v for k, v in results.items()}) + "\n")
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
