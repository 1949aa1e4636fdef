"""Trip logs: CSV reader validation, the trace energy model against closed forms and Eq. 8, calibration recovery."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from evroute.energy import VehicleProfile, edge_energy_wh
from evroute.errors import DataError, DataWarning, ParameterError
from evroute.traces import (
    TWIZY_COLUMNS,
    Trace,
    TraceColumns,
    TraceModelOptions,
    calibrate,
    measured_energy_wh,
    read_trace_csv,
    score_trip,
    smooth_altitude,
    trace_energy,
)
from evroute.traces.energy import soc_resolution_wh

HEADER = "time,speed_kmh,altitude_m,soc_pct,lat,lon"
NO_SMOOTHING = TraceModelOptions(altitude_median_samples=1, altitude_window_m=0.0)


def _write(tmp_path: Path, lines: list[str], name: str = "log.csv") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _trace(speed: np.ndarray, altitude: np.ndarray | None = None, dt: float = 1.0, soc: np.ndarray | None = None):
    n = speed.size
    return Trace(
        t_s=np.arange(n) * dt,
        speed_mps=np.asarray(speed, dtype=float),
        altitude_m=np.zeros(n) if altitude is None else np.asarray(altitude, dtype=float),
        soc_pct=np.full(n, 80.0) if soc is None else soc,
        lat=np.zeros(n),
        lon=np.zeros(n),
        name="t",
    )


# --- reader ---------------------------------------------------------------------------------------------------


def test_reader_reads_the_documented_schema(tmp_path):
    p = _write(tmp_path, [HEADER, "0,36,10,80.0,33.9,-6.7", "1,36,11,79.98,33.9,-6.7", "3,0,11,79.96,33.9,-6.7"])
    tr = read_trace_csv(p)
    np.testing.assert_array_equal(tr.t_s, [0, 1, 3])
    np.testing.assert_allclose(tr.speed_mps, [10, 10, 0])
    assert tr.name == "log"
    assert tr.distance_m == pytest.approx(10 + 10)  # trapezoid: 10 m in the first second, (10+0)/2*2 in the next two


def test_reader_time_of_day_wraps_past_midnight(tmp_path):
    cols = dataclasses.replace(TWIZY_COLUMNS)
    header = "Date,Time,Soc,Speed,LAT,LON,ALT"
    p = _write(
        tmp_path, [header, "x,23:59:59,50,10,1,1,5", "02/00/2090,00:00:00,50,10,1,1,5", "y,00:00:01,50,10,1,1,5"]
    )
    tr = read_trace_csv(p, cols)
    np.testing.assert_array_equal(tr.t_s, [0, 1, 2])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["time,speed_kmh,altitude_m,lat,lon", "0,1,1,1,1", "1,1,1,1,1"], "missing column(s) 'soc_pct'"),
        ([HEADER, "0,1,10,80,1,1"], "needs at least 2 usable samples, got 1 of 1 rows"),
        ([HEADER, "0,abc,10,80,1,1", "1,1,1,80,1,1"], "got 1 of 2 rows; column 'speed_kmh' not a number: 1 dropped"),
    ],
)
def test_reader_bad_file_is_one_line_naming_the_file(tmp_path, rows, message):
    """A file that cannot be a log (a column missing, fewer than two usable rows) is refused with one line."""
    p = _write(tmp_path, rows)
    with pytest.raises(DataError) as exc:
        read_trace_csv(p, TraceColumns())  # the documented schema named: its state-of-charge column is required
    text = str(exc.value)
    assert message in text
    assert "\n" not in text
    assert str(p) in text


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("1,abc,10,80,1,1", "column 'speed_kmh' not a number"),
        ("1,-5,1,80,1,1", "column 'speed_kmh' negative speed"),
        ("1,1,1,100.5,1,1", "column 'soc_pct' state of charge outside [0, 100]"),
        ("0,1,1,80,1,1", "column 'time' time does not increase"),
        ("1,1,nan,80,1,1", "column 'altitude_m' not finite"),
        ("1,1,1,80,91,1", "columns 'lat'/'lon' position outside WGS 84 range"),
        ("1,1,1,80,1", "wrong number of fields"),
        ("yesterday,1,10,80,1,1", "column 'time' not seconds or an ISO 8601 time"),
        ("1,1000000,10,80,1,1", "speed above 250 km/h"),
        ("1,1,20000,80,1,1", "altitude outside [-500, 9000] m"),
    ],
)
def test_reader_drops_a_bad_row_with_one_warning_naming_file_reason_and_line(tmp_path, bad, reason):
    """One bad row (line 3 of 4) is dropped, the other rows kept, and one warning says what and where; at f62f65a
    the whole log was refused (and with it every log of a batch)."""
    p = _write(tmp_path, [HEADER, "0,1,10,80,1,1", bad, "2,1,10,80,1,1"])
    with pytest.warns(DataWarning) as rec:
        tr = read_trace_csv(p)
    assert len(rec) == 1
    assert str(rec[0].message) == f"{p}: dropped 1 of 3 rows: {reason} (1, first at line 3)"
    np.testing.assert_array_equal(tr.t_s, [0.0, 2.0])


def test_reader_missing_file_and_bad_unit(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_trace_csv(tmp_path / "none.csv")
    with pytest.raises(DataError, match="speed_unit"):
        TraceColumns(speed_unit="furlong/fortnight")


def test_reader_iso_timestamps_and_mps(tmp_path):
    cols = TraceColumns(speed="v", speed_unit="m/s")
    p = _write(
        tmp_path,
        ["time,v,altitude_m,soc_pct,lat,lon", "2021-03-29T11:00:00,5,1,50,1,1", "2021-03-29T11:00:02,5,1,50,1,1"],
    )
    tr = read_trace_csv(p, cols)
    np.testing.assert_array_equal(tr.t_s, [0, 2])
    np.testing.assert_array_equal(tr.speed_mps, [5, 5])


# --- energy model -----------------------------------------------------------------------------------------------


def test_constant_speed_flat_and_uphill_equals_eq8():
    """At constant speed the kinetic term vanishes and each step is Eq. 8 for its length and incline."""
    v = VehicleProfile()
    n, speed = 61, 12.0
    alt = np.linspace(0.0, 30.0, n)  # 30 m over 720 m
    e = trace_energy(_trace(np.full(n, speed), alt), v, NO_SMOOTHING)
    ds = speed * 1.0
    sin_a = (alt[1] - alt[0]) / ds
    # the trace model uses cos(a) ~ 1: compare with Eq. 8 at cos(a) = 1 by removing its cos factor's effect
    eq8 = edge_energy_wh(np.array([ds]), np.array([speed]), np.array([sin_a]), v)[0]
    cos_gap = v.mass_kg * v.gravity_mps2 * v.rolling_resistance * ds * (1 - np.sqrt(1 - sin_a**2))
    np.testing.assert_allclose(e.battery_wh, eq8 + cos_gap / v.propulsion_efficiency / 3600, rtol=1e-12)
    assert e.kinetic_j.sum() == 0


def test_accelerate_and_brake_costs_the_round_trip_loss():
    """Resistance-free flat trip 0 -> v -> 0: the kinetic energy telescopes, its conversion loss does not."""
    v = VehicleProfile(
        rolling_resistance=0.0, drag_coefficient=0.0, propulsion_efficiency=0.9, recuperation_efficiency=0.7
    )
    speed = np.array([0.0, 5.0, 10.0, 10.0, 5.0, 0.0])
    e = trace_energy(_trace(speed), v, NO_SMOOTHING)
    ke = 0.5 * v.mass_kg * 10.0**2
    assert e.kinetic_j.sum() == pytest.approx(0.0, abs=1e-9)
    assert e.total_wh == pytest.approx(ke * (1 / 0.9 - 0.7) / 3600, rel=1e-12)
    rot = TraceModelOptions(rotating_mass_kg=40.0, altitude_median_samples=1, altitude_window_m=0.0)
    e2 = trace_energy(_trace(speed), v, rot)
    assert e2.total_wh == pytest.approx(0.5 * (v.mass_kg + 40.0) * 100 * (1 / 0.9 - 0.7) / 3600, rel=1e-12)


def test_regeneration_cap_and_auxiliary_power():
    v = VehicleProfile(
        rolling_resistance=0.0,
        drag_coefficient=0.0,
        recuperation_efficiency=1.0,
        max_regen_power_kw=2.0,
        auxiliary_power_w=300.0,
    )
    speed = np.array([20.0, 0.0])  # one second of hard braking: 1/2 m v^2 = 366 kJ, far above 2 kW x 1 s
    e = trace_energy(_trace(speed), v, NO_SMOOTHING)
    assert e.battery_wh[0] == pytest.approx((-2000.0 + 300.0) / 3600, rel=1e-12)


def test_standstill_with_noisy_altitude_costs_nothing():
    rng = np.random.default_rng(0)
    n = 200
    alt = 50 + rng.normal(0, 8, n)  # GPS altitude noise while parked
    e = trace_energy(_trace(np.zeros(n), alt), VehicleProfile())
    assert np.all(e.battery_wh == 0)
    z = smooth_altitude(_trace(np.zeros(n), alt))
    assert np.ptp(z) == 0  # one window for the whole stop: one altitude


def test_smoothing_removes_a_spike_and_keeps_a_ramp():
    n = 101
    alt = np.linspace(0, 50, n)
    spiky = alt.copy()
    spiky[50] = -111.0  # a glitch like the Twizy logs'
    tr = _trace(np.full(n, 10.0), spiky)
    z = smooth_altitude(tr, TraceModelOptions(altitude_median_samples=5, altitude_window_m=0.0))
    assert alt[49] <= z[50] <= alt[51]  # the spike is gone: the median of its 5 neighbours lies between them
    # a linear ramp is unchanged by a centred distance window away from the ends
    zz = smooth_altitude(_trace(np.full(n, 10.0), alt), TraceModelOptions(altitude_median_samples=1))
    np.testing.assert_allclose(zz[10:-10], alt[10:-10], atol=1e-9)


def test_measured_energy_and_resolution():
    v = VehicleProfile(battery_capacity_wh=6100.0)
    soc = np.array([80.0, 79.98, 79.98, 79.9])
    tr = _trace(np.ones(4), soc=soc)
    np.testing.assert_allclose(measured_energy_wh(tr, v), [0, 1.22, 1.22, 6.1], atol=1e-9)
    assert soc_resolution_wh(tr, v) == pytest.approx(1.22)


def test_options_validated():
    with pytest.raises(ParameterError, match="odd"):
        TraceModelOptions(altitude_median_samples=4)
    with pytest.raises(ParameterError, match="rotating_mass_kg"):
        TraceModelOptions(rotating_mass_kg=-1)


# --- calibration ------------------------------------------------------------------------------------------------


def _synthetic_trips(truth: VehicleProfile, seed: int, k: int = 3) -> list[Trace]:
    """Trips whose state of charge is exactly the trace model's energy under ``truth`` (no noise, no quantisation)."""
    rng = np.random.default_rng(seed)
    out = []
    for j in range(k):
        n = 1800
        # a random walk reflected into [0, 25] m/s (continuous: a physical drive, no 90 km/h -> 0 in one second)
        speed = 25.0 - np.abs(np.cumsum(rng.normal(0, 0.8, n)) % 50.0 - 25.0)
        speed[:5] = speed[-5:] = 0.0
        alt = np.cumsum(rng.normal(0, 0.05, n))
        tr = _trace(speed, alt)
        used = trace_energy(tr, truth).cumulative_wh()
        soc = 90.0 - used / truth.battery_capacity_wh * 100.0
        out.append(dataclasses.replace(tr, soc_pct=soc, name=f"syn{j}"))
    return out


