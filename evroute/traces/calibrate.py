"""Calibrate a vehicle profile on logged trips and score it on others.

The measurement is the battery's state of charge, so the model is fitted to the energy used over windows of
``window_s`` seconds: the logged ``(soc_start - soc_end) x usable capacity`` against the trace model's energy of the
same samples (:func:`evroute.traces.energy.trace_energy`).  Windows keep the fit away from the state-of-charge
quantisation (one step of the Twizy's gauge, 0.02 %, is 1.2 Wh; a 5-minute window uses ~100 Wh) and from the lag
between power and the gauge, while leaving hundreds of windows per data set.  The free parameters and their physical
bounds are in :data:`FIT_PARAMETERS`; the fit is bounded non-linear least squares (SciPy's trust-region reflective
method) started from the profile's values.

Only energy over capacity is observed, so the capacity and the propulsion efficiency are confounded: an error in
the stated capacity shows up as a shifted ``propulsion_efficiency`` (and ``recuperation_efficiency``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.traces.energy import TraceModelOptions, measured_energy_wh, trace_energy
from evroute.traces.reader import Trace

#: name -> (lower, upper) bound of each parameter :func:`calibrate` can fit.  ``drag_area_m2`` is ``C_d A`` (the
#: profile's ``drag_coefficient`` is set to ``drag_area_m2 / front_area_m2``).
FIT_PARAMETERS: dict[str, tuple[float, float]] = {
    "rolling_resistance": (0.002, 0.05),
    "drag_area_m2": (0.1, 3.0),
    "propulsion_efficiency": (0.4, 1.0),
    "recuperation_efficiency": (0.0, 1.0),
    "auxiliary_power_w": (0.0, 3000.0),
}


def get_parameter(vehicle: VehicleProfile, name: str) -> float:
    """The value of fit parameter ``name`` of ``vehicle``."""
    if name == "drag_area_m2":
        return vehicle.drag_coefficient * vehicle.front_area_m2
    if name == "auxiliary_power_w":
        return vehicle.aux_w
    return float(getattr(vehicle, name))


def with_parameters(vehicle: VehicleProfile, values: dict[str, float]) -> VehicleProfile:
    """A copy of ``vehicle`` with the fit parameters ``values`` (names of :data:`FIT_PARAMETERS`) set."""
    changes: dict[str, Any] = {}  # field name -> value, for dataclasses.replace
    for name, value in values.items():
        if name not in FIT_PARAMETERS:
            raise ParameterError(f"unknown fit parameter {name!r} (known: {', '.join(FIT_PARAMETERS)})")
        if name == "drag_area_m2":
            changes["drag_coefficient"] = value / vehicle.front_area_m2
        else:
            changes[name] = value
    return dataclasses.replace(vehicle, **changes)


def window_bounds(trace: Trace, window_s: float) -> np.ndarray:
    """Sample indices ``(W + 1,)`` that cut ``trace`` into consecutive windows of about ``window_s`` seconds
    (the last partial window is dropped)."""
    if not window_s > 0:
        raise ParameterError(f"window_s must be > 0, got {window_s}")
    edges = np.arange(trace.t_s[0], trace.t_s[-1] + 1e-9, window_s)
    return np.unique(np.searchsorted(trace.t_s, edges, side="left"))


def window_energies(
    trace: Trace, vehicle: VehicleProfile, window_s: float, options: TraceModelOptions | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, measured) battery energy of each window of ``trace`` (Wh, ``(W,)`` each)."""
    cut = window_bounds(trace, window_s)
    predicted = trace_energy(trace, vehicle, options).cumulative_wh()[cut]
    measured = measured_energy_wh(trace, vehicle)[cut]
    return np.diff(predicted), np.diff(measured)


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes:
        vehicle: the calibrated profile.
        values: the fitted parameter values.
        rmse_wh: root mean square window error on the training trips (Wh).
        n_windows: number of training windows.
    """

    vehicle: VehicleProfile
    values: dict[str, float]
    rmse_wh: float
    n_windows: int


def calibrate(
    traces: Sequence[Trace],
    vehicle: VehicleProfile,
    parameters: Sequence[str] = tuple(FIT_PARAMETERS),
    *,
    window_s: float = 300.0,
    options: TraceModelOptions | None = None,
) -> Calibration:
    """Fit ``parameters`` of ``vehicle`` to the windowed state-of-charge energy of ``traces``.

    Args:
        traces: training trips.
        vehicle: the starting profile (its battery capacity and usable window convert SoC to Wh).
        parameters: names from :data:`FIT_PARAMETERS`.
        window_s: window length (s).
        options: trace model options (kept fixed).

    Returns:
        The calibrated profile with its training error.
    """
    if not traces:
        raise ParameterError("calibrate needs at least one trace")
    names = list(parameters)
    unknown = [n for n in names if n not in FIT_PARAMETERS]
    if unknown or not names:
        raise ParameterError(f"fit parameters must be a non-empty subset of {', '.join(FIT_PARAMETERS)}, got {names}")
    lower = np.array([FIT_PARAMETERS[n][0] for n in names])
    upper = np.array([FIT_PARAMETERS[n][1] for n in names])
    x0 = np.clip([get_parameter(vehicle, n) for n in names], lower, upper)

    def residuals(x: np.ndarray) -> np.ndarray:
        v = with_parameters(vehicle, dict(zip(names, x, strict=True)))
        return np.concatenate([np.subtract(*window_energies(t, v, window_s, options)) for t in traces])

    fit = least_squares(residuals, x0, bounds=(lower, upper), method="trf", x_scale=np.maximum(np.abs(x0), 1e-3))
    values = {n: float(x) for n, x in zip(names, fit.x, strict=True)}
    return Calibration(
        vehicle=with_parameters(vehicle, values),
        values=values,
        rmse_wh=float(np.sqrt(np.mean(fit.fun**2))),
        n_windows=int(fit.fun.size),
    )


@dataclass(frozen=True)
class TripScore:
    """Predicted against measured energy of one whole trip."""

    name: str
    distance_km: float
    measured_wh: float
    predicted_wh: float
    window_rmse_wh: float

    @property
    def error_wh(self) -> float:
        return self.predicted_wh - self.measured_wh

    @property
    def error_pct(self) -> float:
        return 100.0 * self.error_wh / self.measured_wh if self.measured_wh != 0 else float("nan")

    @property
    def error_wh_per_km(self) -> float:
        return self.error_wh / self.distance_km if self.distance_km != 0 else float("nan")


def score_trip(
    trace: Trace, vehicle: VehicleProfile, *, window_s: float = 300.0, options: TraceModelOptions | None = None
) -> TripScore:
    """Score ``vehicle``'s trace model on one trip (whole-trip energy and window RMSE)."""
    pred, meas = window_energies(trace, vehicle, window_s, options)
    return TripScore(
        name=trace.name,
        distance_km=trace.distance_m / 1000.0,
        measured_wh=float(measured_energy_wh(trace, vehicle)[-1]),
        predicted_wh=trace_energy(trace, vehicle, options).total_wh,
        window_rmse_wh=float(np.sqrt(np.mean((pred - meas) ** 2))) if len(pred) else float("nan"),  # no window
    )
