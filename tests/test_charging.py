"""Charging plans: exact charging times (closed forms, quadrature), the label-setting search against brute force
over every plan (hypothesis), the chance constraint in Monte Carlo, the legs' moments against sampled worlds."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.stats import norm

from evroute.charging.chargers import Chargers, snap_chargers
from evroute.charging.curves import CURVES, ChargeTimer, ChargingCurve, charging_curve
from evroute.charging.legs import LegTable, Sites, build_legs, leg_covariance, make_sites, tree_sums
from evroute.charging.montecarlo import drive, sample_leg_energies
from evroute.charging.search import PlanProblem, PlanSettings, brute_force, plan_search
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import potential_h
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.errors import DataError, ParameterError
from evroute.linegraph import build_line_graph
from evroute.models.store import prior_model
from evroute.network.synthetic import synthetic_city
from evroute.routes import edge_midpoints

CURVE = ChargingCurve.from_dict(CURVES["sumo_ev"])


# --- charging curves -------------------------------------------------------------------------------------------


def test_constant_power_charges_linearly() -> None:
    """Constant power P: T(a, b) = C (b - a) / P exactly (35 kWh from 10 % to 60 % at 35 kW is 30 min)."""
    c = ChargingCurve.from_dict({"dc_max_kw": 100.0, "curve": [[0.0, 35.0], [1.0, 35.0]]})
    tm = ChargeTimer(c, 35_000.0, 50.0)
    assert tm.time(0.1, 0.6) == pytest.approx(1800.0, rel=1e-12)
    assert ChargeTimer(c, 35_000.0, 17.5).time(0.1, 0.6) == pytest.approx(3600.0, rel=1e-12)  # the charger limits


def test_linear_taper_matches_the_log_closed_form() -> None:
    """P(s) = p0 + k s: T = C / k ln(P(b) / P(a)) (hours per kWh), exact to rounding."""
    c = ChargingCurve.from_dict({"dc_max_kw": 200.0, "curve": [[0.0, 100.0], [1.0, 10.0]]})
    tm = ChargeTimer(c, 50_000.0, 500.0)
    a, b, k = 0.2, 0.9, -90.0
    want = 3600 * 50.0 / k * np.log((100 + k * b) / (100 + k * a))
    assert tm.time(a, b) == pytest.approx(want, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(5.0, 300.0), min_size=2, max_size=6),
    st.floats(3.0, 400.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_charging_time_is_the_integral_of_the_curve(kw, charger, a, b) -> None:
    """Any piecewise-linear curve cut by any charger power: equals numerical quadrature of C / P (rel 1e-7)."""
    soc = np.linspace(0.0, 1.0, len(kw))
    c = ChargingCurve.from_dict({"dc_max_kw": 250.0, "curve": np.column_stack([soc, kw]).tolist()})
    tm = ChargeTimer(c, 40_000.0, charger)
    lo, hi = min(a, b), max(a, b)
    pts = sorted(set(np.concatenate([soc, tm.x]).tolist()))
    want = 3600 * 40.0 * quad(lambda s: 1.0 / float(c.power_kw(s, charger)), lo, hi, points=pts, limit=200)[0]
    assert tm.time(lo, hi) == pytest.approx(want, rel=1e-7, abs=1e-9)
    assert tm.time(hi, lo) == 0.0


def test_curve_from_the_vehicle_profile_wins_over_the_table() -> None:
    class WithCurve:
        name = "sumo_ev"
        charging = {"dc_max_kw": 11.0, "curve": [[0.0, 11.0], [1.0, 11.0]], "source": "test"}

    assert charging_curve(WithCurve()).dc_max_kw == 11.0
    assert charging_curve(VehicleProfile.load("sumo_ev")).dc_max_kw == CURVES["sumo_ev"]["dc_max_kw"]
    with pytest.raises(ParameterError, match="no charging curve"):
        charging_curve(VehicleProfile(name="nameless"))
    with pytest.raises(DataError, match="increasing"):
        ChargingCurve.from_dict({"dc_max_kw": 50, "curve": [[0.5, 10], [0.2, 20]]})
    for name, d in CURVES.items():  # every shipped curve parses and cites a source
        assert ChargingCurve.from_dict(d, name).source


# --- the search against brute force on random leg tables -------------------------------------------------------


def _table(rng: np.random.Generator, n_chargers: int, two_routes: bool) -> LegTable:
    """Origin at 0 and destination at 1 on a line, ``n_chargers`` chargers between; every leg between them, one or
    two candidates per pair (the second slower and 15 % cheaper), energy 0.6-1.6 batteries of 10 kWh end to end."""
    n = n_chargers + 2
    x = np.concatenate([[0.0], rng.uniform(0.1, 0.9, n_chargers), [1.0]])
    total = rng.uniform(6000.0, 16000.0)
    rows = []
    for i in range(n - 1):
        for j in range(1, n):
            if i == j:
                continue
            d = abs(x[j] - x[i]) + 0.02
            for kind in range(1 + two_routes):
                mean = d * total * rng.uniform(0.9, 1.1) * (0.85 if kind else 1.0)
                time = d * 3600.0 * rng.uniform(0.9, 1.1) * (1.2 if kind else 1.0)
                rows.append((i, j, kind, time, mean, (rng.uniform(0.02, 0.12) * mean) ** 2))
    a = np.asarray(rows)
    sites = Sites(
        edge=np.arange(n),
        power_kw=np.concatenate([[np.nan], rng.choice([11.0, 50.0, 150.0], n_chargers), [np.nan]]),
        detour_m=np.zeros(n),
        detour_s=np.zeros(n),
        detour_wh=np.zeros(n),
        names=["origin", *[f"c{k}" for k in range(n_chargers)], "destination"],
    )
    return LegTable(
        sites,
        a[:, 0].astype(int),
        a[:, 1].astype(int),
        a[:, 2].astype(int),
        a[:, 3],
        a[:, 3] * 10,
        a[:, 4],
        a[:, 5],
        a[:, 4] * 0.8,
        np.sqrt(a[:, 5]),
        0.0,
    )


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_chargers=st.integers(1, 3),
    two_routes=st.booleans(),
    charge=st.floats(0.1, 0.5),
    delta=st.sampled_from([0.01, 0.05, 0.2]),
    max_stops=st.integers(0, 2),
    weight=st.sampled_from([0.0, 300.0]),
    buffer=st.sampled_from([None, None, 0.05]),
)
def test_search_is_optimal_against_brute_force(seed, n_chargers, two_routes, charge, delta, max_stops, weight, buffer):
    """The label-setting plan costs exactly the least feasible cost over every plan (stops, legs, grid targets),
    and is infeasible exactly when no plan is feasible."""
    t = _table(np.random.default_rng(seed), n_chargers, two_routes)
    s = PlanSettings(
        10_000.0,
        charge,
        0.05,
        delta=delta,
        max_stops=max_stops,
        step=0.2,
        energy_weight=weight,
        buffer=buffer,
        stop_s=60.0,
    )
    p = PlanProblem(t, CURVE, s)
    got, want = plan_search(p), brute_force(p)
    if want is None:
        assert not got.feasible and got.certified
        return
    assert got.feasible and got.certified
    assert got.cost == pytest.approx(want.cost, rel=1e-9, abs=1e-6)
    if buffer is None:
        assert got.risk <= delta * (1 + 1e-9)
    else:
        assert np.all(got.arrive_mean >= 0.05 + buffer - 1e-9)


def test_risk_is_a_resource_of_the_labels() -> None:
    """Two routes to one charger, the faster one risky (eps 0.045): with the last leg's eps 0.01 only the slower,
    safer one keeps the total within delta 0.05; a search that let the cheaper label dominate regardless of risk
    would answer "no plan"."""
    sites = Sites(
        np.arange(3),
        np.array([np.nan, 150.0, np.nan]),
        np.zeros(3),
        np.zeros(3),
        np.zeros(3),
        ["origin", "c", "destination"],
    )
    z45, z1 = norm.ppf(0.955), norm.ppf(0.99)
    src, dst, kind = np.array([0, 0, 1, 0]), np.array([1, 1, 2, 2]), np.array([0, 1, 0, 0])
    mean = np.array([3000.0, 3000.0, 8000.0, 11000.0])
    sd = np.array([1500.0 / z45, 300.0, 1500.0 / z1, 100.0])
    t = LegTable(sites, src, dst, kind, np.array([100.0, 200.0, 100.0, 150.0]), np.ones(4), mean, sd**2, mean, sd, 0.0)
    p = PlanProblem(t, CURVE, PlanSettings(10_000.0, 0.5, 0.05, delta=0.05, max_stops=1, step=0.05))
    plan = plan_search(p)
    assert plan.feasible and plan.legs == [1, 2] and plan.targets == [pytest.approx(1.0)]
    best = brute_force(p)
    assert best is not None and plan.risk == pytest.approx(0.01, rel=1e-3) and plan.cost == pytest.approx(best.cost)


def test_grid_bound_holds_against_a_finer_grid() -> None:
    """A coarse grid's optimum is within grid_bound_s of the optimum on a 10x finer grid (which contains it)."""
    for seed in range(6):
        t = _table(np.random.default_rng(seed), 3, True)
        coarse = PlanProblem(t, CURVE, PlanSettings(10_000.0, 0.2, 0.05, max_stops=2, step=0.1))
        fine = PlanProblem(t, CURVE, PlanSettings(10_000.0, 0.2, 0.05, max_stops=2, step=0.01))
        a, b = plan_search(coarse), plan_search(fine)
        if a.feasible:
            assert b.feasible and b.cost <= a.cost + 1e-6
            assert a.cost - b.cost <= coarse.grid_bound_s() + 1e-6


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), delta=st.sampled_from([0.02, 0.1, 0.3]))
def test_chance_constraint_holds_in_sampled_worlds(seed, delta):
    """Leg energies drawn independently from the table's Gaussians (4000 worlds): the plan strands at most delta
    (the upper end of the 99.9 % binomial interval) and exactly as often as its legs' joint probability says
    (within 4.5 binomial s.e.)."""
    rng = np.random.default_rng(seed)
    t = _table(rng, 3, True)
    p = PlanProblem(t, CURVE, PlanSettings(10_000.0, 0.2, 0.05, delta=delta, max_stops=2, step=0.05))
    plan = plan_search(p)
    if not plan.feasible:
        return
    n = 4000
    e = t.mean_wh[plan.legs] + rng.standard_normal((n, len(plan.legs))) * np.sqrt(t.var_wh2[plan.legs])
    stranded, _, _ = drive(plan, p, e)
    rate = stranded.mean()
    assert rate <= delta + norm.ppf(0.9995) * np.sqrt(delta * (1 - delta) / n)
    upper = (plan.depart - 0.05) * 10_000.0 - t.mean_wh[plan.legs]
    p_fail = 1 - np.prod(norm.cdf(upper / np.sqrt(t.var_wh2[plan.legs])))  # independent legs; departures t_k
    assert p_fail <= plan.risk + 1e-12
    # driving leaves with max(A, t_k) >= t_k: strands at most as often as the planned departures say
    assert rate <= p_fail + 4.5 * np.sqrt(max(p_fail, 1 / n) * (1 - p_fail) / n)


