"""Brake blending: the share of the braking power the motor recovers fades out at low speed (FASTSim 2's limit)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import spence

from evroute.energy import DrivingStyle, VehicleProfile, battery_energy_wh, edge_energy_wh, profile_energy
from evroute.errors import ParameterError
from evroute.traces.energy import trace_energy
from evroute.traces.reader import Trace

BOLT = VehicleProfile.load("chevrolet_bolt_2020")
#: a car that only brakes: no resistances, constant efficiencies, no auxiliaries, no cap, so the recovered energy is
#: m_eff eta- int f(v) v dv in closed form
IDEAL = replace(
    BOLT,
    rolling_resistance=0.0,
    drag_coefficient=0.0,
    motor_power_kw=None,
    motor_efficiency_map=None,
    auxiliary_power_w=None,
    max_regen_power_kw=None,
    hvac_power_curve=None,
    battery_efficiency_map=None,
)
MPH_PER_MPS = 3600.0 / 1609.344


def _recovered_j(v0: float, vehicle: VehicleProfile) -> float:
    """Battery energy (J, > 0) recovered braking from ``v0`` (m/s) to rest with only the kinetic energy to recover:
    ``m_eff eta- f_max int_0^v0 v sigma((v - h) / w) dv`` and ``int_0^inf v (1 - sigma((v - h) / w)) dv =
    -w^2 Li2(-e^(h/w))`` (a Fermi-Dirac integral; the tail beyond ``v0 >> h`` is below e^-30); ``Li2(z) =
    spence(1 - z)`` in scipy."""
    assert vehicle.regen_half_speed_kmh and vehicle.regen_fade_width_kmh and vehicle.regen_fraction_max
    h = vehicle.regen_half_speed_kmh / 3.6
    w = vehicle.regen_fade_width_kmh / 3.6
    fermi = -(w**2) * spence(1.0 + np.exp(h / w))
    return (
        vehicle.effective_mass_kg * vehicle.recuperation_efficiency * vehicle.regen_fraction_max * (0.5 * v0**2 - fermi)
    )


def test_fraction_is_fastsim2s_regen_limit():
    """``f(v)`` of the shipped FASTSim EVs is FASTSim 2's ``max_regen / (1 + 500 exp(-0.99 (mph + 1)))`` (the km/h
    constants are rounded to 4-5 digits: rel 1e-3, plus 1e-6 where ``f`` is ~0)."""
    v = np.linspace(0.0, 40.0, 401)
    ref = 0.98 / (1.0 + 500.0 * np.exp(-0.99 * (v * MPH_PER_MPS + 1.0)))
    for name in ("chevrolet_bolt_2020", "tesla_model3_rwd_2022", "renault_zoe_ze50", "nissan_leaf_2016"):
        np.testing.assert_allclose(VehicleProfile.load(name).regen_fraction(v), ref, rtol=1e-3, atol=1e-6)
    # half of f_max at v_half; without the fields the motor takes all of it
    assert BOLT.regen_fraction(8.493 / 3.6) == pytest.approx(0.49, abs=1e-12)
    assert np.all(VehicleProfile.load("sumo_ev").regen_fraction(v) == 1.0)


def test_braking_to_rest_recovers_the_closed_form():
    """Braking from 20 m/s at 1.2 m/s^2: the speed-profile quadrature and a 1 ms trace both give the closed form
    (quadrature of a smooth step: rel 1e-4; the trace's midpoint rule at 1 ms: rel 1e-5), and the fade costs what
    ``-w^2 Li2(-e^(h/w))`` says: 1.6 % of the kinetic energy from 20 m/s, most of it from 2 m/s (f(2) < 0.3)."""
    v0, b = 20.0, 1.2
    want = _recovered_j(v0, IDEAL)
    prof = profile_energy([v0**2 / (2 * b)], [v0], [v0], [0.0], [0.0], IDEAL, DrivingStyle(1.0, b, 0.0))
    assert -prof.battery_wh[0] * 3600 == pytest.approx(want, rel=1e-4)
    t = np.arange(0.0, v0 / b + 1e-9, 1e-3)
    v = np.maximum(v0 - b * t, 0.0)
    n = len(t)
    tr = Trace(t, v, np.zeros(n), np.full(n, 50.0), np.zeros(n), np.zeros(n), name="brake")
    assert -trace_energy(tr, IDEAL, altitude_m=np.zeros(n)).total_wh * 3600 == pytest.approx(want, rel=1e-5)
    full = IDEAL.effective_mass_kg * IDEAL.recuperation_efficiency * 0.98 * 0.5 * v0**2
    # large h / w: -Li2(-e^x) = x^2 / 2 + pi^2 / 6 + Li2(-e^-x), the last ~ -e^-x = -0.005 (rel 1e-2): the fade
    # costs (h^2 / 2 + pi^2 w^2 / 6) / (v0^2 / 2), 1.6 % of the braking from 72 km/h
    h, w = 8.493 / 3.6, 1.6256 / 3.6
    assert 1 - want / full == pytest.approx((h**2 / 2 + np.pi**2 * w**2 / 6) / (v0**2 / 2), rel=1e-2)
    slow = profile_energy([2.0**2 / (2 * b)], [2.0], [2.0], [0.0], [0.0], IDEAL, DrivingStyle(1.0, b, 0.0))
    no_fade = replace(IDEAL, regen_half_speed_kmh=None, regen_fade_width_kmh=None)
    slow_nf = profile_energy([2.0**2 / (2 * b)], [2.0], [2.0], [0.0], [0.0], no_fade, DrivingStyle(1.0, b, 0.0))
    assert slow.battery_wh[0] / slow_nf.battery_wh[0] < 0.3


def test_without_fade_the_share_is_constant_and_needs_no_speed():
    """``regen_fraction_max`` alone: the recovered work is ``f_max W eta-`` (1e-12); no speeds needed."""
    v = replace(IDEAL, regen_half_speed_kmh=None, regen_fade_width_kmh=None)
    got = battery_energy_wh(np.array([-3600.0, 3600.0]), np.array([1.0, 1.0]), v)
    assert got == pytest.approx([-0.98 * v.recuperation_efficiency, 1.0 / v.propulsion_efficiency], rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    length=st.floats(20.0, 2000.0),
    v_in=st.floats(0.0, 30.0),
    v_c=st.floats(1.0, 35.0),
    v_out=st.floats(0.0, 30.0),
    incline=st.floats(-0.12, 0.12),
)
def test_blending_only_loses_energy(length, v_in, v_c, v_out, incline):
    """The friction brakes only take energy the motor would have recovered: with blending an edge never costs less
    than without (1e-9 Wh of rounding), and no more than the braking it gives up (``|W_brake| eta- / 3600``, bounded
    by the kinetic and potential energy the edge can shed, plus the resistances' share)."""
    no_fade = replace(BOLT, regen_fraction_max=None, regen_half_speed_kmh=None, regen_fade_width_kmh=None)
    style = DrivingStyle()
    with_b = profile_energy([length], [v_in], [v_c], [v_out], [incline], BOLT, style).battery_wh[0]
    without = profile_energy([length], [v_in], [v_c], [v_out], [incline], no_fade, style).battery_wh[0]
    assert with_b >= without - 1e-9
    m_eff = BOLT.effective_mass_kg
    shed_j = 0.5 * m_eff * v_c**2 + 0.5 * m_eff * style.speed_fluctuation_mps2 * length
    shed_j += BOLT.mass_kg * BOLT.gravity_mps2 * max(-incline, 0.0) * length
    assert with_b - without <= shed_j / 3600.0 + 1e-9


def test_fade_needs_speeds_and_both_parameters():
    with pytest.raises(ParameterError, match="speeds are needed"):
        battery_energy_wh(np.array([-1000.0]), np.array([1.0]), BOLT)
    with pytest.raises(ParameterError, match="set together"):
        replace(BOLT, regen_fade_width_kmh=None)
    with pytest.raises(ParameterError, match="regen_fraction_max"):
        replace(BOLT, regen_fraction_max=1.5)
    # Eq. 8 passes its edges' speeds: a 10 % descent at 50 km/h is above the fade (f = 0.98 to 1e-9), so the
    # recovered part is 0.98 of what it is without blending, read at 0.98 of the power on the motor map (the map
    # moves by < 0.1 % there: rel 2e-3)
    no_aux = replace(BOLT, auxiliary_power_w=None, hvac_power_curve=None)
    e = edge_energy_wh([1000.0], [50 / 3.6], [-0.1], no_aux)[0]
    e_nf = edge_energy_wh([1000.0], [50 / 3.6], [-0.1], replace(no_aux, regen_fraction_max=1.0))[0]
    assert e < 0 and e / e_nf == pytest.approx(0.98, rel=2e-3)


def test_battery_map_turns_terminal_power_into_chemical_power():
    """The Bolt's battery map (FASTSim's ``res.eff_interp`` at 22 C): 66 kW (1C) out of the terminals for 10 s costs
    ``66 kW / 0.9774 * 10 s``; 33 kW (-0.5C) into them stores ``33 kW * 0.989 * 10 s`` (the map's points, 1e-12), and
    the auxiliaries go through it with the motor: Eq. 8's edge is ``(P / eta+ + P_aux) / eta_b`` exactly."""
    bolt = replace(
        IDEAL,
        battery_efficiency_map=BOLT.battery_efficiency_map,
        regen_fraction_max=None,
        regen_half_speed_kmh=None,
        regen_fade_width_kmh=None,
    )
    assert bolt.battery_capacity_wh == 66000.0
    eta_t = bolt.propulsion_efficiency
    wheel = np.array([66000.0 * eta_t * 10.0, -33000.0 / eta_t * 10.0])
    got = battery_energy_wh(wheel, np.array([10.0, 10.0]), bolt, 30.0) * 3600
    assert got == pytest.approx([66000.0 / 0.9774 * 10.0, -33000.0 * 0.989 * 10.0], rel=1e-12)
    # Eq. 8 at 30 m/s on 1 km of a 2 % climb with 250 W of auxiliaries (constant efficiencies but the battery's)
    aux = replace(bolt, auxiliary_power_w=250.0, rolling_resistance=0.01)
    mech = aux.mass_kg * aux.gravity_mps2 * (0.02 + 0.01 * np.sqrt(1 - 0.02**2)) * 1000.0
    p_el = mech / eta_t / (1000.0 / 30.0) + 250.0
    eta_b = np.interp(p_el / 66000.0, *np.asarray(BOLT.battery_efficiency_map).T)
    want = p_el / eta_b * (1000.0 / 30.0) / 3600.0
    assert edge_energy_wh([1000.0], [30.0], [0.02], aux)[0] == pytest.approx(want, rel=1e-12)
    # the map only adds losses: never below the same chain with a lossless battery
    assert np.all(bolt.chemical_power_w(np.array([-5e4, -1e3, 0.0, 1e3, 5e4])) >= np.array([-5e4, -1e3, 0, 1e3, 5e4]))
