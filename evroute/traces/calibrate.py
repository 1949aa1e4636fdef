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

**MAP with priors, and what it does not know.**  A few trips of one driver on one road type identify combinations of
parameters, not each one (efficiency, auxiliary power and rolling resistance all scale the energy of slow driving),
so an unregularised fit runs to a bound and does not generalise.  :func:`calibrate` is the maximum a posteriori
fit: window residuals ``(predicted - measured) / s_w`` plus one residual ``(x - mu) / sd`` per parameter, the prior
centred on the profile's value (the vehicle's sourced or assumed parameter) with the spread of
:data:`PRIOR_SD` (``prior=None``: plain least squares).  The window noise ``s_w`` is estimated from the fit's own
residuals (``sqrt(RSS / (n - p))``, refitted until it settles, never below the gauge's quantisation).  The Laplace
approximation at the optimum (``(J^T J)^-1`` of the whitened residuals) gives each parameter's posterior s.d. and,
by the delta method, a predictive interval for a trip's energy (:func:`predict_trip`): parameter uncertainty, the
windows' noise and a trip-level relative effect ``tau^2`` (a day, a driver: the trips' in-sample totals, by moments).
A parameter that ends at a bound is never silent: :attr:`Calibration.warnings` names it and what data would
identify it (:data:`IDENTIFIED_BY`).  :func:`select_parameters` picks the fit set by leave-one-trajectory-out error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
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


#: candidate fit sets for :func:`select_parameters` (``evroute learn --fit auto``), label -> parameters: growing
#: sets, from none (the profile as it is) to all five
FIT_SETS: dict[str, tuple[str, ...]] = {
    "spec (no fit)": (),
    "efficiency": ("propulsion_efficiency",),
    "efficiency + aux": ("propulsion_efficiency", "auxiliary_power_w"),
    "efficiency + aux + rolling": ("propulsion_efficiency", "auxiliary_power_w", "rolling_resistance"),
    "all five": (
        "propulsion_efficiency",
        "recuperation_efficiency",
        "auxiliary_power_w",
        "rolling_resistance",
        "drag_area_m2",
    ),
}

#: prior s.d. of each parameter around the profile's value (MAP, module doc): weakly informative -- a drivetrain
#: efficiency known to +-0.1, recuperation to +-0.2 (it depends on the driver's braking), rolling resistance and drag
#: area to +-50 % and +-30 % of the profile's (tyres, body shape), auxiliary power to +-300 W (heating or not)
PRIOR_SD: dict[str, tuple[float, float]] = {  # name -> (absolute sd, sd relative to the profile's value)
    "rolling_resistance": (0.0, 0.5),
    "drag_area_m2": (0.0, 0.3),
    "propulsion_efficiency": (0.1, 0.0),
    "recuperation_efficiency": (0.2, 0.0),
    "auxiliary_power_w": (300.0, 0.0),
}