def test_calibration_recovers_known_parameters():
    truth = VehicleProfile(propulsion_efficiency=0.8, auxiliary_power_w=400.0, rolling_resistance=0.015)
    trips = _synthetic_trips(truth, seed=1)
    start = VehicleProfile(propulsion_efficiency=0.95, auxiliary_power_w=0.0, rolling_resistance=0.01)
    cal = calibrate(trips, start, ("propulsion_efficiency", "auxiliary_power_w", "rolling_resistance"), window_s=120)
    # noise-free data the model family contains: the least-squares optimum is the truth; the tolerance is the
    # solver's (trust-region stopping at ftol/xtol 1e-8 relative), far above round-off
    assert cal.values["propulsion_efficiency"] == pytest.approx(0.8, rel=1e-4)
    assert cal.values["auxiliary_power_w"] == pytest.approx(400.0, rel=1e-4)
    assert cal.values["rolling_resistance"] == pytest.approx(0.015, rel=1e-4)
    assert cal.rmse_wh < 1e-3
    held_out = _synthetic_trips(truth, seed=2, k=1)[0]
    assert abs(score_trip(held_out, cal.vehicle).error_pct) < 1e-3


def test_calibration_rejects_unknown_parameters():
    with pytest.raises(ParameterError, match="fit parameters must be a subset"):
        calibrate(_synthetic_trips(VehicleProfile(), 0, 1), VehicleProfile(), ("mass_kg",))


