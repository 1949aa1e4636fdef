"""SUMO ground truth: traversal recording, the straight-road energy check, demand generation, .rou.xml export.

Every SUMO run here is a tiny hand-made net (a two-way straight road built with netconvert from nodes and edges
written in the test) simulated for a few seconds of wall time.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sumolib

from evroute.cli import main
from evroute.energy import VehicleProfile, edge_energy_wh
from evroute.errors import ParameterError
from evroute.network.sumo import load_sumo_net
from evroute.sumo import binaries
from evroute.sumo.binaries import SumoError, run_sumo_program, sumo_binary
from evroute.sumo.export import export_experiment_routes, write_routes_xml
from evroute.sumo.record import record_traversals, steps_to_traversals, write_vtype_file
from evroute.sumo.scenario import DAILY_PROFILE, background_demand, hourly_rates
from evroute.sumo.vehicle import SUMO_ONLY_DEFAULTS, ev_vtype_xml

SPEED = 13.89
RISE = 20.0  # m over the 1000 m middle edge


@pytest.fixture(scope="module")
def road(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-way straight road n0 -(a, 500 m)- n1 -(b, 1000 m, +20 m)- n2 -(c, 500 m)- n3, plus -a, -b, -c."""
    d = tmp_path_factory.mktemp("road")
    (d / "n.nod.xml").write_text(
        '<nodes>\n  <node id="n0" x="0" y="0" z="0"/>\n  <node id="n1" x="500" y="0" z="0"/>\n'
        f'  <node id="n2" x="1500" y="0" z="{RISE}"/>\n  <node id="n3" x="2000" y="0" z="{RISE}"/>\n</nodes>\n'
    )
    edges = [("a", "n0", "n1"), ("b", "n1", "n2"), ("c", "n2", "n3")]
    lines = [f'  <edge id="{e}" from="{u}" to="{v}" numLanes="1" speed="{SPEED}"/>' for e, u, v in edges]
    lines += [f'  <edge id="-{e}" from="{v}" to="{u}" numLanes="1" speed="{SPEED}"/>' for e, u, v in edges]
    (d / "n.edg.xml").write_text("<edges>\n" + "\n".join(lines) + "\n</edges>\n")
    net = d / "road.net.xml"
    run_sumo_program([sumo_binary("netconvert"), "-n", d / "n.nod.xml", "-e", d / "n.edg.xml", "-o", net], "netconvert")
    return net


def test_steps_to_traversals_hand_computed() -> None:
    # vehicle v: a (departure, dropped), b (2 steps + 1 junction step), c (arrival, dropped)
    # vehicle w: a, b, then teleported to d (b -> d is no connection: b dropped), d, e
    t = [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4]
    veh = ["v"] * 7 + ["w"] * 5
    lane = ["a_0", "b_0", "b_1", ":j_0_0", "c_0", "c_0", "c_0", "a_0", "b_0", "d_0", "e_0", "e_0"]
    energy = [1.0, 2.0, 3.0, 0.5, 7.0, 7.0, 7.0, 1.0, 2.0, 4.0, 5.0, 5.0]
    turns = {("a", "b"), ("b", "c"), ("d", "e")}
    tr = steps_to_traversals(np.array(t), np.array(veh), np.array(lane), np.array(energy), legal_turns=turns)
    assert tr[["vehicle", "edge", "next_edge"]].values.tolist() == [["v", "b", "c"]]  # the turn b -> c it took
    assert tr["entry_s"].iloc[0] == 1.0 and tr["travel_s"].iloc[0] == 3.0  # enters b at 1, c at 4
    assert tr["energy_wh"].iloc[0] == pytest.approx(5.5)  # 2 + 3 on b, 0.5 in the junction
    # without the connection check the teleport is kept: w's b (1 step) and d (1 step) are complete traversals
    tr2 = steps_to_traversals(np.array(t), np.array(veh), np.array(lane), np.array(energy))
    assert sorted(tr2[["vehicle", "edge"]].values.tolist()) == [["v", "b"], ["w", "b"], ["w", "d"]]
    # Categorical ids with null rows (empty time steps of a column output) give the same traversals
    cat = steps_to_traversals(
        np.array([*t, 9.0]),
        pd.Categorical([*veh, None]),
        pd.Categorical([*lane, None]),
        np.array([*energy, np.nan]),
        legal_turns=turns,
    )
    pd.testing.assert_frame_equal(cat, tr)


