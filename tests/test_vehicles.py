"""The vehicle library (evroute/resources/vehicles): real cars with sourced parameters, and `evroute vehicles`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evroute.cli import main
from evroute.energy import DEFAULT_VEHICLE, VehicleProfile, edge_energy_wh, vehicle_names
from evroute.errors import ParameterError

#: the real cars of issue 34 (the paper's sumo_ev and the illustrative compact_ev are the other two files)
REAL = ("chevrolet_bolt_2020", "tesla_model3_rwd_2022", "renault_zoe_ze50", "nissan_leaf_2016", "vw_id3_pro", "twizy")
#: what every real car must state, each with a source
REQUIRED = (
    "mass_kg",
    "rolling_resistance",
    "front_area_m2",
    "drag_coefficient",
    "propulsion_efficiency",
    "recuperation_efficiency",
    "battery_capacity_wh",
    "auxiliary_power_w",
    "max_regen_power_kw",
    "motor_power_kw",
    "motor_efficiency_map",
    "top_speed_kmh",
    "charging_curve",
)


@pytest.mark.parametrize("name", REAL)
def test_real_cars_have_every_parameter_with_a_source(name):
    v = VehicleProfile.load(name)
    for f in REQUIRED:
        assert getattr(v, f) is not None, f"{name}: {f} missing"
        assert v.sources and len(v.sources.get(f, "")) > 10, f"{name}: {f} has no source"
    eff = np.array([e for _, e in v.motor_efficiency_map])
    assert eff.max() - eff.min() > 0.03  # a map, not one constant
    curve = np.array(v.charging_curve)
    assert curve[0, 0] == 0.0 and curve[-1, 0] == 1.0 and np.all(curve[:, 1] > 0)


def test_default_vehicle_is_a_real_car_and_flat_consumption_is_plausible():
    assert DEFAULT_VEHICLE in REAL and DEFAULT_VEHICLE != "sumo_ev"
    assert set(REAL) <= set(vehicle_names())
    # steady 50 km/h on the flat: every real passenger car between 60 and 160 Wh/km (EPA city ratings of these cars,
    # 150-190 Wh/km at the wall, include charging losses and the cycle's stops); the Twizy below 80
    for name in REAL:
        wh_km = edge_energy_wh([1000.0], [50 / 3.6], [0.0], VehicleProfile.load(name))[0]
        lo, hi = (30.0, 80.0) if name == "twizy" else (60.0, 160.0)
        assert lo < wh_km < hi, (name, wh_km)


def test_motor_map_is_interpolated_and_checked(tmp_path):
    v = VehicleProfile.load("chevrolet_bolt_2020")
    p_max = 1000 * v.motor_power_kw
    # at the grid points the map's values; midway the mean (linear interpolation); beyond 1 clamped
    assert v.motor_efficiency(np.array([0.2 * p_max]))[0] == pytest.approx(0.9772, abs=1e-9)
    assert v.motor_efficiency(np.array([-0.3 * p_max]))[0] == pytest.approx((0.9772 + 0.9876) / 2, abs=1e-9)
    assert v.motor_efficiency(np.array([2 * p_max]))[0] == pytest.approx(0.9669, abs=1e-9)
    with pytest.raises(ParameterError, match="needs motor_power_kw"):
        VehicleProfile(motor_efficiency_map=((0.0, 0.9), (1.0, 0.95)))
    with pytest.raises(ParameterError, match="strictly increasing"):
        VehicleProfile(motor_power_kw=10.0, motor_efficiency_map=((0.5, 0.9), (0.1, 0.95)))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"charging_curve": [[0.0, 50.0], [1.5, 20.0]]}))
    with pytest.raises(ParameterError, match="charging_curve"):
        VehicleProfile.load(bad)


def test_profile_round_trips_through_a_model_header():
    v = VehicleProfile.load("renault_zoe_ze50")
    back = VehicleProfile(**json.loads(json.dumps(v.to_dict())))
    assert back == v and hash(back) == hash(v)


def test_vehicles_command_lists_them(capsys):
    assert main(["vehicles"]) == 0
    out = capsys.readouterr().out
    for name in vehicle_names():
        assert name in out
    assert f"{DEFAULT_VEHICLE} " in out and "(default)" in out
