"""Chargers as data (CSV, GeoJSON, OSM; one-line errors naming the bad row; snapping) and ``evroute plan`` (text,
JSON, GeoJSON, HTML; no feasible plan: exit 1 with the farthest reachable charger; bad input: exit 2, nothing
written)."""

from __future__ import annotations

import csv
import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from evroute.charging.chargers import parse_power_kw, read_chargers, snap_chargers
from evroute.cli import main
from evroute.errors import DataError
from evroute.linegraph import build_line_graph
from evroute.network.registry import load_network
from evroute.routes import edge_midpoints

ROOT = Path(__file__).resolve().parents[1]
NET = "synthetic:600:2"
FIELDS = ["id", "lon", "lat", "power_kw", "connector", "capacity", "availability"]


@functools.lru_cache(maxsize=1)
def _lg():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_line_graph(load_network(NET))


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return path


def _chargers(tmp_path: Path, n: int = 8, seed: int = 0) -> Path:
    lg = _lg()
    mid = edge_midpoints(lg.network.geometry)
    e = np.random.default_rng(seed).choice(lg.n_nodes, n, replace=False)
    rows = [
        {
            "id": f"c{i}",
            "lon": mid[k, 0],
            "lat": mid[k, 1] + 1e-4,
            "power_kw": 50.0,
            "connector": "ccs",
            "capacity": 2,
            "availability": 0.9,
        }
        for i, k in enumerate(e)
    ]
    return _write_csv(tmp_path / "ch.csv", rows)


def _ends() -> tuple[str, str]:
    """The two edges farthest apart (as the crow flies) of the test network."""
    lg = _lg()
    mid = edge_midpoints(lg.network.geometry)
    s, g = int(np.argmin(mid.sum(axis=1))), int(np.argmax(mid.sum(axis=1)))
    return str(lg.network.edge_ids[s]), str(lg.network.edge_ids[g])


# --- reading ---------------------------------------------------------------------------------------------------


def test_sample_files_read_and_are_labelled_synthetic() -> None:
    mc = read_chargers(ROOT / "data/chargers/monaco_synthetic.csv")
    lu = read_chargers(ROOT / "data/chargers/luxembourg_synthetic.geojson")
    assert len(mc) == 12 and len(lu) == 50
    assert all(i.startswith("SYN-") for i in mc.ids + lu.ids)
    assert set(mc.power_kw) <= {11.0, 22.0, 50.0, 150.0} and np.all((lu.availability >= 0.6) & (lu.availability <= 1))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"power_kw": "fast"}, "line 3: power_kw 'fast' is not a number"),
        ({"power_kw": "-5"}, "line 3: power_kw '-5' must be > 0"),
        ({"lat": "95"}, "line 3: lat '95' must be in [-90, 90]"),
        ({"capacity": "1.5"}, "line 3: capacity '1.5' is not a whole number"),
        ({"availability": "2"}, "line 3: availability '2' must be in [0, 1]"),
        ({"id": "a"}, "line 3: id 'a' repeats line 2"),
        ({"lon": ""}, "line 3: missing lon"),
    ],
)
def test_bad_csv_row_is_one_line_naming_it(tmp_path, row, message) -> None:
    good = {"id": "a", "lon": 6.1, "lat": 49.6, "power_kw": 22, "connector": "", "capacity": 1, "availability": 1}
    p = _write_csv(tmp_path / "x.csv", [good, {**good, "id": "b", **row}])
    with pytest.raises(DataError) as exc:
        read_chargers(p)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_bad_geojson_and_header(tmp_path) -> None:
    p = tmp_path / "x.geojson"
    p.write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [
                    {
                        "type": "Feature",
                        "geometry": {"type": "Point", "coordinates": [6.1, 49.6]},
                        "properties": {"id": "a", "power_kw": 22},
                    },
                    {
                        "type": "Feature",
                        "geometry": {"type": "LineString", "coordinates": [[6.1, 49.6], [6.2, 49.6]]},
                        "properties": {"id": "b", "power_kw": 22},
                    },
                ],
            }
        )
    )
    with pytest.raises(DataError, match="feature 1 \\(id b\\): the geometry must be a Point"):
        read_chargers(p)
    q = tmp_path / "y.csv"
    q.write_text("id,x,y,power_kw\n")
    with pytest.raises(DataError, match="lacks the column\\(s\\) lon, lat"):
        read_chargers(q)
    (tmp_path / "z.txt").write_text("")
    with pytest.raises(DataError, match="unknown format"):
        read_chargers(tmp_path / "z.txt")


