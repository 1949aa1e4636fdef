"""Served route queries (issue 39, item 2): speed-up engines from maintained libraries side by side on one line graph.

Usage::

    OMP_NUM_THREADS=1 nice -n 15 python -m studies.bench.served_engines --edges 10000 100000
    python -m studies.bench.served_engines --report-only      # rebuild docs/served_engines.md from the data

For each size, the parent builds ``synthetic:EDGES:0`` (the synthetic city) and its line graph as ``evroute run`` does,
takes the served weights of :mod:`studies.bench.scale_measure`'s "CCH query" step (the reduced costs of the BI
posterior means, :meth:`evroute.driver.query.QueryContext.least_mean_arcs`, here after one BI-TS round), draws the
same random pairs (``numpy.random.default_rng(0)``), finds each pair's cost by SciPy's Dijkstra (the reference) and
the dissection order of :mod:`evroute.cch`, and writes them to a temporary ``.npz``.  Then each engine runs in a fresh
child process under a CPU-time cap (``--cap-s``; a child killed by it is recorded as such) and one
BLAS/OpenMP thread, and reports:

* ``build``: CPU seconds from the arcs and weights to a router: for the two CCHs the contraction (once per network)
  plus one customization (once per model version), for the weight-dependent hierarchies (``ch-router``, ``pandana``)
  everything, per model version; the dissection order (once per network) is shown apart;
* ``peak``: the child's peak resident memory (``ru_maxrss``), the loaded arrays included;
* ``query``: the median CPU time of one point-to-point query with its node path, over the pairs;
* ``gap``: the largest ``|cost(route) - cost(Dijkstra)|`` over the pairs, the route's cost summed from the real weights
  along its node path (checked to be a path of the line graph from start to goal; ``inf`` otherwise), against the
  quantization bound ``n q`` of :mod:`evroute.cch` for engines with integer weights ``round(w / q)``,
  ``q = sum(w) / 2^30`` (``n`` line-graph nodes; pandana takes the float weights).

Engines: ``routingkit-cch`` (:mod:`evroute.cch`'s engine: RoutingKit's CCH on the dissection order),
``pyroutingkit`` (RoutingKit's CCH with its inertial-flow order on the road edges' midpoints), ``ch-router``
(RoutingKit's weight-dependent contraction hierarchy, ``ContractionHierarchy.build``), ``pandana`` (UrbanSim's
contraction hierarchy, float weights).  An engine whose package is not installed is recorded as such.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evroute.io import atomic_write_text

ENGINES = ("routingkit-cch", "pyroutingkit", "ch-router", "pandana")
#: the module each engine imports (not installed: recorded, not measured)
MODULES = {"routingkit-cch": "routingkit_cch", "pyroutingkit": "pyroutingkit", "ch-router": "routingkit_ch",
           "pandana": "pandana"}  # fmt: skip
DATA = Path("docs/data/served_engines.json")
OUT = Path("docs/served_engines.md")
COMMAND = "OMP_NUM_THREADS=1 nice -n 15 python -m studies.bench.served_engines"
_TOTAL = 2**30


def served_arcs(n_edges: int, queries: int, path: Path) -> dict[str, Any]:
    """Write the line graph of ``synthetic:n_edges:0``, its served arc weights, ``queries`` random pairs, their
    Dijkstra costs, the dissection order and the edges' midpoints to ``path`` (``.npz``); the sizes and CPU times."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    from evroute.cch import _arcs, dissection_order
    from evroute.driver.query import QueryContext, make_belief
    from evroute.energy import VehicleProfile
    from evroute.experiments import ExperimentConfig
    from evroute.experiments import runner as R
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.routes import edge_midpoints, resolve_route

    network = f"synthetic:{n_edges}:0"
    cfg = ExperimentConfig(network=network, route="A", model="bi", policy="ts", env="consistent", seeds=(0,))
    net = load_network(network)
    lg = build_line_graph(net)
    rs = resolve_route(lg, network, "A", None, None)
    env = R._environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), 0)
    bandit = R.make_bandit(cfg, R.Problem(lg, env, rs), 0)
    bandit.step()
    vehicle = VehicleProfile.load(cfg.vehicle)
    w = QueryContext(lg, make_belief(lg, bandit.model, vehicle), vehicle, engine="dijkstra").least_mean_arcs()
    indptr, tails, heads = _arcs(lg)
    n = lg.n_nodes
    pairs = np.random.default_rng(0).integers(0, n, size=(queries, 2))
    g = sp.csr_matrix((w, heads, indptr), shape=(n, n))
    ref = np.empty(queries)
    for i in range(0, queries, 10):  # ten sources at a time: (10, n) distances
        dist = dijkstra(g, directed=True, indices=pairs[i : i + 10, 0])
        ref[i : i + 10] = dist[np.arange(len(dist)), pairs[i : i + 10, 1]]
    c0 = time.process_time()
    order = dissection_order(lg)
    order_s = time.process_time() - c0
    mid = edge_midpoints(net.geometry)
    np.savez(path, tails=tails, heads=heads, w=w, pairs=pairs, ref=ref, order=order, mid=mid, n=n)
    return {"network": network, "edges": int(n), "turns": int(len(heads)), "dissection_order_cpu_s": order_s}


