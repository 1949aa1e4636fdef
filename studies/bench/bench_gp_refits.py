"""Share of the exact GP's hyperparameter refits in the CPU time of a run (``--model gp-exact``).

Runs ``--rounds`` bandit rounds of each policy on one network and route (``--seed``; a stand-in reference route:
the reference does not change the model's cost, the regret column is against it) and reports, from
``time.process_time``: the CPU time of all rounds, of the refits inside them (:attr:`ExactGPEdgeModel.stats`
``refit_cpu_ms``) and of the rounds that refit (the refit plus the exact rebuild of the posterior that follows it),
with the load average and the BLAS threads::

    EVROUTE_DATA=/work/shared/data OMP_NUM_THREADS=1 nice -n 10 python -m studies.bench.bench_gp_refits \\
        --network luxembourg --policies ucb ts --rounds 500
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info

from evroute.environments import DEFAULT_ENVIRONMENT
from studies.common.bench import machine_line


def run(network: str, policy: str, rounds: int, route: str, environment: str, params: dict, seed: int = 0) -> dict:
    from evroute.bandit import RoutingBandit
    from evroute.experiments.registry import make_model
    from evroute.experiments.runner import _environment, load_linegraph
    from evroute.oracle import RouteOracle
    from evroute.policies import make_policy
    from evroute.routes import resolve_route

    lg = load_linegraph(network)
    env = _environment(lg, "sumo_ev", environment, "{}", seed)
    rs = resolve_route(lg, network, route, None, None)
    opt = RouteOracle(lg).shortest_route(np.maximum(env.true_mean_wh, 1e-9), rs.start, rs.goal)
    m = make_model("gp-exact", env, seed=seed, **params)
    m.posterior()
    bandit = RoutingBandit(env, m, make_policy(policy), rs.start, rs.goal, seed=seed, optimal=opt)
    cpu, refit, refit_rounds = [], [], []
    load0 = os.getloadavg()[0]
    for t in range(1, rounds + 1):
        c0 = time.process_time()
        bandit.step()
        cpu.append(1e3 * (time.process_time() - c0))
        refit.append(m.stats.get("refit_cpu_ms", 0.0))
        if m.stats.get("refit"):
            refit_rounds.append(t)
    return {
        "cpu": np.array(cpu),
        "refit": np.array(refit),
        "refit_rounds": refit_rounds,
        "regret": bandit.cumulative_regret,
        "edges": int(len(m.order)),
        "load": (load0, os.getloadavg()[0]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="luxembourg")
    ap.add_argument("--policies", nargs="+", default=["ucb", "ts"])
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--route", default="A")
    ap.add_argument("--environment", default=DEFAULT_ENVIRONMENT)
    ap.add_argument(
        "--model-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="gp-exact parameter, e.g. fit_max_edges=500",
    )
    ap.add_argument("--seed", type=int, default=0, help="environment, model and bandit seed")
    ap.add_argument("--out", default=None, help="append the Markdown table to this file")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        print("evroute: error: --rounds must be >= 1", file=sys.stderr)
        return 2
    try:
        params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.model_param)}
    except ValueError:
        print("evroute: error: --model-param takes NAME=VALUE with a JSON value", file=sys.stderr)
        return 2
    rows = []

    def label(pol: str) -> str:
        return pol.upper() + "".join(f", {p}" for p in args.model_param)

    for pol in args.policies:
        r = run(args.network, pol, args.rounds, args.route, args.environment, params, args.seed)
        total, fit = r["cpu"].sum() / 1e3, r["refit"].sum() / 1e3
        in_rounds = r["cpu"][np.array(r["refit_rounds"], dtype=int) - 1].sum() / 1e3 if r["refit_rounds"] else 0.0
        rows.append(
            f"| {args.network} {args.route} | {label(pol)} | {args.seed} | {args.rounds} | {total:.1f} | {fit:.2f} | "
            f"**{100 * fit / total:.1f} %** | {in_rounds:.2f} ({100 * in_rounds / total:.1f} %) | "
            f"{', '.join(map(str, r['refit_rounds']))} | {np.median(r['cpu']):.1f} | {r['regret']:.0f} | "
            f"{r['edges']} | "
            f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |"
        )
        print(rows[-1], flush=True)
    blas = "; ".join(f"{p['internal_api']} {p['num_threads']} thread(s)" for p in threadpool_info())
    text = "\n".join(
        [
            f"\n{machine_line()}; BLAS: {blas}",
            f"`python -m studies.bench.bench_gp_refits {' '.join(argv if argv is not None else sys.argv[1:])}`\n",
            "| network, route | policy | seed | rounds | CPU s (all rounds) | refits CPU s | **refits share** "
            "| refit rounds CPU s (refit + rebuild; share) | refit rounds | median round CPU ms | cumulative regret Wh "
            "| distinct edges | load avg |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
