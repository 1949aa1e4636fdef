"""The speed-profile edge model (evroute.energy.profile) and the network prior (evroute.energy.prior).

Closed forms on one accelerate-cruise-brake edge, energy conservation, limits, a brute-force time-stepping check and
the prior's properties.  Tolerances: 1e-9 relative where the quadrature is exact (constant efficiencies, no power
cap: a cubic polynomial on each piece, 8 Gauss nodes are exact to degree 15; only rounding remains); the others say
why at the assertion.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.energy import (
    PRIORS,
    DrivingStyle,
    VehicleProfile,
    edge_energy_wh,
    edge_prior,
    elevation_potential_wh,
    network_energy_wh,
    profile_energy,
    vehicle_names,
)
from evroute.errors import ParameterError
from evroute.network._graph import junction_turns, node_codes
from evroute.network.road_network import RoadNetwork

BOLT = VehicleProfile.load("chevrolet_bolt_2020")
#: constant efficiencies, no cap, no auxiliaries, no rotating mass: the closed forms' vehicle
PLAIN = VehicleProfile(mass_kg=1500.0, rolling_resistance=0.01, propulsion_efficiency=0.9, recuperation_efficiency=0.7)
IDEAL = VehicleProfile(propulsion_efficiency=1.0, recuperation_efficiency=1.0)


def _accel_cruise_brake_wh(length, v_c, a, b, veh):
    """Closed form of a flat rest-to-cruise-to-rest edge with constant efficiencies and no cap (Wh)."""
    m, g = veh.effective_mass_kg, veh.gravity_mps2
    c = 0.5 * veh.air_density_kgpm3 * veh.drag_coefficient * veh.front_area_m2
    f_r = veh.mass_kg * g * veh.rolling_resistance
    d_a, d_b = v_c**2 / (2 * a), v_c**2 / (2 * b)
    d_c = length - d_a - d_b
    assert d_c >= 0
    # accelerate: int_0^vc (m a + f_r + c v^2) v dv / a, all positive
    acc = ((m * a + f_r) * v_c**2 / 2 + c * v_c**4 / 4) / a
    cruise = (f_r + c * v_c**2) * d_c
    # brake: P(v) = (-m b + f_r + c v^2) v, negative below v* = sqrt((m b - f_r) / c)
    vs = min(np.sqrt((m * b - f_r) / c), v_c)

    def prim(v):
        return ((-m * b + f_r) * v**2 / 2 + c * v**4 / 4) / b

    brake_neg, brake_pos = prim(vs) - prim(0.0), prim(v_c) - prim(vs)
    eta_p, eta_r = veh.propulsion_efficiency, veh.recuperation_efficiency
    return ((acc + cruise + brake_pos) / eta_p + brake_neg * eta_r) / 3600.0


def test_single_edge_closed_form_energy_and_time():
    length, v_c = 800.0, 50 / 3.6
    style = DrivingStyle(1.1, 1.4, 0.0)
    r = profile_energy([length], [0.0], [v_c], [0.0], [0.0], PLAIN, style)
    assert r.battery_wh[0] == pytest.approx(_accel_cruise_brake_wh(length, v_c, 1.1, 1.4, PLAIN), rel=1e-9)
    d_c = length - v_c**2 / 2.2 - v_c**2 / 2.8
    assert r.time_s[0] == pytest.approx(v_c / 1.1 + d_c / v_c + v_c / 1.4, rel=1e-12)
    assert r.peak_mps[0] == pytest.approx(v_c)


def test_triangle_profile_peak_and_time():
    # 50 m from rest to rest with a = b = 1: the car never reaches 50 km/h; peak sqrt(a L) = sqrt(50) m/s
    r = profile_energy([50.0], [0.0], [50 / 3.6], [0.0], [0.0], PLAIN, DrivingStyle(1.0, 1.0, 0.0))
    assert r.peak_mps[0] == pytest.approx(np.sqrt(50.0), rel=1e-12)
    assert r.time_s[0] == pytest.approx(2 * np.sqrt(50.0), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    length=st.floats(5.0, 3000.0),
    v_c=st.floats(1.0, 40.0),
    fin=st.floats(0.0, 1.0),
    fout=st.floats(0.0, 1.0),
    sin_a=st.floats(-0.15, 0.15),
    a=st.floats(0.3, 3.0),
    b=st.floats(0.3, 4.0),
)
def test_energy_conservation_with_ideal_drivetrain(length, v_c, fin, fout, sin_a, a, b):
    """Efficiencies 1, no auxiliaries, no cap: the battery pays exactly the work at the wheels, i.e. the change of
    kinetic energy plus the potential, rolling and aerodynamic work (each term a closed form)."""
    r = profile_energy([length], [fin * v_c], [v_c], [fout * v_c], [sin_a], IDEAL, DrivingStyle(a, b, 0.0))
    assert r.battery_wh[0] * 3600 == pytest.approx(r.wheel_j[0], rel=1e-9, abs=1e-6)
    assert r.peak_mps[0] <= v_c * (1 + 1e-12)
    assert r.time_s[0] >= length / v_c * (1 - 1e-12)  # never faster than cruising all the way


@settings(max_examples=40, deadline=None)
@given(
    length=st.floats(5.0, 2000.0),
    v=st.floats(1.0, 40.0),
    sin_a=st.floats(-0.2, 0.2),
    name=st.sampled_from(vehicle_names()),
)
def test_constant_speed_limit_equals_eq8(length, v, sin_a, name):
    """Entry = exit = cruise speed (no acceleration or braking distance) and no speed fluctuation: Eq. 8 with the same
    efficiencies, motor map, auxiliaries and regeneration cap, for every shipped vehicle."""
    veh = VehicleProfile.load(name)
    r = profile_energy([length], [v], [v], [v], [sin_a], veh, DrivingStyle(speed_fluctuation_mps2=0.0))
    assert r.battery_wh[0] == pytest.approx(edge_energy_wh([length], [v], [sin_a], veh)[0], rel=1e-9, abs=1e-9)
    assert r.time_s[0] == pytest.approx(length / v, rel=1e-12)


def test_hard_acceleration_limit_adds_the_kinetic_round_trip():
    """a, b -> infinity on a flat edge from rest to rest: Eq. 8 at the cruise speed plus the kinetic energy bought at
    1/eta+ and sold back at eta- (closed form).  At 1e5 m/s^2 the speed changes over d = v^2 / (2a) = 2 mm at each end,
    where the resistances' work is paid at other efficiencies than at cruise: a relative difference of order
    (d_a + d_b) / L = 4e-6, hence rel=1e-5."""
    v_c, length = 20.0, 1000.0
    r = profile_energy([length], [0.0], [v_c], [0.0], [0.0], PLAIN, DrivingStyle(1e5, 1e5, 0.0))
    kin = 0.5 * PLAIN.mass_kg * v_c**2
    expect = edge_energy_wh([length], [v_c], [0.0], PLAIN)[0] + kin * (1 / 0.9 - 0.7) / 3600
    assert r.battery_wh[0] == pytest.approx(expect, rel=1e-5)
    assert r.battery_wh[0] != pytest.approx(expect, rel=1e-7)  # the difference is real, not rounding


def test_regeneration_cap_sends_the_rest_to_the_friction_brakes():
    """Braking from 30 m/s at 2 m/s^2 with no resistances: wheel power -m b v; the battery recovers
    ``min(m b v eta-, P_cap)``.  Closed form of the braking phase against the profile (the cap's kink at
    ``v_k = P_cap / (m b eta-)`` falls inside a quadrature panel, where the rule is not exact: a kink costs O(h^2) of
    the panel's integral, here 0.16 % of the braking energy; rel=2e-3)."""
    m, b, eta, cap_kw, v0 = 1500.0, 2.0, 0.8, 30.0, 30.0
    veh = VehicleProfile(
        mass_kg=m, rolling_resistance=0.0, drag_coefficient=0.0, recuperation_efficiency=eta, max_regen_power_kw=cap_kw
    )
    long = 1e6  # the braking phase starts at v0 after a long cruise whose cost (zero resistances) is zero
    r = profile_energy([long], [v0], [v0], [0.0], [0.0], veh, DrivingStyle(1.0, b, 0.0))
    v_k = 1000 * cap_kw / (m * b * eta)
    recovered_j = (m * b * eta * v_k**2 / 2 + 1000 * cap_kw * (v0 - v_k)) / b
    assert r.battery_wh[0] * 3600 == pytest.approx(-recovered_j, rel=2e-3)
    free = VehicleProfile(**{**veh.to_dict(), "max_regen_power_kw": None})
    uncapped = profile_energy([long], [v0], [v0], [0.0], [0.0], free, DrivingStyle(1.0, b, 0.0))
    assert uncapped.battery_wh[0] * 3600 == pytest.approx(-0.5 * m * v0**2 * eta, rel=1e-9)


def test_profile_matches_brute_force_time_stepping():
    """The Bolt (motor map, aux, cap, rotating mass, brake blending fading out below ~15 km/h) on a 5 % downhill,
    entry 5 m/s, exit 0: the quadrature against a 1 ms time-stepping of the same profile (midpoint speeds; the
    step's error is O(dt) ~ 1e-4 relative; the map's and cap's kinks cost the quadrature about 0.1 %; rel=3e-3)."""
    a, b, length, v_in, v_c, sin_a = 1.0, 1.2, 600.0, 5.0, 22.0, -0.05
    veh, style = BOLT, DrivingStyle(a, b, 0.0)
    r = profile_energy([length], [v_in], [v_c], [0.0], [sin_a], veh, style)
    from evroute.energy import battery_power_w

    dt, x, v, e = 1e-3, 0.0, v_in, 0.0
    d_b = v_c**2 / (2 * b)
    m_eff, mg = veh.effective_mass_kg, veh.mass_kg * veh.gravity_mps2
    c = 0.5 * veh.air_density_kgpm3 * veh.drag_coefficient * veh.front_area_m2
    t = 0.0
    while True:
        acc = -b if x >= length - d_b else (a if v < v_c else 0.0)
        v_next = min(max(v + acc * dt, 0.0), v_c) if acc >= 0 else max(v + acc * dt, 0.0)
        acc_eff = (v_next - v) / dt
        vm = 0.5 * (v + v_next)
        p = (m_eff * acc_eff + mg * sin_a + mg * veh.rolling_resistance * np.sqrt(1 - sin_a**2) + c * vm**2) * vm
        e += float(battery_power_w(np.array([p]), veh, vm)[0]) * dt
        x += vm * dt
        t += dt
        v = v_next
        if v <= 0.0:
            break
    assert x == pytest.approx(length, rel=1e-3)
    assert r.battery_wh[0] * 3600 == pytest.approx(e, rel=3e-3)
    assert r.time_s[0] == pytest.approx(t, rel=1e-3)


def test_bad_profile_input_is_one_error():
    with pytest.raises(ParameterError, match="lengths and cruise speeds"):
        profile_energy([100.0], [0.0], [0.0], [0.0], [0.0], BOLT)
    with pytest.raises(ParameterError, match="acceleration_mps2"):
        DrivingStyle(acceleration_mps2=0.0)


def _grid_net(speeds=None) -> RoadNetwork:
    """A plus-shaped crossing C with arms N, E, S, W (two-way), a dead end D behind N and a bend B between E and E2."""
    coords = {"C": (0, 0), "N": (0, 1), "E": (1, 0), "S": (0, -1), "W": (-1, 0), "D": (0, 2), "E2": (2, 0)}
    pairs = [("C", "N"), ("C", "E"), ("C", "S"), ("C", "W"), ("N", "D"), ("E", "E2")]
    edges = [(u, v) for u, v in pairs] + [(v, u) for u, v in pairs]
    n = len(edges)
    rng = np.random.default_rng(0)
    z = {k: float(rng.uniform(0, 20)) for k in coords}
    return RoadNetwork(
        name="plus",
        edge_ids=np.array([f"{u}{v}" for u, v in edges]),
        from_node=np.array([u for u, _ in edges]),
        to_node=np.array([v for _, v in edges]),
        length_m=np.full(n, 400.0),
        speed_mps=np.full(n, 13.9) if speeds is None else np.asarray(speeds),
        z_from_m=np.array([z[u] for u, _ in edges]),
        z_to_m=np.array([z[v] for _, v in edges]),
        geometry=[np.array([coords[u], coords[v]], dtype=float) * 1e-3 for u, v in edges],
        turns=junction_turns(*node_codes([u for u, _ in edges], [v for _, v in edges])[0]),
    )


def test_prior_by_name_and_its_properties():
    net = _grid_net()
    assert PRIORS[0] == "profile"
    eq8 = edge_prior(net, BOLT, "eq8")
    np.testing.assert_array_equal(eq8.energy_wh, network_energy_wh(net, BOLT))
    prof = edge_prior(net, BOLT)
    # reduced costs stay >= 0 (each branch's kinetic energy telescopes; module doc of evroute.energy.prior)
    assert np.all(prof.energy_wh - elevation_potential_wh(net, BOLT) >= -1e-9)
    # junctions cost time: every edge at least its free-flow time
    assert np.all(prof.time_s >= eq8.time_s - 1e-9)
    ids = net.edge_ids.tolist()
    # dead ends (S, W, D, E2) stop without waiting: exactly the rest-to-rest profile, more energy than cruising
    stops = np.isin(net.to_node, ["S", "W", "D", "E2"])
    one = profile_energy(net.length_m[stops], 0.0, net.speed_mps[stops], 0.0, net.incline[stops], BOLT)
    np.testing.assert_allclose(prof.time_s[stops], one.time_s, rtol=1e-12)
    assert np.all(prof.energy_wh[stops] > eq8.energy_wh[stops])
    # straight on through N and E (C-N-D, C-E-E2 are straight; the U-turns carry no traffic): Eq. 8 exactly when
    # cruised steadily, more with the default speed fluctuation, which keeps the mean speed (same time)
    straight = [ids.index(k) for k in ("CN", "CE", "DN", "E2E")]
    steady = edge_prior(net, BOLT, style=DrivingStyle(speed_fluctuation_mps2=0.0))
    np.testing.assert_allclose(steady.energy_wh[straight], eq8.energy_wh[straight], rtol=1e-9)
    assert np.all(prof.energy_wh[straight] > eq8.energy_wh[straight])
    np.testing.assert_allclose(prof.time_s[straight], eq8.time_s[straight], rtol=1e-12)
    np.testing.assert_allclose(prof.time_s, steady.time_s, rtol=1e-12)
    with pytest.raises(ParameterError, match="unknown prior"):
        edge_prior(net, BOLT, "nope")


def test_top_speed_caps_the_profile_prior_only():
    net = _grid_net(np.full(12, 130 / 3.6))
    twizy = VehicleProfile.load("twizy")
    prof = edge_prior(net, twizy)
    straight = [net.edge_ids.tolist().index(k) for k in ("CN", "CE", "DN", "E2E")]
    np.testing.assert_allclose(prof.time_s[straight], 400.0 / (80 / 3.6), rtol=1e-12)
    np.testing.assert_allclose(edge_prior(net, twizy, "eq8").time_s, 400.0 / (130 / 3.6), rtol=1e-12)
