"""Country scale (issue 39, item 6): set-up, memory, BI-TS rounds, CCH and Dijkstra queries and reach at 10k, 100k,
1M (and 5M) edges of the synthetic city (``--network city``, the default) and of the synthetic country
(``--network country``: towns, villages, rural roads, motorways), each size in fresh processes, and the page
generated from the numbers.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python -m studies.bench.benchmark_scale
    python -m studies.bench.benchmark_scale --sizes 5000000 --mem-gb 8 --timeout 900   # 5M, capped
    OMP_NUM_THREADS=1 ... nice -n 10 python -m studies.bench.benchmark_scale --network country   # the country
    python -m studies.bench.benchmark_scale --profile-size 1000000                       # what dominates at 1M
    python -m studies.bench.benchmark_scale --report-only --data docs/data/benchmark_scale.json --out FILE

For each size, a fresh child process with an EMPTY compute cache measures the cold set-up and everything after it
(:func:`studies.bench.scale_measure.measure`), then a second fresh child measures the set-up again from the cache the
first one filled (warm).  Each child runs under an address-space cap (``--mem-gb``, ``resource.setrlimit``) and a
wall-clock timeout; a child that fails or times out is recorded as such, never guessed.  ``--profile-size`` runs one
more child with each step under cProfile and records its top functions (they name what bounds each quantity).
Results are merged into ``--data`` size by size (resumable: ``--sizes`` picks what to (re)measure); the page
``--out`` is rendered from that JSON alone (:mod:`studies.bench.scale_report`), so ``--report-only`` rebuilds it
byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evroute.io import atomic_write_text
from studies.bench.scale_report import render
from studies.common.bench import machine_line
from studies.reproduce.provenance import head_commit

#: the measured networks: ``--network`` name -> registry family (``FAMILY:EDGES:SEED``)
NETWORKS = {"city": "synthetic", "country": "synthetic-country"}
DATA = Path("docs/data/benchmark_scale.json")
OUT = Path("docs/benchmark_scale.md")
#: sizes above this many edges skip the CCH steps (``--cch-max-edges``): customization took 66 s of CPU and 4.2 GB
#: peak at 1M edges and grows with exponent 1.6 (a grid's separators), so 5M would take ~9 min and more than 8 GB
CCH_MAX_EDGES = 2_000_000
COMMAND = (
    "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python -m studies.bench.benchmark_scale"
)


def _in_step(stderr: str | bytes | None) -> str:
    """`` in step NAME`` for the last step a child announced on ``stderr`` (empty when none)."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else (stderr or "")
    steps = [line[5:] for line in text.splitlines() if line.startswith("step ")]
    return f" in step {steps[-1]}" if steps else ""


def _key(network: str, *key: str) -> tuple[str, ...]:
    """Where a network's results live in the data: the city's at the top (as before the country), others under
    their name."""
    return key if network == "city" else (network, *key)


