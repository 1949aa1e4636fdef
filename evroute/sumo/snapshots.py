"""Saved states of a scenario's background traffic, the starting points of live trips (:mod:`evroute.sumo.live`).

The background day is simulated once with ``sumo`` and its full state (every vehicle, traffic light and random
number generator) is saved at a grid of departure times (:func:`live_snapshots`), cached by content hash like the
demand.  :func:`base_args` are the ``sumo`` options a saved day and every live trip share.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evroute.energy import VehicleProfile
from evroute.errors import DataError, ParameterError
from evroute.network.cachefiles import cached, clean_stale_temps, temp_prefix
from evroute.network.registry import file_sha256
from evroute.sumo.binaries import SumoError, run_sumo_program, sumo_binary
from evroute.sumo.record import write_vtype_file
from evroute.sumo.scenario import cache_key, sumo_cache_dir, sumo_version
from evroute.sumo.vehicle import energy_fields


def base_args(net_file: Path, vtype_file: Path, step_length: float, seed: int) -> list[str]:
    """``sumo`` options of a saved day and of every live trip: net, EV type, step, seed, quiet logs."""
    return [
        "-n",
        str(net_file),
        "--additional-files",
        str(vtype_file),
        "--step-length",
        f"{step_length:g}",
        "--seed",
        str(int(seed)),
        "--no-step-log",
        "true",
        "--no-warnings",
        "true",
        "--ignore-route-errors",
        "true",
        "--duration-log.disable",
        "true",
    ]


def live_snapshots(
    net_file: str | os.PathLike[str],
    route_files: Sequence[str | os.PathLike[str]],
    times_s: Sequence[float] | np.ndarray,
    *,
    vehicle: VehicleProfile | None = None,
    model: str = "Energy",
    step_length: float = 1.0,
    seed: int = 0,
    begin_s: float = 0.0,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout_s: float = 3600.0,
) -> list[Path]:
    """Saved SUMO states of the background traffic at ``times_s`` (one ``sumo`` run from ``begin_s``); cached.

    Args:
        net_file, route_files: the network and the background demand (its vehicles are EVs of the profile).
        times_s: ``(K,)`` increasing simulation times (s since midnight, multiples of ``step_length``).
        vehicle, model: the EV type (:func:`evroute.sumo.vehicle.ev_vtype_xml`), as in the recorded day.
        step_length, seed: SUMO's step (s) and random seed (the replay's day uses the demand seed).

    Returns:
        ``K`` state files (``.xml.gz``, random number generators included), in the order of ``times_s``.

    Raises:
        SumoError: SUMO missing or failing; DataError: an input file missing.
    """
    net = Path(net_file)
    routes = [Path(p) for p in route_files]
    for p in [net, *routes]:
        if not p.is_file():
            raise DataError(f"file not found: {p}")
    times = np.asarray(times_s, dtype=np.float64)
    if len(times) == 0 or np.any(np.diff(times) <= 0) or times[0] < begin_s:
        raise ParameterError("snapshot times must be increasing and not before the simulation's begin")
    v = vehicle or VehicleProfile()
    physics = energy_fields(v)
    params = {
        "kind": "live-snapshots",
        "routes": [hashlib.sha256(p.read_bytes()).hexdigest() for p in routes],
        "times": times.tolist(),
        "vehicle": physics,
        "model": model,
        "step_length": float(step_length),
        "seed": int(seed),
        "begin": float(begin_s),
    }
    out_dir = Path(cache_dir) if cache_dir is not None else sumo_cache_dir()
    stem = net.name.removesuffix(".gz").removesuffix(".xml").removesuffix(".net")
    folder = out_dir / f"{stem}-live-{cache_key(net, params)}"
    names = [f"state_{k:05d}.xml.gz" for k in range(len(times))]
    inputs = {"kind": "live-snapshots", "net_sha256": file_sha256(net), "params": params, "sumo": sumo_version()}
    clean_stale_temps([out_dir])  # temporary files of interrupted runs (a missing folder is skipped)

    def build(dest: Path) -> None:
        _save_states(net, routes, times, names, dest, v, model, step_length, seed, begin_s, timeout_s)

    cached(folder, inputs, build, "SUMO states")
    return [folder / n for n in names]


def _save_states(
    net: Path,
    routes: list[Path],
    times: np.ndarray,
    names: list[str],
    folder: Path,
    v: VehicleProfile,
    model: str,
    step_length: float,
    seed: int,
    begin_s: float,
    timeout_s: float,
) -> None:
    """One ``sumo`` run saving the states ``names`` at ``times`` into a temporary folder moved to ``folder``."""
    out_dir = folder.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(".live-"), dir=out_dir))
    try:
        vt = write_vtype_file(tmp / "ev.add.xml", v, model=model)
        tmp_files = [tmp / n for n in names]
        args = [
            *base_args(net, vt, step_length, seed),
            "-r",
            ",".join(str(p) for p in routes),
            "-b",
            f"{begin_s:g}",
            "-e",
            f"{times[-1] + step_length:g}",
            "--save-state.times",
            ",".join(f"{t:g}" for t in times),
            "--save-state.files",
            ",".join(str(f) for f in tmp_files),
            "--save-state.rng",
            "true",
        ]
        run_sumo_program([sumo_binary("sumo"), *args], f"sumo (background states of {net.name})", timeout_s=timeout_s)
        missing = [f.name for f in tmp_files if not f.is_file()]
        if missing:
            raise SumoError(f"sumo saved no state {missing[0]} (of {len(missing)} missing)")
        (tmp / "ev.add.xml").unlink()
        for f in tmp_files:
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        if folder.exists():  # an incomplete folder of an earlier, killed run
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["base_args", "live_snapshots"]