#: what data would identify each parameter (the warning when a fit ends at a bound)
IDENTIFIED_BY: dict[str, str] = {
    "rolling_resistance": "steady driving at low speed on level roads, at several speeds",
    "drag_area_m2": "steady driving at several high speeds (above 60 km/h)",
    "propulsion_efficiency": (
        "a measured battery capacity (the two are confounded) and trips of different speed mixes; with "
        "auxiliary_power_w free, long stops with the vehicle at rest"
    ),
    "recuperation_efficiency": "descents and braking from speed (energy recovered)",
    "auxiliary_power_w": "stops with the vehicle at rest (the charge drawn while standing)",
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
        names: the fitted parameters, in the order of ``cov``.
        cov: ``(p, p)`` Laplace posterior covariance of the parameters (their units).
        window_sd_wh: the estimated noise s.d. of one window's energy (Wh).
        trip_rel_var: ``tau^2``, the trip-level relative variance of a trip's energy (moments on the training trips).
        warnings: one line per parameter that ended at a bound (which data would identify it).
    """

    vehicle: VehicleProfile
    values: dict[str, float]
    rmse_wh: float
    n_windows: int
    names: tuple[str, ...] = ()
    cov: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    window_sd_wh: float = 0.0
    trip_rel_var: float = 0.0
    warnings: tuple[str, ...] = ()
    window_s: float = 300.0

    @property
    def sd(self) -> dict[str, float]:
        """Posterior s.d. of each fitted parameter (Laplace)."""
        return {n: float(np.sqrt(max(self.cov[i, i], 0.0))) for i, n in enumerate(self.names)}


def prior_of(vehicle: VehicleProfile, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(mu, sd)`` ``(p,)`` of the MAP prior of ``names`` (:data:`PRIOR_SD` around the profile's values)."""
    mu = np.array([get_parameter(vehicle, n) for n in names])
    sd = np.array([max(PRIOR_SD[n][0], PRIOR_SD[n][1] * abs(m)) for n, m in zip(names, mu, strict=True)])
    return mu, np.maximum(sd, 1e-12)


def _quantisation_sd_wh(traces: Sequence[Trace], vehicle: VehicleProfile) -> float:
    """The s.d. of a window's energy from the gauge's rounding alone (two end readings, ``q^2 / 12`` each)."""
    steps = []
    for t in traces:
        d = np.abs(np.diff(t.soc_pct))
        d = d[d > 1e-9]
        if d.size:
            steps.append(float(d.min()))
    q = min(steps) if steps else 0.0
    usable = (vehicle.max_soc - vehicle.min_soc) * vehicle.battery_capacity_wh
    return float(np.sqrt(2.0 / 12.0) * q / 100.0 * usable)


def calibrate(
    traces: Sequence[Trace],
    vehicle: VehicleProfile,
    parameters: Sequence[str] = tuple(FIT_PARAMETERS),
    *,
    window_s: float = 300.0,
    options: TraceModelOptions | None = None,
    prior: str | None = "profile",
) -> Calibration:
    """Fit ``parameters`` of ``vehicle`` to the windowed state-of-charge energy of ``traces`` (MAP, module doc).

    Args:
        traces: training trips.
        vehicle: the starting profile (its battery capacity and usable window convert SoC to Wh); with
            ``prior="profile"`` also the prior's centre.
        parameters: names from :data:`FIT_PARAMETERS`.
        window_s: window length (s).
        options: trace model options (kept fixed).
        prior: ``"profile"`` (MAP, :func:`prior_of`) or ``None`` (bounded least squares).

    Returns:
        The calibrated profile with its training error, Laplace covariance, noise and warnings.
    """
    if not traces:
        raise ParameterError("calibrate needs at least one trace")
    if prior not in ("profile", None):
        raise ParameterError(f"prior must be 'profile' or None, got {prior!r}")
    names = list(parameters)
    unknown = [n for n in names if n not in FIT_PARAMETERS]
    if unknown:
        raise ParameterError(f"fit parameters must be a subset of {', '.join(FIT_PARAMETERS)}, got {names}")
    lower = np.array([FIT_PARAMETERS[n][0] for n in names])
    upper = np.array([FIT_PARAMETERS[n][1] for n in names])
    x0 = np.clip([get_parameter(vehicle, n) for n in names], lower, upper)
    mu, sd = prior_of(vehicle, names)
    floor = max(_quantisation_sd_wh(traces, vehicle), 1e-9)

    def windows(x: np.ndarray) -> np.ndarray:
        v = with_parameters(vehicle, dict(zip(names, x, strict=True)))
        return np.concatenate([np.subtract(*window_energies(t, v, window_s, options)) for t in traces])

    if not names:  # the profile as it is: only its window noise and trip effect
        raw = windows(x0)
        sigma = max(float(np.sqrt(np.mean(raw**2))), floor)
        cal = Calibration(vehicle, {}, float(np.sqrt(np.mean(raw**2))), int(raw.size), window_sd_wh=sigma)
        return dataclasses.replace(cal, window_s=window_s, trip_rel_var=_trip_rel_var(traces, cal, options))
    # start strictly inside the bounds: the trust-region reflective method's scaling makes steps vanish at a bound
    gap = np.minimum(1e-2 * sd, 1e-2 * (upper - lower))
    x, sigma = np.clip(x0, lower + gap, upper - gap), 0.0
    # the noise from the residuals of the plain least-squares fit, then MAP with it, refitted until it settles
    for k in range(4):
        s_now = sigma

        def residuals(z: np.ndarray, s_now: float = s_now, k: int = k) -> np.ndarray:
            if k == 0 or not prior:
                return windows(z)
            return np.concatenate([windows(z) / s_now, (z - mu) / sd])

        def fd_jac(z: np.ndarray, res=residuals) -> np.ndarray:
            """Central differences with steps of 1e-3 prior s.d. (one-sided at a bound): SciPy's default steps,
            relative to ``|x|``, vanish at 0 and are lost in the window energies' rounding."""
            cols = []
            for i in range(len(z)):
                lo, hi = z.copy(), z.copy()
                lo[i], hi[i] = max(z[i] - 1e-3 * sd[i], lower[i]), min(z[i] + 1e-3 * sd[i], upper[i])
                cols.append((res(hi) - res(lo)) / (hi[i] - lo[i]))
            return np.column_stack(cols)

        fit = least_squares(residuals, x, jac=fd_jac, bounds=(lower, upper), method="trf", x_scale=sd)
        x = fit.x
        raw = windows(x)
        sigma = max(float(np.sqrt(np.sum(raw**2) / max(raw.size - len(names), 1))), floor)
        if not prior or (k > 0 and abs(sigma - s_now) <= 0.01 * s_now):
            break
    if not prior:
        fit.jac = fit.jac / sigma  # whitened, for the Laplace covariance
    jac = np.asarray(fit.jac)
    cov = np.linalg.pinv(jac.T @ jac)
    values = {n: float(v) for n, v in zip(names, x, strict=True)}
    fitted = with_parameters(vehicle, values)
    warn = tuple(
        f"calibration: {n} = {values[n]:.4g} is at its {'lower' if values[n] - lo <= hi - values[n] else 'upper'} "
        f"bound [{lo:g}, {hi:g}]: the logs do not identify it; data that would: {IDENTIFIED_BY[n]}"
        for n, lo, hi in zip(names, lower, upper, strict=True)
        if min(values[n] - lo, hi - values[n]) <= 1e-6 * (hi - lo)
    )
    cal = Calibration(
        vehicle=fitted,
        values=values,
        rmse_wh=float(np.sqrt(np.mean(raw**2))),
        n_windows=int(raw.size),
        names=tuple(names),
        cov=cov,
        window_sd_wh=sigma,
        warnings=warn,
        window_s=window_s,
    )
    return dataclasses.replace(cal, trip_rel_var=_trip_rel_var(traces, cal, options))


def _trip_rel_var(traces: Sequence[Trace], cal: Calibration, options: TraceModelOptions | None) -> float:
    """``tau^2`` by moments on the training trips' totals: ``sum (d_t^2 - v_t) / sum E_t^2`` (``d_t`` the trip's
    error, ``v_t`` its variance without the effect, :func:`predict_trip`), at least 0."""
    num = den = 0.0
    for t in traces:
        mean, var0 = predict_trip(t, cal, options, with_effect=False)
        d = mean - float(measured_energy_wh(t, cal.vehicle)[-1])
        num += d * d - var0
        den += mean * mean
    return max(num / den, 0.0) if den > 0 else 0.0


def predict_trip(
    trace: Trace, cal: Calibration, options: TraceModelOptions | None = None, *, with_effect: bool = True
) -> tuple[float, float]:
    """``(mean, variance)`` of a drive's battery energy (Wh, Wh^2) under a calibration: the trace model's energy;
    the parameters' Laplace covariance through the delta method (central differences, one-sided at a bound), the
    windows' noise (``duration / window_s`` independent windows) and, with ``with_effect``, the trip effect
    ``tau^2 mean^2``.  Needs the drive's speed and altitude only (no state of charge)."""
    mean, grad = trip_gradient(trace, cal, options)
    return mean, trip_variance(mean, grad, trace.duration_s, cal, with_effect=with_effect)


def trip_gradient(trace: Trace, cal: Calibration, options: TraceModelOptions | None = None) -> tuple[float, np.ndarray]:
    """``(mean Wh, (p,) d mean / d parameter)`` of a drive under ``cal`` (:func:`predict_trip`); both add up over
    consecutive pieces of a drive (a log read in blocks, :mod:`evroute.traces.stream`)."""
    mean = trace_energy(trace, cal.vehicle, options).total_wh
    grad = np.zeros(len(cal.names))
    for i, n in enumerate(cal.names):
        lo, hi = FIT_PARAMETERS[n]
        x = cal.values[n]
        h = 1e-4 * max(abs(x), 1e-2 * (hi - lo))
        a, b = max(x - h, lo), min(x + h, hi)  # one-sided at a bound
        up = trace_energy(trace, with_parameters(cal.vehicle, {n: b}), options).total_wh
        down = trace_energy(trace, with_parameters(cal.vehicle, {n: a}), options).total_wh
        grad[i] = (up - down) / (b - a)
    return mean, grad


def trip_variance(
    mean: float, grad: np.ndarray, duration_s: float, cal: Calibration, *, with_effect: bool = True
) -> float:
    """The variance of :func:`predict_trip` from :func:`trip_gradient`'s ``(mean, grad)`` and the duration (s)."""
    windows = max(duration_s / cal.window_s, 1.0)
    var = float(grad @ cal.cov @ grad) + windows * cal.window_sd_wh**2
    if with_effect:
        var += cal.trip_rel_var * mean * mean
    return var


def prior_calibration(
    vehicle: VehicleProfile, names: Sequence[str] = FIT_SETS["efficiency + aux + rolling"], window_s: float = 300.0
) -> Calibration:
    """The profile with its parameters' prior (:data:`PRIOR_SD`) as their uncertainty, no window noise and no trip
    effect: the interval of a drive predicted from the profile alone (no log with a state of charge to learn from)."""
    mu, sd = prior_of(vehicle, names)
    return Calibration(
        vehicle=vehicle,
        values={n: float(m) for n, m in zip(names, mu, strict=True)},
        rmse_wh=float("nan"),
        n_windows=0,
        names=tuple(names),
        cov=np.diag(sd**2),
        window_s=window_s,
    )


def trajectory_of(name: str) -> str:
    """The trajectory (route / driver) a trip belongs to: its name up to the first ``_`` (``T1_03_29_2021`` -> ``T1``;
    a name without ``_`` is its own trajectory)."""
    return name.split("_", 1)[0]


@dataclass(frozen=True)
class HeldOut:
    """One trip predicted by a calibration on the other trajectories: ``fit`` (the candidate set's label), the trip,
    measured and predicted energy (Wh), the predictive s.d. (Wh), and that fold's fitted values, their Laplace s.d.
    and warnings."""

    fit: str
    trip: str
    measured_wh: float
    predicted_wh: float
    sd_wh: float
    warnings: tuple[str, ...]
    values: dict[str, float] = dataclasses.field(default_factory=dict)
    sd: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted_wh - self.measured_wh) / self.measured_wh

    def covered(self, z: float = 1.6448536269514722) -> bool:
        """Whether the measured energy lies in the central predictive interval (default 90 %)."""
        return abs(self.predicted_wh - self.measured_wh) <= z * self.sd_wh


