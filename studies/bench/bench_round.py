"""Per-round latency of BI-TS (posterior, index, oracle, update) on synthetic and real networks.

Usage::

    python -m studies.bench.bench_round                       # synthetic 1k/10k/100k + monaco + luxembourg
    python -m studies.bench.bench_round --networks synthetic:1000 --rounds 200 --repeats 5
    python -m studies.bench.bench_round --markdown docs/benchmarks.md
    python -m studies.bench.bench_round --networks luxembourg --arms edge,turn   # edge vs turn arms, one run
    python -m studies.bench.bench_round --report-only --data docs/results/data/bench_round_turns.json --out FILE

Each (network) is measured ``--repeats`` times, each time over ``--rounds`` rounds after ``--warmup``
rounds; the table reports the median over all measured rounds of each component (ms) and the
median of the per-repeat medians of a whole round, in wall time and in CPU time of the process
(``time.process_time``: what the round costs on a shared machine, whatever the load).  ``--arms edge,turn``
measures each network with edge arms and with turn arms (:mod:`evroute.arms`: one arm per turn plus a terminal arm
per edge, Dijkstra with arc weights) side by side, in one process.  Real networks need ``EVROUTE_DATA``; they are
skipped with a note when it is not set.  Environment sampling and the regret reference are not
part of a round and are not timed here.  ``--data`` saves the numbers the table is built from; ``--report-only``
rebuilds the table from them alone (tests/studies/test_results_rebuild.py).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from evroute.arms import make_arms
from evroute.bandit import RoutingBandit
from evroute.environments import PaperEnvironment
from evroute.errors import EvrouteError
from evroute.experiments.runner import load_linegraph
from evroute.io import atomic_write_text
from evroute.models import BayesianEdgeModel
from evroute.oracle import rectified_reference_route
from evroute.policies import ThompsonSampling
from evroute.routes import resolve_route
from studies.common.bench import available_networks, machine_line
from studies.reproduce.provenance import commit_line, head_commit

DEFAULT_NETWORKS = ["synthetic:1000:0", "synthetic:10000:0", "synthetic:100000:0", "monaco", "luxembourg"]
COMPONENTS = ["posterior_ms", "index_ms", "oracle_ms", "update_ms"]


@functools.lru_cache(maxsize=1)
def problem(network: str, seed: int) -> tuple[Any, Any, Any, Any]:
    """Line graph, route A, environment and reference of ``network`` (sampled once for every kind of arm)."""
    lg = load_linegraph(network, None, None)
    route = resolve_route(lg, network, "A")
    env = PaperEnvironment.sample(lg, seed=seed)
    ref = rectified_reference_route(lg, env.true_mean_wh, env.noise_var, route.start, route.goal)
    return lg, route, env, ref


def bench(network: str, rounds: int, warmup: int, repeats: int, seed: int, arms: str = "edge") -> dict[str, float]:
    lg, route, env, ref = problem(network, seed)
    space = make_arms(lg, arms)
    samples: dict[str, list[float]] = {c: [] for c in COMPONENTS}
    totals: list[float] = []
    cpu_totals: list[float] = []
    for rep in range(repeats):
        model = BayesianEdgeModel(space.lift(env.prior_mean_wh), env.prior_var, env.noise_var)
        bandit = RoutingBandit(
            env, model, ThompsonSampling(), route.start, route.goal, seed=seed + rep, optimal=ref, arms=space
        )
        for _ in range(warmup):
            bandit.step()
        per_round, per_round_cpu = [], []
        for _ in range(rounds):
            p0, c0 = time.process_time(), time.perf_counter()
            rec = bandit.step()
            per_round.append(1e3 * (time.perf_counter() - c0))
            per_round_cpu.append(1e3 * (time.process_time() - p0))
            for c in COMPONENTS:
                samples[c].append(getattr(rec, c))
        totals.append(statistics.median(per_round))
        cpu_totals.append(statistics.median(per_round_cpu))
    out = {c: statistics.median(v) for c, v in samples.items()}
    out["round_ms"] = statistics.median(totals)
    out["round_cpu_ms"] = statistics.median(cpu_totals)
    out["edges"] = lg.n_nodes
    out["turns"] = lg.n_arcs
    out["arms"] = space.n_arms
    return out


def _findings(rows: list[dict[str, Any]]) -> str:
    """One sentence per network measured with both edge and turn arms: what turn arms cost, from the table's numbers."""
    by = {(r["network"], r["arms_kind"]): r for r in rows}
    out = []
    for net in dict.fromkeys(r["network"] for r in rows):
        e, t = by.get((net, "edge")), by.get((net, "turn"))
        if e is None or t is None:
            continue
        comp = max(COMPONENTS, key=lambda c: t[c] - e[c])
        out.append(
            f"- {net}: turn arms ({t['arms']} arms, {t['arms'] / e['arms']:.2f} x the {e['arms']} edge arms) cost "
            f"{t['round_cpu_ms'] / e['round_cpu_ms']:.2f} x the CPU of a round with edge arms "
            f"({t['round_cpu_ms']:.2f} vs {e['round_cpu_ms']:.2f} ms) and {t['round_ms'] / e['round_ms']:.2f} x its "
            f"wall time ({t['round_ms']:.2f} vs {e['round_ms']:.2f} ms); the component that grows most is "
            f"{comp[:-3]} (+{t[comp] - e[comp]:.2f} ms).\n"
        )
    return "\n" + "".join(out) if out else ""


