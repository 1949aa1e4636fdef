"""Eq. 8's optional cornering drag (``radial_drag_m``, SUMO's radial drag) and the heading change of polylines."""

import numpy as np
import pytest

from evroute.energy import VehicleProfile, edge_energy_wh, heading_change_rad, network_energy_wh
from evroute.errors import DataError, ParameterError
from evroute.network.road_network import RoadNetwork
from evroute.sumo.vehicle import energy_fields, profile_params

# polylines at the equator, where (lon, lat) degrees are a square grid
L_SHAPE = np.array([[0.0, 0.0], [0.001, 0.0], [0.001, 0.001]])  # east, then north: one left turn of 90 degrees
STRAIGHT = np.array([[0.0, 0.0], [0.001, 0.0], [0.002, 0.0], [0.003, 0.0]])
U_TURN = np.array([[0.0, 0.0], [0.001, 0.0], [0.001, 0.001], [0.0, 0.001]])  # two left turns: pi
ZIGZAG = np.array([[0.0, 0.0], [0.001, 0.001], [0.002, 0.0], [0.003, 0.001]])  # NE, SE, NE: two 90 degree turns


def test_heading_change_by_hand():
    got = heading_change_rad([L_SHAPE, STRAIGHT, U_TURN, ZIGZAG, L_SHAPE[:2], np.repeat(L_SHAPE, 2, axis=0)])
    # a turn to the right counts like one to the left (absolute values); repeated points are skipped
    np.testing.assert_allclose(got, [np.pi / 2, 0.0, np.pi, np.pi, 0.0, np.pi / 2], atol=1e-12)


def test_heading_change_scales_longitude_by_latitude():
    # at 60 degrees north a degree of longitude is half a degree of latitude: (0.002, 0.001) degrees is 45 degrees
    p = np.array([[0.0, 60.0], [0.002, 60.0], [0.004, 60.001]])
    lat = np.deg2rad(p[:, 1].mean())
    expected = np.arctan2(0.001, 0.002 * np.cos(lat))
    assert heading_change_rad([p])[0] == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(np.pi / 4, abs=2e-5)


def test_cornering_drag_by_hand():
    # 100 m flat at 10 m/s with a 90 degree turn: rolling 1830*9.82*0.01*100 J, drag 0.5*0.35*2.6*1.2*100*10^2 J,
    # cornering 0.1 m * 1830 kg * 10 m/s * pi/2 = 2874.56 J; all at the wheels, / 0.98, / 3600
    rolling = 1830 * 9.82 * 0.01 * 100
    drag = 0.5 * 0.35 * 2.6 * 1.2 * 100 * 10.0**2
    corner = 0.1 * 1830 * 10.0 * np.pi / 2
    assert corner == pytest.approx(2874.56, abs=0.01)
    v = VehicleProfile(radial_drag_m=0.1)
    got = edge_energy_wh([100.0], [10.0], [0.0], v, np.array([np.pi / 2]))[0]
    assert got == pytest.approx((rolling + drag + corner) / 0.98 / 3600, rel=1e-12)
    assert got - edge_energy_wh([100.0], [10.0], [0.0])[0] == pytest.approx(0.81479, abs=1e-5)


def test_cornering_drag_off_by_default_and_checked():
    plain = edge_energy_wh([100.0, 50.0], [10.0, 8.0], [0.0, -0.02])
    # the old Eq. 8: a heading change is ignored without radial_drag_m, and radial_drag_m = 0 adds nothing
    np.testing.assert_array_equal(plain, edge_energy_wh([100.0, 50.0], [10.0, 8.0], [0.0, -0.02], None, np.ones(2)))
    zero = edge_energy_wh([100.0, 50.0], [10.0, 8.0], [0.0, -0.02], VehicleProfile(radial_drag_m=0.0), np.ones(2))
    np.testing.assert_allclose(zero, plain, rtol=1e-15)
    with pytest.raises(ParameterError, match="heading change"):
        edge_energy_wh([100.0], [10.0], [0.0], VehicleProfile(radial_drag_m=0.1))
    with pytest.raises(DataError, match="heading changes"):
        edge_energy_wh([100.0], [10.0], [0.0], VehicleProfile(radial_drag_m=0.1), np.array([-1.0]))
    with pytest.raises(ParameterError, match="radial_drag_m"):
        VehicleProfile(radial_drag_m=-0.1)


def test_network_energy_uses_the_geometry():
    geometry = [L_SHAPE, STRAIGHT]
    net = RoadNetwork(
        name="two",
        edge_ids=np.array(["a", "b"]),
        from_node=np.array(["1", "2"]),
        to_node=np.array(["2", "3"]),
        length_m=np.array([222.0, 333.0]),
        speed_mps=np.array([10.0, 12.0]),
        z_from_m=np.zeros(2),
        z_to_m=np.zeros(2),
        geometry=geometry,
        turns=np.array([[0, 1]]),
    )
    v = VehicleProfile(radial_drag_m=0.2)
    extra = network_energy_wh(net, v) - network_energy_wh(net)
    np.testing.assert_allclose(extra, [0.2 * 1830 * 10.0 * np.pi / 2 / 0.98 / 3600, 0.0], atol=1e-12)


def test_sumo_gets_the_coefficient_only_when_set():
    assert "radialDragCoefficient" not in profile_params(VehicleProfile())
    assert profile_params(VehicleProfile(radial_drag_m=0.3))["radialDragCoefficient"] == 0.3
    # recorded days keep their cache keys: an unset refinement is not part of them
    assert "radial_drag_m" not in energy_fields(VehicleProfile())
