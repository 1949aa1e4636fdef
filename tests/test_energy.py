import json

import numpy as np
import pytest

from evroute.energy import VehicleProfile, edge_energy_wh
from evroute.errors import DataError, ParameterError


def test_flat_edge_by_hand():
    # 100 m flat at 50 km/h: rolling 1830*9.82*0.01*100 J, drag 0.5*0.35*2.6*1.2*100*(50/3.6)^2 J, /0.98, /3600
    rolling = 1830 * 9.82 * 0.01 * 100
    drag = 0.5 * 0.35 * 2.6 * 1.2 * 100 * (50 / 3.6) ** 2
    expected = (rolling + drag) / 0.98 / 3600
    assert expected == pytest.approx(8.0790, abs=1e-3)
    assert edge_energy_wh([100.0], [50 / 3.6], [0.0])[0] == pytest.approx(expected, rel=1e-12)


def test_downhill_recuperates_with_efficiency():
    sin_a = -0.05
    mech = (
        1830 * 9.82 * 100 * sin_a
        + 1830 * 9.82 * 0.01 * 100 * np.sqrt(1 - sin_a**2)
        + 0.5 * 0.35 * 2.6 * 1.2 * 100 * (30 / 3.6) ** 2
    )
    assert mech < 0
    e = edge_energy_wh([100.0], [30 / 3.6], [sin_a])[0]
    assert e == pytest.approx(mech * 0.96 / 3600, rel=1e-12)
    assert e == pytest.approx(-18.16, abs=0.01)


def test_uphill_costs_more_than_flat_and_vectorised():
    e = edge_energy_wh(np.full(3, 200.0), np.full(3, 14.0), np.array([-0.03, 0.0, 0.03]))
    assert e[0] < e[1] < e[2]
    assert e.shape == (3,)


def test_profiles_load_and_validate(tmp_path):
    p = VehicleProfile.load("sumo_ev")
    assert p == VehicleProfile(description=p.description)
    custom = tmp_path / "van.json"
    custom.write_text(json.dumps({"name": "van", "mass_kg": 2500.0}))
    van = VehicleProfile.load(custom)
    assert van.mass_kg == 2500.0 and van.drag_coefficient == 0.35
    assert edge_energy_wh([100.0], [10.0], [0.0], van)[0] > edge_energy_wh([100.0], [10.0], [0.0], p)[0]
    with pytest.raises(DataError, match="not found"):
        VehicleProfile.load("no_such_car")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError):
        VehicleProfile.load(tmp_path / "bad.json")
    (tmp_path / "neg.json").write_text(json.dumps({"mass_kg": -1}))
    with pytest.raises(ParameterError):
        VehicleProfile.load(tmp_path / "neg.json")


def test_nan_input_rejected():
    with pytest.raises(DataError):
        edge_energy_wh([np.nan], [10.0], [0.0])
