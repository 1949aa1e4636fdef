"""Trip logs with a known truth: SUMO drives given routes with the EV's battery device, its FCD (geo) and battery
outputs are the exact log, and :func:`degrade` makes it a realistic one (GPS noise, a coarser sampling period, a state
of charge rounded to the gauge's step).  Used by the known-truth study (``studies/trip_logs/known_truth.py``) and the
tiny sample log in ``data/trip-log-sumo/``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.sumo.binaries import run_sumo_program, sumo_binary
from evroute.sumo.export import write_routes_xml
from evroute.traces.reader import Trace

_M_PER_DEG = 111_319.49


def simulate_trips(
    net_file: str | os.PathLike[str],
    routes: Mapping[str, Sequence[str]],
    out_dir: str | os.PathLike[str],
    *,
    vehicle: VehicleProfile | None = None,
    depart_gap_s: float = 20.0,
    seed: int = 0,
    timeout_s: float = 3600.0,
    arrive_at_rest: bool = False,
) -> tuple[Path, Path]:
    """Drive ``routes`` (``name -> SUMO edge ids``, departing ``depart_gap_s`` apart) in SUMO at 1 s steps;
    returns ``(fcd.xml, battery.xml)`` in ``out_dir`` (FCD with ``--fcd-output.geo``: x = lon, y = lat).  With
    ``arrive_at_rest`` every trip brakes to a stop at the end of its route (:func:`evroute.sumo.export.routes_xml`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rou = write_routes_xml(
        out / "trips.rou.xml", routes, vehicle=vehicle, depart_gap_s=depart_gap_s, arrive_at_rest=arrive_at_rest
    )
    fcd, bat = out / "fcd.xml", out / "battery.xml"
    args: list[str | os.PathLike[str]] = [
        sumo_binary("sumo"),
        "-n",
        str(net_file),
        "-r",
        str(rou),
        "--step-length",
        "1",
        "--seed",
        str(int(seed)),
        "--no-step-log",
        "true",
        "--no-warnings",
        "true",
        "--duration-log.disable",
        "true",
        "--fcd-output",
        str(fcd),
        "--fcd-output.geo",
        "true",
        "--battery-output",
        str(bat),
        "--battery-output.precision",
        "6",
    ]
    run_sumo_program(args, "sumo", timeout_s=timeout_s)
    return fcd, bat


def degrade(
    trace: Trace, rng: np.random.Generator, *, gps_sigma_m: float, period_s: float, soc_step_pct: float
) -> Trace:
    """A realistic log of an exact one: every ``period_s``-th second, positions with isotropic Gaussian noise of
    ``gps_sigma_m`` m per axis, the state of charge rounded to the nearest ``soc_step_pct`` (% of capacity)."""
    if not (gps_sigma_m >= 0 and period_s >= 1 and soc_step_pct > 0):
        raise ParameterError("need gps_sigma_m >= 0, period_s >= 1, soc_step_pct > 0")
    t = trace.t_s
    keep = np.flatnonzero(np.diff(np.floor(t / period_s), prepend=-1.0) > 0)
    if keep[-1] != len(t) - 1:
        keep = np.append(keep, len(t) - 1)  # the last sample: the trip's end reading
    lat, lon = trace.lat[keep], trace.lon[keep]
    dlat = rng.normal(0.0, gps_sigma_m, len(keep)) / _M_PER_DEG
    dlon = rng.normal(0.0, gps_sigma_m, len(keep)) / (_M_PER_DEG * np.cos(np.radians(lat)))
    soc = np.round(trace.soc_pct[keep] / soc_step_pct) * soc_step_pct
    return Trace(
        t_s=t[keep],
        speed_mps=trace.speed_mps[keep],
        altitude_m=trace.altitude_m[keep],
        soc_pct=np.clip(soc, 0.0, 100.0),
        lat=lat + dlat,
        lon=lon + dlon,
        name=trace.name,
        meta=dict(trace.meta),
    )


def random_routes(lg: LineGraph, n: int, min_m: float, rng: np.random.Generator) -> dict[str, list[str]]:
    """``n`` trips ``trip_0000 ...`` -> SUMO edge ids: from a random edge to a random edge whose shortest legal path
    (by length, in the line graph) is ``min_m`` to ``4 min_m`` metres long; that path is the route."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    net = lg.network
    adj = lg.adjacency.tocoo()
    w = sp.csr_matrix((net.length_m[adj.row], (adj.row, adj.col)), shape=adj.shape)
    out: dict[str, list[str]] = {}
    while len(out) < n:
        a = int(rng.integers(lg.n_nodes))
        d, pred = dijkstra(w, indices=a, return_predecessors=True)
        ok = np.flatnonzero(np.isfinite(d) & (d >= min_m) & (d <= 4 * min_m))
        if not ok.size:
            continue
        b = int(rng.choice(ok))
        path = [b]
        while path[-1] != a:
            path.append(int(pred[path[-1]]))
        out[f"trip_{len(out):04d}"] = [str(net.edge_ids[e]) for e in path[::-1]]
    return out
