"""Benchmark: recording EV edge traversals through SUMO's Parquet battery output vs libsumo, side by side.

Both backends simulate the same demand (``--minutes`` of background traffic at ``--rate`` vehicles/hour on
``--network``) and must return identical traversals; the script times each ``--repeats`` times, alternating,
and prints medians.  Run under ``nice -n 10`` on the shared machine:

    nice -n 10 .venv/bin/python -m studies.bench.bench_sumo_recording --network monaco --minutes 15 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from evroute.network.registry import converted_net_path, dataset_path, load_network
from evroute.sumo.record import record_traversals
from evroute.sumo.scenario import background_demand
from studies.common.bench import machine_line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="monaco")
    ap.add_argument("--minutes", type=int, default=15, help="simulated minutes of traffic (from 8:00)")
    ap.add_argument("--rate", type=float, default=1800.0, help="vehicles per hour")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    load_network(args.network)  # converts and caches the net
    net = converted_net_path(dataset_path(args.network), args.network)
    routes = background_demand(net, peak_per_hour=args.rate, hours=(8, 9), profile=tuple([1.0] * 24), seed=0)
    begin, end = 8 * 3600.0, 8 * 3600.0 + 60.0 * args.minutes
    print(machine_line())
    times: dict[str, list[float]] = {"output": [], "libsumo": []}
    results = {}
    for _ in range(args.repeats):
        for method in times:
            t0 = time.perf_counter()
            results[method] = record_traversals(net, [routes], begin=begin, end=end, method=method)
            times[method].append(time.perf_counter() - t0)
    a, b = results["output"], results["libsumo"]
    same = len(a) == len(b) and (a["edge"].to_numpy() == b["edge"].to_numpy()).all()
    diff = float(np.abs(a["energy_wh"].to_numpy() - b["energy_wh"].to_numpy()).max()) if same else float("nan")
    print(
        f"{args.network}, {args.minutes} min at {args.rate:g} veh/h: {len(a)} / {len(b)} traversals (output / "
        f"libsumo); same edges: {same}, largest energy difference {diff:.2e} Wh"
    )
    for method, ts in times.items():
        print(f"  {method:8s} median {statistics.median(ts):7.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ts)})")


if __name__ == "__main__":
    main()
