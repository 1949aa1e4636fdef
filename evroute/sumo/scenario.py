"""Traffic scenarios on any SUMO network: background demand from SUMO's own tools, cached by content hash.

:func:`background_demand` draws random trips with ``randomTrips.py`` at hourly rates following a daily profile
(:data:`DAILY_PROFILE`: morning and evening peaks) and routes them with ``duarouter`` (fastest routes).  The
vehicles carry no type, so SUMO's default type applies: the simulation redefines it as the EV of the vehicle
profile (:func:`evroute.sumo.vehicle.ev_vtype_xml`), and the demand file does not depend on the vehicle.
A user's own ``.rou.xml`` can be used instead (:func:`check_route_file`).

Generated files are cached in ``$EVROUTE_CACHE/sumo`` (default ``~/.cache/evroute/nets/sumo``), keyed by the
SHA-256 of the network file, every generation parameter and the SUMO version, like converted networks, and checked
against their manifest on every use (:mod:`evroute.network.cachefiles`: a damaged entry is rebuilt).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from evroute.errors import DataError, ParameterError, check_positive
from evroute.network.cachefiles import cached, clean_stale_temps, temp_prefix
from evroute.network.registry import file_sha256, net_cache_dir
from evroute.sumo.binaries import run_sumo_program, sumo_binary, sumo_tool

HOURS = np.arange(24)
#: relative demand per hour of day (0-23), peak 1 at 8:00; a morning peak (8:00), a lower evening peak (17:30),
#: a lunch-time shoulder and a night floor of 5 % -- the shape of urban loop-detector counts
DAILY_PROFILE: tuple[float, ...] = tuple(
    float(v)
    for v in np.round(
        0.05
        + 0.95 * np.exp(-0.5 * ((HOURS + 0.5 - 8.0) / 1.2) ** 2)
        + 0.8 * np.exp(-0.5 * ((HOURS + 0.5 - 17.5) / 1.5) ** 2)
        + 0.25 * np.exp(-0.5 * ((HOURS + 0.5 - 13.0) / 2.0) ** 2),
        4,
    )
)


def sumo_cache_dir() -> Path:
    """Where generated SUMO inputs and recorded days are cached: ``<net cache>/sumo``."""
    return net_cache_dir() / "sumo"


def sumo_version() -> str:
    """Version of the SUMO programs in use (part of every cache key)."""
    import importlib.metadata as md

    for dist in ("eclipse-sumo", "sumolib"):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return str(sumo_binary("sumo"))


def cache_key(net_file: str | os.PathLike[str], params: dict[str, object]) -> str:
    """20 hex digits of SHA-256 over the network file's bytes, ``params`` (JSON) and the SUMO version."""
    h = hashlib.sha256()
    h.update(file_sha256(net_file).encode())
    h.update(json.dumps(params, sort_keys=True, default=str).encode())
    h.update(sumo_version().encode())
    return h.hexdigest()[:20]


def hourly_rates(
    peak_per_hour: float, hours: tuple[int, int] = (0, 24), profile: tuple[float, ...] = DAILY_PROFILE
) -> list[float]:
    """Vehicles inserted per hour for each hour in ``[hours[0], hours[1])``: ``peak_per_hour * profile[h]``."""
    check_positive("peak_per_hour", peak_per_hour)
    h0, h1 = hours
    if not 0 <= h0 < h1 <= len(profile):
        raise ParameterError(f"hours must satisfy 0 <= start < end <= {len(profile)}, got {hours}")
    return [float(peak_per_hour) * float(profile[h]) for h in range(h0, h1)]