def test_osm_stations_with_sockets_units_and_ways(tmp_path) -> None:
    osm = """<?xml version='1.0' encoding='UTF-8'?>
<osm version="0.6">
  <node id="1" lat="49.60" lon="6.10"><tag k="amenity" v="charging_station"/>
    <tag k="socket:type2:output" v="22 kW"/><tag k="socket:type2_combo:output" v="150kW"/><tag k="socket:type2" v="2"/>
    <tag k="socket:type2_combo" v="1"/><tag k="capacity" v="3"/></node>
  <node id="2" lat="49.61" lon="6.11"><tag k="amenity" v="charging_station"/>
    <tag k="socket:schuko:output" v="3700 W"/></node>
  <node id="3" lat="49.62" lon="6.12"><tag k="amenity" v="charging_station"/></node>
  <node id="4" lat="49.63" lon="6.13"/><node id="5" lat="49.65" lon="6.15"/>
  <way id="9"><nd ref="4"/><nd ref="5"/><tag k="amenity" v="charging_station"/>
    <tag k="charging_station:output" v="50"/></way>
  <node id="6" lat="49.64" lon="6.14"><tag k="amenity" v="parking"/></node>
</osm>"""
    p = tmp_path / "c.osm"
    p.write_text(osm)
    ch = read_chargers(p)
    assert ch.ids == ["node/1", "node/2", "way/9"] and ch.skipped == 1  # node 3 has no output
    assert ch.power_kw.tolist() == [150.0, 3.7, 50.0] and ch.capacity.tolist() == [3, 1, 1]
    assert ch.connector[0] == "type2;type2_combo"
    assert ch.lon[2] == pytest.approx(6.14) and ch.lat[2] == pytest.approx(49.64)
    assert parse_power_kw("11;22 kW") == 22.0 and parse_power_kw("fast") is None


def test_snapping_keeps_near_chargers_with_their_detour(tmp_path) -> None:
    lg = _lg()
    ch = read_chargers(_chargers(tmp_path, 4))
    mid = edge_midpoints(lg.network.geometry)
    far = ch.subset(np.arange(4))
    far.lat = far.lat.copy()
    far.lat[0] += 0.05  # about 5.5 km north: off the network
    out = snap_chargers(lg.network, far, 250.0)
    assert len(out) == 3 and out.ids == ["c1", "c2", "c3"]
    assert np.all(out.snap_m < 30) and np.allclose(out.detour_m, 2 * out.snap_m)
    assert np.all(np.isin(out.edge, np.arange(lg.n_nodes))) and mid.shape[0] == lg.n_nodes


# --- evroute plan ----------------------------------------------------------------------------------------------