def test_vtype_maps_every_profile_field() -> None:
    v = VehicleProfile.load("compact_ev")
    el = ET.fromstring(ev_vtype_xml(v, vtype_id="x"))
    params = {p.attrib["key"]: p.attrib["value"] for p in el.iter("param")}
    assert float(el.attrib["mass"]) == v.mass_kg
    assert float(params["rollDragCoefficient"]) == v.rolling_resistance
    assert float(params["frontSurfaceArea"]) == v.front_area_m2
    assert float(params["airDragCoefficient"]) == v.drag_coefficient
    assert float(params["propulsionEfficiency"]) == v.propulsion_efficiency
    assert float(params["recuperationEfficiency"]) == v.recuperation_efficiency
    assert params["has.battery.device"] == "true"
    assert {k: float(params[k]) for k in SUMO_ONLY_DEFAULTS} == SUMO_ONLY_DEFAULTS
    mm = ET.fromstring(ev_vtype_xml(v, model="MMPEVEM"))
    assert mm.get("emissionClass") == "MMPEVEM"
    assert "propulsionEfficiency" not in {p.get("key") for p in mm.iter("param")}  # MMPEVEM: its loss map
    with pytest.raises(ParameterError):
        ev_vtype_xml(v, model="HBEFA")


@pytest.mark.parametrize(("method", "step"), [("output", 0.1), ("libsumo", 0.1), ("output", 1.0), ("libsumo", 1.0)])
def test_straight_road_energy_matches_sumo_and_eq8(road: Path, tmp_path: Path, method: str, step: float) -> None:
    """Energy of the uphill middle edge b at constant speed: our traversal record vs SUMO's own edge output vs Eq. 8.

    The EV enters b at the speed limit and keeps it (no driver noise, speed factor 1, no auxiliaries), so SUMO's
    ``Energy`` model reduces to Eq. 8.  Tolerance 0.5 % at 0.1 s steps: SUMO's g = 9.81 m/s^2 vs the profile's 9.82
    (0.1 %) and the 0.1 s step are the only differences.  At 1 s steps the steps crossing a junction are split by
    distance (:mod:`evroute.sumo.attribution`), but SUMO computes a step's energy with one slope, so each of the two
    steps where the grade changes misplaces up to m g v dt sin(theta) = 1.4 Wh (0.76 % of b): tolerance 1 %.
    """
    routes = tmp_path / "probe.rou.xml"
    routes.write_text(
        '<routes>\n  <vehicle id="p" depart="0" departSpeed="max"><route edges="a b c"/></vehicle>\n'
        '  <vehicle id="q" depart="20" departSpeed="max"><route edges="a b c"/></vehicle>\n</routes>\n'
    )
    attrs = {"sigma": "0", "speedFactor": "1", "speedDev": "0"}
    extra = {"constantPowerIntake": 0.0}
    tr = record_traversals(road, [routes], step_length=step, method=method, vtype_attributes=attrs, vtype_extra=extra)
    assert tr["edge"].tolist() == ["b", "b"] and tr["vehicle"].tolist() == ["p", "q"]
    length = float(np.hypot(1000.0, RISE))
    eq8 = float(edge_energy_wh(np.array([length]), np.array([SPEED]), np.array([RISE / length]))[0])
    tol = 5e-3 if step < 1.0 else 1e-2
    assert tr["energy_wh"].to_numpy() == pytest.approx([eq8, eq8], rel=tol)
    assert tr["travel_s"].to_numpy() == pytest.approx([length / SPEED] * 2, abs=0.15)  # entry times interpolated

    # SUMO's own per-edge electricity (an <edgeData type="emissions"> output over the whole run)
    vt = write_vtype_file(tmp_path / "ev.add.xml", attributes=attrs, extra=extra)
    (tmp_path / "ed.add.xml").write_text('<additional><edgeData id="e" type="emissions" file="ed.xml"/></additional>')
    run_sumo_program(
        [
            sumo_binary("sumo"),
            "-n",
            road,
            "-r",
            routes,
            "--additional-files",
            f"{vt},{tmp_path / 'ed.add.xml'}",
            "--step-length",
            "0.1",
            "--no-step-log",
            "true",
        ],
        "sumo",
        cwd=tmp_path,
    )
    edges = ET.parse(tmp_path / "ed.xml").getroot().iter("edge")
    own = {e.get("id"): float(e.attrib["electricity_abs"]) for e in edges}
    assert tr["energy_wh"].sum() == pytest.approx(own["b"], rel=2e-3 if step < 1.0 else tol)  # junction: ~0.1 m


