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

import contextlib
import itertools
import os
import re
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evroute.errors import ParameterError
from evroute.experiments.config import ExperimentConfig, field_names, read_json
from evroute.experiments.executors import EXECUTORS
from evroute.experiments.output import output_lock
from evroute.experiments.runner import (
    blas_threads,
    init_worker,
    prepare_output,
    run_experiment,
    run_seed,
    use_blas_threads,
    validate,
)
from evroute.validation import format_error

__all__ = ["EXECUTORS", "GridSpec", "expand_grid", "load_grid", "run_sweep"]


def _slug(value: Any) -> str:
    if isinstance(value, Mapping):
        value = "_".join(f"{k}{v}" for k, v in sorted(value.items()))
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", str(value)).strip("_") or "x"


#: Most grid points one sweep may define.
MAX_GRID_POINTS = 10_000


class GridSpec(BaseModel):
    """A sweep grid file: config fields in ``base``, lists of values to combine in ``grid``."""

    model_config = ConfigDict(extra="forbid")
    base: dict[str, Any] = Field(default_factory=dict, description="config fields shared by every grid point")
    grid: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        description="config field -> non-empty list of values; one run per combination ({} for one run of base)"
    )


def expand_grid(base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]) -> dict[str, ExperimentConfig]:
    """One named config per combination of ``grid`` values on top of ``base`` (names join the values)."""
    known = set(field_names())
    for where, given in (("base", base), ("grid", grid)):
        unknown = sorted(set(given) - known)
        if unknown:
            raise ParameterError(f"grid file {where}: unknown config field(s) {', '.join(map(repr, unknown))}")
    keys = list(grid)
    n = 1
    for k in keys:
        n *= len(grid[k])
    if n > MAX_GRID_POINTS:
        raise ParameterError(f"the grid defines {n} experiments, more than {MAX_GRID_POINTS}")
    out: dict[str, ExperimentConfig] = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        d = {**base, **dict(zip(keys, combo, strict=True))}
        name = "-".join(_slug(v) for v in combo) or "run"
        if name in out:
            raise ParameterError(f"grid values give two experiments the same folder name {name!r}")
        out[name] = ExperimentConfig.from_dict(d, what=f"grid point {name!r}:")
    return out


def load_grid(path: str | Path) -> dict[str, ExperimentConfig]:
    """Read and validate a grid file (see module docstring); one-line errors naming the field."""
    raw = read_json(path, "grid file")
    if not isinstance(raw, dict):
        raise ParameterError(
            f'grid file {path} must be a JSON object {{"base": {{...}}, "grid": {{...}}}}, got {type(raw).__name__}'
        )
    try:
        spec = GridSpec.model_validate(raw)
    except ValidationError as exc:
        raise ParameterError(format_error(exc, f"grid file {path}:")) from None
    return expand_grid(spec.base, spec.grid)


def _job(args: tuple[dict[str, Any], int, str, int]) -> dict[str, Any]:
    cfg_d, seed, out, every = args
    return run_seed(ExperimentConfig.from_dict(cfg_d), seed, out, checkpoint_every=every)


def _job_with_blas_threads(args: tuple[dict[str, Any], int, str, int], threads: dict[str, int]) -> dict[str, Any]:
    """:func:`_job` with the BLAS thread counts of the submitting process (Ray starts its workers with
    ``OMP_NUM_THREADS=1``; see :func:`~evroute.experiments.runner.use_blas_threads`)."""
    use_blas_threads(threads)
    return _job(args)


def run_sweep(
    configs: Mapping[str, ExperimentConfig],
    out_root: str | Path,
    *,
    executor: str = "process",
    workers: int | None = None,
    address: str | None = None,
    checkpoint_every: int = 10,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
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
    for cfg in configs.values():  # validate every grid point before any folder is created
        validate(cfg)
    dirs = {name: prepare_output(cfg, root / name) for name, cfg in configs.items()}
    with contextlib.ExitStack() as locks:
        for d in dirs.values():
            locks.enter_context(output_lock(d))
        _run_jobs(configs, dirs, executor, workers, address, checkpoint_every, progress)
        return {name: run_experiment(cfg, dirs[name], progress=False) for name, cfg in configs.items()}


def _run_jobs(
    configs: Mapping[str, ExperimentConfig],
    dirs: Mapping[str, Path],
    executor: str,
    workers: int | None,
    address: str | None,
    checkpoint_every: int,
    progress: bool,
) -> None:
    jobs = [
        (cfg.to_dict(), s, str(dirs[name]), checkpoint_every)
        for name, cfg in configs.items()
        for s in cfg.seeds
        if not (dirs[name] / f"seed_{s}" / "summary.json").exists()
    ]
    n = max(1, int(workers or os.cpu_count() or 1))
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc="sweep", unit="seed")
    if executor == "serial" or (executor == "process" and n == 1):
        for j in jobs:
            _job(j)
            if bar is not None:
                bar.update(1)
    elif executor == "process":
        with ProcessPoolExecutor(
            max_workers=n,
            mp_context=get_context("spawn"),
            initializer=init_worker,
            initargs=(os.getpid(), blas_threads()),
        ) as pool:
            for _ in pool.map(_job, jobs):
                if bar is not None:
                    bar.update(1)
    else:
        _run_ray(jobs, n, address, bar)
    if bar is not None:
        bar.close()


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
        threads = blas_threads()
        pending = [remote.remote(j, threads) for j in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done)
            if bar is not None:
                bar.update(len(done))
    finally:
        if started:
            ray.shutdown()