def _child(args: list[str], cache: str, mem_gb: float, timeout: float) -> dict[str, Any]:
    """Run ``python -m studies.bench.benchmark_scale --child ...`` with the compute cache at ``cache``, capped."""
    env = dict(os.environ, EVROUTE_COMPUTE_CACHE=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["MKL_NUM_THREADS"] = "1"
    cap = int(mem_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    w0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, "-m", "studies.bench.benchmark_scale", "--child", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired as e:
        return {"status": f"timed out after {timeout:.0f} s{_in_step(e.stderr)}"}
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {"status": f"failed (exit {p.returncode}, cap {mem_gb:g} GB){_in_step(p.stderr)}: {tail}"}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["status"] = "ok"
    res["child_wall_s"] = time.perf_counter() - w0
    return res


def measure_size(
    n: int, seed: int, mem_gb: float, timeout: float, cch_max: int = CCH_MAX_EDGES, network: str = "city"
) -> dict[str, Any]:
    """Cold then warm set-up of one size of ``network`` (:data:`NETWORKS`), each in a fresh process (module doc);
    above ``cch_max`` edges without the CCH steps."""
    net = ["--network", network]
    with tempfile.TemporaryDirectory(prefix="evroute-scale-") as cache:
        cold = _child([str(n), str(seed), "full" if n <= cch_max else "nocch", *net], cache, mem_gb, timeout)
        warm = (
            _child([str(n), str(seed), "setup", *net], cache, mem_gb, timeout)
            if cold["status"] == "ok"
            else {"status": "not run (cold run did not finish)"}
        )
    out = {
        "requested_edges": n,
        "mem_cap_gb": mem_gb,
        "timeout_s": timeout,
        "commit": head_commit(),
        "cold": cold,
        "warm": warm,
    }
    if n > cch_max:
        out["cch_skipped"] = f"CCH steps not run above {cch_max:,} edges (customization grows as n^1.6)"
    return out


def save(path: Path, key: tuple[str, ...], result: dict[str, Any]) -> dict[str, Any]:
    """Merge ``result`` into the JSON at ``path`` under ``key`` (re-read first: runs of other sizes may have written
    meanwhile) and write it back; the merged data."""
    d = json.loads(path.read_text()) if path.is_file() else {"sizes": {}}
    d["command"] = COMMAND
    d["machine"] = machine_line()
    node = d
    for k in key[:-1]:
        node = node.setdefault(k, {})
    node[key[-1]] = result
    if key[0] in NETWORKS:  # a network beside the city: the command that measures it
        d[key[0]]["command"] = f"{COMMAND} --network {key[0]}"
    atomic_write_text(path, json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=3, metavar=("EDGES", "SEED", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated edge counts to (re)measure")
    ap.add_argument("--network", choices=sorted(NETWORKS), default="city", help="synthetic city or country")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mem-gb", type=float, default=14.0, help="address-space cap of each child (GB)")
    ap.add_argument("--timeout", type=float, default=1500.0, help="wall-clock limit of each child (s)")
    ap.add_argument("--profile-size", type=int, default=0, help="profile every step once at this size")
    ap.add_argument("--cch-max-edges", type=int, default=CCH_MAX_EDGES, help="skip the CCH steps above this size")
    ap.add_argument("--report-only", action="store_true", help="render the page from --data, measure nothing")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if a.child:
        from studies.bench.scale_measure import measure

        n, seed, mode = int(a.child[0]), int(a.child[1]), a.child[2]
        res = measure(
            n,
            seed,
            setup_only=mode == "setup",
            profile=mode == "profile",
            cch=mode != "nocch",
            family=NETWORKS[a.network],
        )
        print(json.dumps(res))
        return 0
    if a.report_only:
        try:
            d = json.loads(a.data.read_text())
        except (OSError, ValueError) as e:
            print(f"evroute: error: cannot read benchmark data {a.data}: {e}", file=sys.stderr)
            return 2
        atomic_write_text(a.out, render(d))
        return 0
    try:
        sizes = [int(x) for x in a.sizes.split(",") if x]
    except ValueError:
        print(f"evroute: error: --sizes must be comma-separated integers, got {a.sizes!r}", file=sys.stderr)
        return 2
    for n in sizes:
        print(f"measuring {n} edges ...", file=sys.stderr, flush=True)
        res = measure_size(n, a.seed, a.mem_gb, a.timeout, a.cch_max_edges, a.network)
        d = save(a.data, _key(a.network, "sizes", str(n)), res)
    if a.profile_size:
        print(f"profiling {a.profile_size} edges ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="evroute-scale-") as cache:
            prof = _child(
                [str(a.profile_size), str(a.seed), "profile", "--network", a.network], cache, a.mem_gb, a.timeout
            )
        d = save(a.data, _key(a.network, "profile"), prof)
    if not sizes and not a.profile_size:
        d = json.loads(a.data.read_text())
    atomic_write_text(a.out, render(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
