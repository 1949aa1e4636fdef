"""CCH orders side by side (issue 39; ``docs/benchmark_scale.md``, "CCH orders"): on the synthetic city and country,
the nested-dissection order with the cut at the median only (``median``: :func:`evroute.cch.dissection` before the
country), with the cut position chosen among :data:`evroute.cch.CUT_QUANTILES` (``refined``, the default now) and
RoutingKit's inertial flow on the line graph (``inertial``), each measured in CPU time: the order, the CCH's
contraction, one customization with travel times, and the median of 200 random point-to-point queries; plus the
root separator of the dissection orders.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 python -m studies.bench.cch_orders              # 100k and 1M, both networks
    python -m studies.bench.cch_orders --specs synthetic-country:100000:0 --orders median,refined

Results are merged into ``docs/data/benchmark_scale.json`` (key ``cch_orders``, one entry per network and order,
resumable) and the page is re-rendered from the data (:mod:`studies.bench.benchmark_scale`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evroute.io import atomic_write_text

DATA = Path("docs/data/benchmark_scale.json")
OUT = Path("docs/benchmark_scale.md")
COMMAND = "OMP_NUM_THREADS=1 nice -n 10 python -m studies.bench.cch_orders"
SPECS = (
    "synthetic-country:100000:0",
    "synthetic:100000:0",
    "synthetic-country:1000000:0",
    "synthetic:1000000:0",
)
ORDERS = ("median", "refined", "inertial")
#: RoutingKit's inertial flow on the city's 1M-edge line graph took 266 s of CPU (``evroute.cch``): not repeated
INERTIAL_SKIP = ("synthetic:1000000:0",)


def measure(spec: str, order_name: str, queries: int = 200) -> dict[str, Any]:
    """One order on one network, in this process (module doc)."""
    import routingkit_cch as rk

    from evroute.cch import CUT_QUANTILES, _arcs, dissection, dissection_order, junction_frame
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.routes import edge_midpoints

    lg = build_line_graph(load_network(spec))
    _, tails, heads = _arcs(lg)
    tl, hl = tails.tolist(), heads.tolist()
    net = lg.network
    seconds = net.length_m / net.speed_mps
    weights = np.rint(seconds[heads] * 1000).astype(np.int64).tolist()  # travel time of the arc's head, ms
    out: dict[str, Any] = {"spec": spec, "order": order_name, "edges": int(lg.n_nodes), "turns": len(tl)}
    c0 = time.process_time()
    if order_name == "inertial":
        mid = edge_midpoints(net.geometry)
        order = rk.compute_order_inertial(lg.n_nodes, tl, hl, mid[:, 1].tolist(), mid[:, 0].tolist())
    else:
        qs = (0.5,) if order_name == "median" else CUT_QUANTILES
        order = dissection_order(lg, quantiles=qs).tolist()
    out["order_s"] = time.process_time() - c0
    if order_name != "inertial":
        depth, _, sep = dissection(*junction_frame(lg), quantiles=qs)
        out["root_separator"] = int(np.count_nonzero(sep & (depth == 0)))
    c0 = time.process_time()
    cch = rk.CCH(order, tl, hl, False)
    out["contraction_s"] = time.process_time() - c0
    c0 = time.process_time()
    metric = rk.CCHMetric(cch, weights)
    out["customization_s"] = time.process_time() - c0
    query = rk.CCHQuery(metric)
    pairs = np.random.default_rng(0).integers(0, lg.n_nodes, (queries, 2)).tolist()
    cpu, dist = [], []
    for a, b in pairs:
        c0 = time.process_time()
        res = query.run(a, b)
        d = res.distance
        del res
        cpu.append(time.process_time() - c0)
        dist.append(-1 if d is None else int(d))
    out["query_s"] = statistics.median(cpu)
    out["distance_digest"] = int(np.sum(np.asarray(dist, dtype=np.int64) % 1_000_003))  # equal across orders
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "ORDER"), help=argparse.SUPPRESS)
    ap.add_argument("--specs", default=",".join(SPECS))
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(measure(a.child[0], a.child[1])))
        return 0
    orders = [o for o in a.orders.split(",") if o]
    if not set(orders) <= set(ORDERS):
        print(f"evroute: error: --orders must be among {', '.join(ORDERS)}, got {a.orders!r}", file=sys.stderr)
        return 2
    from studies.bench.benchmark_scale import save
    from studies.bench.scale_report import render

    d: dict[str, Any] = {}
    for spec in (s for s in a.specs.split(",") if s):
        for o in orders:
            if o == "inertial" and spec in INERTIAL_SKIP:
                continue
            print(f"{spec} {o} ...", file=sys.stderr, flush=True)
            p = subprocess.run(
                [sys.executable, "-m", "studies.bench.cch_orders", "--child", spec, o], capture_output=True, text=True
            )
            if p.returncode != 0:
                tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
                res: dict[str, Any] = {"spec": spec, "order": o, "status": f"failed (exit {p.returncode}): {tail}"}
            else:
                res = {**json.loads(p.stdout.strip().splitlines()[-1]), "status": "ok"}
            d = save(a.data, ("cch_orders", f"{spec} {o}"), res)
            d["cch_orders_command"] = COMMAND
            atomic_write_text(a.data, json.dumps(d, indent=1, sort_keys=True) + "\n")
    if d:
        atomic_write_text(a.out, render(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
