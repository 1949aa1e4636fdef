"""Synthetic trip logs of any length on a road network, written row by row (memory: one drive), for the streaming
tests and the log benchmark (``studies/bench/bench_log_stream.py``).

A log is a sequence of drives of ``drive_s`` seconds at 1 Hz: a random walk over legal turns without U-turns, each
edge driven at its speed limit, positions along the edge geometry with Gaussian GPS noise (``gps_sigma_m``), altitude
interpolated between the edge's end heights; the state of charge starts each drive at 90 % and falls by the edge
energies ``energy_wh`` spread evenly along each edge, shown rounded to ``soc_step`` %.  Between drives the battery is
charged back to 90 % at once (a rise of the state of charge with no charging flag: the reader splits the log there).
Formats: ``"twizy"`` (the 15 columns of the RSK Twizy logs, time of day in ``Time``: about 130 bytes a row, as the
real logs), ``"default"`` (the documented schema, :func:`evroute.traces.reader.write_trace_csv`: about 55 bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import numpy as np

from evroute.errors import ParameterError
from evroute.traces.mapmatch import MatchIndex

TWIZY_HEADER = (
    "Date,Time,Soc,Speed,Mode,LAT,LON,ALT,GpsSpeed,Temperature,Humidity,Weather,WindSpeedAv,Traffic,SpeedLimit"
)
DEFAULT_HEADER = "time,speed_kmh,altitude_m,soc_pct,lat,lon"


def random_drive(
    index: MatchIndex, rng: np.random.Generator, duration_s: int, sigma_m: float, energy_wh: np.ndarray
) -> tuple[np.ndarray, ...]:
    """``(speed m/s, altitude m, energy used Wh, lat, lon)`` of one drive (module doc), ``(duration_s,)`` each: a
    random walk from a random edge over legal turns without U-turns (unless the only way on), 1 Hz samples at each
    edge's speed limit along its geometry, the energy ``energy_wh`` ``(E,)`` of each edge spread evenly along it,
    Gaussian GPS noise of ``sigma_m`` metres on the positions.  The one walk of the synthetic logs and of the learning
    benchmark (``studies/trip_logs/bench_learning.py``)."""
    lg = index.linegraph
    net = lg.network
    adj = lg.adjacency.tocsr()
    e = int(rng.integers(lg.n_nodes))
    parts: list[tuple[np.ndarray, ...]] = []
    n, used, carry = 0, 0.0, 0.0
    while n < duration_s:
        g = np.asarray(net.geometry[e], dtype=np.float64)
        xy = index.project(g[:, 1], g[:, 0])
        cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
        step = float(net.speed_mps[e])
        s = np.arange(carry, cum[-1], step)
        carry = (s[-1] + step - cum[-1]) if s.size else carry - cum[-1]
        frac = s / max(cum[-1], 1e-9)
        z = net.z_from_m[e] + frac * (net.z_to_m[e] - net.z_from_m[e])
        la, lo = np.interp(s, cum, g[:, 1]), np.interp(s, cum, g[:, 0])
        parts.append((np.full(s.size, step), z, used + energy_wh[e] * frac, la, lo))
        used += float(energy_wh[e])
        n += s.size
        nxt = adj.indices[adj.indptr[e] : adj.indptr[e + 1]]
        fwd = [int(v) for v in nxt if index.reverse[e] != v]
        e = int(rng.choice(fwd or nxt))
    v, z, wh, la, lo = (np.concatenate([p[k] for p in parts])[:duration_s] for k in range(5))
    la = la + rng.normal(0, sigma_m, la.size) / 111_319.49
    lo = lo + rng.normal(0, sigma_m, lo.size) / (111_319.49 * np.cos(np.radians(la)))
    return v, z, wh, la, lo


def _write_rows(fh: TextIO, fmt: str, t0: int, v: np.ndarray, z: np.ndarray, soc: np.ndarray, la, lo) -> None:
    if fmt == "default":
        for k in range(len(v)):
            fh.write(f"{t0 + k},{v[k] * 3.6:.2f},{z[k]:.1f},{soc[k]:.2f},{la[k]:.7f},{lo[k]:.7f}\n")
        return
    for k in range(len(v)):
        t = t0 + k
        day, sec = divmod(t, 86_400)
        clock = f"{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        fh.write(
            f"03/{1 + day % 28:02d}/2021,{clock},{soc[k]:.6f},{v[k] * 3.6:.6f},D,{la[k]:.6f},{lo[k]:.6f},"
            f"{z[k]:.6f},{v[k] * 3.6:.6f},20.000000,60.000000,Clouds,2.490000,0,50.000000\n"
        )


def write_synthetic_log(
    path: str | Path,
    index: MatchIndex,
    energy_wh: np.ndarray,
    *,
    target_bytes: int,
    usable_wh: float,
    fmt: str = "twizy",
    drive_s: int = 3600,
    gps_sigma_m: float = 5.0,
    soc_step: float = 0.01,
    seed: int = 0,
) -> dict[str, int]:
    """Write a log of at least ``target_bytes`` bytes and one drive (module doc); returns ``{"rows", "drives",
    "bytes"}``.

    Args:
        index: the network's match index (its projection and line graph).
        energy_wh: ``(E,)`` each edge's battery energy per traversal, Wh.
        usable_wh: the usable battery capacity that 100 % stands for, Wh.
    """
    if fmt not in ("twizy", "default"):
        raise ParameterError(f"synthetic log format must be twizy or default, got {fmt!r}")
    if not (target_bytes > 0 and usable_wh > 0 and drive_s >= 2 and soc_step > 0):
        raise ParameterError("target_bytes, usable_wh, soc_step must be > 0 and drive_s >= 2")
    rng = np.random.default_rng(seed)
    p = Path(path)
    rows = drives = 0
    with p.open("w", newline="") as fh:
        fh.write((TWIZY_HEADER if fmt == "twizy" else DEFAULT_HEADER) + "\n")
        while drives == 0 or fh.tell() < target_bytes:
            v, z, wh, la, lo = random_drive(index, rng, drive_s, gps_sigma_m, energy_wh)
            soc = np.clip(np.round((90.0 - 100.0 * wh / usable_wh) / soc_step) * soc_step, 0.0, 100.0)
            _write_rows(fh, fmt, rows, v, z, soc, la, lo)
            rows += len(v)
            drives += 1
        size = fh.tell()
    return {"rows": rows, "drives": drives, "bytes": size}


__all__ = ["DEFAULT_HEADER", "TWIZY_HEADER", "random_drive", "write_synthetic_log"]
