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


def sumo_bandit_row(row: Mapping[str, str], runs: Path) -> Row:
    """One (network, route, label, seed) row of ``sumo_bandit_finals.csv`` re-run alone: the study's configuration
    of that method (:func:`studies.sumo_bandit.run.study_config`, its recorded-day parameters, horizon and seed
    count from ``sumo_bandit_meta.json``) run for that one seed into the study's folder layout under ``runs`` (the
    folder the page's whole-file regeneration runs in too, so a seed is run once), then scored as the study scores
    it (:func:`studies.sumo_bandit.run.collect_rows`: own and turn-truth regret, reference)."""
    import json

    from evroute.experiments.output import output_lock
    from evroute.experiments.runner import prepare_output, run_seed
    from studies.reproduce.table import DATA, ROOT
    from studies.sumo_bandit import run as S

    meta = json.loads((ROOT / DATA / "sumo_bandit_meta.json").read_text())
    network, route, seed = row["network"], row["route"], int(row["seed"])
    cfg = S.study_config(
        network,
        route,
        row["model"],
        row["policy"],
        row["arms"],
        dict(meta["env_params"]),
        int(meta["horizon"]),
        max(int(meta["seeds"]), seed + 1),
    )
    out = prepare_output(cfg, S.run_folder(runs, cfg))
    with output_lock(out):
        run_seed(cfg, seed, out)
    got = [r for r in S.collect_rows(network, route, {cfg.label: (cfg, out)}) if r["seed"] == seed]
    if not got:
        raise RuntimeError(f"{network} {route} {cfg.label} seed {seed}: no summary after the run")
    return {k: str(v) for k, v in got[0].items()}


RUNNERS: dict[str, Callable[[Mapping[str, str], Path], Row]] = {
    "gp_vs_bi_finals.csv": gp_vs_bi_row,
    "misspecification_finals.csv": misspecification_row,
    "sumo_bandit_finals.csv": sumo_bandit_row,
}


def rerun_row(data: str, row: Mapping[str, str], runs: Path) -> Row:
    """``row`` of the data file ``data`` re-run at this checkout, its raw runs under ``runs``."""
    return RUNNERS[data](row, runs)
