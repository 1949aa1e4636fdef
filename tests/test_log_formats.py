"""Trip logs as they come (issue 35 items 3 and 4): TeslaMate, the generic CSV, the Twizy columns and GPX read and
detected from their headers, one-line errors naming the file, bad rows dropped with a count and never aborting a
batch (fuzzed), and a log without a state-of-charge column still predicted with its interval."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evroute.errors import DataError, DataWarning
from evroute.traces import read_trace_csv
from evroute.traces.formats import read_trace_gpx
from evroute.traces.logformats import PRESETS, detect_columns
from evroute.traces.stream import LogStream

N = 40  # rows of a good log: 1 Hz, 10 m/s east at 50 N (0.0001397 degree of longitude per second), gauge -0.01 %/s
DLON = 10.0 / (111_319.49 * np.cos(np.radians(50.0)))


def _good(fmt: str, soc: bool = True) -> tuple[str, list[str]]:
    """Header and ``N`` rows of a plausible drive in format ``fmt``."""
    rows = []
    for k in range(N):
        lon, s, iso = 10.0 + k * DLON, 80.0 - 0.01 * k, f"2026-01-05T08:00:{k:02d}"
        if fmt == "evroute":
            rows.append([f"{k}", "36", "100", f"{s:.2f}", "50.0", f"{lon:.7f}"])
        elif fmt == "generic":
            rows.append([f"{k}", "10.0", "100", f"{s:.2f}", "50.0", f"{lon:.7f}"])
        elif fmt == "teslamate":  # the positions table as CSV: id, date, position, speed, power, odometer, levels
            rows.append([f"{k + 1}", iso.replace("T", " "), "50.0", f"{lon:.7f}", "36", "12.5", "1000.0", f"{s:.2f}"])
            rows[-1] += [f"{s - 1:.2f}", "100"]
        else:  # twizy
            rows.append(["03/29/2021", f"08:00:{k:02d}", f"{s:.2f}", "36", "D", "50.0", f"{lon:.7f}", "100", "36"])
    header = {
        "evroute": "time,speed_kmh,altitude_m,soc_pct,lat,lon",
        "generic": "time_s,speed_mps,elevation_m,soc_pct,lat,lon",
        "teslamate": "id,date,latitude,longitude,speed,power,odometer,battery_level,usable_battery_level,elevation",
        "twizy": "Date,Time,Soc,Speed,Mode,LAT,LON,ALT,GpsSpeed",
    }[fmt]
    if not soc:  # drop the state-of-charge column(s)
        cols = header.split(",")
        gone = [i for i, c in enumerate(cols) if c in ("soc_pct", "battery_level", "usable_battery_level", "Soc")]
        header = ",".join(c for i, c in enumerate(cols) if i not in gone)
        rows = [[v for i, v in enumerate(r) if i not in gone] for r in rows]
    return header, [",".join(r) for r in rows]


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["evroute", "generic", "teslamate", "twizy"])
def test_each_format_is_detected_and_read_in_si_units(tmp_path, fmt):
    """Every preset's hand-written log is detected from its header and gives the same trace: 1 s steps, 10 m/s
    (36 km/h or 10 m/s as written), 100 m altitude, the charge as written (TeslaMate: ``battery_level``)."""
    header, rows = _good(fmt)
    p = _write(tmp_path / f"{fmt}.csv", header, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean log: no warning
        tr = read_trace_csv(p)
    assert detect_columns(header.split(","), "x") == PRESETS[fmt]
    np.testing.assert_allclose(tr.t_s, np.arange(N))
    np.testing.assert_allclose(tr.speed_mps, 10.0, rtol=1e-12)
    np.testing.assert_allclose(tr.altitude_m, 100.0)
    np.testing.assert_allclose(tr.soc_pct, np.round(80.0 - 0.01 * np.arange(N), 2))
    assert tr.distance_m == pytest.approx(10.0 * (N - 1))


def test_teslamate_without_battery_level_uses_usable_battery_level(tmp_path):
    header, rows = _good("teslamate")
    cols = header.split(",")
    k = cols.index("battery_level")
    p = _write(
        tmp_path / "tm.csv",
        ",".join(c for i, c in enumerate(cols) if i != k),
        [",".join(v for i, v in enumerate(r.split(",")) if i != k) for r in rows],
    )
    tr = read_trace_csv(p)
    np.testing.assert_allclose(tr.soc_pct, np.round(80.0 - 0.01 * np.arange(N), 2) - 1)


def test_unknown_header_and_wrong_format_are_one_line_naming_the_file(tmp_path):
    p = _write(tmp_path / "odd.csv", "when,v,x,y", ["0,1,2,3", "1,1,2,3"])
    with pytest.raises(DataError) as exc:
        read_trace_csv(p)
    text = str(exc.value)
    assert str(p) in text and "missing column(s) 'time', 'speed_kmh', 'lat', 'lon' of the closest log format" in text
    assert "when, v, x, y" in text and "\n" not in text
    header, rows = _good("generic")
    q = _write(tmp_path / "g.csv", header, rows)
    res = subprocess.run(
        [sys.executable, "-m", "evroute", "learn", str(q), "--format", "teslamate"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("evroute: error: ") and "missing column(s) 'date'" in res.stderr
    assert res.stderr.count("\n") == 1


# --- fuzz: bad rows are dropped and counted, never abort -----------------------------------------------------------

BAD_VALUES = ["abc", "", "nan", "1e999", "-5", "1555.63", "1,2"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.sampled_from(["evroute", "generic", "teslamate", "twizy"]),
    bad=st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, 9), st.sampled_from(BAD_VALUES)), max_size=6),
)
def test_fuzz_a_bad_row_is_dropped_with_a_count_never_the_log(tmp_path, fmt, bad):
    """Rows of a good log with a value replaced by garbage (text, empty, NaN, overflow, a negative number, the
    audit's ``1555.63``, an extra field): the read never raises; the rows whose mapped value became invalid are
    dropped, at most as many valid rows with them (a valid value that jumps, e.g. a latitude of -5, is a glitch of
    its row; a time of -5 or 1555.63 s jumps back or ahead: that row goes, not the rows after it -- at 92600c2 a
    time ahead of the next rows dropped all of them), and one warning counts them."""
    header, rows = _good(fmt)
    cols = header.split(",")
    mapped = PRESETS[fmt]
    invalid: set[int] = set()
    table = [r.split(",") for r in rows]
    for row, col, value in bad:
        table[row][col % len(cols)] = value
    for i, r in enumerate(table):
        text = ",".join(r)
        fields = text.split(",")
        if len(fields) != len(cols):
            invalid.add(i)
            continue
        rec = dict(zip(cols, fields, strict=True))
        if rec[mapped.time] in ("abc", "", "nan", "1e999"):  # not a time; -5 or 1555.63: a time that jumps
            invalid.add(i)
            continue
        checks = {
            mapped.speed: lambda x: 0 <= x < 250 / 3.6 * (3.6 if mapped.speed_unit == "km/h" else 1),
            mapped.lat: lambda x: abs(x) <= 90,
            mapped.lon: lambda x: abs(x) <= 180,
            mapped.soc: lambda x: 0 <= x <= 100,
            mapped.altitude: lambda x: -500 <= x <= 9000,
        }
        for c, ok in checks.items():
            try:
                x = float(rec[c])
            except ValueError:
                invalid.add(i)
                break
            if not (np.isfinite(x) and ok(x)):
                invalid.add(i)
                break
    p = _write(tmp_path / f"fuzz_{fmt}.csv", header, [",".join(r) for r in table])
    good = [i for i in range(N) if i not in invalid]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kept = [b.rows for b in LogStream(p)]
    got = sorted({int(x) - 2 for rows in kept for x in rows[:, 6]})
    # a value that stays valid but jumps (e.g. a position 1555.63 -> no, a speed of 1e999 is not finite) may make its
    # neighbours a glitch pair; the rows kept are then a subset of the valid ones, with every drop counted
    assert set(got) <= set(good) and len(got) >= len(good) - 2 * len(bad)
    dropped = [str(w.message) for w in rec if issubclass(w.category, DataWarning) and "dropped" in str(w.message)]
    if len(got) < N:
        assert len(dropped) == 1 and f"dropped {N - len(got)} of {N} rows" in dropped[0]
    else:
        assert not dropped


GPX_HEAD = (
    '<?xml version="1.0"?>\n<gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">\n<trk><trkseg>'
)


def _gpx_point(k: int, lat: str = "50.0", soc: str = "80.0", time: bool = True) -> str:
    t = f"<time>2026-01-05T08:00:{k:02d}Z</time>" if time else ""
    return (
        f'<trkpt lat="{lat}" lon="{10.0 + k * DLON:.7f}"><ele>100</ele>{t}'
        f"<extensions><soc>{soc}</soc></extensions></trkpt>"
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.sets(st.tuples(st.integers(1, N - 2), st.sampled_from(["lat", "soc", "time"])), max_size=5))
def test_fuzz_gpx_bad_point_is_dropped_with_a_count(tmp_path, bad):
    """GPX points with a latitude of 1555.63, a state of charge of 'x' or no time are dropped and counted, the
    file is never refused while two points remain."""
    which = {k: w for k, w in bad}
    pts = [
        _gpx_point(
            k,
            lat="1555.63" if which.get(k) == "lat" else "50.0",
            soc="x" if which.get(k) == "soc" else f"{80 - 0.01 * k:.2f}",
            time=which.get(k) != "time",
        )
        for k in range(N)
    ]
    p = tmp_path / "t.gpx"
    p.write_text(GPX_HEAD + "\n" + "\n".join(pts) + "\n</trkseg></trk></gpx>\n")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tr = read_trace_gpx(p)
    assert len(tr) == N - len(which)
    msgs = [str(w.message) for w in rec if issubclass(w.category, DataWarning)]
    assert (len(msgs) == 1 and f"dropped {len(which)} of {N} rows" in msgs[0]) if which else not msgs


# --- a log without state of charge (item 3) ------------------------------------------------------------------------


def _learn_json(*args: str) -> dict:
    res = subprocess.run([sys.executable, "-m", "evroute", "learn", *args, "--json"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("fmt", ["generic", "teslamate"])
def test_a_log_without_charge_is_predicted_with_its_interval(tmp_path, fmt):
    """The same drive logged with and without a state-of-charge column: the log without one measures nothing but is
    predicted with the same energy and the same 90 % interval (the profile's parameter prior; the charge column
    changes neither), its distance and duration reported."""
    h1, r1 = _good(fmt)
    h0, r0 = _good(fmt, soc=False)
    with_soc = _learn_json(str(_write(tmp_path / "with.csv", h1, r1)))["trips"][0]
    without = _learn_json(str(_write(tmp_path / "without.csv", h0, r0)))["trips"][0]
    assert without["measured_wh"] is None and without["error_pct"] is None and without["window_rmse_wh"] is None
    assert with_soc["measured_wh"] == pytest.approx(0.39 / 100 * 35_000, rel=1e-6)  # sumo_ev: 35 kWh usable
    assert without["predicted_wh"] == with_soc["predicted_wh"] > 0
    assert without["interval90_wh"] == with_soc["interval90_wh"] > 0
    assert without["distance_km"] == pytest.approx(0.39) and without["duration_h"] == pytest.approx(39 / 3600, abs=5e-4)


def test_calibration_on_logs_with_charge_predicts_a_log_without(tmp_path):
    """``--calibrate`` learns from the logs that have a state of charge and predicts the one without with the
    calibration's interval; a batch of logs without any charge column cannot be calibrated (one-line error)."""
    h1, r1 = _good("evroute")
    h0, r0 = _good("evroute", soc=False)
    logs = [str(_write(tmp_path / f"c{k}.csv", h1, r1)) for k in range(2)]
    plan = str(_write(tmp_path / "plan.csv", h0, r0))
    out = _learn_json(*logs, plan, "--calibrate", "--fit", "auxiliary_power_w", "--window-s", "10")
    rows = {t["trip"]: t for t in out["trips"]}
    assert rows["plan"]["measured_wh"] is None and rows["plan"]["interval90_wh"] > 0
    assert rows["plan"]["predicted_wh"] == pytest.approx(rows["c0"]["predicted_wh"])
    res = subprocess.run(
        [sys.executable, "-m", "evroute", "learn", plan, "--calibrate"], capture_output=True, text=True
    )
    assert res.returncode == 2 and "needs logs with a state-of-charge column" in res.stderr
