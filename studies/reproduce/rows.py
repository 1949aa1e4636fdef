"""Re-running one committed row at HEAD (issue 38, item 4): the row runners of ``rerun="rows"`` sources.

:func:`rerun_row` dispatches on the source's data file; a runner takes the committed row and a folder for its raw
runs (resumable: a finished seed there is not run again) and returns the row as the study would write it now.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

Row = dict[str, str]


def gp_vs_bi_row(row: Mapping[str, str], runs: Path) -> Row:
    """One (route, run, seed) row of ``gp_vs_bi_finals.csv`` re-run alone: the study's own configuration of that
    variant (:func:`studies.gp_vs_bi.run.configs`) with that one seed, so it draws the same environment."""
    from studies.common import report as R
    from studies.gp_vs_bi import run as G
    from studies.gp_vs_bi.runner import BY_NAME, LEGACY

    name, seed = row["run"], int(row["seed"])
    if name in LEGACY or name not in BY_NAME:
        raise ValueError(f"{name}: a legacy run, its definition is gone")
    v = BY_NAME[name]
    network, route = R.parse_routes([row["route"]])[0]
    # the seed counts only decide which seeds a stage runs; one large enough for every committed seed
    big = seed + 1
    ns = argparse.Namespace(
        seeds=big,
        ablation_seeds=big,
        ucb_seeds=big,
        sensitivity_seeds=big,
        horizon=int(row["horizon"]),
        sensitivity_route=row["route"] if v.stage == 5 else "",
    )
    key = f"{R.route_key(network, route)}/{name}"
    cfg = dataclasses.replace(G.configs(ns, network, route, v.stage)[key], seeds=(seed,))  # type: ignore[type-var]
    root = runs / f"seed{seed}"  # one folder per seed: a run folder holds one configuration, seeds included
    R.run_grid({key: cfg}, argparse.Namespace(report_only=False, runs=str(root), executor="serial", workers=1))
    run_dir = root / key
    final = R.seed_finals(run_dir)[seed]
    summ = R.seed_summary(run_dir, seed)
    return {
        **row,
        "horizon": str(summ.get("rounds", row["horizon"])),
        "final_regret_wh": f"{final:.6f}",
        "reference": str(summ.get("optimal_method", "?")),
    }


def misspecification_row(row: Mapping[str, str], runs: Path) -> Row:
    """One (world, method, seed) row of ``misspecification_finals.csv`` re-run alone: the study's own configuration
    of that cell (:func:`studies.misspecification.run.configs`) with that one seed (the seed alone fixes the world's
    drawn parameters, truth and noise)."""
    from studies.common import report as R
    from studies.misspecification import run as M

    world, method, seed = row["world"], row["method"], int(row["seed"])
    ns = argparse.Namespace(methods=[method], horizon=int(row["horizon"]), seeds=seed + 1)
    key = f"{world}/{method}"
    cfgs = M.configs(ns, [world])
    if key not in cfgs:
        raise ValueError(f"{key}: not a cell of the design")
    cfg = dataclasses.replace(cfgs[key], seeds=(seed,))  # type: ignore[type-var]
    root = runs / f"seed{seed}"
    R.run_grid({key: cfg}, argparse.Namespace(report_only=False, runs=str(root), executor="serial", workers=1))
    return {**row, "final_regret_wh": f"{R.seed_finals(root / key)[seed]:.6f}"}


RUNNERS: dict[str, Callable[[Mapping[str, str], Path], Row]] = {
    "gp_vs_bi_finals.csv": gp_vs_bi_row,
    "misspecification_finals.csv": misspecification_row,
}


def rerun_row(data: str, row: Mapping[str, str], runs: Path) -> Row:
    """``row`` of the data file ``data`` re-run at this checkout, its raw runs under ``runs``."""
    return RUNNERS[data](row, runs)
