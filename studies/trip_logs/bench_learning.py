"""Throughput of map-matched learning from trip logs (issue 23, speed goal: 1,000 one-hour traces on Luxembourg in
under 5 minutes).

Traces: ``--traces`` random drives of ``--duration-s`` seconds (samples) on the network (seed ``--seed``): the
synthetic logs' walk (:func:`evroute.traces.synthetic.random_drive`: a random walk over legal turns without U-turns,
driven at each edge's speed limit, sampled at 1 Hz along the edge geometry with ``--gps-sigma-m`` GPS noise, cut at
``--duration-s`` samples); the state of charge follows the physics energies (Eq. 8, ``sumo_ev``; from 90 %, so
that recuperation downhill stays below 100 %) and is rounded to 0.1 %.  Each trace is made, matched
(:class:`evroute.traces.mapmatch.MatchIndex`), turned into readings and learned
(:class:`evroute.models.linear_obs.LinearObsEdgeModel`, statistics only), one at a time (memory: one trace); then
one posterior of BI and of the exact GP is computed.  CPU seconds (``time.process_time``) per stage; the
extrapolation to 1,000 traces is linear in the samples (matching and readings are per trace; the posterior is once).
Traces matched in pieces are learned piece by piece (windows across a break dropped, as ``evroute learn``).
Writes a Markdown table to ``--output``.

With ``--workers N``: the same traces are written as CSV logs and learned end to end by ``evroute learn --network
NET --model-file M --model gp-exact --soc-step 0.1 --workers W`` (a child process: start-up, network, match index,
validation, learning, saving) for ``W = 1`` and ``W = N``, one after the other.  For each: wall seconds, CPU seconds
of the whole process tree (``resource.getrusage(RUSAGE_CHILDREN)``: the command and its workers, counted once they
have exited), the load average before and after, samples per wall second, the peak resident set of the largest
process of the tree (``ru_maxrss`` of a wrapper process around the command); then a check that both model files hold
the same statistics (every array equal, and the files byte for byte).  The Markdown goes to ``--output``, or with
``--section NAME`` replaces the text between the lines ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``
of ``--output`` (checked before anything runs).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _drive(index, rng: np.random.Generator, duration_s: float, sigma_m: float, e_det: np.ndarray, usable_wh: float):
    """One drive of ``duration_s`` samples as a :class:`~evroute.traces.Trace`: the library's walk
    (:func:`evroute.traces.synthetic.random_drive`), the state of charge from 90 % rounded to 0.1 %."""
    from evroute.traces import Trace
    from evroute.traces.synthetic import random_drive

    v, z, wh, la, lo = random_drive(index, rng, int(duration_s), sigma_m, e_det)
    q = np.round((90.0 - 100.0 * wh / usable_wh) / 0.1) * 0.1
    return Trace(np.arange(len(v), dtype=float), v, z, q, la, lo, name="bench")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--network", default="luxembourg")
    p.add_argument("--traces", type=int, default=20)
    p.add_argument("--duration-s", type=float, default=3600.0)
    p.add_argument("--gps-sigma-m", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="docs/results/trip_logs_speed.md")
    p.add_argument("--workers", type=int, default=None, help="compare `evroute learn` with 1 and with N workers")
    p.add_argument("--section", default=None, help="with --workers: replace this generated section of --output")
    args = p.parse_args(argv)
    if args.traces < 1 or not args.duration_s > 0:
        print("evroute: error: --traces must be >= 1 and --duration-s > 0", file=sys.stderr)
        return 2
    if args.workers is not None:
        return _workers_main(args)
    from evroute.energy import VehicleProfile, network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.models.linear_obs_build import linear_model_from
    from evroute.models.store import prior_model
    from evroute.network.registry import load_network
    from evroute.traces import read_trace_csv, write_trace_csv
    from evroute.traces.mapmatch import MatchIndex, MatchOptions
    from evroute.traces.observations import trace_readings

    vehicle = VehicleProfile.load("sumo_ev")
    lg = build_line_graph(load_network(args.network))
    cpu: dict[str, float] = {}
    t0 = time.process_time()
    index = MatchIndex(lg, MatchOptions(sigma_m=args.gps_sigma_m))
    cpu["index (once per network)"] = time.process_time() - t0
    e_det = network_energy_wh(lg.network, vehicle)
    usable = vehicle.battery_capacity_wh
    models = {
        k: linear_model_from(prior_model(k, lg, vehicle, noise_frac=0.5, prior="eq8")) for k in ("bi", "gp-exact")
    }
    rng = np.random.default_rng(args.seed)
    samples, learned, pieces, broken, windows, dropped = 0, 0, 0, 0, 0, 0
    cpu.update({"read CSV": 0.0, "match": 0.0, "readings + statistics": 0.0})
    tmp = Path(tempfile.mkdtemp(prefix="evroute-bench-"))
    for _ in range(args.traces):
        write_trace_csv(_drive(index, rng, args.duration_s, args.gps_sigma_m, e_det, usable), tmp / "t.csv")
        t0 = time.process_time()
        tr = read_trace_csv(tmp / "t.csv")
        cpu["read CSV"] += time.process_time() - t0
        t0 = time.process_time()
        m = index.match(tr.lat, tr.lon)
        t1 = time.process_time()
        r = trace_readings(tr, m, index.length_m, usable, models["bi"].noise_var, soc_step=0.1)
        pieces += m.pieces
        broken += m.pieces > 1
        if r is not None:
            learned += 1
            windows += len(r.y)
            dropped += r.dropped
            for model in models.values():
                model.observe(r.edges, r.a, r.y, r.noise_cov)
        cpu["match"] += t1 - t0
        cpu["readings + statistics"] += time.process_time() - t1
        samples += len(tr)
    for k, model in models.items():
        t0 = time.process_time()
        model.posterior()
        cpu[f"posterior {k} (once)"] = time.process_time() - t0
    touched = len(models["bi"].stats.touched())
    gp = models["gp-exact"]  # one more reading on every edge: the posterior at full coverage, measured
    gp.update(np.arange(lg.n_nodes), e_det)
    t0 = time.process_time()
    gp.posterior()
    cpu[f"posterior gp-exact, all {lg.n_nodes} edges touched"] = time.process_time() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    # the readings of the traces that were not learned (no usable window) are counted at the learned ones' cost
    learn_cpu = cpu["readings + statistics"] * args.traces / max(learned, 1)
    per_sample = (cpu["read CSV"] + cpu["match"] + learn_cpu) / samples
    goal_samples = 1000 * 3600
    total = per_sample * goal_samples + cpu["index (once per network)"] + cpu["posterior gp-exact (once)"]
    load = os.getloadavg()[0]
    lines = [
        "# Trip logs: map matching and learning throughput (generated)",
        "",
        f"Generated by `python -m studies.trip_logs.bench_learning --network {args.network} --traces {args.traces} "
        f"--duration-s {args.duration_s:g} --gps-sigma-m {args.gps_sigma_m:g} --seed {args.seed}` (protocol in the "
        f"script's docstring) on a shared machine with 2 CPU cores, load average {load:.1f} while it ran; CPU "
        "seconds of this process (single-threaded NumPy/SciPy except the posterior's BLAS).",
        "",
        f"{args.traces} traces of {args.duration_s:g} s at 1 Hz ({samples} samples) on {args.network} "
        f"({lg.n_nodes} edges, distance table {len(index.keys)} pairs); {learned} of them learned; {broken} were "
        f"matched in pieces (no feasible transition somewhere; {pieces} pieces in all {args.traces} traces) and "
        f"learned piece by piece, as `evroute learn` does: {windows} charge windows kept, {dropped} dropped because "
        "they span a break between pieces.",
        "",
        "| stage | CPU s | samples / CPU s |",
        "|---|---|---|",
    ]
    for k, v in cpu.items():
        rate = f"{samples / v:,.0f}" if k in ("read CSV", "match", "readings + statistics") and v > 0 else "-"
        lines.append(f"| {k} | {v:.2f} | {rate} |")
    verdict = "within" if total < 300 else "over"
    full = cpu[f"posterior gp-exact, all {lg.n_nodes} edges touched"]
    total_full = total - cpu["posterior gp-exact (once)"] + full
    verdict_full = "within" if total_full < 300 else "over"
    lines += [
        "",
        f"Reading + matching + readings (the readings' CPU scaled from the {learned} learned traces to all "
        f"{args.traces}): {1 / per_sample:,.0f} samples per CPU second.  Extrapolated to 1,000 "
        f"one-hour traces (3.6 million samples) on one core: {per_sample * goal_samples:.0f} CPU s; plus the index "
        f"and one exact-GP posterior at the {touched} edges touched here: {total:.0f} CPU s, {verdict} the 5-minute "
        f"(300 s) goal.  1,000 traces touch more edges; with all {lg.n_nodes} edges touched the posterior took "
        f"{full:.0f} CPU s (measured, last row) and the total would be {total_full:.0f} CPU s, {verdict_full} the "
        "goal.  Single core; the traces are independent until their statistics are summed, so they split over cores "
        "(not done here).  Memory: one trace at a time plus the model's sparse statistics.",
    ]
    Path(args.output).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def _check_output(args: argparse.Namespace) -> str | None:
    """The error of ``--workers`` / ``--section`` / ``--output`` (None: fine); nothing is run or written before."""
    if args.workers < 1:
        return f"--workers must be >= 1, got {args.workers}"
    out = Path(args.output)
    if args.section is None:
        return None if out.parent.is_dir() and not out.is_dir() else f"--output {out}: not a file in an existing folder"
    if not re.fullmatch(r"[\w.-]+", args.section):
        return f"--section must be a word (letters, digits, '.', '-', '_'), got {args.section!r}"
    start, end = _markers(args.section)
    text = out.read_text(encoding="utf-8") if out.is_file() else ""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        return f"--output {out} must hold the lines {start} and {end} once each, in that order"
    return None


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


#: runs its arguments as a command and prints the largest resident set of that command's process tree (KiB: Linux
#: keeps, per process, the largest peak among its waited-for descendants; the command waits for its workers)
_PEAK_RSS = (
    "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
    "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)"
)


def _run_learn(files: list[Path], model: Path, args: argparse.Namespace, workers: int) -> dict[str, float | str]:
    """One ``evroute learn`` run as a child process, timed (wall, CPU of the process tree, load before/after, peak
    resident set of its largest process)."""
    cmd = [sys.executable, "-c", _PEAK_RSS, sys.executable, "-m", "evroute", "learn", *map(str, files)]
    cmd += ["--network", args.network, "--model-file", str(model), "--vehicle", "sumo_ev", "--model", "gp-exact"]
    cmd += ["--soc-step", "0.1", "--gps-sigma-m", f"{args.gps_sigma_m:g}", "--workers", str(workers)]
    load0, cpu0, t0 = os.getloadavg()[0], _children_cpu_s(), time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall, cpu, load1 = time.perf_counter() - t0, _children_cpu_s() - cpu0, os.getloadavg()[0]
    if res.returncode != 0:
        raise SystemExit(f"evroute learn --workers {workers} failed:\n{res.stderr}")
    out = res.stdout.strip().splitlines()
    return {
        "wall": wall,
        "cpu": cpu,
        "load0": load0,
        "load1": load1,
        "summary": out[-2],
        "rss_mb": int(out[-1].split()[1]) / 1024,
    }


def _same_statistics(a: Path, b: Path) -> bool:
    with np.load(a, allow_pickle=False) as za, np.load(b, allow_pickle=False) as zb:
        if sorted(za.files) != sorted(zb.files):
            return False
        return all(np.array_equal(za[k], zb[k]) for k in za.files) and a.read_bytes() == b.read_bytes()


def _stage_cpu(summary: str) -> float:
    """Sum of the ``CPU s: read a, match b, learn c`` figures of an ``evroute learn`` summary line."""
    return sum(float(v) for v in re.findall(r"(?:read|match|learn) ([0-9.]+)", summary.split("CPU s:", 1)[1]))


def _verdict(wall_s: float) -> str:
    return "within the goal" if wall_s < 300 else "over the goal"


def _machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines() if ln.startswith("model name")]
        model = names[0] if names else model
    return f"{model}, {os.cpu_count()} CPU cores, Python {platform.python_version()}, {platform.system()}"


def _workers_main(args: argparse.Namespace) -> int:
    """``--workers N``: the same logs learned by ``evroute learn`` with 1 and with N workers (module doc)."""
    err = _check_output(args)
    if err is not None:
        print(f"evroute: error: {err}", file=sys.stderr)
        return 2
    from evroute.energy import VehicleProfile, network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces import write_trace_csv
    from evroute.traces.mapmatch import MatchIndex, MatchOptions

    vehicle = VehicleProfile.load("sumo_ev")
    lg = build_line_graph(load_network(args.network))
    index = MatchIndex(lg, MatchOptions(sigma_m=args.gps_sigma_m))
    e_det = network_energy_wh(lg.network, vehicle)
    rng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="evroute-bench-workers-"))
    try:
        files, samples = [], 0
        for k in range(args.traces):  # written one at a time: memory of one trace
            tr = _drive(index, rng, args.duration_s, args.gps_sigma_m, e_det, vehicle.battery_capacity_wh)
            files.append(write_trace_csv(tr, tmp / f"trace_{k:05d}.csv"))
            samples += len(tr)
        del index
        runs = {w: _run_learn(files, tmp / f"model_{w}.npz", args, w) for w in dict.fromkeys((1, args.workers))}
        same = _same_statistics(tmp / "model_1.npz", tmp / f"model_{args.workers}.npz")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cmd = (
        f"python -m studies.trip_logs.bench_learning --network {args.network} --traces {args.traces} --duration-s "
        f"{args.duration_s:g} --gps-sigma-m {args.gps_sigma_m:g} --seed {args.seed} --workers {args.workers} "
        f"--output {args.output}" + (f" --section {args.section}" if args.section else "")
    )
    lines = [
        f"Generated by `{cmd}` (protocol in the script's docstring) on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {_machine()}.",
        "",
        f"{args.traces} traces of {args.duration_s:g} s at 1 Hz ({samples:,} samples) on {args.network} "
        f"({lg.n_nodes} edges), each learned end to end by `evroute learn ... --model gp-exact --workers W` "
        "(start-up, network, match index, validation of every log, matching, readings, statistics, saving).",
        "",
        "| workers | wall s | CPU s (command + workers) | CPU s / wall s | samples / wall s | load before "
        "| load after | peak RSS MiB (largest process) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for w, r in runs.items():
        wall, cpu = float(r["wall"]), float(r["cpu"])
        lines.append(
            f"| {w} | {wall:.1f} | {cpu:.1f} | {cpu / wall:.2f} | {samples / wall:,.0f} | {float(r['load0']):.1f} "
            f"| {float(r['load1']):.1f} | {float(r['rss_mb']):.0f} |"
        )
    w1, wn = float(runs[1]["wall"]), float(runs[args.workers]["wall"])
    c1, cn = float(runs[1]["cpu"]), float(runs[args.workers]["cpu"])
    s1, sn = _stage_cpu(str(runs[1]["summary"])), _stage_cpu(str(runs[args.workers]["summary"]))
    share = min(c / w for c, w in ((c1, w1), (cn, wn)))
    lines += [
        "",
        f"With {args.workers} workers the wall time is {wn / w1:.2f} times that of 1 worker and the CPU time "
        f"{cn / c1:.2f} times.  Model files of the two runs: "
        + ("every statistic equal and the files identical byte for byte." if same else "**they differ**."),
        f"The per-log stages of the learning pass (read, match, learn: summary lines below) took {s1:.1f} CPU s with "
        f"1 worker and {sn:.1f} with {args.workers}; the rest ({c1 - s1:.1f} and {cn - sn:.1f} CPU s) is start-up, "
        "network, match index, the first pass over the logs (validation; none with 1 worker and fewer logs than "
        "`--save-every`: the logs are read once), the fit of the noise scale, the prior's scale, the whole-trip noise "
        "and the trip effect (posteriors over the touched edges) and saving, and with workers their own start-up and "
        "the match index sent to each.",
    ]
    if share < 0.9:
        lines.append(
            f"A run got as little as {share:.2f} CPU s per wall second (a busy machine: see the load columns), so "
            "these wall times measure the other jobs as much as `evroute learn`."
        )
    if args.network == "luxembourg" and args.traces * args.duration_s >= 1000 * 3600:
        lines.append(
            "Goal (1,000 one-hour traces on Luxembourg in under 300 s wall): "
            + "; ".join(
                f"{w} worker(s) {float(r['wall']):.0f} s, {_verdict(float(r['wall']))}" for w, r in runs.items()
            )
            + "."
        )
    lines += [
        "",
        "Summary lines of `evroute learn` (CPU seconds by stage, summed over the processes that did the work):",
        "",
        *[f"* {w} worker(s): `{r['summary']}`" for w, r in runs.items()],
    ]
    block = "\n".join(lines)
    out = Path(args.output)
    if args.section is None:
        out.write_text(block + "\n", encoding="utf-8")
    else:
        start, end = _markers(args.section)
        text = out.read_text(encoding="utf-8")
        head, rest = text.split(start, 1)
        out.write_text(head + start + "\n" + block + "\n" + end + rest.split(end, 1)[1], encoding="utf-8")
    print(block)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
