"""Trip logs as they come (issue 35 item 4, issue 32 "silently wrong"): implausible rows dropped with one warning per
file, never aborting a batch; a state of charge that rises without charging split off, never learned as negative
driving energy; two ``learn`` runs into one model serialize.

At f62f65a: a 1,000,000 km/h row gave a prediction of 1.2e14 Wh, a rising state of charge was learned as -718 Wh,
three rows with ``LON=1555.63`` made the whole batch exit 2, and two concurrent ``learn --model-file m.npz`` kept one
run's logs only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.errors import DataWarning
from evroute.experiments.trip_workers import read_log
from evroute.models.store import read_header
from evroute.traces import read_trace_csv, read_traces
from evroute.traces.clean import SOC_RISE_PCT, charging_segments, implausible_rows

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "data" / "sumo-tiny" / "grid.net.xml"
LOGS = ROOT / "data" / "trip-log-sumo"
CSV_LOGS = sorted(LOGS.glob("trip_*.csv"))
HEADER = "time,speed_kmh,altitude_m,soc_pct,lat,lon"


def _cli(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evroute", *args], capture_output=True, text=True)


def _drive(n: int = 600, soc0: float = 90.0, rise_at: int | None = None, rise: float = 0.0) -> list[str]:
    """A plausible 1 Hz drive (speed 0 -> 15 m/s -> 0, heading east at 50 N), the gauge falling 1 % per 60 s; with
    ``rise_at``, the gauge jumps up by ``rise`` % there (a charge without a charging flag)."""
    t = np.arange(n, dtype=float)
    v = 15.0 * np.sin(np.pi * t / (n - 1))
    x = np.concatenate([[0.0], np.cumsum(0.5 * (v[1:] + v[:-1]))])
    lon = 10.0 + x / (111_320 * np.cos(np.radians(50.0)))
    soc = soc0 - np.floor(t / 60.0)
    if rise_at is not None:
        soc[rise_at:] += rise
    return [HEADER] + [
        f"{ti:g},{vi * 3.6:.2f},100.0,{si:g},50.0000000,{lo:.7f}" for ti, vi, si, lo in zip(t, v, soc, lon, strict=True)
    ]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _trips_json(stdout: str) -> dict:
    def reject(c: str) -> None:
        raise AssertionError(f"non-standard JSON constant {c}")

    return json.loads(stdout, parse_constant=reject)


@pytest.mark.slow
def test_a_million_km_h_row_is_dropped_and_the_prediction_is_that_of_the_log_without_it(tmp_path):
    lines = _drive()
    bad = list(lines)
    bad[300] = bad[300].replace(bad[300].split(",")[1], "1000000", 1)
    res = _cli(["learn", str(_write(tmp_path / "bad.csv", bad)), "--json"])
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == (
        f"evroute: warning: {tmp_path / 'bad.csv'}: dropped 1 of 600 rows: speed above 250 km/h (1, first at line 301)"
    )
    ref = _cli(["learn", str(_write(tmp_path / "ref.csv", lines[:300] + lines[301:])), "--json"])
    got, want = _trips_json(res.stdout)["trips"][0], _trips_json(ref.stdout)["trips"][0]
    assert got["predicted_wh"] == want["predicted_wh"] and got["distance_km"] == want["distance_km"]
    assert 0 < got["predicted_wh"] < 2000  # a 5.7 km drive: hundreds of Wh, not 1.2e14


@pytest.mark.slow
def test_a_rising_charge_is_split_off_never_learned_as_negative_energy(tmp_path):
    log = _write(tmp_path / "charged.csv", _drive(soc0=60.0, rise_at=400, rise=30.0))
    res = _cli(["learn", str(log), "--json"])
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("\n") == 1 and "state of charge rises by more than 3 %" in res.stderr
    assert "54 % -> 84 % (lines 401 to 402)" in res.stderr  # the file's lines (the header is line 1)
    trips = _trips_json(res.stdout)["trips"]
    assert [t["trip"] for t in trips] == ["charged#1", "charged#2"]
    assert all(t["measured_wh"] > 0 for t in trips)


def test_split_charging_segments_by_hand():
    # falls, rises 4 % (charging: split), falls again; a rise of 2 % (regen, gauge wobble) stays inside a segment
    soc = np.array([80, 79, 78, 80, 79, 78, 82, 85, 85, 84, 83], dtype=float)
    assert charging_segments(soc) == [(0, 6), (7, 11)]
    assert charging_segments(soc, rise_pct=10.0) == [(0, 11)]
    assert SOC_RISE_PCT == 3.0


@settings(max_examples=60, deadline=None)
@given(
    drops=st.lists(st.floats(0.0, 2.0), min_size=2, max_size=40),
    rise=st.floats(3.01, 60.0),
    where=st.integers(1, 39),
)
def test_no_segment_gains_more_than_the_threshold(drops, rise, where):
    """Property: after the split, no segment's charge rises more than the threshold above its running minimum, and
    every segment has >= 1 row; the split happens exactly when the data hold such a rise."""
    soc = 100.0 - np.cumsum(drops)
    soc[min(where, len(soc) - 1) :] += rise
    segs = charging_segments(soc)
    for lo, hi in segs:
        s = soc[lo:hi]
        assert hi > lo and float(np.max(s - np.minimum.accumulate(s))) <= SOC_RISE_PCT + 1e-9
    assert (len(segs) > 1) == bool(np.max(soc - np.minimum.accumulate(soc)) > SOC_RISE_PCT)


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        (5, "7.9", "GPS teleport"),  # 0.1 degrees of longitude west for one second: ~7 km
        (3, "20", "state-of-charge glitch"),  # the gauge reads 20 % for one second
        (1, "200", "speed glitch"),  # 0 -> 200 km/h -> 0 in two seconds (200 < 250: only the jump is implausible)
    ],
)
def test_an_isolated_spike_is_dropped_and_nothing_else(tmp_path, column, value, reason):
    lines = _drive()
    row = lines[101].split(",")
    row[column] = value
    lines[101] = ",".join(row)
    with pytest.warns(DataWarning, match=rf"dropped 1 of 600 rows: {reason} .*\(1, first at line 102\)"):
        tr = read_trace_csv(_write(tmp_path / "spike.csv", lines))
    assert len(tr) == 599 and 100.0 not in tr.t_s


def test_a_clean_drive_loses_no_row(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_traces([_write(tmp_path / "ok.csv", _drive())])[0]) == 600
        for log in CSV_LOGS:  # the shipped SUMO logs: plausible, nothing dropped
            assert len(read_log(log, None)) == 1


@settings(max_examples=60, deadline=None)
@given(
    i=st.integers(0, 59),
    run=st.integers(1, 5),
    field=st.sampled_from(["speed", "lat", "soc"]),
    size=st.floats(0.5, 50.0),
)
def test_a_glitch_in_a_smooth_drive_flags_its_rows_and_no_other(i, run, field, size):
    """Property: a run of 1-5 rows jumping well beyond the thresholds and back, anywhere in a smooth drive (also at
    either end), flags exactly those rows."""
    t = np.arange(60.0)
    v = np.full(60, 10.0)
    lat = 50.0 + 10.0 * t / 111_320
    lon = np.full(60, 10.0)
    soc = 80.0 - t / 100
    alt = np.zeros(60)
    rows = np.arange(i, min(i + run, 60))
    if field == "speed":
        v = v.copy()
        v[rows] += 20.0 + size  # > 12 m/s^2 * 1 s + 2 m/s
    elif field == "lat":
        lat = lat.copy()
        lat[rows] += (300.0 + 100 * size) / 111_320  # > 100 m/s * 1 s + 100 m
    else:
        soc = soc.copy()
        soc[rows] -= 3.5 + size  # > 1 %/s * 1 s + 2 %
    masks = implausible_rows(t, v, alt, soc, lat, lon)
    flagged = np.logical_or.reduce(list(masks.values()))
    assert np.flatnonzero(flagged).tolist() == rows.tolist()


def test_a_stale_gps_fix_that_catches_up_drops_nothing():
    """The Twizy logs' GPS repeats a fix for a few seconds, then jumps 200-340 m: a jump that does not come back."""
    t = np.arange(40.0)
    v = np.full(40, 12.0)
    lat = 50.0 + (12.0 * 5 * np.floor(t / 5)) / 111_320  # a new fix every 5 s, 60 m at a time... then a 340 m catch-up
    lat[20:] += 280.0 / 111_320
    masks = implausible_rows(t, v, np.zeros(40), 80.0 - t / 100, lat, np.full(40, 10.0))
    assert not np.logical_or.reduce(list(masks.values())).any()


