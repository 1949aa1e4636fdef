"""The Fig. 2 grid's regret references in the paper's environment, computed once and committed as a reference book.

    EVROUTE_DATA=/work/shared/data nice -n 5 .venv/bin/python -m studies.bench.fig2_references \\
        --out docs/data/fig2_paper_references.json --workers 2

For every (route, seed) of the grid (``studies/bench/bench_fig2_grid.py``'s paper environment, ``--potential none``)
the regret reference is computed through the compute cache (:func:`evroute.bandit.regret_reference_route`: the
integer program at its budget, then the best known route, where a negative-energy cycle rules out Dijkstra) and its
cache entry is written to the book (:mod:`studies.bench.reference_book`), with the CPU seconds it took.
Resumable: the book is rewritten after each (route, seed), and those already in it are skipped.
``bench_fig2_grid.py --references BOOK`` imports the book into the compute cache before it times the grid.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from studies.bench.reference_book import BOOK_VERSION, reference_record, write_book
from studies.common import report as R
from studies.common.bench import machine_line


def job(cfg: Any, seed: int) -> tuple[dict[str, Any] | None, float]:
    """The record of one (route, seed) and the CPU seconds of the environment draw and the search."""
    from evroute.experiments import runner as RR
    from evroute.experiments.threads import run_threads

    c0 = time.process_time()
    with run_threads():
        pb = RR.build_problem(cfg, seed)
        rec = reference_record(pb.env, pb.route.start, pb.route.goal)
    return rec, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", nargs="+", default=["luxembourg:A", "luxembourg:B", "monaco:A", "monaco:B"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", required=True, help="the reference book (JSON)")
    args = ap.parse_args()
    out = Path(args.out)
    book = json.loads(out.read_text()) if out.exists() else {"version": BOOK_VERSION, "records": [], "meta": {}}
    done = {(r["network"], r["route_name"], r["seed"]) for r in book["records"]}
    records: list[dict[str, Any]] = list(book["records"])
    meta = book.get("meta") or {"command": R.command_line(), "machine": machine_line(), "cells": {}}
    ns = argparse.Namespace(
        env="paper", horizon=500, seeds=args.seeds, potential="none", model_param=[], gp_model="gp-exact"
    )
    todo = []
    for network, route in R.parse_routes(args.routes):
        cfg = R.method_config(network, route, "bi-ts", ns)
        for seed in range(args.seeds):
            key = f"{network}:{route}:{seed}"
            if (network, route, seed) not in done and key not in meta["cells"]:
                todo.append((network, route, seed, cfg))
    print(f"{len(todo)} (route, seed) references to compute", flush=True)
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=get_context("spawn")) as pool:
        futs = {pool.submit(job, cfg, seed): (network, route, seed) for network, route, seed, cfg in todo}
        for fut in as_completed(futs):
            network, route, seed = futs[fut]
            rec, cpu = fut.result()
            meta["cells"][f"{network}:{route}:{seed}"] = {
                "cpu_s": round(cpu, 1),
                "searched": rec is not None,
                "load": os.getloadavg()[0],
            }
            if rec is not None:
                records.append({"network": network, "route_name": route, "seed": seed, **rec})
            records.sort(key=lambda r: (r["network"], r["route_name"], r["seed"]))
            write_book(out, records, meta)
            print(f"{network} {route} seed {seed}: {cpu:.0f} s CPU, searched: {rec is not None}", flush=True)


if __name__ == "__main__":
    main()