def test_mmpevem_is_selectable_and_close_to_eq8(road: Path, tmp_path: Path) -> None:
    """MMPEVEM (motor loss map instead of constant efficiencies) on the same edge: within 10 % of Eq. 8, not equal."""
    routes = tmp_path / "probe.rou.xml"
    routes.write_text('<routes><vehicle id="p" depart="0" departSpeed="max"><route edges="a b c"/></vehicle></routes>')
    attrs = {"sigma": "0", "speedFactor": "1", "speedDev": "0"}
    kw: dict[str, Any] = {"vtype_attributes": attrs, "vtype_extra": {"constantPowerIntake": 0.0}}
    mm = record_traversals(road, [routes], model="MMPEVEM", **kw)["energy_wh"].iloc[0]
    en = record_traversals(road, [routes], model="Energy", **kw)["energy_wh"].iloc[0]
    length = float(np.hypot(1000.0, RISE))
    eq8 = float(edge_energy_wh(np.array([length]), np.array([SPEED]), np.array([RISE / length]))[0])
    assert mm == pytest.approx(eq8, rel=0.1) and abs(mm - en) > 1e-3 * en


@pytest.mark.slow
def test_background_demand_is_seeded_and_cached(road: Path, tmp_path: Path) -> None:
    rates = hourly_rates(100.0)
    assert len(rates) == 24 and int(np.argmax(rates)) in (7, 8)  # the morning peak (8:00) is the busiest
    evening = int(np.argmax(rates[12:])) + 12
    assert evening in (16, 17) and rates[evening] > 2 * rates[12]  # an evening peak (17:30) above midday
    assert max(rates[:5]) < 0.1 * max(rates)  # quiet night
    a = background_demand(road, peak_per_hour=360.0, hours=(8, 9), seed=1, min_distance_m=0, cache_dir=tmp_path)
    mtime = a.stat().st_mtime_ns
    again = background_demand(road, peak_per_hour=360.0, hours=(8, 9), seed=1, min_distance_m=0, cache_dir=tmp_path)
    assert again == a and a.stat().st_mtime_ns == mtime  # cached: not regenerated
    b = background_demand(road, peak_per_hour=360.0, hours=(8, 9), seed=2, min_distance_m=0, cache_dir=tmp_path)
    vehicles = list(sumolib.xml.parse(str(a), "vehicle"))
    assert abs(len(vehicles) - 360 * DAILY_PROFILE[8]) <= 2  # hour 8's rate for one hour
    departs = [float(v.depart) for v in vehicles]
    assert 8 * 3600 <= min(departs) and max(departs) < 9 * 3600
    assert all(v.type is None for v in vehicles)  # the default type: the EV at simulation time
    assert b != a and b.read_text() != a.read_text()  # another seed, other trips


def test_route_file_export_reads_back_and_simulates(road: Path, tmp_path: Path) -> None:
    out = write_routes_xml(tmp_path / "r.rou.xml", {"energy-optimal": ["a", "b", "c"], "back": ["-c", "-b", "-a"]})
    vehicles = list(sumolib.xml.parse(str(out), "vehicle"))
    assert [v.id for v in vehicles] == ["energy-optimal", "back"]
    assert [v.route[0].edges for v in vehicles] == ["a b c", "-c -b -a"]
    run_sumo_program(
        [sumo_binary("sumo"), "-n", road, "-r", out, "--tripinfo-output", tmp_path / "ti.xml", "--no-step-log", "true"],
        "sumo",
    )
    trips = {t.get("id"): t for t in ET.parse(tmp_path / "ti.xml").getroot().iter("tripinfo")}
    assert set(trips) == {"energy-optimal", "back"}  # both arrived
    assert float(trips["back"].attrib["routeLength"]) == pytest.approx(2000.0, rel=0.01)
    with pytest.raises(ParameterError):
        write_routes_xml(tmp_path / "bad.rou.xml", {"x": []})


