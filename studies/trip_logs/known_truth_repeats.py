"""The known-truth study's route-mean truth (issue 35): each held-out route driven ``R`` times in a second SUMO run,
and the held-out errors scored both per drive and against the route's mean energy.

Why a second run: adding the repeats as extra vehicles to the first run would change the traffic (queues, the
vehicles ahead) every training trip met, and SUMO's random draws, so the training trips would not stay bit for bit
what they were; the first run (``sim/``) is left exactly as before and the repeats are driven in a second run
(``sim_repeats/``, :func:`repeat_schedule`) with **the same background demand**: the same number of vehicles
departing at the same 20 s gaps over the same simulated period, each from rest and parking at its end
(``simulate_trips(arrive_at_rest=True)``), every slot either a repeat of a held-out route or a training route.  The
``test x R`` repeats take seeded random slots (departure times spread over the whole period); the other slots keep
training routes in their first-run order.  The routes of both runs are independent draws of the same route
generator, so the held-out drives meet traffic of the same kind and density as the training trips did.

Scores (:func:`score`), per held-out drive ``d`` of route ``r(d)`` with error ``e_d = prediction - SUMO`` (Wh):

* per drive: ``rmse_wh = sqrt(mean_d e_d^2)``, ``bias_wh = mean_d e_d`` (over all ``test x R`` drives);
* against the route means: ``rmse_mean_raw_wh = sqrt(mean_r ebar_r^2)`` with ``ebar_r`` the mean error of route
  ``r``'s drives (= its mean prediction minus its mean energy, the truth), and the unbiased ``rmse_mean_wh = sqrt(max(0,
  mean_r (ebar_r^2 - s_r^2 / n_r)))``, ``s_r^2`` the sample variance of the route's ``n_r`` drive errors (of its
  energies when the prediction is the same for every drive): ``E[ebar_r^2] = (mean error)^2 + Var(e)/n_r``, so the
  correction removes the sampling error of the ``R``-drive mean and estimates the error against the route's expected
  energy.  Routes with fewer than two drives are left out of both (no ``s_r``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the seed of the repeats' departure slots
REPEAT_SEED = 2


def repeat_schedule(
    routes: Mapping[str, Sequence[str]], train: list[str], test: list[str], repeats: int
) -> dict[str, list[str]]:
    """The second run's vehicles in departure order (``name -> SUMO edge ids``; ``simulate_trips`` departs them
    20 s apart): ``len(routes)`` slots, the ``test x repeats`` drives ``TRIP_rK`` (K = 0 .. repeats-1) of the held-out
    trips' routes at seeded random slots (:data:`REPEAT_SEED`), the other slots the training trips in order (module
    doc).  Raises ``ValueError`` when ``test x repeats`` exceeds the slots."""
    slots = len(routes)
    if len(test) * repeats > slots:
        raise ValueError(f"{len(test)} x {repeats} repeats need more than the run's {slots} departure slots")
    at = np.random.default_rng(REPEAT_SEED).permutation(slots)[: len(test) * repeats]
    drive_at = {int(s): (test[k // repeats], k % repeats) for k, s in enumerate(at)}
    background = iter(train)
    out: dict[str, list[str]] = {}
    for slot in range(slots):
        if slot in drive_at:
            trip, k = drive_at[slot]
            out[f"{trip}_r{k}"] = list(routes[trip])
        else:
            name = next(background)
            out[name] = list(routes[name])
    return out


def repeat_drives(
    net_file: str | os.PathLike[str],
    routes: Mapping[str, Sequence[str]],
    train: list[str],
    test: list[str],
    repeats: int,
    out: Path,
    vehicle: Any,
) -> tuple[list[Any], np.ndarray]:
    """``(traces, route index)``: SUMO's exact logs of the held-out drives of the second run (simulated once, kept in
    ``out / "sim_repeats"``) in the order of ``test`` and then repeat, and per drive the index of its route in
    ``test``; drives SUMO did not complete are left out."""
    from evroute.sumo.triplogs import simulate_trips
    from evroute.traces.formats import read_sumo_fcd
    from studies.trip_logs.known_truth_data import _cpu

    sim = out / "sim_repeats"
    schedule = repeat_schedule(routes, train, test, repeats)
    if not (sim / "battery.xml").is_file():
        t0 = _cpu()
        simulate_trips(net_file, schedule, sim, vehicle=vehicle, depart_gap_s=20.0, arrive_at_rest=True)
        cpu = _cpu() - t0
        print(f"simulated the second run, {len(schedule)} vehicles ({cpu:.1f} CPU s incl. SUMO)", file=sys.stderr)
    traces = {t.name: t for t in read_sumo_fcd(sim / "fcd.xml", sim / "battery.xml")}
    got, index = [], []
    for i, trip in enumerate(test):
        for k in range(repeats):
            tr = traces.get(f"{trip}_r{k}")
            if tr is not None:
                got.append(tr)
                index.append(i)
    return got, np.array(index, dtype=np.int64)


def score(err: np.ndarray, drive_route: np.ndarray) -> dict[str, float]:
    """The held-out scores of errors ``err`` ``(D,)`` (prediction - SUMO, Wh) of drives of routes ``drive_route``
    ``(D,)`` (module doc): ``rmse_wh``, ``bias_wh`` per drive; ``rmse_mean_wh`` (unbiased), ``rmse_mean_raw_wh``
    against the route means (NaN when no route has two drives); ``mse_mean_wh2`` the unbiased mean square itself
    (may be negative by sampling error); ``routes`` the routes with two or more drives."""
    err = np.asarray(err, dtype=np.float64)
    out = {"rmse_wh": float(np.sqrt(np.mean(err**2))), "bias_wh": float(err.mean())}
    sq, corr = [], []
    for r in np.unique(drive_route):
        e = err[drive_route == r]
        if len(e) >= 2:
            sq.append(e.mean() ** 2)
            corr.append(e.var(ddof=1) / len(e))
    if sq:
        mse = float(np.mean(sq) - np.mean(corr))
        out.update(
            rmse_mean_wh=float(np.sqrt(max(mse, 0.0))),
            rmse_mean_raw_wh=float(np.sqrt(np.mean(sq))),
            mse_mean_wh2=mse,
        )
    else:
        out.update(rmse_mean_wh=float("nan"), rmse_mean_raw_wh=float("nan"), mse_mean_wh2=float("nan"))
    out["routes"] = float(len(sq))
    return out


def score_fields(err: np.ndarray, drive_route: np.ndarray) -> dict[str, str]:
    """:func:`score` as the rows store it (``rmse_mean_wh`` / ``rmse_mean_raw_wh`` empty without repeats; ``n_drives``
    the held-out drives scored)."""
    s = score(err, drive_route)
    has = np.isfinite(s["rmse_mean_wh"])
    return dict(
        rmse_wh=f"{s['rmse_wh']:.3f}",
        bias_wh=f"{s['bias_wh']:.3f}",
        rmse_mean_wh=f"{s['rmse_mean_wh']:.3f}" if has else "",
        rmse_mean_raw_wh=f"{s['rmse_mean_raw_wh']:.3f}" if has else "",
        n_drives=str(len(err)),
    )