# --- legs on a road network ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _city(kind: str = "bi"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lg = build_line_graph(synthetic_city(400, seed=3))
    veh = VehicleProfile.load("sumo_ev")
    model = (
        prior_model(kind, lg, veh) if kind == "bi" else prior_model(kind, lg, veh, method="dense", learn_hyper=False)
    )
    pot = elevation_potential_wh(lg.network, veh)
    belief = RouteBelief(model, pot)
    mid = edge_midpoints(lg.network.geometry)
    rng = np.random.default_rng(1)
    e = rng.choice(lg.n_nodes, 6, replace=False)
    ch = Chargers(
        [f"c{i}" for i in range(6)],
        mid[e, 0] + 2e-4,
        mid[e, 1],
        np.array([22.0, 50, 150, 50, 11, 150]),
        ["ccs"] * 6,
        np.ones(6, int),
        np.ones(6),
    )
    return lg, veh, belief, pot, snap_chargers(lg.network, ch)


def test_tree_sums_equal_sums_along_walked_routes() -> None:
    lg, veh, belief, pot, ch = _city()
    sites = make_sites(lg, belief, 0, lg.n_nodes - 1, ch)
    t = build_legs(lg, belief, sites, pot, h0=potential_h(lg.network, veh))
    for k in range(0, len(t), 7):
        e = t.driven(k)
        det = sites.detour_wh[t.src[k]] + sites.detour_wh[t.dst[k]]
        assert t.mean_wh[k] == pytest.approx(belief.mean[e].sum() + det, rel=1e-10, abs=1e-9)
        assert t.var_wh2[k] == pytest.approx(belief.var[e].sum() + belief.noise_var[e].sum(), rel=1e-10)
    # pointer doubling against a plain walk on one random tree
    rng = np.random.default_rng(0)
    pred = np.array([[-9999, 0, 1, 1, 3, -9999]])
    vals = rng.normal(size=(6, 2))
    got = tree_sums(pred, vals)[0]
    assert np.allclose(got[4], vals[[1, 3, 4]].sum(axis=0)) and np.allclose(got[0], 0)