# --- evroute learn ----------------------------------------------------------------------------------------------


def _run_cli(args: list[str]):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "evroute", "learn", *args], capture_output=True, text=True)


def _write_trip(tmp_path: Path, truth: VehicleProfile, seed: int) -> Path:
    tr = _synthetic_trips(truth, seed, k=1)[0]
    rows = [HEADER] + [
        f"{t:g},{float(v) * 3.6!r},{float(z)!r},{float(s)!r},33.9,-6.7"
        for t, v, z, s in zip(tr.t_s, tr.speed_mps, tr.altitude_m, tr.soc_pct, strict=True)
    ]
    return _write(tmp_path, rows, name=f"trip{seed}.csv")


@pytest.mark.slow
def test_learn_calibrates_and_saves_a_loadable_profile(tmp_path):
    truth = VehicleProfile(propulsion_efficiency=0.8, auxiliary_power_w=400.0)
    logs = [str(_write_trip(tmp_path, truth, s)) for s in (1, 2)]
    out = tmp_path / "fit.json"
    res = _run_cli(
        [*logs, "--calibrate", "--fit", "propulsion_efficiency,auxiliary_power_w", "--save-vehicle", str(out)]
    )
    assert res.returncode == 0, res.stderr
    fitted = VehicleProfile.load(out)
    assert fitted.propulsion_efficiency == pytest.approx(0.8, rel=1e-3)
    assert fitted.aux_w == pytest.approx(400.0, rel=1e-3)
    res = _run_cli([*logs, "--vehicle", str(out), "--json"])
    trips = json.loads(res.stdout)["trips"]
    assert all(abs(t["error_pct"]) < 0.05 for t in trips)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--columns", "bogus"], "--columns must be one of"),
        (["--column", "speed"], "--column must be KEY=NAME"),
        (["--column", "color=red"], "--column key 'color' unknown"),
        (["--fit", "mass_kg"], "--fit must name parameters"),
        (["--window-s", "0"], "--window-s must be > 0"),
        (["--vehicle", "nope"], "vehicle profile 'nope' not found"),
    ],
)
def test_learn_bad_input_writes_nothing(tmp_path, extra, message):
    log = _write_trip(tmp_path, VehicleProfile(), 3)
    out = tmp_path / "fit.json"
    res = _run_cli([str(log), "--calibrate", "--save-vehicle", str(out), *extra])
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and message in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()