@pytest.mark.slow
def test_bad_gps_rows_never_abort_the_batch(tmp_path):
    """``LON=1555.63`` on 3 rows of one log (the real file's fault): that log loses 3 rows with one warning, every
    log of the batch is learned, exit 0."""
    text = CSV_LOGS[1].read_text().splitlines()
    for k in (5, 9, 20):
        row = text[k].split(",")
        row[5] = "1555.63"
        text[k] = ",".join(row)
    bad = _write(tmp_path / "gps.csv", text)
    logs = [str(p) for p in CSV_LOGS[:1]] + [str(bad)] + [str(p) for p in CSV_LOGS[2:]]
    model = tmp_path / "m.npz"
    res = _cli(["learn", *logs, "--network", str(GRID), "--model-file", str(model), "--vehicle", "sumo_ev"])
    assert res.returncode == 0, res.stderr
    warn = [x for x in res.stderr.splitlines() if x.startswith("evroute: warning:")]
    assert warn == [
        f"evroute: warning: {bad}: dropped 3 of {len(text) - 1} rows: columns 'lat'/'lon' position outside WGS 84 "
        "range (3, first at line 6)"
    ]
    assert "Traceback" not in res.stderr and f"learned {len(logs)} log(s)" in res.stdout
    assert len(read_header(model)["meta"]["logs"]) == len(logs)


