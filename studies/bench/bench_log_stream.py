"""A long trip log learned in bounded memory (issue 35 item 4: a 200 MB log in < 60 s and < 500 MB).

Generates (once, into ``--dir``; not committed) a synthetic log of ``--mb`` MB in the RSK Twizy logs' 15 columns
(:func:`evroute.traces.synthetic.write_synthetic_log`: one-hour drives at 1 Hz on ``--network``, each from 90 %
charge, charged back between drives, gauge step 0.01 %), then runs ``evroute learn`` on it as a child process, one
command after the other:

* ``trace``: ``evroute learn LOG --columns twizy --vehicle sumo_ev --json`` (every trip predicted with its interval
  and scored against the gauge; the log streamed, :mod:`evroute.traces.tripscore`);
* ``network``: ``evroute learn LOG --columns twizy --network NET --model M.npz --kind bi --vehicle sumo_ev
  --soc-step 0.01`` (validation pass, then map matching and learning block by block, :mod:`evroute.traces.stream`);
  the same command on a one-drive log first gives the fixed cost (start-up, network, match index, model) to subtract.

For each: wall seconds, CPU seconds of the child (``resource.getrusage(RUSAGE_CHILDREN)`` differences), the peak
resident set of the child (``ru_maxrss`` of a wrapper process that runs only that command), the load average before
and after, and (``network``) the CPU seconds of the per-log stages the command prints (read, match, learn: readings
and their statistics) with the samples each handles per CPU second.  Prints a Markdown table (``--output``: also
written there).

``--before DIR`` (a checkout of an earlier commit, e.g. ``git worktree add --detach DIR COMMIT``): every command
runs first with that checkout's ``evroute`` (``PYTHONPATH=DIR``), then with this one's, one after the other on the
same log, so the table holds both side by side (rows ``before`` / ``after``, each checkout's commit in the header).

    python -m studies.bench.bench_log_stream --mb 200 --network monaco --dir /tmp/evroute-bench-log
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_WRAPPER = (
    "import re, resource, subprocess, sys, json, time\n"
    "t = time.perf_counter()\n"
    "run = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)\n"
    "wall = time.perf_counter() - t\n"
    "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "cpu = ru.ru_utime + ru.ru_stime\n"
    "m = re.search(r'([0-9]+) samples; CPU s: read ([0-9.]+), match ([0-9.]+), learn ([0-9.]+)', run.stdout)\n"
    "stages = [float(x) for x in m.groups()] if m else None\n"
    "print(json.dumps({'rc': run.returncode, 'wall_s': wall, 'cpu_s': cpu, 'maxrss_mb': ru.ru_maxrss / 1024,\n"
    "                  'stages': stages}))\n"
)


def measure(cmd: list[str], code: Path | None = None) -> dict[str, Any]:
    """Run ``cmd`` under the wrapper (with ``evroute`` imported from the checkout ``code``, default this one): exit
    status, wall, CPU, peak RSS (MB), load average before and after, the per-log stages (:func:`_stages`)."""
    before = os.getloadavg()[0]
    env = dict(os.environ)
    if code is not None:  # run in the checkout too: `python -m` puts the working directory first on the path
        env["PYTHONPATH"] = str(code)
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True, env=env, cwd=code
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:  # the command's own error line(s), so that a failed row says why
        print("\n".join(out.stderr.strip().splitlines()[-3:]), file=sys.stderr)
    res["load_before"], res["load_after"] = before, os.getloadavg()[0]
    return res


def make_log(path: Path, network: str, mb: float, drive_s: int, seed: int) -> dict[str, int]:
    from evroute.energy import VehicleProfile, network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex
    from evroute.traces.synthetic import write_synthetic_log

    vehicle = VehicleProfile.load("sumo_ev")
    index = MatchIndex(build_line_graph(load_network(network)))
    energy = network_energy_wh(index.linegraph.network, vehicle)
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    return write_synthetic_log(
        path, index, energy, target_bytes=int(mb * 1e6), usable_wh=usable, drive_s=drive_s, seed=seed
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=200.0)
    p.add_argument("--network", default="monaco")
    p.add_argument("--dir", default="/tmp/evroute-bench-log")
    p.add_argument("--modes", default="trace,network")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default=None)
    p.add_argument("--before", default=None, help="a checkout of an earlier commit to measure side by side")
    args = p.parse_args(argv)
    here = Path(__file__).resolve().parents[2]
    codes: list[tuple[str, Path]] = [("after", here)]
    if args.before is not None:
        if not (Path(args.before) / "evroute" / "__init__.py").is_file():
            print(f"evroute: error: --before {args.before}: not a checkout of evroute", file=sys.stderr)
            return 2
        codes = [("before", Path(args.before).resolve()), *codes]
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    big = folder / f"log_{args.network}_{args.mb:g}mb_seed{args.seed}.csv"
    small = folder / f"log_{args.network}_onedrive_seed{args.seed}.csv"
    t0 = time.perf_counter()
    info = {}
    for f, mb in ((big, args.mb), (small, 1e-6)):
        if not f.is_file():
            info[f.name] = make_log(f, args.network, mb, 3600, args.seed)
    gen_s = time.perf_counter() - t0
    size_mb = big.stat().st_size / 1e6
    with big.open() as fh:
        rows = sum(1 for _ in fh) - 1
    evroute = [sys.executable, "-m", "evroute", "learn"]
    results: list[tuple[str, str, str, dict[str, Any]]] = []
    for mode in args.modes.split(","):
        if mode not in ("trace", "network"):
            print(f"evroute: error: unknown mode {mode!r} (trace, network)", file=sys.stderr)
            return 2
    for mode in args.modes.split(","):
        for code_label, code in codes:
            if mode == "trace":
                cmd = [*evroute, "--columns", "twizy", "--vehicle", "sumo_ev", "--json"]
                results.append((code_label, "trace", f"{size_mb:.0f} MB", measure([*cmd, str(big)], code)))
                continue
            for f, label in ((small, "one drive (fixed cost)"), (big, f"{size_mb:.0f} MB")):
                model = folder / "bench_model.npz"
                model.unlink(missing_ok=True)
                cmd = [*evroute, str(f), "--columns", "twizy", "--network", args.network, "--model", str(model)]
                cmd += ["--kind", "bi", "--vehicle", "sumo_ev", "--soc-step", "0.01"]
                results.append((code_label, "network", label, measure(cmd, code)))
    lines = [
        "| code | mode | log | exit | wall s | CPU s | peak RSS MB | load before / after | read / match / learn CPU s "
        "(k samples per CPU s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for code_label, mode, label, r in results:
        lines.append(
            f"| {code_label} | {mode} | {label} | {r['rc']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
            f"{r['maxrss_mb']:.0f} | {r['load_before']:.1f} / {r['load_after']:.1f} | {_stages(r.get('stages'))} |"
        )
    commits = ", ".join(f"{c} = `{_commit(d)}`" for c, d in codes)
    before_arg = f" --before {args.before}" if args.before else ""
    head = (
        f"`python -m studies.bench.bench_log_stream --mb {args.mb:g} --network {args.network} --seed {args.seed} "
        f"--modes {args.modes}{before_arg}` on {platform.node()} ({os.cpu_count()} CPUs; {commits}): log {big.name}, "
        f"{size_mb:.1f} MB, {rows} rows (generated in {gen_s:.0f} s{', reused' if not info else ''})."
    )
    text = head + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return 0


def _stages(stages: list[float] | None) -> str:
    """The CPU seconds of the per-log stages ``evroute learn --network`` prints (``[samples, read, match, learn]``),
    each with the samples it handles per CPU second; ``-`` without them."""
    if not stages:
        return "-"
    n, *cpu = stages
    return " / ".join(f"{c:.1f} ({n / c / 1000:.0f})" if c > 0 else f"{c:.1f}" for c in cpu)


def _commit(path: Path) -> str:
    """The checkout's commit (short hash; ``+dirty`` with uncommitted changes to tracked files)."""
    git = ["git", "-C", str(path)]
    sha = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return (sha or "unknown") + ("+dirty" if dirty.stdout.strip() else "")


if __name__ == "__main__":
    raise SystemExit(main())
