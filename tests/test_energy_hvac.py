"""HVAC power by ambient temperature (:class:`evroute.energy.VehicleProfile` ``hvac_power_curve`` and
``ambient_temp_c``): off unless a temperature is set, interpolated and clamped like the curve says, added to the
auxiliaries over each edge's time in every model, bad input a one-line error, and the shipped curves reproduce their
source (FASTSim's thermal vehicle models, ``studies/energy_validation/hvac_curves.py``)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from evroute.energy import VEHICLE_DIR, VehicleProfile, edge_energy_wh, edge_prior
from evroute.errors import ParameterError
from evroute.network.synthetic import synthetic_city

#: the Bolt without its battery efficiency map, so the auxiliaries' cost is additive (with the map the battery's ohmic
#: loss grows with the load: ``tests/test_energy_regen.py`` tests the map)
BOLT = replace(VehicleProfile.load("chevrolet_bolt_2020"), battery_efficiency_map=None)


def test_off_without_an_ambient_temperature():
    """No temperature: no HVAC load, so every shipped result is what it was without the curve."""
    assert BOLT.ambient_temp_c is None and BOLT.hvac_power_curve is not None
    assert BOLT.hvac_w == 0.0 and BOLT.aux_w == BOLT.auxiliary_power_w
    net = synthetic_city(200, seed=3)
    bare = replace(BOLT, hvac_power_curve=None)
    np.testing.assert_array_equal(edge_prior(net, BOLT).energy_wh, edge_prior(net, bare).energy_wh)


@pytest.mark.parametrize(
    ("temp", "watts"),
    [
        (-10.0, 2910.0),
        (-5.0, 0.5 * (2910.0 + 1990.0)),
        (22.0, 0.0),
        (32.5, 0.5 * (100.0 + 280.0)),
        (-40.0, 3870.0),
        (55.0, 560.0),
    ],
)
def test_interpolated_and_clamped(temp, watts):
    """Linear between the curve's points (by hand from the Bolt's shipped curve), the end values beyond them."""
    v = replace(BOLT, ambient_temp_c=temp)
    assert v.hvac_w == pytest.approx(watts, abs=1e-9)
    assert v.aux_w == pytest.approx(BOLT.auxiliary_power_w + watts, abs=1e-9)


@pytest.mark.parametrize("temp", [-20.0, 0.0, 35.0])
def test_hvac_energy_is_its_power_over_each_edges_time(temp):
    """Eq. 8 and the default prior: the energy with the HVAC on minus without is ``P_hvac t / 3600`` (Wh) on every
    edge, ``t`` the model's time of the edge (``l / v``; the prior's expected time with its stops' waits)."""
    net = synthetic_city(200, seed=3)
    hot = replace(BOLT, ambient_temp_c=temp)
    e8 = edge_energy_wh(net.length_m, net.speed_mps, net.incline, hot) - edge_energy_wh(
        net.length_m, net.speed_mps, net.incline, BOLT
    )
    np.testing.assert_allclose(e8, hot.hvac_w * net.length_m / net.speed_mps / 3600.0, rtol=1e-9, atol=1e-9)
    on, off = edge_prior(net, hot), edge_prior(net, BOLT)
    np.testing.assert_allclose(on.time_s, off.time_s, rtol=1e-12)
    np.testing.assert_allclose(on.energy_wh - off.energy_wh, hot.hvac_w * off.time_s / 3600.0, rtol=1e-9, atol=1e-9)


def test_bad_input_is_a_one_line_error(tmp_path):
    with pytest.raises(ParameterError, match="ambient_temp_c needs hvac_power_curve"):
        VehicleProfile(ambient_temp_c=10.0)
    with pytest.raises(ParameterError, match="ambient_temp_c"):
        replace(BOLT, ambient_temp_c=80.0)
    with pytest.raises(ParameterError, match="hvac_power_curve"):
        replace(BOLT, hvac_power_curve=((10.0, 100.0), (0.0, 200.0)))  # temperatures not increasing
    with pytest.raises(ParameterError, match="hvac_power_curve"):
        replace(BOLT, hvac_power_curve=((0.0, -5.0), (10.0, 200.0)))  # negative power
    raw = json.loads((VEHICLE_DIR / "chevrolet_bolt_2020.json").read_text())
    for bad in ("cold", 99.0):
        path = tmp_path / "v.json"
        path.write_text(json.dumps({**raw, "ambient_temp_c": bad}))
        with pytest.raises(ParameterError) as exc:
            VehicleProfile.load(path)
        assert "ambient_temp_c" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("name", ["chevrolet_bolt_2020", "tesla_model3_rwd_2022", "nissan_leaf_2016"])
def test_shipped_curves_reproduce_fastsim(name):
    """Two points of each shipped curve recomputed from FASTSim's thermal model (the curves are rounded to 10 W)."""
    pytest.importorskip("fastsim")
    from studies.energy_validation.hvac_curves import THERMAL, hvac_curve

    vfile = {v: k for k, v in THERMAL.items()}[name]
    shipped = dict(VehicleProfile.load(name).hvac_power_curve or ())
    for temp, watts in hvac_curve(vfile, (-10.0, 35.0)):
        assert shipped[temp] == pytest.approx(watts, abs=1e-9)
