"""Experiment runner: config -> per-round records on disk, resumable, reproducible.

Results directory layout (every file written atomically)::

    OUT/config.json            the ExperimentConfig
    OUT/meta.json              versions, network statistics, route, start time
    OUT/seed_<s>/rounds.csv    one row per completed round (RoundRecord fields), appended as it runs
    OUT/seed_<s>/checkpoint.pkl  bandit state after the last checkpointed round
    OUT/seed_<s>/summary.json  written when the seed is complete
    OUT/summary.json           final cumulative regret per seed, mean and standard error

Everything the config names (network, route, model, policy, parameters) is validated before ``OUT``
is created, so bad input never leaves a half-written results directory.  A killed run resumes from
its last checkpoint; the random streams are part of the checkpoint, so a resumed run produces the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import pickle
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from evroute.bandit import RoundRecord, RoutingBandit
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.environment import EnergyEnvironment
from evroute.errors import DataError, ParameterError
from evroute.experiments.config import ExperimentConfig
from evroute.io import atomic_pickle, atomic_write_json, atomic_write_text
from evroute.linegraph import LineGraph, build_line_graph
from evroute.models.factory import check_model, is_learner, make_learner, make_model
from evroute.policies import make_policy
from evroute.routes import RouteSpec, resolve_route

RECORD_FIELDS = [f.name for f in fields(RoundRecord)]


@dataclass
class Problem:
    """Everything a run needs besides the model and policy."""

    linegraph: LineGraph
    env: EnergyEnvironment
    route: RouteSpec


@functools.lru_cache(maxsize=4)
def load_linegraph(network: str, data_dir: str | None = None, dem: str | None = None) -> LineGraph:
    """Load a network by name/path and build its line graph (largest SCC); cached per process."""
    from evroute.network.registry import load_network

    return build_line_graph(load_network(network, data_dir=data_dir, dem=dem))


def build_problem(cfg: ExperimentConfig, seed: int) -> Problem:
    """Line graph, environment (seed ``cfg.env_seed`` or ``seed``) and resolved route for one run."""
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem)
    route = resolve_route(lg, cfg.network, cfg.route, cfg.start, cfg.goal)
    env_seed = seed if cfg.env_seed is None else cfg.env_seed
    env = _environment(lg, cfg.vehicle, json.dumps(cfg.environment, sort_keys=True), env_seed)
    return Problem(lg, env, route)


@functools.lru_cache(maxsize=8)
def _environment(lg: LineGraph, vehicle: str, env_json: str, seed: int) -> EnergyEnvironment:
    from evroute.environment_tv import make_environment

    return make_environment(lg, json.loads(env_json), vehicle=VehicleProfile.load(vehicle), seed=seed)


def validate(cfg: ExperimentConfig) -> RouteSpec:
    """Check everything the config names; returns the resolved route.  Creates no files."""
    check_model(cfg.model, cfg.policy, cfg.model_params)
    if is_learner(cfg.model) and cfg.policy_params:
        raise ParameterError(f"model {cfg.model!r} takes its parameters as model parameters, not policy parameters")
    make_policy(cfg.policy, **cfg.policy_params)
    VehicleProfile.load(cfg.vehicle)
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem)
    return resolve_route(lg, cfg.network, cfg.route, cfg.start, cfg.goal)


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("evroute", "numpy", "scipy", "networkx", "torch", "gpytorch", "sumolib", "osmnx"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _read_rounds(path: Path, upto: int) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if int(r["round"]) <= upto]
    return rows


def _rows_to_csv(rows: list[dict[str, Any]], header: bool) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=RECORD_FIELDS, lineterminator="\n")
    if header:
        w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def make_bandit(cfg: ExperimentConfig, problem: Problem, seed: int) -> Any:
    """The learner of one run: a :class:`RoutingBandit` over ``cfg.model`` and ``cfg.policy``, or, for a learner
    name such as ``routeset``, that learner (same ``step``/``state`` interface, see :func:`make_learner`)."""
    potential = None
    if cfg.potential == "elevation":
        potential = elevation_potential_wh(problem.linegraph.network, VehicleProfile.load(cfg.vehicle))
    if is_learner(cfg.model):
        return make_learner(cfg.model, problem.env, problem.route.start, problem.route.goal, policy=cfg.policy,
                            seed=seed, regret_reference=cfg.regret_reference, potential_wh=potential,
                            **cfg.model_params)
    model = make_model(cfg.model, problem.env, seed=seed, **cfg.model_params)
    return RoutingBandit(problem.env, model, make_policy(cfg.policy, **cfg.policy_params),
                         problem.route.start, problem.route.goal, seed=seed,
                         regret_reference=cfg.regret_reference, potential_wh=potential)


def run_seed(cfg: ExperimentConfig, seed: int, out_dir: str | Path, *, progress: bool = False,
             checkpoint_every: int = 10) -> dict[str, Any]:
    """Run (or resume) one seed of ``cfg`` into ``out_dir/seed_<seed>``; returns its summary."""
    seed_dir = Path(out_dir) / f"seed_{seed}"
    summary_path = seed_dir / "summary.json"
    if summary_path.exists():
        return json.loads(summary_path.read_text())
    seed_dir.mkdir(parents=True, exist_ok=True)
    bandit = make_bandit(cfg, build_problem(cfg, seed), seed)
    ckpt = seed_dir / "checkpoint.pkl"
    rounds_path = seed_dir / "rounds.csv"
    if ckpt.exists():
        with ckpt.open("rb") as fh:
            bandit.load_state(pickle.load(fh))
    # keep exactly the rounds covered by the checkpoint (later ones are replayed identically)
    atomic_write_text(rounds_path, _rows_to_csv(_read_rounds(rounds_path, bandit.t), header=True))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.horizon, initial=bandit.t, desc=f"{cfg.label} seed {seed}", unit="round", leave=False)
    t0 = time.perf_counter()
    with rounds_path.open("a", newline="") as fh:
        while bandit.t < cfg.horizon:
            rec = bandit.step()
            fh.write(_rows_to_csv([rec.to_dict()], header=False))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(regret=f"{rec.cumulative_regret_wh:.1f}Wh")
            if bandit.t % checkpoint_every == 0 or bandit.t == cfg.horizon:
                fh.flush()
                atomic_pickle(ckpt, bandit.state())
    if bar is not None:
        bar.close()
    summary = {
        "seed": seed,
        "rounds": bandit.t,
        "final_cumulative_regret_wh": bandit.cumulative_regret,
        "optimal_wh": bandit.optimal.cost,
        "optimal_route_edges": len(bandit.optimal.edges),
        "optimal_method": bandit.optimal.method,
        "wall_s_this_session": time.perf_counter() - t0,
    }
    atomic_write_json(summary_path, summary)
    ckpt.unlink(missing_ok=True)
    return summary


def prepare_output(cfg: ExperimentConfig, out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Validate ``cfg``, then create ``out_dir`` with config/meta (or check it holds the same config)."""
    route = validate(cfg)
    out = Path(out_dir)
    cfg_path = out / "config.json"
    if cfg_path.exists() and not overwrite:
        try:
            old = json.loads(cfg_path.read_text())
        except json.JSONDecodeError:
            raise DataError(f"{cfg_path} is corrupt; remove the directory or pass --overwrite") from None
        old.setdefault("potential", "none")  # folders written before the option existed used Algorithm 2 as is
        old.setdefault("regret_reference", "auto")
        if old != json.loads(json.dumps(cfg.to_dict())):
            raise ParameterError(f"results directory {out} holds a different experiment; use another --out")
        return out
    if out.exists() and any(out.iterdir()) and not overwrite and not cfg_path.exists():
        raise ParameterError(f"results directory {out} exists and is not an evroute results directory")
    if overwrite and out.exists():
        import shutil

        shutil.rmtree(out)
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "meta.json", {
        "versions": _versions(),
        "network": lg.network.summary(),
        "line_graph": {"nodes": lg.n_nodes, "arcs": lg.n_arcs},
        "route": {"name": route.name, "start": route.start_id, "goal": route.goal_id, "note": route.note},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    })
    atomic_write_json(cfg_path, cfg.to_dict())
    return out


