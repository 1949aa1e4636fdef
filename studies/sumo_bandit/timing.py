"""The SUMO bandit study's timing paragraph: what the full study would cost on a network where only one seed of the
dearest methods was timed (the :data:`TIMING` files in the page's data folder), for
:mod:`studies.sumo_bandit.report`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

TIMING = "sumo_bandit_luxembourg_timing"  # .csv (per-seed rows of the timed runs) and .json (their set-up)


def timing_lines(
    timed: pd.DataFrame, timed_meta: dict[str, Any], study: pd.DataFrame, seeds: int, routes: int = 2
) -> list[str]:
    """The "not done" paragraph: what the full study would cost on a network where only one seed of the dearest
    methods was timed (``timed``: rows of the study's per-seed data, ``cpu_s`` set-up included), against the same
    methods' CPU per seed in ``study`` (the completed routes), with the recorded day's cost from ``timed_meta``: the
    timed methods at ``seeds`` x ``routes`` runs each, the others at their CPU per seed in ``study`` times the timed
    methods' ratio of CPU per seed (timed network / ``study``)."""
    net = str(timed["network"].iloc[0])
    route = str(timed["route"].iloc[0])
    m = timed_meta["routes"][f"{net}-{route}"]
    per = timed.groupby("label", sort=False)["cpu_s"].mean()
    ref = study.groupby("label")["cpu_s"].mean()
    both = [lab for lab in per.index if lab in ref.index]
    ratio = float(per[both].sum() / ref[both].sum()) if both else math.nan
    others = ref.drop(index=both, errors="ignore")
    n_methods = int(study["label"].nunique())
    stopped = [lab for lab in m.get("methods", []) if lab not in per.index]
    timed_total = seeds * routes * float(per.sum())
    other_total = seeds * routes * ratio * float(others.sum()) if len(others) else 0.0
    cells = ", ".join(
        f"{lab} {per[lab]:.0f} CPU s" + (f" ({ref[lab]:.0f} s per seed here)" if lab in ref.index else "")
        for lab in per.index
    )
    return [
        f"**Not done: {net} A/B.** One seed (T = {timed_meta['horizon']}) of the dearest methods on {net} {route}, "
        f"same environment parameters (`{timed_meta['command']}`; data [`data/{TIMING}.csv`](data/{TIMING}.csv), "
        f"[`data/{TIMING}.json`](data/{TIMING}.json)), cost {cells}, set-up included; recording the "
        f"day once (SUMO, {m['probe_trips']:,} probe trips, {m['traversals']:,} traversals) cost "
        f"{m['record_cpu_s']:.0f} CPU s ({m['record_wall_s']:.0f} s wall).  Per seed these methods cost "
        f"{ratio:.1f} times what they cost on the routes above; at {seeds} seeds x {routes} routes the timed methods "
        f"alone would take {timed_total / 60:.0f} CPU-minutes and the other {n_methods - len(per)} methods about "
        f"{other_total / 60:.0f} more (their mean CPU per seed above times the same factor): "
        f"{(timed_total + other_total) / 60:.0f} CPU-minutes in all, more than the about 30 this study could spend "
        "on a machine of 2 shared cores."
        + (f"  Asked but stopped before completing their seed: {', '.join(stopped)}." if stopped else ""),
        "",
    ]


def read_timing(data_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The timed runs (:data:`TIMING` files in ``data_dir``), None when absent."""
    import json

    c, j = data_dir / f"{TIMING}.csv", data_dir / f"{TIMING}.json"
    if not (c.is_file() and j.is_file()):
        return None
    return pd.read_csv(c), json.loads(j.read_text())
