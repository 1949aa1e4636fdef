"""Load test of ``evroute serve`` on localhost: start time, ``POST /route`` latency percentiles and throughput with
1, 8 and 64 concurrent clients, errors, a model swap under load, and the server's memory over a long run.

For each model kind (BI, exact GP) the script saves a model file learned from synthetic observations (physics mean
plus Gaussian noise on random edges of the network; seed 0), starts ``python -m evroute serve --network N
--model-file M`` as a child process (twice: the first start warms the caches, the second is timed), sends ``POST
/route`` requests with a start charge (so the risk-aware route is searched too) between random pairs of edges from
client threads (one ``httpx.Client`` with keep-alive each), and records per request the client latency and the
server's own ``elapsed_ms``; the server's CPU time comes from ``/proc/<pid>/stat`` (psutil), the machine load from
``os.getloadavg``.  Requests are bounded in number and the whole run in time (``--time-limit``); only 127.0.0.1 is
contacted.  The data go to a JSON file, from which ``--doc`` writes the Markdown page::

    python -m studies.bench.benchmark_serve --network luxembourg --out docs/data/benchmark_serve.json \\
        --doc docs/benchmark_serve.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np


def build_model(kind: str, network: str, path: Path, n_obs: int, n_edges: int, seed: int = 0) -> dict[str, Any]:
    """Save a ``kind`` model of ``network`` learned from ``n_obs`` synthetic observations of at most ``n_edges``
    random edges."""
    from evroute.energy import VehicleProfile
    from evroute.experiments.runner import load_linegraph
    from evroute.models.store import prior_model, save_model

    lg = load_linegraph(network)
    vehicle = VehicleProfile.load("sumo_ev")
    t0 = time.perf_counter()
    extra: dict[str, Any] = {"learn_hyper": False} if kind == "gp-exact" else {}
    model = prior_model(kind, lg, vehicle, **extra)
    rng = np.random.default_rng(seed)
    pool = rng.choice(lg.n_nodes, size=min(n_edges, lg.n_nodes), replace=False)
    e = rng.choice(pool, size=n_obs)
    post = model.posterior()
    sd = np.sqrt(np.broadcast_to(np.asarray(post.noise_var, dtype=np.float64), (lg.n_nodes,)))
    model.update(e, post.mean[e] + rng.normal(0.0, 1.0, n_obs) * sd[e])
    save_model(path, model, lg, vehicle=vehicle, meta={"source": "benchmark_serve synthetic observations"})
    seconds = time.perf_counter() - t0
    return {"kind": kind, "observations": n_obs, "distinct_edges": int(len(np.unique(e))), "seconds": seconds}


def start_server(network: str, model: Path, port: int) -> tuple[subprocess.Popen[str], float, float]:
    """Start ``evroute serve``; returns the process, the seconds until ``GET /health`` answered and the CPU seconds
    the server had used by then (load-independent, unlike the wall time)."""
    import httpx
    import psutil

    t0 = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "evroute",
        "serve",
        "--network",
        network,
        "--model-file",
        str(model),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"evroute serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                cpu = psutil.Process(proc.pid).cpu_times()
                return proc, time.perf_counter() - t0, cpu.user + cpu.system
        except httpx.TransportError:
            time.sleep(0.05)
        if time.perf_counter() - t0 > 300:
            proc.kill()
            raise RuntimeError("evroute serve did not answer within 300 s")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def bodies(edge_ids: list[str], n: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, len(edge_ids), size=(n, 2))
    return [
        {"origin": edge_ids[a], "destination": edge_ids[b], "charge": 0.8, "reserve": 0.1, "edges": False}
        for a, b in pairs.tolist()
    ]


def load_level(url: str, reqs: list[dict[str, Any]], clients: int, proc_pid: int, deadline: float) -> dict[str, Any]:
    """Send ``reqs`` from ``clients`` threads; latencies (ms), statuses, wall and CPU times, load average."""
    import httpx
    import psutil

    server = psutil.Process(proc_pid)
    lat = np.full(len(reqs), np.nan)
    inner = np.full(len(reqs), np.nan)
    status = np.zeros(len(reqs), dtype=np.int64)
    nxt = iter(range(len(reqs)))
    lock = threading.Lock()

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=120) as c:
            while time.monotonic() < deadline:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                t = time.perf_counter()
                try:
                    r = c.post("/route", json=reqs[i])
                    status[i] = r.status_code
                    if r.status_code == 200:
                        inner[i] = r.json()["elapsed_ms"]
                except httpx.HTTPError:
                    status[i] = -1
                lat[i] = 1000.0 * (time.perf_counter() - t)

    load0, cpu0, me0 = os.getloadavg(), server.cpu_times(), os.times()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(worker) for _ in range(clients)]:
            f.result()
    wall = time.perf_counter() - t0
    cpu1, me1 = server.cpu_times(), os.times()
    done = ~np.isnan(lat)
    ok = done & (status == 200)
    q = np.percentile(lat[ok], [50, 95, 99]) if ok.any() else [np.nan] * 3
    qi = np.percentile(inner[ok], [50, 99]) if ok.any() else [np.nan] * 2
    return {
        "clients": clients,
        "requests": int(done.sum()),
        "errors": int((done & (status != 200)).sum()),
        "wall_s": wall,
        "throughput_rps": float(done.sum() / wall),
        "p50_ms": float(q[0]),
        "p95_ms": float(q[1]),
        "p99_ms": float(q[2]),
        "server_p50_ms": float(qi[0]),
        "server_p99_ms": float(qi[1]),
        "server_cpu_s": (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system),
        "client_cpu_s": (me1.user + me1.system) - (me0.user + me0.system),
        "loadavg_before": list(load0),
        "loadavg_after": list(os.getloadavg()),
    }


def memory_run(
    url: str, reqs: list[dict[str, Any]], clients: int, pid: int, deadline: float, swaps: int
) -> dict[str, Any]:
    """``reqs`` at ``clients`` in chunks, the server's RSS after each chunk; ``swaps`` model swaps
    (``POST /observe``) spread over the run."""
    import httpx
    import psutil

    server = psutil.Process(pid)
    chunks = np.array_split(np.arange(len(reqs)), 10)
    rss, levels, versions = [server.memory_info().rss / 2**20], [], []
    ids = [r["origin"] for r in reqs[:50]]
    for k, idx in enumerate(chunks):
        if time.monotonic() > deadline:
            break
        swap = None
        if k < swaps:

            def observe(k: int = k) -> None:
                body = {"edges": ids[:5], "energies_wh": [50.0 + k] * 5}
                versions.append(httpx.post(f"{url}/observe", json=body, timeout=300).json()["model_version"])

            swap = threading.Thread(target=observe)
            swap.start()
        levels.append(load_level(url, [reqs[i] for i in idx], clients, pid, deadline))
        if swap is not None:
            swap.join()
        rss.append(server.memory_info().rss / 2**20)
    return {
        "clients": clients,
        "requests": sum(x["requests"] for x in levels),
        "errors": sum(x["errors"] for x in levels),
        "rss_mb": rss,
        "swapped_to_versions": versions,
        "p50_ms": float(np.median([x["p50_ms"] for x in levels])),
        "wall_s": sum(x["wall_s"] for x in levels),
        "server_cpu_s": sum(x["server_cpu_s"] for x in levels),
    }


def measure_starts(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """Re-measure only the start (wall and server CPU; two starts per kind, the second timed) into ``data``, with
    the model files of ``--models-dir`` (built there as the full run builds them when absent)."""
    folder = Path(args.models_dir)
    folder.mkdir(parents=True, exist_ok=True)
    data["start_command"] = " ".join(["python", "-m", "studies.bench.benchmark_serve", *sys.argv[1:]])
    for kind in args.kinds.split(","):
        model = folder / f"{kind}.npz"
        if not model.is_file():
            build_model(kind, args.network, model, args.observations, args.observed_edges)
        proc, _, _ = start_server(args.network, model, args.port)
        stop(proc)
        load0 = os.getloadavg()
        proc, wall, cpu = start_server(args.network, model, args.port)
        stop(proc)
        res = data["kinds"].setdefault(kind, {})
        res.update({"start_s": wall, "start_cpu_s": cpu, "start_loadavg": list(load0)})
        print(f"{kind}: started in {wall:.2f} s, {cpu:.2f} s CPU (load {load0[0]:.2f})", flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from evroute.experiments.runner import load_linegraph

    deadline = time.monotonic() + args.time_limit
    edge_ids = [str(x) for x in load_linegraph(args.network).network.edge_ids]
    out: dict[str, Any] = {
        "network": args.network,
        "cpus": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),
        "command": " ".join(["python", "-m", "studies.bench.benchmark_serve", *sys.argv[1:]]),
        "kinds": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="evroute-bench-serve-"))
    for kind in args.kinds.split(","):
        n_req = args.requests if kind == "bi" else args.gp_requests
        model = workdir / f"{kind}.npz"
        res: dict[str, Any] = {"model": build_model(kind, args.network, model, args.observations, args.observed_edges)}
        print(f"{kind}: model {res['model']}", flush=True)
        proc, _, _ = start_server(args.network, model, args.port)  # warms the caches
        stop(proc)
        res["start_loadavg"] = list(os.getloadavg())
        proc, res["start_s"], res["start_cpu_s"] = start_server(args.network, model, args.port)
        print(f"{kind}: started in {res['start_s']:.2f} s", flush=True)
        url = f"http://127.0.0.1:{args.port}"
        try:
            load_level(url, bodies(edge_ids, args.warmup, 99), 1, proc.pid, deadline)  # warm-up
            res["levels"] = []
            for i, clients in enumerate(int(c) for c in args.clients.split(",")):
                lv = load_level(url, bodies(edge_ids, n_req, i), clients, proc.pid, deadline)
                print(f"{kind}: {json.dumps(lv)}", flush=True)
                res["levels"].append(lv)
            n_mem = args.memory_requests if kind == "bi" else args.gp_memory_requests
            res["memory"] = memory_run(url, bodies(edge_ids, n_mem, 7), 8, proc.pid, deadline, args.swaps)
            print(f"{kind}: memory {json.dumps(res['memory'])}", flush=True)
        finally:
            stop(proc)
        out["kinds"][kind] = res
    out["loadavg_end"] = list(os.getloadavg())
    out["timed_out"] = time.monotonic() > deadline
    return out


def _f(x: float, d: int = 1) -> str:
    return f"{x:.{d}f}"


def write_doc(data: dict[str, Any], path: Path, data_path: str) -> None:
    goals = {"bi": 10.0, "gp-exact": 50.0}
    lines = [
        "# Serving benchmark: `evroute serve` under load",
        "",
        f"Generated by `{data['command']}` from its data file `{data_path}`; do not edit by hand.",
        "",
        f"Network `{data['network']}`; machine: {data['cpus']} CPUs, load average (1, 5, 15 min) "
        f"{', '.join(_f(x, 2) for x in data['loadavg_start'])} at the start and "
        f"{', '.join(_f(x, 2) for x in data['loadavg_end'])} at the end (a shared machine: other work ran on it; "
        "a load above the CPU count means requests waited for a CPU).  Requests: `POST /route` between random pairs "
        "of edges with a start charge of 80 % and a reserve of 10 %, so each answers the energy-optimal, shortest, "
        "fastest and risk-aware routes with their energy +- sd and arrival charge; latency is the client's (request "
        "sent to reply parsed, over keep-alive HTTP/1.1 on 127.0.0.1), `server` the app's own `elapsed_ms`.  CPU "
        "times are the server process's (all its threads) and the load generator's.",
        "",
    ]
    if data.get("timed_out"):
        lines += ["**The run hit its time limit: some levels have fewer requests than asked.**", ""]
    for kind, res in data["kinds"].items():
        m = res["model"]
        lines += [
            f"## {kind}",
            "",
            f"Model: {m['observations']} synthetic observations of {m['distinct_edges']} distinct edges (physics mean "
            f"plus Gaussian noise of the model's noise sd, seed 0).  Start (`evroute serve` spawned to first "
            f"`GET /health` answered, warm cache): **{_f(res['start_s'], 2)} s** (goal <= 5 s)"
            + (
                f", {_f(res['start_cpu_s'], 2)} s of server CPU (load average {_f(res['start_loadavg'][0], 2)}; "
                f"measured by `{data['start_command']}`)."
                if "start_cpu_s" in res
                else "."
            ),
            "",
            "| clients | requests | errors | wall (s) | req/s | p50 (ms) | p95 (ms) | p99 (ms) | p99 / p50 | "
            "server p50 (ms) | server CPU (s) | server CPU / request (ms) | client CPU (s) | load before / after |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for lv in res["levels"]:
            lines.append(
                f"| {lv['clients']} | {lv['requests']} | {lv['errors']} | {_f(lv['wall_s'])} | "
                f"{_f(lv['throughput_rps'])} | {_f(lv['p50_ms'], 2)} | {_f(lv['p95_ms'], 2)} | {_f(lv['p99_ms'], 2)} | "
                f"{_f(lv['p99_ms'] / lv['p50_ms'], 2)} | {_f(lv['server_p50_ms'], 2)} | {_f(lv['server_cpu_s'])} | "
                f"{_f(1000 * lv['server_cpu_s'] / max(lv['requests'], 1), 2)} | "
                f"{_f(lv['client_cpu_s'])} | {_f(lv['loadavg_before'][0], 2)} / {_f(lv['loadavg_after'][0], 2)} |"
            )
        mem = res["memory"]
        rss = mem["rss_mb"]
        one = next((lv for lv in res["levels"] if lv["clients"] == 1), res["levels"][0])
        eight = next((lv for lv in res["levels"] if lv["clients"] == 8), None)
        lines += [
            "",
            f"Memory: {mem['requests']} requests at {mem['clients']} clients ({mem['errors']} errors) with "
            f"{len(mem['swapped_to_versions'])} model swaps (`POST /observe`, to versions "
            f"{mem['swapped_to_versions']}) during the run; server RSS (MB) at the start and after each tenth: "
            f"{', '.join(_f(x, 0) for x in rss)}.  Growth over the last half: "
            f"{_f(rss[-1] - rss[len(rss) // 2], 1)} MB.",
            "",
            f"Goals: warm p50 at 1 client {_f(one['p50_ms'], 2)} ms (goal <= {goals.get(kind, float('nan')):g} ms)"
            + (
                f"; p99 / p50 at 8 clients {_f(eight['p99_ms'] / eight['p50_ms'], 2)} (goal <= 3)"
                if eight is not None
                else ""
            )
            + f"; errors {sum(lv['errors'] for lv in res['levels']) + mem['errors']} (goal 0).",
            "",
            bound_sentence(one, data["cpus"]),
            "",
        ]
    path.write_text("\n".join(lines))


def bound_sentence(one: dict[str, Any], cpus: int) -> str:
    """What bounds the 1-client latency, from that level's numbers alone: the server's CPU per request, the rest of
    the client's p50 (outside the server's CPU time), and whether the load left a whole core to a runnable thread (a
    load average below the CPU count: then waiting for a CPU does not explain the rest)."""
    cpu_ms = 1000 * one["server_cpu_s"] / max(one["requests"], 1)
    load = one["loadavg_before"][0]
    share = min(1.0, cpus / max(load, 1e-9))
    head = (
        f"What bounds the latency: the server spends {_f(cpu_ms, 2)} ms of CPU per request at 1 client (route "
        f"searches, JSON, HTTP); the other {_f(one['p50_ms'] - cpu_ms, 2)} ms of the client's p50 of "
        f"{_f(one['p50_ms'], 2)} ms are outside the server's CPU time"
    )
    if share >= 1.0:
        return (
            f"{head} (the client's own work and the loopback round trip): the load average was {_f(load, 2)} on "
            f"{cpus} CPUs, below the CPU count (a runnable thread had, on average, a core of its own), so waiting "
            "for a CPU does not explain it."
        )
    return (
        f"{head}: the client's own work, the loopback round trip and waiting for a CPU (the load average was "
        f"{_f(load, 2)} on {cpus} CPUs, so a runnable thread got about {_f(share, 2)} of a core); how much is "
        "waiting was not measured."
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--network", default="luxembourg")
    p.add_argument("--kinds", default="bi,gp-exact", help="model kinds, comma-separated (default: %(default)s)")
    p.add_argument("--clients", default="1,8,64", help="concurrent clients per level (default: %(default)s)")
    p.add_argument("--requests", type=int, default=1000, help="requests per level, BI (default: %(default)s)")
    p.add_argument("--gp-requests", type=int, default=300, help="requests per level, exact GP (default: %(default)s)")
    p.add_argument("--memory-requests", type=int, default=10_000, help="memory run, BI (default: %(default)s)")
    p.add_argument("--gp-memory-requests", type=int, default=2000, help="memory run, GP (default: %(default)s)")
    p.add_argument("--swaps", type=int, default=5, help="model swaps during the memory run (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=100, help="warm-up requests (default: %(default)s)")
    p.add_argument("--observations", type=int, default=2000, help="observations the models learn from")
    p.add_argument("--observed-edges", type=int, default=500, help="distinct edges observed (at most)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--time-limit", type=float, default=1800.0, help="stop sending after this many seconds")
    p.add_argument("--out", default="docs/data/benchmark_serve.json", help="data file (default: %(default)s)")
    p.add_argument("--doc", default=None, help="also write the Markdown page (e.g. docs/benchmark_serve.md)")
    p.add_argument("--from-data", action="store_true", help="only rewrite --doc from the existing --out file")
    p.add_argument("--start-only", action="store_true", help="re-measure only the start times into the --out file")
    p.add_argument("--models-dir", default=None, help="--start-only: folder of the model files (kept between runs)")
    args = p.parse_args()
    out = Path(args.out)
    if args.start_only:
        if not args.models_dir:
            p.error("--start-only needs --models-dir")
        data = json.loads(out.read_text())
        measure_starts(args, data)
        out.write_text(json.dumps(data, indent=2) + "\n")
    elif not args.from_data:
        data = run(args)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")
        print(f"data: {out}")
    if args.doc:
        write_doc(json.loads(out.read_text()), Path(args.doc), args.out)
        print(f"page: {args.doc}")


if __name__ == "__main__":
    main()