def test_a_charging_stop_in_a_network_log_is_not_learned_as_negative_energy(tmp_path):
    """A SUMO log with a 20 % charge inserted mid-trip: split in two, each segment's windows read a charge drop."""
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex
    from evroute.traces.observations import trace_readings

    text = CSV_LOGS[0].read_text().splitlines()
    rows = [x.split(",") for x in text[1:]]
    half = len(rows) // 2
    for r in rows[half:]:
        r[3] = f"{float(r[3]) + 20:g}"
    log = _write(tmp_path / "charged.csv", [text[0], *(",".join(r) for r in rows)])
    with pytest.warns(DataWarning, match="state of charge rises by more than 3 %"):
        traces = read_log(log, None)
    assert [t.name for t in traces] == ["charged#1", "charged#2"]
    index = MatchIndex(build_line_graph(load_network(GRID)))

    def lowest_reading(tr) -> float:
        r = trace_readings(tr, index.match(tr.lat, tr.lon), index.length_m, 5000.0, 1.0)
        return float(r.y.min()) if r is not None else 0.0

    # the 20 % charge is -1000 Wh of a 5 kWh battery (two windows of -500 Wh: the boundary at the jump is half-way);
    # a window inside a segment reads at most a gauge step of recuperation (0.5 % = 25 Wh in these logs)
    assert lowest_reading(read_trace_csv(log)) < -400  # unsplit, as learned at f62f65a
    assert min(lowest_reading(tr) for tr in traces) > -50


@pytest.mark.slow
def test_two_concurrent_learn_runs_into_one_model_serialize(tmp_path):
    """Two ``learn --model-file m.npz`` at once, each with its own logs: the second waits for the first's lock, reads
    its model and adds its logs, so the model holds all eight logs (at f62f65a it held one run's)."""
    model = tmp_path / "m.npz"
    base = ["--network", str(GRID), "--model-file", str(model), "--vehicle", "sumo_ev", "--model", "bi"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "evroute", "learn", *map(str, logs), *base],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for logs in (CSV_LOGS[:4], CSV_LOGS[4:])
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    logs = read_header(model)["meta"]["logs"]
    assert sorted(logs.values()) == sorted(p.name for p in CSV_LOGS)


def test_file_lock_serializes_threads(tmp_path):
    """Two threads doing read-modify-write of one file under :func:`evroute.io.file_lock`: no update lost."""
    import threading

    from evroute.io import file_lock

    target = tmp_path / "counter.txt"
    target.write_text("0")

    def bump() -> None:
        for _ in range(50):
            with file_lock(target):
                n = int(target.read_text())
                target.write_text(str(n + 1))

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert target.read_text() == "100"


def test_a_speed_unit_that_disagrees_with_the_positions_is_warned_about(tmp_path):
    """The drive logged in mph but read as km/h: 1.61 x too short by speed; one warning, the trace kept."""
    lines = _drive()
    rows = [x.split(",") for x in lines[1:]]
    mph = [lines[0]] + [",".join([r[0], f"{float(r[1]) / 1.609344:.2f}", *r[2:]]) for r in rows]
    with pytest.warns(DataWarning, match=r"speed column gives 3\.5\d* km, the positions 5\.7\d* km") as rec:
        (tr,) = read_traces([_write(tmp_path / "mph.csv", mph)])
    assert len(rec) == 1 and len(tr) == 600
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_traces([_write(tmp_path / "kmh.csv", lines)])  # the same drive in km/h: no warning