def select_parameters(
    traces: Sequence[Trace],
    vehicle: VehicleProfile,
    candidates: Mapping[str, Sequence[str]],
    *,
    window_s: float = 300.0,
    options: TraceModelOptions | None = None,
) -> tuple[str, list[HeldOut]]:
    """The fit set of ``candidates`` (label -> parameter names; empty: the profile as is) with the lowest mean
    absolute held-out error when each trajectory (:func:`trajectory_of`) is predicted by a MAP calibration on the
    others (leave one trip out if all trips share one trajectory); returns ``(label, every held-out prediction)``."""
    groups = [trajectory_of(t.name) for t in traces]
    if len(set(groups)) < 2:
        groups = [t.name for t in traces]
    if len(set(groups)) < 2:
        raise ParameterError("selecting the fit set needs at least two trips")
    rows: list[HeldOut] = []
    score: dict[str, float] = {}
    for label, names in candidates.items():
        errs = []
        for g in dict.fromkeys(groups):
            train = [t for t, gg in zip(traces, groups, strict=True) if gg != g]
            cal = calibrate(train, vehicle, names, window_s=window_s, options=options)
            for t, gg in zip(traces, groups, strict=True):
                if gg == g:
                    mean, var = predict_trip(t, cal, options)
                    meas = float(measured_energy_wh(t, vehicle)[-1])
                    rows.append(
                        HeldOut(label, t.name, meas, mean, float(np.sqrt(var)), cal.warnings, cal.values, cal.sd)
                    )
                    errs.append(abs(rows[-1].error_pct))
        score[label] = float(np.mean(errs))
    best = min(score, key=lambda k: score[k])
    return best, rows


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