def _engine(name: str, n: int, tails: np.ndarray, heads: np.ndarray, w: np.ndarray, d: Any) -> Any:
    """Build engine ``name`` for arc weights ``w``; a function ``(s, t) -> node path`` (empty: unreachable)."""
    ints = np.rint(w / (float(w.sum()) / _TOTAL)).astype(np.uint32)
    if name == "routingkit-cch":
        import routingkit_cch as rk

        cch = rk.CCH(d["order"].tolist(), tails.tolist(), heads.tolist(), False)
        cq = rk.CCHQuery(rk.CCHMetric(cch, ints.tolist()))

        def cch_route(s: int, t: int) -> list[int]:
            res = cq.run(s, t)
            path = [] if res.distance is None else list(res.node_path)
            del res
            return path

        return cch_route
    if name == "pyroutingkit":
        from pyroutingkit import CCHMetric, CCHTopology

        topo = CCHTopology()
        mid = d["mid"]
        topo.build(tails.astype(np.uint32), heads.astype(np.uint32), mid[:, 1].astype(np.float32),
                   mid[:, 0].astype(np.float32), n)  # fmt: skip
        metric = CCHMetric(topo)
        metric.customize(ints)
        return lambda s, t: list(metric.query(s, t)[1])
    if name == "ch-router":
        from routingkit_ch import CHQuery, ContractionHierarchy

        ch = ContractionHierarchy.build(n, tails.astype(np.uint32), heads.astype(np.uint32), ints)
        q = CHQuery(ch)

        def ch_route(s: int, t: int) -> list[int]:
            q.reset().add_source(s).add_target(t).run()
            return list(q.get_node_path())

        return ch_route
    if name == "pandana":
        import pandas as pd
        from pandana import Network

        mid = d["mid"]
        net = Network(pd.Series(mid[:, 0]), pd.Series(mid[:, 1]), pd.Series(tails), pd.Series(heads),
                      pd.DataFrame({"w": w}), twoway=False)  # fmt: skip
        return lambda s, t: list(net.shortest_path(s, t, imp_name="w"))
    raise ValueError(f"unknown engine {name!r}")


def measure_engine(name: str, path: Path) -> dict[str, Any]:
    """One engine on the arcs at ``path`` in THIS process (module doc): build CPU, peak memory, query CPU, gaps."""
    d = np.load(path)
    n, tails, heads, w, pairs, ref = int(d["n"]), d["tails"], d["heads"], d["w"], d["pairs"], d["ref"]
    c0, w0 = time.process_time(), time.perf_counter()
    route = _engine(name, n, tails, heads, w, d)
    build_s, build_wall = time.process_time() - c0, time.perf_counter() - w0
    keys = tails * n + heads
    q = float(w.sum()) / _TOTAL
    cpu, gaps = [], []
    for (s, t), best in zip(pairs.tolist(), ref.tolist(), strict=True):
        c = time.process_time()
        path_nodes = route(s, t)
        cpu.append(time.process_time() - c)
        if not path_nodes:
            gaps.append(0.0 if np.isinf(best) else np.inf)
            continue
        p = np.asarray(path_nodes, dtype=np.int64)
        k = np.searchsorted(keys, p[:-1] * n + p[1:])
        k = np.minimum(k, len(keys) - 1)
        valid = p[0] == s and p[-1] == t and bool(np.all(keys[k] == p[:-1] * n + p[1:]))
        gaps.append(abs(float(w[k].sum()) - best) if valid else np.inf)
    return {
        "build_cpu_s": build_s,
        "build_wall_s": build_wall,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "query_cpu_s": statistics.median(cpu),
        "queries": len(cpu),
        "max_gap": max(gaps),
        "quantum": q,
        "error_bound": n * q,
    }


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child(name: str, path: Path, cap_s: float) -> dict[str, Any]:
    """``measure_engine`` in a fresh process, killed once it has used ``cap_s`` CPU seconds (polled: an
    ``RLIMIT_CPU`` would coarsen the child's CPU clock to the scheduler tick); an error or the cap is recorded."""
    try:
        __import__(MODULES[name])
    except ImportError:
        return {"status": f"not installed (pip install {name})"}
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "studies.bench.served_engines", "--child", name, str(path)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        while p.poll() is None:
            try:
                over = _cpu_s(p.pid) > cap_s
            except (OSError, ValueError, IndexError):
                over = False
            if over:
                p.kill()
                p.wait()
                return {"status": f"over the {cap_s:g} s CPU cap"}
            time.sleep(1.0)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if p.returncode != 0:
        return {"status": f"failed: {(errors.strip().splitlines() or ['?'])[-1]}"}
    return {"status": "ok", **json.loads(text.strip().splitlines()[-1])}


