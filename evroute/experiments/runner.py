"""Experiment runner: config -> per-round records on disk, resumable, reproducible.

Results directory layout (every file written atomically)::

    OUT/config.json            the ExperimentConfig
    OUT/meta.json              versions, network statistics, route, start time
    OUT/seed_<s>/rounds.csv    one row per completed round (RoundRecord fields), appended as it runs
    OUT/seed_<s>/checkpoint.npz  bandit state after the last checkpointed round (data only, no pickle:
                               :mod:`evroute.experiments.checkpoint`)
    OUT/seed_<s>/model.npz     the seed's final edge model (BI, exact GP; :mod:`evroute.models.store`)
    OUT/seed_<s>/summary.json  written when the seed is complete
    OUT/summary.json           final cumulative regret per seed, mean and standard error

Everything the config names (network, route, model, policy, parameters) is validated before ``OUT``
is created, so bad input never leaves a half-written results directory.  A killed run resumes from
its last checkpoint; the random streams are part of the checkpoint, so a resumed run produces the
same numbers as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from evroute.arms import make_arms
from evroute.bandit import RoundRecord, RoutingBandit, rebase_regret
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.environments import EnergyEnvironment
from evroute.errors import DataError
from evroute.experiments import checkpoint as ckpts  # data checkpoints, run folder checks
from evroute.experiments.config import ExperimentConfig
from evroute.experiments.output import check_same_experiment, check_same_network, claim, output_lock, read_rounds
from evroute.experiments.registry import is_learner, make_learner, make_model
from evroute.experiments.threads import run_blas_threads, run_threads
from evroute.io import atomic_write_json, atomic_write_text
from evroute.linegraph import LineGraph, build_line_graph
from evroute.models.store import network_hash
from evroute.oracle import EXACT_METHODS
from evroute.policies import make_policy
from evroute.routes import RouteSpec, resolve_route
from evroute.stats import json_float, standard_error
from evroute.validation import call_checked

RECORD_FIELDS = [f.name for f in fields(RoundRecord)]


@dataclass
class Problem:
    """Everything a run needs besides the model and policy."""

    linegraph: LineGraph
    env: EnergyEnvironment
    route: RouteSpec


def load_linegraph(
    network: str, data_dir: str | None = None, dem: str | list[str] | None = None, loader: str | None = None
) -> LineGraph:
    """Load a network by name/path and build its line graph (largest SCC); cached per process.

    ``dem``: a raster or a list of tiles to mosaic; ``loader``: OSM loader (``netconvert`` default, ``osmnx``).
    """
    return _load_linegraph(network, data_dir, tuple(dem) if isinstance(dem, list) else dem, loader)


@functools.lru_cache(maxsize=4)
def _load_linegraph(
    network: str, data_dir: str | None, dem: str | tuple[str, ...] | None, loader: str | None
) -> LineGraph:
    from evroute.network.registry import load_network

    return build_line_graph(load_network(network, data_dir=data_dir, dem=dem, loader=loader))


def build_problem(cfg: ExperimentConfig, seed: int) -> Problem:
    """Line graph, environment (seed ``cfg.env_seed`` or ``seed``) and resolved route for one run."""
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem, cfg.loader)
    route = resolve_route(lg, cfg.network, cfg.route, cfg.start, cfg.goal)
    env_seed = seed if cfg.env_seed is None else cfg.env_seed
    env = _environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), env_seed)
    return Problem(lg, env, route)


@functools.lru_cache(maxsize=8)
def _environment(lg: LineGraph, vehicle: str, name: str, env_json: str, seed: int) -> EnergyEnvironment:
    from evroute.environments import make_environment

    return make_environment(lg, name, json.loads(env_json), vehicle=VehicleProfile.load(vehicle), seed=seed)


def validate(cfg: ExperimentConfig) -> RouteSpec:
    """Check everything the config names; returns the resolved route.  Creates no files.

    Names and parameter types were checked when ``cfg`` was built; here the network, route and vehicle are
    loaded, the first seed's environment is built, and a model given parameters is built once (constructors
    check ranges that depend on the network), so no error can appear after the results folder exists.
    """
    key = json.dumps(cfg.to_dict(), sort_keys=True)
    if key in _VALIDATED:
        return _VALIDATED[key]
    VehicleProfile.load(cfg.vehicle)
    run_blas_threads()  # a bad EVROUTE_BLAS_THREADS stops the run before anything is written
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem, cfg.loader)
    route = resolve_route(lg, cfg.network, cfg.route, cfg.start, cfg.goal)
    seed = cfg.seeds[0]
    from evroute.environments import prepare_environment

    call_checked(
        "environment parameters",
        prepare_environment,
        lg,
        cfg.env,
        cfg.environment,
        vehicle=VehicleProfile.load(cfg.vehicle),
    )
    problem = call_checked("environment parameters", build_problem, cfg, seed)
    arms = None
    if cfg.arms != "edge":  # the environment's arm truths (e.g. sumo-replay's turn means) before anything is written
        arms = make_arms(lg, cfg.arms)
        call_checked("turn arms", problem.env.arm_truth, arms)
    if cfg.model_params and not is_learner(cfg.model):
        params = {"seed": seed, **cfg.model_params}  # a ``seed`` model parameter overrides the run's seed
        call_checked(f"parameters for model {cfg.model!r}", make_model, cfg.model, problem.env, arms=arms, **params)
    _VALIDATED[key] = route
    return route


_VALIDATED: dict[str, RouteSpec] = {}  # config JSON -> route, for configs validated in this process


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("evroute", "numpy", "scipy", "networkx", "torch", "gpytorch", "sumolib", "osmnx"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _rows_to_csv(rows: list[dict[str, Any]], header: bool) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=RECORD_FIELDS, lineterminator="\n")
    if header:
        w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def bandit_potential(cfg: ExperimentConfig, env: Any) -> str:
    """The potential the learner's oracle subtracts: ``cfg.potential``, except ``"none"`` for an environment whose
    energies are already reduced (``env.reduced_energies``, e.g. ``sumo-replay``: subtracting the elevation
    potential again would count it twice)."""
    if getattr(env, "reduced_energies", False):
        return "none"
    return cfg.potential


def make_bandit(cfg: ExperimentConfig, problem: Problem, seed: int) -> Any:
    """The learner of one run: a :class:`RoutingBandit` over ``cfg.model`` and ``cfg.policy``, or, for a learner
    name such as ``routeset``, that learner (same ``step``/``state`` interface, see :func:`make_learner`)."""
    potential = None
    if bandit_potential(cfg, problem.env) == "elevation":
        potential = elevation_potential_wh(problem.linegraph.network, VehicleProfile.load(cfg.vehicle))
    if is_learner(cfg.model):
        return make_learner(
            cfg.model,
            problem.env,
            problem.route.start,
            problem.route.goal,
            policy=cfg.policy,
            seed=seed,
            regret_reference=cfg.regret_reference,
            potential_wh=potential,
            **cfg.model_params,
        )
    arms = make_arms(problem.linegraph, cfg.arms)
    params = {"seed": seed, **cfg.model_params}  # the user's seed wins
    model = make_model(cfg.model, problem.env, arms=arms if cfg.arms != "edge" else None, **params)
    return RoutingBandit(
        problem.env,
        model,
        make_policy(cfg.policy, **cfg.policy_params),
        problem.route.start,
        problem.route.goal,
        seed=seed,
        regret_reference=cfg.regret_reference,
        potential_wh=potential,
        arms=arms,
    )


def run_seed(
    cfg: ExperimentConfig, seed: int, out_dir: str | Path, *, progress: bool = False, checkpoint_every: int = 10
) -> dict[str, Any]:
    """Run (or resume) one seed of ``cfg`` into ``out_dir/seed_<seed>``; returns its summary."""
    seed_dir = Path(out_dir) / f"seed_{seed}"
    summary_path = seed_dir / "summary.json"
    if summary_path.exists():
        return ckpts.read_seed_summary(summary_path, seed, cfg.horizon)
    seed_dir.mkdir(parents=True, exist_ok=True)
    with run_threads():
        return _run_seed(cfg, seed, seed_dir, progress, checkpoint_every)


def _run_seed(
    cfg: ExperimentConfig, seed: int, seed_dir: Path, progress: bool, checkpoint_every: int
) -> dict[str, Any]:
    summary_path = seed_dir / "summary.json"
    cpu0 = time.process_time()
    bandit = make_bandit(cfg, build_problem(cfg, seed), seed)
    setup_cpu = time.process_time() - cpu0
    ckpt = seed_dir / ckpts.CHECKPOINT_NAME
    rounds_path = seed_dir / "rounds.csv"
    binding = ckpts.run_binding(cfg.to_dict(), network_hash(bandit.env.linegraph), seed)
    if (seed_dir / ckpts.LEGACY_NAME).exists():  # never unpickled: refused with how to rerun
        ckpts.restore_checkpoint(seed_dir / ckpts.LEGACY_NAME, bandit, binding, cfg.horizon)
    if ckpt.exists():
        ckpts.restore_checkpoint(ckpt, bandit, binding, cfg.horizon)
    # keep exactly the rounds covered by the checkpoint (later ones are replayed identically)
    rows = read_rounds(rounds_path, RECORD_FIELDS, bandit.t)
    ckpts.check_rounds(rows, rounds_path)
    if len(rows) != bandit.t:  # the checkpoint is ahead of the saved rows: start the seed again
        bandit, rows = make_bandit(cfg, build_problem(cfg, seed), seed), []
        ckpt.unlink(missing_ok=True)
    atomic_write_text(rounds_path, _rows_to_csv(rows, header=True))
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.horizon, initial=bandit.t, desc=f"{cfg.label} seed {seed}", unit="round", leave=False)
    t0 = time.perf_counter()
    with _naming(rounds_path), rounds_path.open("a", newline="") as fh:
        while bandit.t < cfg.horizon:
            rec = bandit.step()
            fh.write(_rows_to_csv([rec.to_dict()], header=False))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(regret=f"{rec.cumulative_regret_wh:.1f}Wh")
            if bandit.t % checkpoint_every == 0 or bandit.t == cfg.horizon:
                fh.flush()
                ckpts.save_checkpoint(ckpt, bandit, binding)
    if bar is not None:
        bar.close()
    ref = bandit.optimal
    cumulative, reference_wh = bandit.cumulative_regret, ref.cost
    if getattr(bandit.env, "static", True) and not ref.exact:  # no exact optimum: also the routes the run drove
        rows, reference_wh, cumulative = rebase_regret(read_rounds(rounds_path, RECORD_FIELDS, bandit.t), ref)
        atomic_write_text(rounds_path, _rows_to_csv(rows, header=True))
    from evroute.experiments.model_store import save_seed_model

    saved = save_seed_model(cfg, bandit, bandit.env.linegraph, seed, seed_dir)
    summary = {
        "seed": seed,
        "rounds": bandit.t,
        "model_file": saved["file"],
        "model_note": saved["note"],
        "final_cumulative_regret_wh": cumulative,
        "optimal_wh": reference_wh,
        "optimal_route_edges": len(ref.edges),
        "optimal_method": ref.method,
        "potential": bandit_potential(cfg, bandit.env),
        "arms": cfg.arms,
        "regret_reference": {
            "exact": ref.exact,
            "method": ref.method,
            "wh": reference_wh,
            "lowered_to_a_driven_route": bool(reference_wh < ref.cost),
        },
        "wall_s_this_session": time.perf_counter() - t0,
        # CPU seconds of this process (all its threads) for the set-up (environment, reference, model) and in all
        "setup_cpu_s_this_session": setup_cpu,
        "cpu_s_this_session": time.process_time() - cpu0,
    }
    atomic_write_json(summary_path, summary)
    ckpt.unlink(missing_ok=True)
    return summary


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Give an :class:`OSError` without a file name (a full disk while appending) the name ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def prepare_output(cfg: ExperimentConfig, out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Validate ``cfg``, then claim ``out_dir`` atomically with config/meta (or check it holds the same config).

    Nothing is written when validation fails; a visible results folder always holds its ``config.json``
    (:func:`evroute.experiments.output.claim`).
    """
    route = validate(cfg)
    out = Path(out_dir)
    lg = load_linegraph(cfg.network, cfg.data_dir, cfg.dem, cfg.loader)

    def write(staging: Path) -> None:
        atomic_write_json(
            staging / "meta.json",
            {
                "versions": _versions(),
                "network": lg.network.summary(),
                "network_hash": network_hash(lg),
                "line_graph": {"nodes": lg.n_nodes, "arcs": lg.n_arcs},
                "route": {"name": route.name, "start": route.start_id, "goal": route.goal_id, "note": route.note},
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            },
        )
        atomic_write_json(staging / "config.json", cfg.to_dict())

    if not claim(out, write, overwrite=overwrite):
        ckpts.check_run_meta(out)  # malformed config.json / meta.json: one line, before they are compared
        check_same_experiment(cfg, out)
        check_same_network(lg, out)
    return out


