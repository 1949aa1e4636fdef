"""Reduced energies (battery energy minus the change of mechanical energy) decompose exactly and add up along routes
(:mod:`evroute.traces.mechanical`, :func:`evroute.traces.observations.trace_readings`)."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.energy import VehicleProfile
from evroute.models.linear_obs import DiagonalKernel, LinearObsEdgeModel
from evroute.traces.mapmatch import MatchedTrace
from evroute.traces.mechanical import (
    boundary_wh,
    energies_meta,
    path_height_m,
    potential_wh,
    reduced_prior_wh,
    sample_mechanical_wh,
)
from evroute.traces.observations import trace_readings
from evroute.traces.reader import Trace

V = VehicleProfile()
MK = V.mass_kg + 40.0  # kinetic mass with rotating parts: any fixed value telescopes
CAP = (V.max_soc - V.min_soc) * V.battery_capacity_wh
# a toy network of 5 edges (lengths m, junction heights m, dissipation rate Wh/m): 0 -> 1 -> 2 and 3 -> 1 -> 4
LENGTH = np.array([100.0, 200.0, 150.0, 120.0, 80.0])
Z_FROM = np.array([10.0, 14.0, 4.0, 30.0, 4.0])
Z_TO = np.array([14.0, 4.0, 9.0, 14.0, 0.0])
RATE = np.array([0.12, 0.2, 0.15, 0.1, 0.25])


def synthetic_trip(path: list[int], speed_of, step_m: float = 10.0, name: str = "t") -> tuple[Trace, MatchedTrace]:
    """A trip along ``path`` sampled every ``step_m`` metres, speed ``speed_of(s)`` (m/s at distance s), with battery
    energy in closed form: ``E(s) = M(s) - M(0) + D(s)``, ``M`` the mechanical energy (kinetic with mass ``MK``,
    potential at the network's heights) and ``D`` the dissipation, ``RATE[e]`` Wh per metre on edge ``e``."""
    lengths = LENGTH[path]
    s = np.arange(0.0, lengths.sum() + 1e-9, step_m)
    starts = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
    k = np.minimum(np.searchsorted(starts, s, side="right") - 1, len(path) - 1)
    edge = np.asarray(path)[k]
    offset = s - starts[k]
    d_cum = np.concatenate([[0.0], np.cumsum(RATE[path] * lengths)])
    diss = d_cum[k] + RATE[edge] * offset
    z = path_height_m(edge, offset, LENGTH, Z_FROM, Z_TO)
    v = np.array([speed_of(x) for x in s])
    mech = sample_mechanical_wh(v, z, V, MK)
    battery = mech - mech[0] + diss
    dt = np.where(v[1:] + v[:-1] > 0, 2 * step_m / np.maximum(v[1:] + v[:-1], 1e-9), 1.0)
    t = np.concatenate([[0.0], np.cumsum(dt)])
    soc = 80.0 - battery / CAP * 100.0
    zeros = np.zeros(len(s))
    trace = Trace(t, v, z, soc, zeros, zeros, name=name)
    matched = MatchedTrace(edge, offset, np.asarray(path), k, 1)
    return trace, matched


def _readings(trace: Trace, matched: MatchedTrace, reduced: bool):
    mech = None
    if reduced:
        z = path_height_m(matched.edge, matched.offset_m, LENGTH, Z_FROM, Z_TO)
        mech = sample_mechanical_wh(trace.speed_mps, z, V, MK)
    return trace_readings(trace, matched, LENGTH, CAP, 1e-8, soc_step=1e-9, mechanical_wh=mech)


def stop_and_go(s: float) -> float:
    """From rest, a stop at 150 m, arriving at 12 m/s (as SUMO's trips do)."""
    return min(15.0, 0.3 * s) * min(1.0, abs(s - 150.0) / 30.0)


def test_synthetic_trip_decomposes_exactly() -> None:
    """Each window's reduced reading is the dissipation of the edge shares it covers, exactly (closed form), and the
    windows sum to the trip's battery energy minus its boundary term ``M(end) - M(start)``; the battery readings
    differ from the dissipation by the mechanical changes (the test can fail)."""
    trace, matched = synthetic_trip([0, 1, 2], stop_and_go)
    r = _readings(trace, matched, reduced=True)
    assert r is not None and len(r.y) > 20
    truth = r.a @ (RATE[r.edges] * LENGTH[r.edges])
    np.testing.assert_allclose(r.y, truth, rtol=1e-9, atol=1e-9)  # float rounding of the closed form only
    battery = (trace.soc_pct[0] - trace.soc_pct[-1]) / 100.0 * CAP
    meta = energies_meta(V, MK)
    bnd = boundary_wh(meta, Z_FROM[0], Z_TO[2], v_end_mps=float(trace.speed_mps[-1]))
    assert r.y.sum() + bnd == pytest.approx(battery, rel=1e-9)
    b = _readings(trace, matched, reduced=False)
    assert b is not None
    assert np.max(np.abs(b.y - truth)) > 1.0  # battery windows carry kinetic and potential changes (Wh)


def _learn(trips: list[tuple[Trace, MatchedTrace]], reduced: bool) -> np.ndarray:
    """Posterior means of a broad BI prior (s.d. 1e4 Wh) after the trips' readings (noise about 1e-4 Wh)."""
    model = LinearObsEdgeModel(np.zeros(5), DiagonalKernel(np.full(5, 1e8)), 1.0, 1e-8, "bi")
    for tr, m in trips:
        r = _readings(tr, m, reduced)
        assert r is not None
        model.observe(r.edges, r.a, r.y, r.noise_cov)
    return model.posterior().mean


def test_two_routes_sharing_an_edge_add_up() -> None:
    """Learned from two trips (routes 0-1-2 and 3-1-4, different speed profiles, one arriving at speed), the reduced
    edge energies predict a third route 0-1-4 driven from rest to rest: its battery energy is their sum plus ``m g
    (z_end - z_start)``.  Tolerance: the posterior mean's error under readings of s.d. ~1e-4 Wh, far below 1e-3 Wh;
    the same learning on battery readings misses by more than 1 Wh."""
    a = synthetic_trip([0, 1, 2], stop_and_go, name="a")
    b = synthetic_trip([3, 1, 4], lambda s: 8.0 + 4.0 * np.sin(s / 40.0), step_m=5.0, name="b")
    mu = _learn([a, b], reduced=True)
    np.testing.assert_allclose(mu, RATE * LENGTH, atol=1e-3)
    c_tr, _ = synthetic_trip([0, 1, 4], lambda s: min(10.0, 0.2 * s, 0.2 * (400.0 - s) if s < 380 else 0.0))
    assert c_tr.speed_mps[0] == 0.0 and c_tr.speed_mps[-1] == 0.0
    battery = (c_tr.soc_pct[0] - c_tr.soc_pct[-1]) / 100.0 * CAP
    route = np.array([0, 1, 4])
    pred = mu[route].sum() + boundary_wh(energies_meta(V, MK), Z_FROM[0], Z_TO[4])
    assert pred == pytest.approx(battery, abs=1e-3)
    mu_b = _learn([a, b], reduced=False)
    assert abs(mu_b[route].sum() - battery) > 1.0


def test_reduced_prior_telescopes_to_eq8() -> None:
    """On a consistent network (synthetic, with hills) the reduced prior summed over two consecutive edges plus their
    boundary term ``m g dz`` is Eq. 8's energy of the two, for every legal turn (float rounding only)."""
    from evroute.energy import network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("synthetic:300:1"))
    net = lg.network
    t = np.asarray(lg.turns)
    assert np.ptp(net.z_from_m) > 10.0
    np.testing.assert_allclose(net.z_to_m[t[:, 0]], net.z_from_m[t[:, 1]])
    e_det, red = network_energy_wh(net, V), reduced_prior_wh(net, V)
    meta = energies_meta(V)
    got = red[t].sum(axis=1) + np.array([boundary_wh(meta, net.z_from_m[a], net.z_to_m[b]) for a, b in t.tolist()])
    np.testing.assert_allclose(got, e_det[t].sum(axis=1), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(red + potential_wh(net, V), e_det, rtol=1e-12, atol=1e-12)


def test_reduced_prior_of_the_default_prior_and_learn_starts_from_it(tmp_path) -> None:
    """``reduced_prior_wh(..., "profile")`` is the speed-profile prior's edge energy minus ``m g dz`` on every edge,
    telescopes along every legal turn to that prior's energy of the two edges (its profiles end at the speed they
    start with: no kinetic change), differs from Eq. 8's on a hilly network, and is the mean a new ``evroute learn``
    model starts from (``open_model``: the prior a user gets before learning is the default one).  Float rounding
    only (1e-9)."""
    from evroute.energy import PRIORS, edge_prior
    from evroute.experiments.trip_learning import open_model
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("synthetic:300:1"))
    net = lg.network
    t = np.asarray(lg.turns)
    prof, red = edge_prior(net, V, "profile").energy_wh, reduced_prior_wh(net, V, "profile")
    np.testing.assert_allclose(red + potential_wh(net, V), prof, rtol=1e-12, atol=1e-12)
    meta = energies_meta(V)
    got = red[t].sum(axis=1) + np.array([boundary_wh(meta, net.z_from_m[a], net.z_to_m[b]) for a, b in t.tolist()])
    np.testing.assert_allclose(got, prof[t].sum(axis=1), rtol=1e-9, atol=1e-9)
    assert (red > 0).all() and np.abs(red - reduced_prior_wh(net, V)).max() > 1e-3
    assert PRIORS[0] == "profile"
    model, logs, _ = open_model(tmp_path / "new.npz", lg, "bi", V)
    np.testing.assert_allclose(model.posterior().mean, red, rtol=1e-12, atol=1e-12)
    assert logs == {}


