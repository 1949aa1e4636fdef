"""Per-trip energy of trip logs read as streams: predicted (with a 90 % interval) vs measured, in bounded memory.

``evroute learn LOGS`` without ``--calibrate`` scores every trip of every log with the vehicle profile: the log is
read block by block (:class:`~evroute.traces.stream.LogStream`, ``block_rows`` rows each, consecutive blocks sharing
a sample), and per block the trace model's energy (:func:`~evroute.traces.energy.trace_energy`), its gradient in the
uncertain parameters (:func:`~evroute.traces.calibrate.trip_gradient`), the battery energy the gauge shows and the
window errors are added to the trip's (a trip is a segment of the log between charging rises).  Energies and
gradients add up over blocks, so the trip's prediction and interval are those of the whole trip, up to the altitude
smoothing at block ends and the last partial window of each block, which is left out of the window RMSE (one
``window_s`` window per ``block_rows`` samples).

A log **without a state-of-charge column** (``TraceColumns.soc = None``) measures no energy; its trips are still
predicted, with their interval (:func:`~evroute.traces.calibrate.predict_trip`'s delta method: the parameters'
uncertainty -- the profile's prior, :func:`~evroute.traces.calibrate.prior_calibration`, or a calibration learned on
other logs --, the windows' noise and the trip effect), and the distance and time driven are reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evroute.energy import VehicleProfile
from evroute.traces.calibrate import Calibration, trip_gradient, trip_variance, window_energies
from evroute.traces.energy import TraceModelOptions, measured_energy_wh
from evroute.traces.reader import TraceColumns
from evroute.traces.stream import LogStream

#: the standard normal's 95 % quantile: a central 90 % interval is mean +- Z90 sd
Z90 = 1.6448536269514722
#: rows per block of the scoring stream (about 14 hours at 1 Hz; the model is vectorised over a block)
SCORE_BLOCK_ROWS = 50_000


@dataclass(frozen=True)
class TripRow:
    """One trip's line of ``evroute learn``: ``measured_wh``, ``error_pct`` and ``window_rmse_wh`` are ``None`` for
    a log without state of charge; ``interval90_wh`` is the half-width of the 90 % predictive interval."""

    trip: str
    distance_km: float
    duration_h: float
    measured_wh: float | None
    predicted_wh: float
    error_pct: float | None
    window_rmse_wh: float | None
    interval90_wh: float

    def to_dict(self) -> dict[str, float | str | None]:
        def r(x: float | None, k: int) -> float | None:
            return None if x is None or not np.isfinite(x) else round(x, k)

        return {
            "trip": self.trip,
            "distance_km": r(self.distance_km, 3),
            "duration_h": r(self.duration_h, 3),
            "measured_wh": r(self.measured_wh, 1),
            "predicted_wh": r(self.predicted_wh, 1),
            "error_pct": r(self.error_pct, 2),
            "window_rmse_wh": r(self.window_rmse_wh, 1),
            "interval90_wh": r(self.interval90_wh, 1),
        }


class _Trip:
    """The sums of one trip over its blocks."""

    def __init__(self, name: str, p: int) -> None:
        self.name = name
        self.distance_m = self.duration_s = self.measured = self.predicted = self.sq = 0.0
        self.grad = np.zeros(p)
        self.windows = 0
        self.has_soc = True

    def row(self, cal: Calibration) -> TripRow:
        var = trip_variance(self.predicted, self.grad, self.duration_s, cal)
        meas = self.measured if self.has_soc else None
        err = 100.0 * (self.predicted - meas) / meas if meas else None
        rmse = float(np.sqrt(self.sq / self.windows)) if self.has_soc and self.windows else None
        return TripRow(
            self.name,
            self.distance_m / 1000.0,
            self.duration_s / 3600.0,
            meas,
            self.predicted,
            err,
            rmse,
            Z90 * var**0.5,
        )


def stream_trip_rows(
    path: str | Path,
    columns: TraceColumns | None,
    cal: Calibration,
    *,
    window_s: float = 300.0,
    block_rows: int = SCORE_BLOCK_ROWS,
    options: TraceModelOptions | None = None,
) -> Iterator[TripRow]:
    """The :class:`TripRow` of each trip of one log (module doc), under ``cal`` (its ``vehicle`` predicts; a trip
    is named ``<file stem>`` when the log is one trip, else ``<file stem>#k``)."""
    vehicle: VehicleProfile = cal.vehicle
    p = Path(path)
    stream = LogStream(p, columns, block_rows=block_rows)
    trip: _Trip | None = None
    done: list[TripRow] = []
    for block in stream:
        if block.first:
            trip = _Trip(f"{p.stem}#{block.segment + 1}", len(cal.names))
        assert trip is not None
        tr = block.trace(trip.name)
        trip.distance_m += tr.distance_m
        trip.duration_s += tr.duration_s
        mean, grad = trip_gradient(tr, cal, options)
        trip.predicted += mean
        trip.grad += grad
        if np.isfinite(tr.soc_pct).all():
            trip.measured += float(measured_energy_wh(tr, vehicle)[-1])
            pred, meas = window_energies(tr, vehicle, window_s, options)
            trip.sq += float(np.sum((pred - meas) ** 2))
            trip.windows += len(pred)
        else:
            trip.has_soc = False
        if block.last:
            done.append(trip.row(cal))
            trip = None
        while len(done) > 1:  # hold one back: a log of one trip names it after the file
            yield done.pop(0)
    if stream.splitter.segment == 0 and len(done) == 1:
        only = done[0]
        done = [TripRow(p.stem, *(getattr(only, f) for f in TripRow.__dataclass_fields__ if f != "trip"))]
    yield from done


__all__ = ["SCORE_BLOCK_ROWS", "Z90", "TripRow", "stream_trip_rows"]
