"""Collect comparison blocks of the SUMO bandit study regenerated at HEAD into the committed data (issue 38, item 4).

A comparison block is one network's route and arm kind with every model and policy the study asked there (its page
compares methods within a route): it is collected whole or not at all, so a page never pairs rows of different code.

    python -m studies.sumo_bandit.collect --from results/sumo38 --blocks monaco:A:edge monaco:A:turn \\
        [--live-networks monaco] [--data docs/results/data/sumo_bandit_finals.csv] \\
        [--meta docs/results/data/sumo_bandit_meta.json]

``--from`` is the folder a ``python -m studies.sumo_bandit.run ... --data FROM/sumo_bandit_finals.csv --meta
FROM/sumo_bandit_meta.json`` wrote at a committed checkout (each row carries that commit).  Each block's rows there
must be complete (every method of the block in the committed set-up, every seed ``0..seeds-1``, one clean commit)
or nothing is written (exit 2).  The block's committed rows are replaced; the route's set-up (its recorded day and
reference) of the new rows replaces the committed one, which is kept under ``routes_before_issue34`` (the page
describes both while a route has rows of both); the commands are added.  ``--live-networks`` replaces a network's
live drives (the ``studies/sumo_bandit/live.py`` tables in ``--from``) once every block of that network is at the
collected rows' commit.  Then rebuild the page with ``python -m studies.sumo_bandit.run --report-only`` (README).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from evroute.io import atomic_write_text
from studies.sumo_bandit.runner import COMMIT, FINALS, LIVE_META, TRIPS, merge_rows

#: the key of the committed set-up under which a route's replaced set-up is kept
BEFORE = "routes_before_issue34"


def _fail(msg: str) -> None:
    print(f"evroute: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def block_labels(methods: list[str], arms: str) -> list[str]:
    """The method labels of one arm kind (turn-arm labels end in ``-TURN``)."""
    return [m for m in methods if m.endswith("-TURN") == (arms == "turn")]


def block_rows(new: pd.DataFrame, meta: dict[str, Any], block: tuple[str, str, str]) -> pd.DataFrame:
    """The rows of ``block`` (network, route, arms) in ``new``, checked complete against the committed set-up
    ``meta`` (every method of the block, seeds ``0..seeds-1``, one clean commit); exits 2 otherwise."""
    net, route, arms = block
    key = f"{net}-{route}"
    if key not in meta["routes"]:
        _fail(f"block {net}:{route}:{arms}: the study has no route {key}")
    labels = block_labels(list(meta["routes"][key]["methods"]), arms)
    rows = new[(new["network"] == net) & (new["route"] == route) & (new["arms"] == arms)]
    want = set(range(int(meta["seeds"])))
    short = [lab for lab in labels if set(rows.loc[rows["label"] == lab, "seed"].astype(int)) != want]
    if short:
        _fail(f"block {net}:{route}:{arms} is not complete in --from: {', '.join(short)} lack seeds")
    rows = rows[rows["label"].isin(labels)]
    commits = set(rows["commit"].astype(str))
    if len(commits) != 1 or any(c.endswith("+dirty") or c == "unknown" for c in commits):
        _fail(f"block {net}:{route}:{arms}: rows of {sorted(commits)}, not of one committed checkout")
    return rows


def collect(
    src: Path, blocks: list[tuple[str, str, str]], data: Path, meta_path: Path, live_networks: list[str]
) -> dict[str, dict[str, Any]]:
    """Merge ``blocks`` (and the live drives of ``live_networks``) of ``src`` into ``data`` and ``meta_path``;
    returns per block its rows, their CPU (s) and commit."""
    old, meta = pd.read_csv(data, dtype=COMMIT), json.loads(meta_path.read_text())
    new, new_meta = pd.read_csv(src / data.name, dtype=COMMIT), json.loads((src / meta_path.name).read_text())
    parts = [block_rows(new, meta, b) for b in blocks]
    rows = pd.concat(parts, ignore_index=True)
    merged, _ = merge_rows(old, rows)
    summary = {
        f"{n}:{r}:{a}": {"rows": len(p), "cpu_s": round(float(p["cpu_s"].sum()), 1), "commit": str(p["commit"].iloc[0])}
        for (n, r, a), p in zip(blocks, parts, strict=True)
    }
    for net, route, _ in blocks:
        key = f"{net}-{route}"
        meta.setdefault(BEFORE, {}).setdefault(key, meta["routes"][key])
        meta["routes"][key] = {**new_meta["routes"][key], "methods": meta["routes"][key]["methods"]}
    added = new_meta.get("commands", [new_meta["command"]])  # a study run once records its command alone
    meta["commands"] = list(dict.fromkeys([*meta.get("commands", [meta["command"]]), *added]))
    for net in live_networks:
        commits = set(merged.loc[merged["network"] == net, "commit"].astype(str))
        if len(commits) != 1 or commits != set(rows.loc[rows["network"] == net, "commit"].astype(str)):
            _fail(f"--live-networks {net}: not every block of {net} is at the collected rows' commit")
        live_commits = set(pd.read_csv(src / FINALS, dtype=COMMIT).query("network == @net")["commit"].astype(str))
        if live_commits != commits:
            _fail(f"--live-networks {net}: its final routes in --from are of {sorted(live_commits)}, not {commits}")
        _collect_live(src, data.parent, net, commits.pop())
    atomic_write_text(data, merged.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(meta_path, json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return summary


def _collect_live(src: Path, dst: Path, net: str, commit_of: str) -> None:
    """``net``'s live tables (final routes, trips, set-up) of ``src`` replace those in ``dst``; ``commit_of``: the
    commit of ``net``'s replay rows in ``src``, given to trips written without a commit column (by the same
    checkout: the live drives are made in the study's folder at the checkout that ran its runs)."""
    for name in (FINALS, TRIPS):
        new = pd.read_csv(src / name, dtype=COMMIT)
        new = new[new["network"] == net]
        if new.empty:
            _fail(f"--live-networks {net}: no {net} rows in {src / name}")
        if "commit" not in new.columns:  # trips appended by a live.py that did not yet label them
            new = new.assign(commit=commit_of)
        old = pd.read_csv(dst / name, dtype=COMMIT)
        out = pd.concat([old[old["network"] != net], new], ignore_index=True)[list(old.columns)]
        atomic_write_text(dst / name, out.to_csv(index=False, lineterminator="\n"))
    live = json.loads((dst / LIVE_META).read_text())
    live["networks"][net] = json.loads((src / LIVE_META).read_text())["networks"][net]
    atomic_write_text(dst / LIVE_META, json.dumps(live, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="src", type=Path, required=True, help="folder of the regenerated data and set-up")
    ap.add_argument("--blocks", nargs="+", required=True, metavar="NETWORK:ROUTE:ARMS")
    ap.add_argument("--live-networks", nargs="*", default=[], help="networks whose live drives are replaced too")
    ap.add_argument("--data", type=Path, default=Path("docs/results/data/sumo_bandit_finals.csv"))
    ap.add_argument("--meta", type=Path, default=Path("docs/results/data/sumo_bandit_meta.json"))
    args = ap.parse_args(argv)
    blocks: list[tuple[str, str, str]] = []
    for b in args.blocks:
        parts = b.split(":")
        if len(parts) != 3 or parts[2] not in ("edge", "turn"):
            _fail(f"--blocks {b}: expected NETWORK:ROUTE:ARMS with ARMS edge or turn")
        blocks.append((parts[0], parts[1], parts[2]))
    for p in (args.data, args.meta, args.src / args.data.name, args.src / args.meta.name):
        if not p.is_file():
            _fail(f"no {p}")
    for b, s in collect(args.src, blocks, args.data, args.meta, args.live_networks).items():
        print(f"{b}: {s['rows']} rows at {s['commit']}, {s['cpu_s']} CPU s")


if __name__ == "__main__":
    main()
