"""Cost of the graph Matérn kernel backends and of sampling the paper's environment.

Usage::

    python -m studies.bench.bench_graph_kernel --markdown docs/graph_kernel_bench.md
    python -m studies.bench.bench_graph_kernel --networks synthetic:1000:0,luxembourg --repeats 3

For each network: time to build the kernel with each backend (``dense`` eigendecomposition,
``sparse`` LU of the precision root plus the normaliser, ``eig`` with 200 eigenpairs), the time of
one ``K @ v`` product (sparse) and the time of one environment draw (``PaperEnvironment.sample``,
``auto`` method).  Medians over ``--repeats`` runs; backends too large for the machine are skipped
(``dense`` above 8,000 edges).  Real networks need ``EVROUTE_DATA``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from evroute.environments import PaperEnvironment
from evroute.experiments.runner import load_linegraph
from evroute.io import atomic_write_text
from evroute.kernels import GraphMaternKernel
from studies.common.bench import available_networks, machine_line

DEFAULT = "synthetic:1000:0,monaco,luxembourg,synthetic:20000:0,synthetic:100000:0"


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(net: str, repeats: int) -> dict[str, str]:
    """Build times of the three backends, one sparse ``K v``, and one environment draw for ``net``."""
    lg = load_linegraph(net)
    lap = lg.laplacian()
    n = lg.n_nodes
    r: dict[str, str] = {"network": net, "edges": str(n)}
    r["dense"] = (
        f"{_median_time(lambda: GraphMaternKernel(lap, method='dense'), repeats):.2f}" if n <= 8000 else "skipped"
    )
    r["sparse"] = f"{_median_time(lambda: GraphMaternKernel(lap, method='sparse'), repeats):.2f}"
    r["eig200"] = (
        f"{_median_time(lambda: GraphMaternKernel(lap, method='eig', n_eig=200), 1):.2f}" if n <= 30000 else "skipped"
    )
    k = GraphMaternKernel(lap, method="sparse")
    v = np.random.default_rng(0).standard_normal(n)
    r["matvec_ms"] = f"{1e3 * _median_time(lambda: k.matmul(v), max(repeats, 5)):.1f}"
    r["env_sample"] = f"{_median_time(lambda: PaperEnvironment.sample(lg, seed=0), repeats):.1f}"
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    rows = []
    for net in available_networks(args.networks):
        r = measure(net, args.repeats)
        rows.append(r)
        print(r, flush=True)
    text = (
        "Command: `python -m studies.bench.bench_graph_kernel "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`  \n"
        f"Machine: {machine_line()}. Medians of {args.repeats} runs, seconds unless stated.\n\n"
        "| network | edges (LCC) | build dense (eigh) | build sparse (LU + normaliser) | build eig (200 pairs) "
        "| sparse K v (ms) | environment draw (auto) |\n|---|---:|---:|---:|---:|---:|---:|\n"
        + "".join(
            f"| {r['network']} | {r['edges']} | {r['dense']} | {r['sparse']} | {r['eig200']} | "
            f"{r['matvec_ms']} | {r['env_sample']} |\n"
            for r in rows
        )
    )
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
