"""Parallel experiment sweeps: a grid of :class:`ExperimentConfig` run seed by seed on an executor.

Every (config, seed) pair is one job running :func:`~evroute.experiments.runner.run_seed` into
``OUT/<name>/seed_<s>``, so a sweep

* is **resumable**: finished seeds are skipped (their ``summary.json`` exists) and interrupted ones
  continue from their last checkpoint;
* gives **the same numbers** whatever the executor: a job depends only on its config and seed (the
  environment, the policy and noise streams and the GP model's minibatches are all seeded from it, and
  the GP model runs torch with one intra-op thread by default);
* runs on ``"serial"`` (in this process), ``"process"`` (a local spawn process pool, the default) or
  ``"ray"`` (optional extra ``ray``: a local Ray instance, or a cluster with ``address=``).

A grid file for ``evroute sweep`` is JSON ``{"base": {config fields}, "grid": {field: [values, ...]}}``;
the product of the grid values gives one config per combination, named by its values.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from evroute.errors import DataError, ParameterError
from evroute.experiments.config import ExperimentConfig
from evroute.experiments.runner import prepare_output, run_experiment, run_seed

EXECUTORS = ("serial", "process", "ray")


def _slug(value: Any) -> str:
    if isinstance(value, Mapping):
        value = "_".join(f"{k}{v}" for k, v in sorted(value.items()))
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", str(value)).strip("_") or "x"


def expand_grid(base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> dict[str, ExperimentConfig]:
    """One named config per combination of ``grid`` values on top of ``base`` (names join the values)."""
    keys = list(grid)
    out: dict[str, ExperimentConfig] = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        d = {**base, **dict(zip(keys, combo, strict=True))}
        name = "-".join(_slug(v) for v in combo) or "run"
        out[name] = ExperimentConfig.from_dict(d)
    return out


def load_grid(path: str | Path) -> dict[str, ExperimentConfig]:
    """Read a grid file (see module docstring)."""
    try:
        spec = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read grid file {path}: {exc}") from None
    return expand_grid(spec.get("base", {}), spec.get("grid", {}))


def _job(args: tuple[dict[str, Any], int, str, int]) -> dict[str, Any]:
    cfg_d, seed, out, every = args
    return run_seed(ExperimentConfig.from_dict(cfg_d), seed, out, checkpoint_every=every)


def _blas_threads() -> int | None:
    """Threads of this process's BLAS (``None`` when no BLAS is loaded)."""
    from threadpoolctl import threadpool_info

    counts = [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else None


def _job_with_blas_threads(args: tuple[dict[str, Any], int, str, int], threads: int | None) -> dict[str, Any]:
    """:func:`_job` with the BLAS thread count of the submitting process.

    Ray starts its workers with ``OMP_NUM_THREADS=1``; BLAS reductions then sum in another order than in the
    submitting process and results differ in the last bits, which a bandit can amplify into other routes.
    """
    if threads is None:
        return _job(args)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        return _job(args)


def run_sweep(configs: Mapping[str, ExperimentConfig], out_root: str | Path, *, executor: str = "process",
              workers: int | None = None, address: str | None = None, checkpoint_every: int = 10,
              progress: bool = False) -> dict[str, dict[str, Any]]:
    """Run every seed of every config; returns ``name -> aggregate summary`` (as :func:`run_experiment`).

    Args:
        configs: ``name -> config``; results go to ``out_root/name``.
        executor: ``"serial"``, ``"process"`` (default) or ``"ray"``.
        workers: processes (default: CPU count) or Ray CPUs for a local Ray instance.
        address: Ray cluster address (``None``: start a local instance).
    """
    if executor not in EXECUTORS:
        raise ParameterError(f"unknown executor {executor!r} (choose from {', '.join(EXECUTORS)})")
    root = Path(out_root)
    if executor == "ray":
        _check_ray(address)  # before anything is written
    dirs = {name: prepare_output(cfg, root / name) for name, cfg in configs.items()}  # validates everything first
    jobs = [(cfg.to_dict(), s, str(dirs[name]), checkpoint_every)
            for name, cfg in configs.items() for s in cfg.seeds
            if not (dirs[name] / f"seed_{s}" / "summary.json").exists()]
    n = max(1, int(workers or os.cpu_count() or 1))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="sweep", unit="seed")
    if executor == "serial" or (executor == "process" and n == 1):
        for j in jobs:
            _job(j)
            if bar is not None:
                bar.update(1)
    elif executor == "process":
        with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
            for _ in pool.map(_job, jobs):
                if bar is not None:
                    bar.update(1)
    else:
        _run_ray(jobs, n, address, bar)
    if bar is not None:
        bar.close()
    return {name: run_experiment(cfg, dirs[name], progress=False) for name, cfg in configs.items()}


def _check_ray(address: str | None, timeout_s: float = 5.0) -> None:
    """Fail fast, with one line, when Ray is missing or a ``host:port`` cluster address does not answer."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ParameterError("executor 'ray' needs the optional dependency ray (pip install 'ray[default]')") from None
    if not address or address == "auto" or "://" in address:
        return  # a local instance, or an address form only Ray itself resolves
    import socket

    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as exc:
        raise ParameterError(f"no Ray cluster answers at {address!r} ({exc})") from None


def _run_ray(jobs: list, workers: int, address: str | None, bar: Any) -> None:
    import ray  # checked by _check_ray
    started = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(_job_with_blas_threads)
        threads = _blas_threads()
        pending = [remote.remote(j, threads) for j in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done)
            if bar is not None:
                bar.update(len(done))
    finally:
        if started:
            ray.shutdown()
