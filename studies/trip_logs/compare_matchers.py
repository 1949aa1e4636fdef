"""Map matching side by side (issue 23): the project's HMM matcher and SUMO's ``sumolib.route.mapTrace`` on the same
known-truth SUMO traces.

Protocol (all seeded): ``--trips`` trips on ``--network`` between random edges (``evroute.sumo.triplogs.random_routes``,
seed 0, at least ``--min-route-m`` long), driven once by SUMO with the EV (``simulate_trips``, as the known-truth study
``studies/trip_logs/known_truth.py``); each exact FCD trace is degraded to 1 s sampling with ``--gps-sigma-m`` GPS noise
(``degrade``, seed 1000 + trip).  Both matchers get the same noisy positions:

* HMM: ``MatchIndex(lg, MatchOptions(sigma_m=max(noise, 5), beta_m=10))`` (the study's 1 s setting), ``match``;
* sumolib: ``sumolib.net.readNet`` of the same SUMO network, positions converted with ``net.convertLonLat2XY``, then
  ``mapTrace(xy, net, delta=--delta-m)`` (other arguments at their defaults: no gap filling, no direction penalty);
  ``rtree`` installed (sumolib's spatial index; without it sumolib searches edges by brute force).

Accuracy per trip, as in the known-truth study: recall = share of the true route's edges in the matched path,
precision = share of the matched path's edges in the true route.  Speed: CPU seconds (``time.process_time``) of the
matching calls only, as points per CPU second; the per-network set-up (HMM index; sumolib's network reading) apart.
Resumable: the simulation is kept in ``--sim-dir``.  Writes ``--data`` (JSON) and the report ``--out``;
``--report-only --data F --out F`` rebuilds the report from the JSON alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from studies.reproduce.provenance import commit_line, head_commit

MATCHERS = ("hmm", "sumolib")


def measure(args: argparse.Namespace) -> dict:
    """Simulate (or reuse), degrade, match with both matchers; the JSON record of the comparison."""
    import sumolib

    from evroute.energy import VehicleProfile
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.sumo.replay import sumo_net_file
    from evroute.sumo.triplogs import degrade, random_routes, simulate_trips
    from evroute.traces.formats import read_sumo_fcd
    from evroute.traces.mapmatch import MatchIndex, MatchOptions

    out = Path(args.sim_dir)
    out.mkdir(parents=True, exist_ok=True)
    lg = build_line_graph(load_network(args.network))
    net_file = sumo_net_file(lg)
    routes = random_routes(lg, args.trips, args.min_route_m, np.random.default_rng(0))
    sim = out / "sim"
    if not (sim / "battery.xml").is_file():
        simulate_trips(net_file, routes, sim, vehicle=VehicleProfile.load("sumo_ev"), depart_gap_s=20.0)
    traces = {t.name: t for t in read_sumo_fcd(sim / "fcd.xml", sim / "battery.xml")}
    names = [n for n in routes if n in traces]
    setup: dict[str, float] = {}
    t0 = time.process_time()
    index = MatchIndex(lg, MatchOptions(sigma_m=max(args.gps_sigma_m, 5.0), beta_m=10.0))
    setup["hmm"] = time.process_time() - t0
    t0 = time.process_time()
    snet = sumolib.net.readNet(str(net_file))
    setup["sumolib"] = time.process_time() - t0
    ids = lg.network.edge_ids
    per_trip = []
    for k, name in enumerate(names):
        log = degrade(
            traces[name], np.random.default_rng(1000 + k), gps_sigma_m=args.gps_sigma_m, period_s=1.0, soc_step_pct=0.1
        )
        truth = set(routes[name])
        row: dict = {"trip": name, "samples": len(log), "route_edges": len(truth)}
        t0 = time.process_time()
        m = index.match(log.lat, log.lon)
        row["hmm_cpu_s"] = time.process_time() - t0
        got = {str(ids[e]) for e in m.path.tolist()}
        row["hmm_recall"], row["hmm_precision"] = len(truth & got) / len(truth), len(truth & got) / max(len(got), 1)
        xy = [snet.convertLonLat2XY(lo, la) for la, lo in zip(log.lat.tolist(), log.lon.tolist(), strict=True)]
        t0 = time.process_time()
        path = sumolib.route.mapTrace(xy, snet, args.delta_m)
        row["sumolib_cpu_s"] = time.process_time() - t0
        got = {e.getID() for e in path}
        row["sumolib_recall"] = len(truth & got) / len(truth)
        row["sumolib_precision"] = len(truth & got) / max(len(got), 1)
        per_trip.append(row)
        print(
            f"{name}: {len(log)} points; HMM recall {row['hmm_recall']:.3f} precision {row['hmm_precision']:.3f}; "
            f"sumolib recall {row['sumolib_recall']:.3f} precision {row['sumolib_precision']:.3f}",
            file=sys.stderr,
        )
    return {
        "command": "python -m studies.trip_logs.compare_matchers "
        + f"--network {args.network} --trips {args.trips} --min-route-m {args.min_route_m:g} "
        + f"--gps-sigma-m {args.gps_sigma_m:g} --delta-m {args.delta_m:g}",
        "network": args.network,
        "edges": int(lg.n_nodes),
        "gps_sigma_m": args.gps_sigma_m,
        "delta_m": args.delta_m,
        "sumolib_version": getattr(sumolib, "__version__", "unknown"),
        "sumolib_rtree": importlib.util.find_spec("rtree") is not None,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores (shared), Python {platform.python_version()}",
        "load_average_1min": round(os.getloadavg()[0], 2),
        "commit": head_commit(),
        "setup_cpu_s": setup,
        "trips": per_trip,
    }


def report(data: dict) -> str:
    """The Markdown report of a comparison record (everything from ``data``)."""
    trips = data["trips"]
    samples = sum(t["samples"] for t in trips)
    lines = [
        "# Map matching: the project's HMM vs sumolib's mapTrace (generated)",
        "",
        f"Generated by `{data['command']}` (protocol in the script's docstring); rebuilt from "
        "[`data/map_matching_compare.json`](data/map_matching_compare.json) by "
        "`python -m studies.trip_logs.compare_matchers --report-only "
        "--data docs/results/data/map_matching_compare.json --out docs/results/map_matching_compare.md`.  "
        f"Machine: {data['machine']}, load average {data['load_average_1min']:.1f} when the measurement ended; "
        f"sumolib {data['sumolib_version']}, "
        + (
            "with `rtree` (its spatial index for the edge search)."
            if data["sumolib_rtree"]
            else "WITHOUT `rtree`: its edge search fell back to brute force, which dominates its CPU time."
        ),
        "",
        *([commit_line(str(data["commit"]), "map_matching_compare"), ""] if data.get("commit") else []),
        f"{len(trips)} SUMO trips on {data['network']} ({data['edges']} edges), logged at 1 s with "
        f"{data['gps_sigma_m']:g} m GPS noise: {samples} points in all.  sumolib's search radius `delta` = "
        f"{data['delta_m']:g} m.  Recall: share of the true route's edges in the matched path; precision: share of "
        "the matched path's edges in the true route (mean over trips, and the worst trip).  Speed: CPU seconds of the "
        "matching calls alone; set-up (index / network reading) once per network.",
        "",
        "| matcher | recall mean | recall min | precision mean | precision min | trips exact | CPU s | "
        "points / CPU s | set-up CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    stats = {}
    for m in MATCHERS:
        rec = np.array([t[f"{m}_recall"] for t in trips])
        pre = np.array([t[f"{m}_precision"] for t in trips])
        cpu = float(sum(t[f"{m}_cpu_s"] for t in trips))
        exact = int(np.sum((rec == 1.0) & (pre == 1.0)))
        stats[m] = (rec.mean(), pre.mean(), samples / max(cpu, 1e-12))
        lines.append(
            f"| {m} | {rec.mean():.3f} | {rec.min():.3f} | {pre.mean():.3f} | {pre.min():.3f} | {exact} of "
            f"{len(trips)} | {cpu:.2f} | {samples / max(cpu, 1e-12):,.0f} | {data['setup_cpu_s'][m]:.2f} |"
        )
    h, s = stats["hmm"], stats["sumolib"]
    d_rec = np.array([t["hmm_recall"] - t["sumolib_recall"] for t in trips])
    d_pre = np.array([t["hmm_precision"] - t["sumolib_precision"] for t in trips])

    def ci(d: np.ndarray) -> str:
        half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        return f"{d.mean():+.3f} (95 % interval {d.mean() - half:+.3f} to {d.mean() + half:+.3f}, {len(d)} trips)"

    lines += [
        "",
        f"Paired per trip, HMM minus sumolib: recall {ci(d_rec)}, precision {ci(d_pre)}.  "
        + (
            f"The HMM matched {h[2] / s[2]:.1f} times as many points per CPU second as sumolib"
            if h[2] >= s[2]
            else f"sumolib matched {s[2] / h[2]:.1f} times as many points per CPU second as the HMM"
        )
        + f" ({h[2]:,.0f} vs {s[2]:,.0f}).",
        "",
        "| trip | points | route edges | HMM recall | HMM precision | sumolib recall | sumolib precision |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in trips:
        lines.append(
            f"| {t['trip']} | {t['samples']} | {t['route_edges']} | {t['hmm_recall']:.3f} | "
            f"{t['hmm_precision']:.3f} | {t['sumolib_recall']:.3f} | {t['sumolib_precision']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--network", default="monaco")
    p.add_argument("--trips", type=int, default=20)
    p.add_argument("--min-route-m", type=float, default=1000.0)
    p.add_argument("--gps-sigma-m", type=float, default=5.0)
    p.add_argument("--delta-m", type=float, default=30.0, help="sumolib mapTrace search radius (m)")
    p.add_argument("--sim-dir", default="results/map_matching_compare", help="simulation folder (resumable)")
    p.add_argument("--data", default="docs/results/data/map_matching_compare.json")
    p.add_argument("--out", default="docs/results/map_matching_compare.md", help="the Markdown report")
    p.add_argument("--report-only", action="store_true", help="rebuild --out from --data alone")
    args = p.parse_args(argv)
    if args.report_only:
        try:
            data = json.loads(Path(args.data).read_text())
        except (OSError, ValueError) as exc:
            print(f"evroute: error: --data {args.data}: {exc}", file=sys.stderr)
            return 2
        Path(args.out).write_text(report(data))
        return 0
    if args.trips < 2 or not (args.gps_sigma_m >= 0 and args.delta_m > 0 and args.min_route_m > 0):
        msg = "need --trips >= 2, --gps-sigma-m >= 0, --delta-m > 0, --min-route-m > 0"
        print(f"evroute: error: {msg}", file=sys.stderr)
        return 2
    data = measure(args)
    Path(args.data).write_text(json.dumps(data, indent=1) + "\n")
    Path(args.out).write_text(report(data))
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