def test_cli_route_exports_sumo_routes_and_geojson_edge_ids(road: Path, tmp_path: Path) -> None:
    rou, gj = tmp_path / "r.rou.xml", tmp_path / "r.geojson"
    assert (
        main(
            [
                "route",
                "--network",
                str(road),
                "--from",
                "a",
                "--to",
                "c",
                "--sumo-routes",
                str(rou),
                "--geojson",
                str(gj),
            ]
        )
        == 0
    )
    vehicles = list(sumolib.xml.parse(str(rou), "vehicle"))
    assert {v.id for v in vehicles} == {"energy-optimal", "shortest", "fastest"}
    assert all(v.route[0].edges == "a b c" for v in vehicles)
    feats = json.loads(gj.read_text())["features"]
    assert all(f["properties"]["edge_ids"] == ["a", "b", "c"] for f in feats)
    net = load_sumo_net(road)
    assert set(net.edge_ids) == {"a", "b", "c", "-a", "-b", "-c"}


def test_cli_run_exports_last_routes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--network",
                "synthetic:150:0",
                "--horizon",
                "3",
                "--seeds",
                "2",
                "--out",
                str(out),
                "--no-progress",
                "--sumo-routes",
            ]
        )
        == 0
    )
    vehicles = list(sumolib.xml.parse(str(out / "routes.rou.xml"), "vehicle"))
    assert [v.id for v in vehicles] == ["seed_0", "seed_1"]
    last = [r.strip().split(",")[1] for r in (out / "seed_0" / "rounds.csv").read_text().splitlines()[-1:]]
    assert vehicles[0].route[0].edges == last[0]
    assert export_experiment_routes(out, tmp_path / "x.rou.xml").is_file()