def _run_seed_job(args: tuple[dict[str, Any], int, str, int]) -> dict[str, Any]:
    cfg_d, seed, out, every = args
    return run_seed(ExperimentConfig.from_dict(cfg_d), seed, out, checkpoint_every=every)


def run_experiment(cfg: ExperimentConfig, out_dir: str | Path, *, workers: int = 1, progress: bool = True,
                   overwrite: bool = False, checkpoint_every: int = 10) -> dict[str, Any]:
    """Run every seed of ``cfg`` (in a process pool when ``workers > 1``); returns the aggregate summary."""
    out = prepare_output(cfg, out_dir, overwrite=overwrite)
    if workers > 1 and len(cfg.seeds) > 1:
        jobs = [(cfg.to_dict(), s, str(out), checkpoint_every) for s in cfg.seeds]
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            it = pool.map(_run_seed_job, jobs)
            if progress:
                from tqdm.auto import tqdm

                it = tqdm(it, total=len(jobs), desc=cfg.label, unit="seed")
            summaries = list(it)
    else:
        summaries = [run_seed(cfg, s, out, progress=progress, checkpoint_every=checkpoint_every) for s in cfg.seeds]
    final = np.array([s["final_cumulative_regret_wh"] for s in summaries])
    agg = {
        "label": cfg.label,
        "network": cfg.network,
        "route": cfg.route if cfg.start is None else f"{cfg.start}->{cfg.goal}",
        "horizon": cfg.horizon,
        "seeds": list(cfg.seeds),
        "final_cumulative_regret_wh": final.tolist(),
        "mean_final_regret_wh": float(final.mean()),
        "se_final_regret_wh": float(final.std(ddof=1) / np.sqrt(len(final))) if len(final) > 1 else 0.0,
    }
    atomic_write_json(out / "summary.json", agg)
    return agg


def load_rounds(out_dir: str | Path) -> Any:
    """All per-round records of a results directory as one :class:`pandas.DataFrame` (column ``seed`` added)."""
    import pandas as pd

    out = Path(out_dir)
    frames = []
    for d in sorted(out.glob("seed_*")):
        if (d / "rounds.csv").exists():
            df = pd.read_csv(d / "rounds.csv")
            df.insert(0, "seed", int(d.name.split("_")[1]))
            frames.append(df)
    if not frames:
        raise DataError(f"no results found in {out}")
    return pd.concat(frames, ignore_index=True)