def _run_seed_job(args: tuple[dict[str, Any], int, str, int]) -> dict[str, Any]:
    cfg_d, seed, out, every = args
    return run_seed(ExperimentConfig.from_dict(cfg_d), seed, out, checkpoint_every=every)


def run_experiment(
    cfg: ExperimentConfig,
    out_dir: str | Path,
    *,
    workers: int = 1,
    progress: bool = True,
    overwrite: bool = False,
    checkpoint_every: int = 10,
) -> dict[str, Any]:
    """Run every seed of ``cfg`` (in a process pool when ``workers > 1``); returns the aggregate summary.

    ``progress``: progress bars on stderr, shown only when stderr is a terminal.  The results folder is locked
    while the seeds run (a second run into it stops with an error).
    """
    out = prepare_output(cfg, out_dir, overwrite=overwrite)
    with output_lock(out):
        return _run_locked(cfg, out, workers, progress, checkpoint_every)


def _run_locked(
    cfg: ExperimentConfig, out: Path, workers: int, progress: bool, checkpoint_every: int
) -> dict[str, Any]:
    if workers > 1 and len(cfg.seeds) > 1:
        jobs = [(cfg.to_dict(), s, str(out), checkpoint_every) for s in cfg.seeds]
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=get_context("spawn"),
            initializer=init_worker,
            initargs=(os.getpid(), blas_threads()),
        ) as pool:
            it = pool.map(_run_seed_job, jobs)
            if progress and sys.stderr.isatty():
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
        "arms": cfg.arms,  # edge or turn arms (evroute.arms)
        "model_init": cfg.model_params.get("init", "default"),  # the models' prior: neutral defaults or oracle
        "regret_reference": reference_statement(summaries),
        "potential": str(summaries[0].get("potential", cfg.potential)) if summaries else cfg.potential,
        "se_final_regret_wh": json_float(standard_error(final)),  # null for one seed (evroute.stats)
    }
    atomic_write_json(out / "summary.json", agg)
    return agg