def test_missing_sumo_is_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], road: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(binaries, "sumo_wheel_home", lambda: None)
    monkeypatch.delenv("SUMO_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SumoError, match="SUMO not found|not found: install eclipse-sumo"):
        sumo_binary("sumo")
    with pytest.raises(SumoError):
        record_traversals(road, [road])


def test_failing_sumo_is_one_line_error(road: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.rou.xml"
    bad.write_text('<routes><vehicle id="v" depart="0"><route edges="a c"/></vehicle></routes>')  # a -> c: no link
    tr = record_traversals(road, [bad])  # SUMO drops the invalid route (--ignore-route-errors): nothing recorded
    assert tr.empty
    with pytest.raises(SumoError, match="^sumo failed: Error: ") as exc:
        record_traversals(road, [bad], sumo_args=["--no-such-option"])
    assert "\n" not in str(exc.value)
    proc = subprocess.run([str(sumo_binary("sumo")), "--version"], capture_output=True, text=True, check=False)
    assert "1.28" in proc.stdout.splitlines()[0]


@pytest.fixture(scope="module")
def hill(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """n0 -a- n1 -b (1000 m, +20 m)- n2 -c- n3 -d (turning north)- n4, two-way; EVs drive there and back."""
    d = tmp_path_factory.mktemp("hill")
    (d / "n.nod.xml").write_text(
        '<nodes><node id="n0" x="0" y="0" z="0"/><node id="n1" x="500" y="0" z="0"/>'
        f'<node id="n2" x="1500" y="0" z="{RISE}"/><node id="n3" x="2000" y="0" z="{RISE}"/>'
        f'<node id="n4" x="2000" y="300" z="{RISE}"/></nodes>'
    )
    es = [("a", "n0", "n1"), ("b", "n1", "n2"), ("c", "n2", "n3"), ("d", "n3", "n4")]
    body = "".join(
        f'<edge id="{e}" from="{u}" to="{v}" speed="{SPEED}"/><edge id="-{e}" from="{v}" to="{u}" speed="{SPEED}"/>'
        for e, u, v in es
    )
    (d / "n.edg.xml").write_text(f"<edges>{body}</edges>")
    net = d / "hill.net.xml"
    run_sumo_program([sumo_binary("netconvert"), "-n", d / "n.nod.xml", "-e", d / "n.edg.xml", "-o", net], "nc")
    routes = d / "there_and_back.rou.xml"
    routes.write_text(
        "<routes>"
        + "".join(
            f'<vehicle id="v{k}" depart="{10 * k}"><route edges="a b c d -d -c -b -a"/></vehicle>' for k in range(5)
        )
        + "</routes>"
    )
    return net, routes


@pytest.mark.parametrize("method", ["output", "libsumo"])
def test_lossless_ev_reduced_energy_is_zero(hill: tuple[Path, Path], method: str) -> None:
    """An EV without losses (efficiencies 1, no rolling, air or radial drag, no auxiliaries) dissipates nothing, so
    battery energy = kinetic + potential energy change and every traversal's reduced energy is 0, within:

    * 0.01 Wh on the flat edges d and -d, away from any grade change: the battery's charge-level resolution (libsumo;
      the Parquet output has 1e-6 Wh) -- the kinetic energy counts the rotating mass too, else d's -6 Wh of braking
      would leave 0.13 Wh;
    * 1.4 Wh on the edges meeting the grade change (b, c, -b, -c): SUMO charges a step's potential energy with the
      slope of the lane it ends on, so the step crossing the junction misplaces up to m g v dt sin(theta) = 1.39 Wh
      (1 s steps), and the lane shapes start a few metres past the junction whose height the potential uses (0.2 Wh).
    """
    net, routes = hill
    lossless = VehicleProfile(
        rolling_resistance=0.0, drag_coefficient=0.0, propulsion_efficiency=1.0, recuperation_efficiency=1.0
    )
    extra = {"constantPowerIntake": 0.0, "radialDragCoefficient": 0.0}
    tr = record_traversals(net, [routes], vehicle=lossless, method=method, vtype_extra=extra)
    assert set(tr["edge"]) == {"b", "c", "d", "-d", "-c", "-b"} and len(tr) == 30
    flat = tr["edge"].isin(["d", "-d"])
    assert np.abs(tr.loc[flat, "reduced_wh"]).max() <= 0.01
    assert np.abs(tr.loc[~flat, "reduced_wh"]).max() <= 1.4
    assert np.abs(tr["kinetic_wh"]).max() > 40.0  # braking for the turn into d is tens of Wh: the test has teeth


@pytest.mark.parametrize("model", ["Energy", "MMPEVEM"])
def test_traversal_energy_terms_telescope(hill: tuple[Path, Path], model: str) -> None:
    """The default EV: reduced energy >= 0 on every traversal; the kinetic and potential terms telescope.

    Tolerance of the sign: 1.4 Wh, the potential SUMO misplaces at a grade change (see the lossless test); the
    dissipation itself (rolling, drag, losses) is tens of Wh per edge here.
    """
    net, routes = hill
    tr = record_traversals(net, [routes], model=model)
    assert len(tr) == 30 and tr["reduced_wh"].min() >= -1.4
    m_eff = VehicleProfile().mass_kg + SUMO_ONLY_DEFAULTS["rotatingMass"]
    ke = 0.5 * m_eff / 3600.0
    np.testing.assert_allclose(
        tr["kinetic_wh"], ke * (tr["exit_speed_mps"] ** 2 - tr["entry_speed_mps"] ** 2), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(tr["reduced_wh"], tr["energy_wh"] - tr["kinetic_wh"] - tr["potential_wh"], atol=1e-9)
    rise = {"b": RISE, "-b": -RISE}
    mg = VehicleProfile().mass_kg * 9.81 / 3600.0  # SUMO's g
    np.testing.assert_allclose(tr["potential_wh"], [mg * rise.get(e, 0.0) for e in tr["edge"]], atol=1e-9)
    for _, trip in tr.sort_values("entry_s").groupby("vehicle"):
        assert trip["edge"].tolist() == ["b", "c", "d", "-d", "-c", "-b"]
        # the exit speed of a traversal is the entry speed of the next: along the trip the kinetic terms sum to
        # the kinetic energy at the end minus the start, and the potential terms to m g (z_end - z_start)
        np.testing.assert_allclose(trip["exit_speed_mps"].to_numpy()[:-1], trip["entry_speed_mps"].to_numpy()[1:])
        v0, v1 = trip["entry_speed_mps"].iloc[0], trip["exit_speed_mps"].iloc[-1]
        assert trip["kinetic_wh"].sum() == pytest.approx(ke * (v1**2 - v0**2), abs=1e-9)
        assert trip["potential_wh"].sum() == pytest.approx(0.0, abs=1e-9)  # b up, -b down
