"""Turn arms on recorded SUMO days: how many turns have their own truth, how many were never driven.

Usage::

    python -m studies.sumo.turn_coverage --networks monaco luxembourg --hours 8-9 --peak 300 --min-samples 3 \
        --probe-rounds 1 --data docs/results/data/turn_coverage.json --markdown docs/results/turn_coverage.md
    python -m studies.sumo.turn_coverage --report-only --data docs/results/data/turn_coverage.json --out FILE

For each network the recorded day of ``sumo-replay`` (cached; recorded when missing) is replayed with turn arms
(:mod:`evroute.arms`): a turn arm ``(e, e')`` has its own truth when at least ``--turn-min-samples`` traversals of
``e`` left into ``e'``, else it falls back to the edge mean (:mod:`evroute.environments.sumo_replay`).  The table
counts the turns with and without their own truth, and the probe trips ``[pred, e, e']`` (one covered turn each)
that would bring every turn to the minimum, next to the probe trips the day used to cover the edges.  It also
reports how far the turn means are from their edge means (the turn term the arms capture).  ``--data`` saves the
numbers the page is built from; ``--report-only`` rebuilds the page from them alone
(tests/studies/test_results_rebuild.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from evroute.arms import make_arms
from evroute.environments import make_environment
from evroute.experiments.runner import load_linegraph
from evroute.io import atomic_write_text
from studies.common.bench import machine_line
from studies.reproduce.provenance import commit_line, head_commit


def coverage_row(network: str, params: dict[str, object]) -> dict[str, object]:
    lg = load_linegraph(network)
    env = make_environment(lg, "sumo-replay", params)
    arms = make_arms(lg, "turn")
    cov = env.turn_coverage(arms)  # type: ignore[attr-defined]
    truth = env.arm_truth(arms)
    c = arms.n_turns
    own = env.turn_counts(arms) >= int(params["turn_min_samples"])  # type: ignore[attr-defined, call-overload]
    per_edge = np.bincount(arms.tail[:c][own], minlength=lg.n_nodes)
    own = own & (per_edge[arms.tail[:c]] > 1)  # a sole measured turn's mean is its edge's by construction
    dev = np.abs(truth[:c] - env.true_mean_wh[arms.tail[:c]])
    return {
        "network": network,
        "edges": lg.n_nodes,
        **cov,
        "arms": arms.n_arms,
        "traversals": int(env.meta.get("traversals", 0)),
        "probe_trips": int(env.meta.get("probe_trips", 0)),
        "median_abs_dev": float(np.median(dev[own])) if own.any() else 0.0,
        "q90_abs_dev": float(np.quantile(dev[own], 0.9)) if own.any() else 0.0,
        "cpu_s": float(env.meta.get("record_cpu_s", np.nan)),
        "wall_s": float(env.meta.get("record_wall_s", np.nan)),
    }


def build_report(d: dict[str, Any]) -> str:
    """The Markdown page, every number and sentence computed from the saved study ``d`` (see :func:`main`)."""
    rows, n = d["rows"], int(d["turn_min_samples"])
    head = (
        f"| network | edges | turns | arms (turns + terminal) | turns with >= {n} traversals | 1..{n - 1} | never "
        "driven | probe trips still needed to cover every turn | probe trips of the day | traversals "
        "| median / q90 abs(turn mean - edge mean) (Wh) \\* | CPU / wall (s) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['network']} | {r['edges']} | {r['turns']} | {r['arms']} | {r['turns_with_min_samples']} "
        f"({100 * r['turns_with_min_samples'] / r['turns']:.1f} %) | {r['turns_below_min']} | "
        f"{r['turns_never_driven']} ({100 * r['turns_never_driven'] / r['turns']:.1f} %) | "
        f"{r['probe_trips_to_cover']} | {r['probe_trips']} | {r['traversals']} | "
        f"{r['median_abs_dev']:.2f} / {r['q90_abs_dev']:.2f} | {r['cpu_s']:.1f} / {r['wall_s']:.1f} |\n"
        for r in rows
    )
    findings = "".join(
        f"- {r['network']}: {100 * r['turns_with_min_samples'] / r['turns']:.1f} % of the {r['turns']} turns have "
        f"their own truth and {100 * r['turns_never_driven'] / r['turns']:.1f} % were never driven; covering every "
        f"turn would take {r['probe_trips_to_cover']} more probe trips, "
        f"{r['probe_trips_to_cover'] / max(r['probe_trips'], 1):.2f} x the {r['probe_trips']} of the day.\n"
        for r in rows
    )
    probes = "every turn (`probe_turns`)" if d["probe_turns"] else "every edge (the default), not every turn"
    data = f"data/{Path(d['data']).name}"
    return (
        "# Turn arms on recorded SUMO days: coverage of the turns\n\n"
        f"Probe trips of the day cover {probes}.\n\n"
        f"Command: `{d['command']}` (EVROUTE_DATA holding the OSM files; recorded days cached)  \n"
        f"Machine: {d['machine']}  \n"
        + (commit_line(d.get("commit"), Path(d["data"]).stem) + "  \n" if d.get("commit") else "")
        + "CPU / wall: recording the day (SUMO runs and probe rounds), measured when it was recorded (the day's "
        "meta; CPU includes the SUMO processes).\n\n"
        f"Generated from the per-network numbers in [`{data}`]({data}) (rebuild without SUMO or the OSM files: "
        f"`python -m studies.sumo.turn_coverage --report-only --data docs/results/{data} --out FILE`); every number "
        "and sentence below is computed from them.\n\n"
        + head
        + body
        + "\n\\* over the turns with their own truth whose edge has at least two such turns (when a single turn of an "
        "edge was measured, the edge's traversals are mostly that turn's).\n\n"
        + findings
        + "\nA turn below the minimum (or never driven) takes its edge's mean as truth and its edge's traversals as "
        "observations (`evroute/environments/sumo_replay.py`); each probe trip `[pred, e, e']` completes one "
        "traversal of `e` leaving into `e'`, so covering every turn costs the probe trips in the column above "
        "(the edge coverage of the day needed the probe trips next to it).\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", nargs="+", default=["monaco", "luxembourg"])
    ap.add_argument("--hours", default="8-9")
    ap.add_argument("--peak", type=float, default=300.0, help="peak_per_hour of the background demand")
    ap.add_argument("--min-samples", type=int, default=3, help="edge coverage target of the probe trips")
    ap.add_argument("--probe-rounds", type=int, default=1)
    ap.add_argument("--turn-min-samples", type=int, default=3)
    ap.add_argument(
        "--probe-turns", action="store_true", help="record days whose probe trips cover every turn, not every edge"
    )
    ap.add_argument(
        "--markdown", "--out", dest="markdown", default=None, help="write the page (with machine and command) here"
    )
    ap.add_argument("--data", default=None, help="save the per-network numbers the page is built from (JSON) here")
    ap.add_argument("--report-only", action="store_true", help="run nothing; rebuild --out from --data alone")
    args = ap.parse_args(argv)
    if args.report_only:
        if not args.data or not Path(args.data).is_file():
            ap.exit(2, f"evroute: error: no saved study at {args.data} (run it without --report-only)\n")
        if not args.markdown:
            ap.exit(2, "evroute: error: --report-only needs --out\n")
        d = json.loads(Path(args.data).read_text())
    else:
        params = {
            "hours": args.hours,
            "peak_per_hour": args.peak,
            "min_samples": args.min_samples,
            "max_probe_rounds": args.probe_rounds,
            "turn_min_samples": args.turn_min_samples,
            "probe_turns": args.probe_turns,
        }
        rows = []
        for net in args.networks:
            r = coverage_row(net, params)
            print(r, flush=True)
            rows.append(r)
        cmd = "python -m studies.sumo.turn_coverage " + " ".join(argv if argv is not None else sys.argv[1:])
        d = {
            "command": cmd.strip(),
            "machine": machine_line(),
            "commit": head_commit(),
            "load": os.getloadavg()[0],
            "turn_min_samples": args.turn_min_samples,
            "probe_turns": args.probe_turns,
            "params": params,
            "data": args.data or "turn_coverage.json",
            "rows": rows,
        }
        if args.data:
            atomic_write_text(Path(args.data), json.dumps(d, indent=1) + "\n")
    text = build_report(d)
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