def reference_statement(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """What the regret of the seeds was measured against: exact optimum or best route known, per seed."""
    per = {
        str(s["seed"]): s.get(
            "regret_reference",
            {
                "exact": s.get("optimal_method") in EXACT_METHODS,
                "method": s.get("optimal_method"),
                "wh": s.get("optimal_wh"),
            },
        )
        for s in summaries
    }
    exact = all(r["exact"] for r in per.values())
    text = (
        "the exact minimum-energy route"
        if exact
        else "the best route known where no exact optimum exists (negative-energy cycles): the lowest true energy "
        "among the rectified references, the k shortest simple routes under clipped reduced costs and every "
        "route the run drove"
    )
    return {"exact": exact, "methods": sorted({str(r["method"]) for r in per.values()}), "text": text, "per_seed": per}


def blas_threads() -> dict[str, int]:
    """Thread count of each BLAS this process has loaded, by library file (numpy and scipy ship one each)."""
    from threadpoolctl import ThreadpoolController

    return {
        lib.filepath: int(lib.num_threads) for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"
    }


def use_blas_threads(threads: dict[str, int]) -> None:
    """Set each BLAS of this process to the count :func:`blas_threads` recorded for the same library file.

    With another count BLAS reductions sum in another order, results differ in the last bits and a bandit can
    amplify that into other routes; a model that limits BLAS threads (the exact GP) changes the count of the
    libraries loaded at that moment only, so counts are per library.  Loads numpy's and scipy's BLAS first:
    a limit reaches only the libraries already loaded.
    """
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    for path, n in threads.items():
        controller.select(filepath=path).limit(limits=n)


def init_worker(parent: int, threads: dict[str, int]) -> None:
    """Pool-worker initializer: :func:`die_with_parent`, then :func:`use_blas_threads` with the counts of the
    submitting process, so every executor gives the numbers of a serial run."""
    die_with_parent(parent)
    use_blas_threads(threads)


def die_with_parent(parent: int) -> None:
    """Pool-worker initializer (``initargs=(os.getpid(),)``): the worker is killed when process ``parent`` dies
    (Linux ``PR_SET_PDEATHSIG``; elsewhere a watcher thread exits when the parent is gone), so a killed run or
    sweep leaves no worker writing into its results.  A worker whose parent died while it was starting exits at
    once (it must not pick up the jobs still queued in the pipe)."""
    import signal
    import threading

    if os.getppid() != parent:
        os._exit(1)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0:  # PR_SET_PDEATHSIG = 1
            if os.getppid() != parent:  # the parent died before the call
                os._exit(1)
            return
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


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