@pytest.mark.slow
def test_learn_writes_reduced_energies_and_refuses_a_battery_model(tmp_path) -> None:
    """``evroute learn`` on a network writes a model whose header says reduced energies (with the masses and ``g`` of
    the boundary term), and refuses to continue a model file of battery energies (one line, exit 2, file unchanged)."""
    import subprocess
    import sys
    from pathlib import Path

    from evroute.models.store import read_header

    root = Path(__file__).resolve().parent.parent / "data"
    grid = root / "sumo-tiny" / "grid.net.xml"
    logs = sorted(str(p) for p in (root / "trip-log-sumo").glob("trip_*.csv"))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "evroute", *args], capture_output=True, text=True)

    model = tmp_path / "m.npz"
    res = run("learn", *logs[:3], "--network", str(grid), "--model-file", str(model), "--model", "bi")
    assert res.returncode == 0, res.stderr
    header = read_header(model)
    effect, phi = header["meta"]["trip_effect"], header["hyperparameters"]["noise_scale"]
    assert effect["trips"] == 3 and effect["rel_var"] >= 0 and phi > 0 and phi != 1.0  # learned from the logs
    assert "noise learned (ML-II)" in res.stdout and "out-of-fold" in res.stdout
    # the route intervals' noise from out-of-fold residuals of the three traces (their readings kept in the file)
    assert effect["method"] == "out-of-fold" and abs(sum(effect["mixture"]["weight"]) - 1.0) < 1e-9
    assert header["format_version"] == 2
    energies = header["meta"]["energies"]
    assert energies["kind"] == "reduced" and energies["mass_kg"] == V.mass_kg
    assert energies["gravity_mps2"] == V.gravity_mps2
    battery = tmp_path / "battery.npz"
    assert run("model", "prior", "--network", str(grid), "--out", str(battery)).returncode == 0
    before = battery.read_bytes()
    res = run("learn", *logs[:3], "--network", str(grid), "--model-file", str(battery))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "holds battery energies" in res.stderr
    assert battery.read_bytes() == before


def test_sumo_trips_can_end_at_rest(tmp_path) -> None:
    """``simulate_trips(arrive_at_rest=True)``: every trip parks at the end of its route (its last logged samples at
    speed 0, standing), where the plain trips leave the network at speed -- what the known-truth study needs so
    that a learned route from rest to rest is compared with trips from rest to rest."""
    from pathlib import Path

    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.sumo.triplogs import random_routes, simulate_trips
    from evroute.traces.formats import read_sumo_fcd

    grid = Path(__file__).resolve().parent.parent / "data" / "sumo-tiny" / "grid.net.xml"
    lg = build_line_graph(load_network(str(grid)))
    routes = random_routes(lg, 4, 300.0, np.random.default_rng(0))
    last = {}
    for rest in (False, True):
        fcd, bat = simulate_trips(grid, routes, tmp_path / str(rest), vehicle=V, arrive_at_rest=rest)
        traces = read_sumo_fcd(fcd, bat)
        assert len(traces) == 4
        last[rest] = np.array([t.speed_mps[-3:] for t in traces])
    assert np.all(last[True] < 0.05)  # standing at the end (SUMO's speeds: float rounding only)
    assert np.all(last[False][:, -1] > 1.0)
