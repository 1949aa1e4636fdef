"""Per-round latency of GP-TS (model update, prediction over all edges, index, oracle) and peak memory.

    EVROUTE_DATA=/work/shared/data .venv/bin/python -m studies.bench.bench_gp --networks luxembourg \
        --rounds 60 --out results/bench_gp_luxembourg.md

Run one network per process: the peak RSS (``ru_maxrss``) is the process's peak so far.  ``--policy ucb``
measures GP-UCB, whose inducing set reaches M within a few dozen rounds (the expensive regime).

The regret reference is not needed for latency, so the bandit gets a cheap stand-in optimal route
(Dijkstra on the clipped true energies) instead of the exact integer-programming oracle.  Rounds are
timed after the model's one-off set-up (graph Gram matrix), which is reported separately.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

from studies.common.bench import machine_line


def bench(network: str, rounds: int, params: dict, policy: str = "ts", route: str = "A") -> dict:
    import torch

    from evroute.bandit import RoutingBandit
    from evroute.experiments.registry import make_model
    from evroute.experiments.runner import _environment, load_linegraph
    from evroute.oracle import RouteOracle
    from evroute.policies import make_policy
    from evroute.routes import resolve_route

    load0 = os.getloadavg()[0]
    lg = load_linegraph(network)
    t0 = time.perf_counter()
    env = _environment(lg, "sumo_ev", "{}", 0)
    t_env = time.perf_counter() - t0
    rs = resolve_route(lg, network, route, None, None)  # named route (resources/routes.json), else a corner route
    s, g = rs.start, rs.goal
    opt = RouteOracle(lg).shortest_route(np.maximum(env.true_mean_wh, 1e-9), s, g)
    t0 = time.perf_counter()
    model = make_model("gp", env, **params)
    model.posterior()  # builds the graph Gram matrix / eigenpairs once
    t_setup = time.perf_counter() - t0
    split: list[tuple[float, float]] = []  # per round: inducing-set change, optimisation step (ms)
    update = model.update

    def timed_update(edges, energies):
        update(edges, energies)
        split.append((model.stats.get("inducing_ms", 0.0), model.stats.get("steps_ms", 0.0)))

    model.update = timed_update
    bandit = RoutingBandit(env, model, make_policy(policy), s, g, seed=0, optimal=opt)
    w0, c0 = time.perf_counter(), time.process_time()
    recs = bandit.run(rounds)
    cpu_share = (time.process_time() - c0) / (time.perf_counter() - w0)  # < 1: the process waited for a CPU
    cols = ["update_ms", "posterior_ms", "index_ms", "oracle_ms"]
    arr = {c: np.array([getattr(r, c) for r in recs]) for c in cols}
    total = sum(arr.values())
    return {
        "network": network,
        "policy": policy,
        "load_before": load0,
        "edges": lg.n_nodes,
        "rounds": rounds,
        "M_final": len(model.inducing_edges),
        "obs_final": model.n_obs,
        "env_s": t_env,
        "setup_s": t_setup,
        **{c: float(np.median(v)) for c, v in arr.items()},
        "inducing_mean_ms": float(np.mean([a for a, _ in split])),
        "steps_mean_ms": float(np.mean([b for _, b in split])),
        "update_mean_ms": float(np.mean(arr["update_ms"])),
        "predict_mean_ms": float(np.mean(arr["posterior_ms"])),
        "total_median_ms": float(np.median(total)),
        "total_p90_ms": float(np.percentile(total, 90)),
        "last10_ms": float(np.mean(total[-10:])),
        "cpu_share": cpu_share,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch_threads": torch.get_num_threads(),
        "load_after": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="+", default=["monaco", "luxembourg"])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--n-inducing", type=int, default=1000)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--policy", default="ts", help="index policy (ts: GP-TS; ucb: GP-UCB, whose M saturates)")
    ap.add_argument("--route", default="A", help="named route of evroute/resources/routes.json (else a corner route)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (the model's default: 1)")
    ap.add_argument("--out", default=None, help="append a Markdown table to this file")
    args = ap.parse_args()
    rows = []
    for net in args.networks:
        r = bench(
            net,
            args.rounds,
            {"n_inducing": args.n_inducing, "dtype": args.dtype, "threads": args.threads},
            args.policy,
            args.route,
        )
        rows.append(r)
        print(r, flush=True)
    head = (
        "| network | policy | edges | rounds | M at end | obs at end | update ms | predict ms | index ms "
        "| oracle ms | total median ms | total p90 ms | mean of last 10 ms | mean update ms (inducing + step) "
        "| mean predict ms | env s | set-up s | peak RSS MB | load avg | CPU share |"
    )
    lines = [
        f"\n### {time.strftime('%Y-%m-%d %H:%M')} -- {machine_line()}; torch {args.threads} thread(s), "
        f"dtype {args.dtype}, M <= {args.n_inducing}, route {args.route}\n",
        f"`{' '.join(sys.argv)}`\n",
        head,
        "|" + "---|" * 21,
    ]
    for r in rows:
        lines.append(
            f"| {r['network']} | GP-{r['policy'].upper()} | {r['edges']} | {r['rounds']} | "
            f"{r['M_final']} | {r['obs_final']} | "
            f"{r['update_ms']:.0f} | {r['posterior_ms']:.0f} | {r['index_ms']:.1f} | {r['oracle_ms']:.1f} | "
            f"{r['total_median_ms']:.0f} | {r['total_p90_ms']:.0f} | {r['last10_ms']:.0f} | "
            f"{r['update_mean_ms']:.0f} ({r['inducing_mean_ms']:.0f} + {r['steps_mean_ms']:.0f}) | "
            f"{r['predict_mean_ms']:.0f} | "
            f"{r['env_s']:.1f} | {r['setup_s']:.1f} | {r['peak_rss_mb']:.0f} | "
            f"{r['load_before']:.1f}-{r['load_after']:.1f} | {r['cpu_share']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
