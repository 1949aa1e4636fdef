"""Battery bounds of the driver answers (issue 34, item 5): the arrival charge never exceeds a full battery (energy
recovered into a full battery is lost, and the answer says so), a start below the reserve is an error, and an
infeasible answer is reported on stderr."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.cli import main
from evroute.driver.answers import BatteryState, arrival, full_battery_loss_wh
from evroute.energy import VehicleProfile
from evroute.errors import ParameterError

NET = "synthetic:300:2"


def _brute_loss(edges_wh, cap_wh, c0, c_max):
    """Follow the charge in Wh, one edge at a time, clipped at the top: what did not fit."""
    q, top, lost = c0 * cap_wh, c_max * cap_wh, 0.0
    for e in edges_wh:
        q -= e
        if q > top:
            lost += q - top
            q = top
    return lost


@settings(max_examples=200, deadline=None)
@given(
    edges=st.lists(st.floats(-500.0, 500.0), min_size=1, max_size=30),
    c0=st.floats(0.0, 1.0),
    c_max=st.floats(0.5, 1.0),
)
def test_full_battery_loss_matches_brute_force(edges, c0, c_max):
    c0 = min(c0, c_max)
    bat = BatteryState(2000.0, c0, 0.0, c_max)
    assert full_battery_loss_wh(np.array(edges), bat) == pytest.approx(_brute_loss(edges, 2000.0, c0, c_max), abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(mean=st.floats(-5e4, 5e4), sd=st.floats(0.0, 1e4), c0=st.floats(0.0, 1.0))
def test_arrival_never_above_the_full_battery(mean, sd, c0):
    bat = BatteryState(40_000.0, c0, 0.0, 1.0)
    soc, lo, hi, p = arrival(mean, sd, bat)
    assert lo <= soc <= hi <= 1.0
    assert 0.0 <= p <= 1.0


def test_start_below_the_reserve_is_an_error(capsys):
    with pytest.raises(ParameterError, match="below the reserve"):
        BatteryState.from_vehicle(VehicleProfile.load("chevrolet_bolt_2020"), 0.1, 0.2)
    argv = ["route", "--network", NET, "--from", "@EDGE0", "--to", "@EDGE1", "--charge", "10%", "--reserve", "20%"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("evroute: error:") and "below the reserve" in err
    assert len(err.strip().splitlines()) == 1


def _route_json(capsys, *extra, uphill=False):
    from evroute.experiments.runner import load_linegraph

    lg = load_linegraph(NET)
    net = lg.network
    a = str(net.edge_ids[int(np.argmax(net.z_from_m))])  # from the top of the city ...
    b = str(net.edge_ids[int(np.argmin(net.z_to_m))])  # ... to its bottom
    if uphill:
        a = str(net.edge_ids[int(np.argmin(net.z_from_m))])
        b = str(net.edge_ids[int(np.argmax(net.z_to_m))])
    capsys.readouterr()
    code = main(["route", "--network", NET, "--from", a, "--to", b, "--json", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_downhill_from_a_full_battery_is_capped(capsys):
    code, out, _ = _route_json(capsys, "--charge", "100%", "--vehicle", "sumo_ev", "--prior", "eq8")
    assert code == 0
    for r in out["routes"]:
        assert r["arrival_soc"] <= 1.0 and r["arrival_soc_90"][1] <= 1.0
        lost = r["lost_to_full_battery_wh"]
        assert lost >= 0.0
        # the arrival charge is the start minus the route's energy and the lost regeneration (capped at full)
        expect = min(1.0, 1.0 - (r["energy_wh"] + lost) / out["battery"]["capacity_wh"])
        assert r["arrival_soc"] == pytest.approx(expect, abs=1e-12)
        assert r["arrival_soc_capped"] == (lost > 0 or r["arrival_soc_90"][1] >= 1.0)
    assert any(r["lost_to_full_battery_wh"] > 0 for r in out["routes"])  # the city's descent overfills a full battery


def test_infeasible_answer_is_reported_on_stderr(capsys):
    code, out, err = _route_json(capsys, "--charge", "0.01%", "--reserve", "0%", uphill=True)
    assert code == 0 and out["risk_aware"]["feasible"] is False
    assert err.startswith("evroute: warning: infeasible") and len(err.strip().splitlines()) == 1
