"""Battery fields of the vehicle profile: Eq. 8 with auxiliaries and a regeneration limit, SUMO mapping, validation."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evroute.energy import VehicleProfile, edge_energy_wh, reduced_cost_wh
from evroute.errors import ParameterError
from evroute.network.synthetic import synthetic_city
from evroute.sumo.vehicle import SUMO_ONLY_DEFAULTS, battery_params, energy_fields, ev_vtype_xml


def test_defaults_leave_eq8_unchanged() -> None:
    rng = np.random.default_rng(0)
    length, speed, inc = rng.uniform(10, 500, 50), rng.uniform(5, 30, 50), rng.uniform(-0.1, 0.1, 50)
    explicit = VehicleProfile(auxiliary_power_w=0.0, max_regen_power_kw=None)
    assert np.array_equal(edge_energy_wh(length, speed, inc), edge_energy_wh(length, speed, inc, explicit))


def test_auxiliary_power_adds_power_times_travel_time() -> None:
    # 1 km at 10 m/s = 100 s; 2 kW of heating for 100 s = 200 kJ = 55.56 Wh on top of Eq. 8
    v = VehicleProfile(auxiliary_power_w=2000.0)
    base = edge_energy_wh(np.asarray([1000.0]), np.asarray([10.0]), np.asarray([0.02]))[0]
    assert edge_energy_wh(np.asarray([1000.0]), np.asarray([10.0]), np.asarray([0.02]), v)[0] - base == pytest.approx(
        2000 * 100 / 3600, rel=1e-12
    )


def test_regeneration_limit_caps_recovered_energy() -> None:
    # 500 m at 5 m/s down a 10 % slope: Eq. 8 recovers about 214 Wh in 100 s (7.7 kW); a 5 kW motor recovers at
    # most 5000 W x 100 s = 138.9 Wh
    free = edge_energy_wh(np.asarray([500.0]), np.asarray([5.0]), np.asarray([-0.1]))[0]
    assert free < -200
    capped = edge_energy_wh(
        np.asarray([500.0]), np.asarray([5.0]), np.asarray([-0.1]), VehicleProfile(max_regen_power_kw=5.0)
    )[0]
    assert capped == pytest.approx(-5000 * 100 / 3600, rel=1e-12)
    # a limit above the recovered power changes nothing; uphill edges are never capped
    assert (
        edge_energy_wh(
            np.asarray([500.0]), np.asarray([5.0]), np.asarray([-0.1]), VehicleProfile(max_regen_power_kw=50.0)
        )[0]
        == free
    )
    up = edge_energy_wh(np.asarray([500.0]), np.asarray([5.0]), np.asarray([0.1]))
    assert (
        edge_energy_wh(
            np.asarray([500.0]), np.asarray([5.0]), np.asarray([0.1]), VehicleProfile(max_regen_power_kw=0.0)
        )
        == up
    )
    # no recuperation at all with a zero limit
    assert (
        edge_energy_wh(
            np.asarray([500.0]), np.asarray([5.0]), np.asarray([-0.1]), VehicleProfile(max_regen_power_kw=0.0)
        )[0]
        == 0.0
    )


def test_reduced_costs_stay_non_negative_with_aux_and_regen_limit() -> None:
    net = synthetic_city(400, seed=1)
    for v in (VehicleProfile(auxiliary_power_w=800.0), VehicleProfile(max_regen_power_kw=2.0)):
        assert reduced_cost_wh(net, v).min() >= -1e-9


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"battery_capacity_wh": 0}, "battery_capacity_wh"),
        ({"min_soc": 0.5, "max_soc": 0.4}, "min_soc"),
        ({"max_soc": 1.2}, "max_soc"),
        ({"auxiliary_power_w": -5}, "auxiliary_power_w"),
        ({"max_regen_power_kw": True}, "max_regen_power_kw"),
        ({"battery_kwh": 50}, "unknown key"),
    ],
)
def test_battery_fields_validated(tmp_path, raw, match) -> None:
    f = tmp_path / "car.json"
    f.write_text(json.dumps(raw))
    with pytest.raises(ParameterError, match=match):
        VehicleProfile.load(f)


def _vtype_params(xml: str) -> dict[str, str]:
    """``key -> value`` of the ``<param>`` elements of a SUMO vType."""
    return {p.attrib["key"]: p.attrib["value"] for p in ET.fromstring(xml).iter("param")}


def test_sumo_vtype_carries_battery_aux_and_regen() -> None:
    v = VehicleProfile(battery_capacity_wh=50000.0, auxiliary_power_w=750.0, max_regen_power_kw=60.0)
    params = _vtype_params(ev_vtype_xml(v))
    assert float(params["device.battery.capacity"]) == 50000.0
    assert float(params["device.battery.chargeLevel"]) == 25000.0 == battery_params(v)[1]
    assert float(params["constantPowerIntake"]) == 750.0
    assert "maximumRecuperationPower" not in params  # SUMO's Energy model has no such limit
    mm = _vtype_params(ev_vtype_xml(v, model="MMPEVEM"))
    assert float(mm["maximumRecuperationPower"]) == 60000.0
    # unset auxiliaries keep SUMO's own default; an explicit charge is written, one above the capacity refused
    plain = _vtype_params(ev_vtype_xml(charge_wh=1000.0))
    assert float(plain["constantPowerIntake"]) == SUMO_ONLY_DEFAULTS["constantPowerIntake"]
    assert float(plain["device.battery.chargeLevel"]) == 1000.0
    with pytest.raises(ParameterError, match="capacity"):
        ev_vtype_xml(charge_wh=40000.0)


def test_recorded_day_cache_key_fields_unchanged_by_default() -> None:
    # the keys of SUMO days recorded before the battery fields existed: the eight physics fields
    old = ["mass_kg", "rolling_resistance", "front_area_m2", "drag_coefficient", "propulsion_efficiency"]
    old += ["recuperation_efficiency", "gravity_mps2", "air_density_kgpm3"]
    assert sorted(energy_fields(VehicleProfile.load("sumo_ev"))) == sorted(old)
    assert "auxiliary_power_w" in energy_fields(VehicleProfile(auxiliary_power_w=0.0))