@pytest.mark.parametrize(("kind", "rho"), [("bi", 0.0), ("bi", 0.7), ("gp-exact", 0.5)])
def test_leg_moments_match_sampled_worlds(kind, rho):
    """Worlds sampled edge by edge (posterior and trip-correlated noise): each leg's mean within 4 s.e. and the
    legs' covariance matrix within 4 s.e. of its entries (6000 worlds)."""
    lg, veh, belief, pot, ch = _city(kind)
    sites = make_sites(lg, belief, 0, lg.n_nodes - 1, ch)
    t = build_legs(lg, belief, sites, pot, trip_rho=rho, h0=potential_h(lg.network, veh))
    p = PlanProblem(t, CURVE, PlanSettings(35_000.0, 0.5, 0.05))
    legs = [int(np.flatnonzero(t.src == 0)[0]), int(np.flatnonzero(t.src == 2)[-1])]
    n = 6000
    e = sample_leg_energies(p, belief, legs, n, np.random.default_rng(2))
    cov = leg_covariance(t, belief, legs)
    assert np.allclose(np.diag(cov), t.var_wh2[legs], rtol=1e-8)
    assert np.all(np.abs(e.mean(axis=0) - t.mean_wh[legs]) < 4 * np.sqrt(t.var_wh2[legs] / n))
    emp = np.cov(e.T)
    se = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / n)  # s.e. of a Gaussian sample covariance
    assert np.all(np.abs(emp - cov) < 4 * se)
    if rho > 0:
        assert cov[0, 1] > 4 * se[0, 1]  # the trip-level effect correlates the legs


