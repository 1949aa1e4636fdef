"""The speed fluctuation while cruising (:class:`evroute.energy.DrivingStyle`, module doc of
:mod:`evroute.energy.profile`): its closed form, what it keeps (time, reduced costs >= 0), its bounds, the kinematic
statistic it is measured with, and the default's source (the WLTC class 3b cycle, not a validated cycle)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.energy import DrivingStyle, VehicleProfile, edge_energy_wh, profile_energy, vehicle_names
from evroute.errors import ParameterError
from evroute.traces.cycles import speed_fluctuation_mps2

ROOT = Path(__file__).resolve().parents[1]
#: constant efficiencies, no cap, no auxiliaries, no rotating mass: the closed form's vehicle
PLAIN = VehicleProfile(mass_kg=1500.0, rolling_resistance=0.01, propulsion_efficiency=0.9, recuperation_efficiency=0.7)


def _cycle(name: str) -> tuple[np.ndarray, np.ndarray]:
    d = pd.read_csv(ROOT / "studies" / "energy_validation" / "cycles" / f"{name}.csv", encoding="utf-8-sig")
    return d.iloc[:, 0].to_numpy(dtype=float), d.iloc[:, 1].to_numpy(dtype=float)


def test_default_is_the_wltc_class_3b_statistic():
    """The default (0.26 m/s^2) is the WLTC class 3b cycle's statistic rounded to two digits (0.2596); US06, the
    other non-validated regulatory cycle shipped for comparison, is close (0.246)."""
    got = speed_fluctuation_mps2(*_cycle("wltc_3b"))
    assert got == pytest.approx(0.2596, abs=5e-5)
    assert DrivingStyle().speed_fluctuation_mps2 == pytest.approx(round(got, 2), abs=1e-12)
    assert speed_fluctuation_mps2(*_cycle("us06")) == pytest.approx(0.2458, abs=5e-5)


@pytest.mark.parametrize("n_waves", [0, 1, 5])
def test_statistic_of_a_trapezoid_with_known_waves(n_waves):
    """A rest-to-rest trapezoid at 20 m/s (1 m/s^2 up, 1.25 m/s^2 down: both within 1 s samples, so the trapezoid
    rule is exact) with ``n`` waves 20 -> 21 -> 20 -> 19 -> 20 m/s (1 m/s per s) in its cruise: distance and time are
    those of the trapezoid, so the cruise speed found is 20 m/s and the extra positive kinetic energy is exactly ``n
    (21^2 - 20^2 + 20^2 - 19^2) = 80 n`` m^2/s^2 over the trapezoid's cruise distance."""
    style = DrivingStyle(1.0, 1.25, 0.0)
    waves = np.tile([21.0, 20.0, 19.0, 20.0], n_waves)
    v = np.concatenate([np.arange(0.0, 21.0), np.full(60, 20.0), waves, np.arange(20.0, -0.1, -1.25)])
    t = np.arange(len(v), dtype=float)
    length = np.sum(0.5 * (v[1:] + v[:-1]))
    cruise_m = length - 20.0**2 / 2.0 - 20.0**2 / 2.5
    assert speed_fluctuation_mps2(t, v, style) == pytest.approx(80.0 * n_waves / cruise_m, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(length=st.floats(50.0, 3000.0), v=st.floats(2.0, 35.0), k=st.floats(0.0, 1.0), sin_a=st.floats(-0.02, 0.05))
def test_closed_form_of_a_fluctuating_cruise(length, v, k, sin_a):
    """A cruise-only edge (entry = exit = cruise speed) with fluctuation ``k``: Eq. 8 plus ``1/2 k L (m - F/b)
    (1/eta+ - eta-)`` (J) with ``F`` the road load (grade, rolling, drag at ``v``) when ``0 <= F < m b``, the time
    ``L / v`` unchanged."""
    style = DrivingStyle(1.0, 1.2, min(k, DrivingStyle(1.0, 1.2).max_fluctuation_mps2))
    veh = PLAIN
    cos_a = np.sqrt(1 - sin_a**2)
    road = veh.mass_kg * veh.gravity_mps2 * (sin_a + veh.rolling_resistance * cos_a)
    road += 0.5 * veh.air_density_kgpm3 * veh.drag_coefficient * veh.front_area_m2 * v**2
    if not 0 <= road < veh.mass_kg * 1.2:
        return
    r = profile_energy([length], [v], [v], [v], [sin_a], veh, style)
    eq8 = edge_energy_wh([length], [v], [sin_a], veh)[0]
    extra_j = 0.5 * style.speed_fluctuation_mps2 * length * (veh.mass_kg - road / 1.2)
    extra_j *= 1 / veh.propulsion_efficiency - veh.recuperation_efficiency
    assert r.battery_wh[0] == pytest.approx(eq8 + extra_j / 3600.0, rel=1e-9, abs=1e-9)
    assert r.time_s[0] == pytest.approx(length / v, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    length=st.floats(20.0, 2000.0),
    v_c=st.floats(2.0, 35.0),
    k1=st.floats(0.0, 1.0),
    k2=st.floats(0.0, 1.0),
    sin_a=st.floats(-0.15, 0.15),
    name=st.sampled_from(vehicle_names()),
)
def test_fluctuation_keeps_time_and_dissipates(length, v_c, k1, k2, sin_a, name):
    """For every shipped vehicle: the time does not change with the fluctuation and the energy stays above the
    recoverable potential (``E - m g eta- L sin >= 0``: the reduced cost of
    :func:`evroute.energy.eq8.elevation_potential_wh`).  With constant efficiencies (the vehicle's without its motor
    map) more fluctuation never costs less: speeding up and slowing down again loses energy.  (With a motor map it
    can cost less: a steep slow climb at a few % of the motor's power is driven more efficiently in bursts.)"""
    veh = VehicleProfile.load(name)
    top = DrivingStyle().max_fluctuation_mps2
    lo, hi = sorted((min(k1, top), min(k2, top)))
    for v in (veh, replace(veh, motor_efficiency_map=None, motor_power_kw=None)):
        a = profile_energy([length], [0.0], [v_c], [0.0], [sin_a], v, DrivingStyle(speed_fluctuation_mps2=lo))
        b = profile_energy([length], [0.0], [v_c], [0.0], [sin_a], v, DrivingStyle(speed_fluctuation_mps2=hi))
        assert b.time_s[0] == pytest.approx(a.time_s[0], rel=1e-12)
        potential_wh = v.mass_kg * v.gravity_mps2 * v.recuperation_efficiency * length * sin_a / 3600.0
        assert b.battery_wh[0] - potential_wh >= -1e-9
    assert b.battery_wh[0] >= a.battery_wh[0] - 1e-9 * max(1.0, abs(a.battery_wh[0]))


def test_bounds_are_one_line_errors():
    assert DrivingStyle(1.0, 1.0).max_fluctuation_mps2 == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="speed_fluctuation_mps2"):
        DrivingStyle(1.0, 1.0, 1.01)
    with pytest.raises(ParameterError, match="speed_fluctuation_mps2"):
        DrivingStyle(speed_fluctuation_mps2=-0.1)
    ok = replace(DrivingStyle(), speed_fluctuation_mps2=DrivingStyle().max_fluctuation_mps2)
    r = profile_energy([500.0], [10.0], [10.0], [10.0], [0.0], PLAIN, ok)  # the whole cruise speeding up or down
    assert np.isfinite(r.battery_wh).all()