def background_demand(
    net_file: str | os.PathLike[str],
    *,
    peak_per_hour: float = 1800.0,
    hours: tuple[int, int] = (0, 24),
    profile: tuple[float, ...] = DAILY_PROFILE,
    seed: int = 0,
    min_distance_m: float = 300.0,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Routed background traffic (``.rou.xml``) for ``hours`` of a day on ``net_file``; cached.

    Trips start and end on random passenger edges (``randomTrips.py --validate``, at least ``min_distance_m``
    apart, departures at the hourly rates of :func:`hourly_rates`) and are routed by ``duarouter``.
    Times are seconds since midnight (``hours[0] * 3600`` to ``hours[1] * 3600``).

    Returns:
        Path of the cached route file (same arguments, same network bytes -> same file, generated once).

    Raises:
        SumoError: SUMO missing or a tool failing; DataError: the network file is missing.
    """
    net = Path(net_file)
    if not net.is_file():
        raise DataError(f"SUMO network file not found: {net}")
    rates = hourly_rates(peak_per_hour, hours, profile)
    check_positive("min_distance_m", min_distance_m, allow_zero=True)
    params = {
        "kind": "background",
        "rates": rates,
        "hours": list(hours),
        "seed": int(seed),
        "min_distance_m": float(min_distance_m),
    }
    out_dir = Path(cache_dir) if cache_dir is not None else sumo_cache_dir()
    stem = net.name.removesuffix(".gz").removesuffix(".xml").removesuffix(".net")
    out = out_dir / f"{stem}-demand-{cache_key(net, params)}.rou.xml"
    inputs = {"kind": "background-demand", "net_sha256": file_sha256(net), "params": params, "sumo": sumo_version()}
    clean_stale_temps([out_dir])  # temporary files of interrupted runs (a missing folder is skipped)
    return cached(out, inputs, lambda dest: _generate_demand(net, dest, rates, hours, seed, min_distance_m), "demand")


def _generate_demand(
    net: Path, out: Path, rates: list[float], hours: tuple[int, int], seed: int, min_distance_m: float
) -> None:
    """Run randomTrips.py/duarouter in a temporary folder next to ``out`` and move the routes to ``out``."""
    out_dir = out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(".demand-"), dir=out_dir))
    try:
        cmd: list[str | os.PathLike[str]] = [
            sumo_tool("randomTrips.py"),
            "-n",
            net.resolve(),
            "-o",
            "trips.xml",
            "-r",
            "routes.rou.xml",
            "-b",
            str(hours[0] * 3600),
            "-e",
            str(hours[1] * 3600),
            "--insertion-rate",
            *map(str, rates),
            "--seed",
            str(int(seed)),
            "--validate",
            "--edge-permission",
            "passenger",
            "--min-distance",
            str(float(min_distance_m)),
            "--prefix",
            "bg",
        ]
        run_sumo_program(cmd, f"randomTrips.py/duarouter on {net.name}", cwd=tmp)
        routes = tmp / "routes.rou.xml"
        if not routes.is_file() or routes.stat().st_size == 0:
            raise DataError(f"randomTrips.py wrote no routes for {net.name}")
        os.chmod(routes, 0o644)
        os.replace(routes, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_route_file(path: str | os.PathLike[str]) -> Path:
    """A user's own demand file: must exist and parse as SUMO routes with at least one vehicle, trip or flow."""
    import sumolib

    from evroute.network.xmlguard import check_xml_file

    p = Path(path)
    if not p.is_file():
        raise DataError(f"route file not found: {p}")
    check_xml_file(p, "SUMO route file")  # no DTD / entity / bomb reaches sumolib or sumo's Xerces
    try:
        n = sum(1 for _ in sumolib.xml.parse_fast(str(p), "vehicle", ["id"]))
        n += sum(1 for _ in sumolib.xml.parse_fast(str(p), "trip", ["id"]))
        n += sum(1 for _ in sumolib.xml.parse_fast(str(p), "flow", ["id"]))
    except Exception as exc:  # noqa: BLE001 - malformed XML from sax/expat
        raise DataError(f"malformed route file {p}: {str(exc).splitlines()[0]}") from None
    if n == 0:
        raise DataError(f"route file {p} holds no vehicle, trip or flow")
    return p


__all__ = [
    "DAILY_PROFILE",
    "background_demand",
    "cache_key",
    "check_route_file",
    "hourly_rates",
    "sumo_cache_dir",
    "sumo_version",
]