@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_a_learned_trip_effect_enters_every_leg_and_the_sampled_worlds(kind):
    """A belief with a learned whole-trip noise (``k = 0.5``) and trip effect (``tau^2 = 0.02``, as ``evroute learn``
    stores them): each leg's variance adds ``tau^2 (sum m_e)^2`` to the posterior and the halved traversal noise, two
    legs of one trip covary by ``tau^2 (sum_i m)(sum_j m)`` more than without it, and worlds sampled edge by edge (one
    ``beta`` per world) match those moments (6000 worlds; each entry within 4 s.e. of a Gaussian sample covariance)."""
    lg, veh, plain, pot, ch = _city(kind)
    belief = RouteBelief(plain.model, pot, 0.02, 0.5)
    np.testing.assert_allclose(belief.noise_var, 0.5 * plain.noise_var)
    sites = make_sites(lg, belief, 0, lg.n_nodes - 1, ch)
    t = build_legs(lg, belief, sites, pot, h0=potential_h(lg.network, veh))
    for k in range(0, len(t), 7):
        e = t.driven(k)
        _, var_f = belief.route_moments(e, trip=False)
        want = var_f + belief.noise_var[e].sum() + 0.02 * belief.effect_mean[e].sum() ** 2
        assert t.var_wh2[k] == pytest.approx(want, rel=1e-8)
    p = PlanProblem(t, CURVE, PlanSettings(35_000.0, 0.5, 0.05))
    legs = [int(np.flatnonzero(t.src == 0)[0]), int(np.flatnonzero(t.src == 2)[-1])]
    cov = leg_covariance(t, belief, legs)
    m = [belief.effect_mean[t.driven(k)].sum() for k in legs]
    base = leg_covariance(build_legs(lg, plain, sites, pot, h0=potential_h(lg.network, veh)), plain, legs)
    assert cov[0, 1] - base[0, 1] == pytest.approx(0.02 * m[0] * m[1], rel=1e-8)
    n = 6000
    e = sample_leg_energies(p, belief, legs, n, np.random.default_rng(3))
    emp = np.cov(e.T)
    se = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / n)
    assert np.all(np.abs(emp - cov) < 4 * se)
    assert cov[0, 1] > 4 * se[0, 1]  # the trip effect correlates the legs
