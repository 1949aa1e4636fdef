"""The top-level ``data/`` folder: the dataset registry ``evroute data fetch`` reads, and the project's own samples."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from evroute.network import registry
from evroute.network.registry import DATASETS, load_registry, registry_path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


def test_fetch_reads_the_registry_in_data():
    assert registry_path() == DATA / "datasets.json"
    assert load_registry(DATA / "datasets.json") == DATASETS
    assert set(DATASETS) == {"monaco", "luxembourg"}


def test_the_package_ships_an_identical_copy():
    """An installed wheel has no ``data/``: it reads ``evroute/resources/datasets.json``, which must not drift."""
    assert (ROOT / "evroute" / "resources" / "datasets.json").read_bytes() == (DATA / "datasets.json").read_bytes()


def test_registry_fields():
    raw = json.loads((DATA / "datasets.json").read_text())
    for name, d in raw.items():
        assert set(d) == {
            "filename", "repo", "commit", "path", "sha256", "has_elevation", "licence", "size_bytes", "description"
        }, name  # fmt: skip
        assert len(d["commit"]) == 40 and int(d["commit"], 16) >= 0
        assert len(d["sha256"]) == 64 and int(d["sha256"], 16) >= 0
        assert d["size_bytes"] > 0 and "ODbL" in d["licence"]


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["monaco", "luxembourg"])
def test_registry_matches_the_real_files(name):
    import os

    folder = os.environ.get("EVROUTE_DATA")
    if not folder or not (Path(folder) / DATASETS[name].filename).is_file():
        pytest.skip("EVROUTE_DATA with the real OSM files is not set")
    blob = (Path(folder) / DATASETS[name].filename).read_bytes()
    assert len(blob) == DATASETS[name].size_bytes
    assert hashlib.sha256(blob).hexdigest() == DATASETS[name].sha256


def test_malformed_registry_is_one_line_error(tmp_path):
    bad = tmp_path / "datasets.json"
    bad.write_text(json.dumps({"monaco": {"filename": "monaco.osm"}}))
    with pytest.raises(registry.DataError, match="malformed"):
        load_registry(bad)


def test_fetched_upstream_files_are_ignored_by_git(tmp_path):
    """``evroute data fetch monaco --cache-dir data`` in a checkout must not put upstream data into git."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout")
    paths = ["data/monaco.osm", "data/luxembourg.osm", "data/x.osm.pbf", "data/ev-logs/rsk/T1.csv"]
    out = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert out == paths
    tracked = subprocess.run(["git", "check-ignore", "data/sumo-tiny/grid.net.xml"], cwd=ROOT, capture_output=True)
    assert tracked.returncode == 1  # the sample net is not ignored


def test_tiny_sumo_net_loads_with_elevation_and_routes():
    from evroute.energy import network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network import load_network
    from evroute.oracle import optimal_route

    net = load_network(DATA / "sumo-tiny" / "grid.net.xml")
    lg = build_line_graph(net)
    assert (net.n_edges, net.n_turns, lg.n_nodes) == (24, 60, 24)  # 12 two-way blocks, all one component
    z = np.concatenate([net.z_from_m, net.z_to_m])
    assert z.min() == pytest.approx(0.0, abs=0.01) and z.max() == pytest.approx(30.0, abs=0.01)  # ele 10 i + 5 j
    e = network_energy_wh(lg.network)
    assert optimal_route(lg, e, 0, lg.n_nodes - 1).edges.size >= 1


def test_trip_log_follows_the_documented_schema():
    from evroute.traces import read_trace_csv

    rows = list(csv.DictReader((DATA / "trip-log" / "sample.csv").open()))
    assert list(rows[0]) == ["time", "speed_kmh", "altitude_m", "soc_pct", "lat", "lon"]  # docs/trip_logs.md
    times = [datetime.fromisoformat(r["time"].replace("Z", "+00:00")) for r in rows]
    assert all((b - a).total_seconds() == 1 for a, b in zip(times, times[1:], strict=False))  # one row per second
    for r in rows:
        assert 49.999 < float(r["lat"]) < 50.003 and 9.999 < float(r["lon"]) < 10.004  # on the sample grid
        assert 0 < float(r["speed_kmh"]) < 72 and 0 <= float(r["altitude_m"]) <= 30
        assert 0 <= float(r["soc_pct"]) <= 100
    # the state of charge moves by the route's physics energy over a 60 kWh battery (make_sample.py)
    used_wh = (float(rows[0]["soc_pct"]) - float(rows[-1]["soc_pct"])) / 100 * 60_000
    assert math.isfinite(used_wh) and abs(used_wh) < 60_000 * 0.01
    trace = read_trace_csv(DATA / "trip-log" / "sample.csv")  # the reader's default mapping reads it as is
    assert len(trace) == len(rows) and trace.t_s[-1] == len(rows) - 1


@pytest.mark.slow
def test_trip_log_sample_is_what_its_script_makes(tmp_path):
    """``make_sample.py`` is deterministic: running it again gives the committed file byte for byte."""
    import shutil
    import sys

    work = tmp_path / "data"
    shutil.copytree(DATA / "trip-log", work / "trip-log")
    shutil.copytree(DATA / "sumo-tiny", work / "sumo-tiny")
    subprocess.run([sys.executable, str(work / "trip-log" / "make_sample.py")], check=True, capture_output=True)
    assert (work / "trip-log" / "sample.csv").read_bytes() == (DATA / "trip-log" / "sample.csv").read_bytes()