def build_report(d: dict[str, Any]) -> str:
    """The Markdown table (and its findings), every number computed from the saved study ``d`` (see :func:`main`)."""
    header = (
        "| network | arms | edges (LCC) | turns | arms (count) | round (ms) | round CPU (ms) | posterior "
        "| index (TS + rectify) | oracle (Dijkstra) | update |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['network']} | {r['arms_kind']} | {r['edges']} | {r['turns']} | {r['arms']} | {r['round_ms']:.2f} | "
        f"{r['round_cpu_ms']:.2f} | {r['posterior_ms']:.2f} | {r['index_ms']:.2f} | {r['oracle_ms']:.2f} | "
        f"{r['update_ms']:.2f} |\n"
        for r in d["rows"]
    )
    data = ""
    if d.get("data"):
        name = f"data/{Path(d['data']).name}"
        data = (
            f"Generated from the numbers in [`{name}`]({name}) (rebuild without running anything: "
            f"`python -m studies.bench.bench_round --report-only --data docs/results/{name} --out FILE`).\n\n"
        )
    return (
        f"Command: `{d['command']}`  \nMachine: {d['machine']}  \n"
        + (commit_line(d.get("commit"), "bench_round_turns", timing=True) + "  \n" if d.get("commit") else "")
        + f"Medians over {d['repeats']} repeats x {d['rounds']} rounds (after {d['warmup']} warm-up rounds), ms; "
        "round CPU: process CPU time, the other columns wall time.\n\n" + data + header + body + _findings(d["rows"])
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=",".join(DEFAULT_NETWORKS))
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arms", default="edge", help="comma-separated arm kinds to measure: edge, turn (default edge)")
    ap.add_argument(
        "--markdown", "--out", dest="markdown", default=None, help="write the table (with machine and command) here"
    )
    ap.add_argument("--data", default=None, help="save the numbers the table is built from (JSON) here")
    ap.add_argument("--report-only", action="store_true", help="measure nothing; rebuild --out from --data alone")
    args = ap.parse_args(argv)
    if args.report_only:
        if not args.data or not Path(args.data).is_file():
            ap.exit(2, f"evroute: error: no saved benchmark at {args.data} (run it without --report-only)\n")
        if not args.markdown:
            ap.exit(2, "evroute: error: --report-only needs --out\n")
        d = json.loads(Path(args.data).read_text())
    else:
        kinds = [k.strip() for k in args.arms.split(",") if k.strip()]
        rows: list[dict[str, Any]] = []
        for net in available_networks(args.networks):
            for kind in kinds:
                try:
                    r = bench(net, args.rounds, args.warmup, args.repeats, args.seed, kind)
                except EvrouteError as exc:
                    print(f"skip {net} ({kind} arms): {exc}", file=sys.stderr)
                    continue
                rows.append({"network": net, "arms_kind": kind, **r})
                print(
                    f"{net:<22} {kind:<4} arms {r['arms']:>7} round {r['round_ms']:8.2f} ms "
                    f"(CPU {r['round_cpu_ms']:.2f})  " + "  ".join(f"{c[:-3]} {r[c]:7.2f}" for c in COMPONENTS),
                    flush=True,
                )
        cmd = "python -m studies.bench.bench_round " + " ".join(argv if argv is not None else sys.argv[1:])
        d = {
            "command": cmd.strip(),
            "machine": machine_line(),
            "commit": head_commit(),
            "load": os.getloadavg()[0],
            "repeats": args.repeats,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "seed": args.seed,
            "data": args.data,
            "rows": rows,
        }
        if args.data:
            atomic_write_text(Path(args.data), json.dumps(d, indent=1) + "\n")
    text = build_report(d)
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