def _plan(tmp_path, capsys, *extra: str) -> tuple[int, str, str]:
    s, g = _ends()
    rc = main(["plan", "--network", NET, f"--from={s}", f"--to={g}", "--chargers", str(_chargers(tmp_path)), *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.slow
def test_plan_answers_in_text_json_geojson_and_html(tmp_path, capsys) -> None:
    rc, out, _ = _plan(
        tmp_path,
        capsys,
        "--charge",
        "1.5%",
        "--reserve",
        "1%",
        "--json",
        "--geojson",
        str(tmp_path / "p.geojson"),
        "--html",
        str(tmp_path / "p.html"),
    )
    assert rc == 0
    d = json.loads(out)
    assert d["feasible"] and d["certified"] and len(d["stops"]) >= 1
    st = d["stops"][0]
    assert st["arrival_charge_90"][0] < st["arrival_charge"] < st["arrival_charge_90"][1]
    assert st["charge_to"] > st["arrival_charge"] and st["charging_time_s"] > 0
    assert d["p_all_reserve"] >= 1 - d["risk_bound"] - 1e-9 and d["risk_bound"] <= 0.05 + 1e-12
    assert d["reserve_hit_km"] is not None  # the trip does not fit in the start charge
    assert all(0 <= leg["p_reach"] <= 1 for leg in d["legs"])
    gj = json.loads((tmp_path / "p.geojson").read_text())
    kinds = [f["properties"]["kind"] for f in gj["features"]]
    assert kinds.count("leg") == len(d["legs"]) and kinds.count("stop") == len(d["stops"])
    page = (tmp_path / "p.html").read_text()
    assert "evroute-charge-profile" in page and "charge to" in page
    rc, text, _ = _plan(tmp_path, capsys, "--charge", "1.5%", "--reserve", "1%")
    assert rc == 0 and "stop 1:" in text and "P(reach with reserve)" in text and "charge to" in text


def test_no_feasible_plan_exits_1(tmp_path, capsys) -> None:
    rc, out, _ = _plan(tmp_path, capsys, "--charge", "1.05%", "--reserve", "1%", "--max-stops", "0")
    assert rc == 1
    assert "NO FEASIBLE PLAN" in out and "no charger is reachable" in out and "fall below the reserve at km" in out


def test_no_feasible_plan_names_the_farthest_reachable_charger() -> None:
    """Origin -> c1 -> c2 reachable, nothing reaches the destination: the partial plan ends at c2 (nearer the
    destination), and its text says so."""
    from evroute.charging.answers import farthest_text
    from evroute.charging.curves import CURVES, ChargingCurve
    from evroute.charging.legs import LegTable, Sites
    from evroute.charging.search import PlanProblem, PlanSettings, plan_search

    sites = Sites(
        np.arange(4),
        np.array([np.nan, 50.0, 50.0, np.nan]),
        np.zeros(4),
        np.zeros(4),
        np.zeros(4),
        ["origin", "c1", "c2", "destination"],
    )
    src, dst = np.array([0, 0, 1, 1, 2, 0]), np.array([1, 2, 2, 3, 3, 3])
    mean = np.array([2000.0, 9000.0, 3000.0, 20000.0, 15000.0, 25000.0])  # Wh; battery 10 kWh
    time = np.array([600.0, 2000.0, 800.0, 4000.0, 3000.0, 5000.0])
    t = LegTable(sites, src, dst, np.zeros(6, int), time, time * 10, mean, (0.05 * mean) ** 2, mean, 0.05 * mean, 0.0)
    p = PlanProblem(t, ChargingCurve.from_dict(CURVES["sumo_ev"]), PlanSettings(10_000.0, 0.5, 0.05, max_stops=3))
    plan = plan_search(p)
    assert not plan.feasible and plan.certified and plan.farthest is not None
    assert plan.farthest.legs == [0, 2] and "farthest reachable charger: c2" in farthest_text(plan, p)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delta", "0.7"], "--delta must be in (0, 0.5)"),
        (["--trip-rho", "1.5"], "--trip-rho must be in [0, 1]"),
        (["--html", "x.png"], "--html must name a .html file"),
        (["--step", "0%"], "--step must be in (0%, 50%]"),
        (["--charge", "150%"], "--charge must be between 0% and 100%"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, args, message) -> None:
    out_geo = tmp_path / "never.geojson"
    s, g = _ends()
    base = [
        "plan",
        "--network",
        NET,
        f"--from={s}",
        f"--to={g}",
        "--chargers",
        str(_chargers(tmp_path)),
        "--charge",
        "20%",
        "--geojson",
        str(out_geo),
    ]
    rc = main(base + args)
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("evroute: error:") and message in err and err.count("\n") == 1
    assert not out_geo.exists()


def test_bad_charger_file_fails_before_the_network_loads(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lon,lat,power_kw\na,6.1,49.6,lots\n")
    rc = main(
        ["plan", "--network", "no-such-network", "--from", "x", "--to", "y", "--chargers", str(bad), "--charge", "20%"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "line 2: power_kw 'lots' is not a number" in err and err.count("\n") == 1