def _fmt_s(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _commands(data: dict[str, Any]) -> str:
    """The commands that measured the data: sizes grouped by the engines measured there, with the CPU cap any of
    their children hit."""
    groups: dict[str, tuple[list[int], set[str]]] = {}
    for size in sorted(data["sizes"]):
        engines = data["results"][str(size)]["engines"]
        opt = "" if set(engines) == set(ENGINES) else " --engines " + " ".join(engines)
        sizes, caps = groups.setdefault(opt, ([], set()))
        sizes.append(size)
        caps.update(r["status"].split()[2] for r in engines.values() if r["status"].startswith("over"))
    cmds = [
        f"`{COMMAND} --edges {' '.join(map(str, sizes))}{opt}{''.join(f' --cap-s {c}' for c in sorted(caps))}`"
        for opt, (sizes, caps) in groups.items()
    ]
    return " and ".join(cmds)


def render(data: dict[str, Any]) -> str:
    """The page, from the data alone."""
    lines = [
        "# Served route queries: speed-up engines side by side",
        "",
        f"Generated by {_commands(data)} (data: `{DATA}`; "
        f"`--report-only` rebuilds this page).  Issue 39, item 2: a warm route query against a served model at "
        "1M edges <= 5 ms of CPU.  The module doc of `studies/bench/served_engines.py` defines every column; CPU "
        "time, one thread, each engine in a fresh process under a CPU cap.",
        "",
        f"Machine: {data['machine']}; commit {data['commit']}.",
        "",
        "| network | engine | build per model version (CPU) | peak memory | query (CPU, median) | max cost gap vs "
        "Dijkstra | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in data["sizes"]:
        row = data["results"][str(size)]
        name = f"`{row['network']}` ({row['edges']:,} line-graph nodes, {row['turns']:,} turns)"
        for eng in ENGINES:
            r = row["engines"].get(eng)
            if r is None:
                continue
            if r["status"] != "ok":
                lines.append(f"| {name} | {eng} | — | — | — | — | {r['status']} |")
                continue
            lines.append(
                f"| {name} | {eng} | {_fmt_s(r['build_cpu_s'])} | {r['peak_mb']:,.0f} MB | {_fmt_s(r['query_cpu_s'])} "
                f"| {r['max_gap']:.3g} (bound n q = {r['error_bound']:.3g}) | ok |"
            )
        lines.append(
            f"| {name} | (dissection order, once per network) | {_fmt_s(row['dissection_order_cpu_s'])} | | | | |"
        )
    lines += ["", *bounds(data)]
    return "\n".join(lines) + "\n"


#: the size the query target is set at (the benchmark's 1M city, ``docs/benchmark_scale.md``), its target (CPU s)
TARGET_EDGES, TARGET_QUERY_S = 1_012_093, 0.005


def _scale_row(benchmark: dict[str, Any]) -> str:
    """The CCH's set-up at 1M edges from ``docs/data/benchmark_scale.json`` (what a served model pays today)."""
    steps = benchmark.get("sizes", {}).get("1000000", {}).get("cold", {}).get("steps", {})
    pre, cus = steps.get("CCH preprocessing", {}).get("cpu_s"), steps.get("CCH customization", {}).get("cpu_s")
    if pre is None or cus is None:
        return ""
    return f" (today's CCH at 1M edges: preprocessing {_fmt_s(pre)} once per network, customization {_fmt_s(cus)})"


def bounds(data: dict[str, Any]) -> list[str]:
    """Per engine: growth exponents of build and query between the two largest sizes it finished and their
    extrapolation to the 1M-edge city, or the cap it hit (a lower bound: a build grows at least linearly)."""
    out = ["## What bounds each engine at 1M edges", ""]
    sizes = sorted(data["sizes"])
    for eng in ENGINES:
        done = [(data["results"][str(k)]["edges"], data["results"][str(k)]["engines"].get(eng, {})) for k in sizes]
        ok = [(e, r) for e, r in done if r.get("status") == "ok"]
        over = [(e, r) for e, r in done if r.get("status", "").startswith("over")]
        if not ok and not over:
            continue
        parts = []
        if ok:
            e, r = ok[-1]
            parts.append(f"at {e:,} nodes build {_fmt_s(r['build_cpu_s'])}, query {_fmt_s(r['query_cpu_s'])}")
        if over:
            e, r = over[0]
            low = float(r["status"].split()[2]) * TARGET_EDGES / e  # "over the CAP s CPU cap"
            parts.append(f"{r['status']} at {e:,} nodes, so at least {_fmt_s(low)} at 1M (linear growth)")
        if ok and ok[-1][0] >= TARGET_EDGES * 0.9:  # measured at the target size
            verdict = "meets" if ok[-1][1]["query_cpu_s"] <= TARGET_QUERY_S else "misses"
            parts.append(f"measured at 1M: {verdict} the {_fmt_s(TARGET_QUERY_S)} target")
        if len(ok) >= 2:
            (e0, r0), (e1, r1) = ok[-2], ok[-1]
            gb = np.log(r1["build_cpu_s"] / r0["build_cpu_s"]) / np.log(e1 / e0)
            at_1m = (
                "" if e1 >= TARGET_EDGES * 0.9 else f": ~{_fmt_s(r1['build_cpu_s'] * (TARGET_EDGES / e1) ** gb)} at 1M"
            )
            parts.append(f"build grows as n^{gb:.2f} ({e0:,} -> {e1:,} nodes){at_1m}")
            if r0["query_cpu_s"] > 0 and r1["query_cpu_s"] > 0:
                gq = np.log(r1["query_cpu_s"] / r0["query_cpu_s"]) / np.log(e1 / e0)
                ext_q = r1["query_cpu_s"] * (TARGET_EDGES / e1) ** gq
                verdict = "meets" if ext_q <= TARGET_QUERY_S else "misses"
                at_1m = (
                    "" if e1 >= TARGET_EDGES * 0.9 else f": ~{_fmt_s(ext_q)} at 1M ({verdict} {_fmt_s(TARGET_QUERY_S)})"
                )
                parts.append(f"query grows as n^{gq:.2f}{at_1m}")
        text = f"* **{eng}**: " + "; ".join(parts)
        out.append(text + ".")
    out.append("")
    out.append(
        "A weight-dependent hierarchy is rebuilt for every model version; a CCH only re-customizes"
        + data.get("scale_cch", "")
        + "."
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edges", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--cap-s", type=float, default=300, help="CPU seconds per engine child")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "NPZ"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(measure_engine(args.child[0], Path(args.child[1]))))
        return 0
    data = json.loads(args.data.read_text()) if args.data.exists() else {"sizes": [], "results": {}}
    if not args.report_only:
        from studies.common.bench import machine_line
        from studies.reproduce.provenance import head_commit

        for size in args.edges:
            with tempfile.TemporaryDirectory() as tmp:
                npz = Path(tmp) / "arcs.npz"
                row = data["results"].get(str(size), {}) | served_arcs(size, args.queries, npz)
                row.setdefault("engines", {})
                for eng in args.engines:
                    print(f"{size} {eng}", file=sys.stderr, flush=True)
                    row["engines"][eng] = _child(eng, npz, args.cap_s)
                data["results"][str(size)] = row
            data["sizes"] = sorted({*data["sizes"], size})
            data["machine"], data["commit"] = machine_line(), head_commit()
            scale = Path("docs/data/benchmark_scale.json")
            data["scale_cch"] = _scale_row(json.loads(scale.read_text())) if scale.exists() else ""
            atomic_write_text(args.data, json.dumps(data, indent=1, sort_keys=True) + "\n")
    atomic_write_text(args.out, render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
