"""The synthetic country (:mod:`evroute.network.country`): the published road statistics its docstring names,
determinism, its classes and speeds, and that every consumer (line graph, CCH, reach, osmnx export, the registry and
the compute cache, the CLI) takes it."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.network import RoadNetwork
from evroute.network._graph import largest_scc_edges, node_codes
from evroute.network.country import CLASSES, country_stats, synthetic_country
from evroute.network.country_layout import VILLAGE_MIN_EDGES, gabriel_edges
from evroute.network.polylines import as_polylines
from evroute.network.registry import load_network
from evroute.network.speeds import default_speed_kmh, free_flow_factor


def _digest(net: RoadNetwork) -> str:
    h = hashlib.sha256()
    for f in ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns"):
        h.update(np.ascontiguousarray(getattr(net, f)).tobytes())
    lines = as_polylines(net.geometry)
    h.update(np.ascontiguousarray(lines.xy).tobytes())
    h.update(np.ascontiguousarray(lines.counts).tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def country() -> RoadNetwork:
    return synthetic_country(100_000, seed=0)


@pytest.fixture(scope="module")
def small() -> RoadNetwork:
    return synthetic_country(4000, seed=2)


def test_same_seed_same_network_and_another_seed_another(small):
    assert _digest(synthetic_country(4000, seed=2)) == _digest(small)
    assert _digest(synthetic_country(4000, seed=3)) != _digest(small)


@pytest.mark.parametrize("n", [2000, 20_000])
def test_size_close_to_request_and_strongly_connected(n):
    net = synthetic_country(n, seed=1)
    assert abs(net.n_edges - n) <= 0.03 * n  # the calibration stops within 2 % (3 attempts at most)
    assert len(largest_scc_edges(net.n_edges, net.turns)) == net.n_edges
    assert net.name == f"synthetic-country:{n}:1"


def test_size_and_connectivity_at_100k(country):
    assert abs(country.n_edges - 100_000) <= 2000
    assert len(largest_scc_edges(country.n_edges, country.turns)) == country.n_edges


def test_road_density_motorway_and_rural_shares(country):
    """Module doc: ~2 km of road per km^2 (Germany ~2.3, France ~2.0), motorways ~1.5 % of the road length (Germany
    ~1.6 %), a rural share of 20-55 % of the length."""
    st = country_stats(country)
    assert 1.5 <= st["road_km_per_km2"] <= 3.0, st
    assert 0.005 <= st["motorway_share"] <= 0.04, st
    assert 0.20 <= st["rural_share"] <= 0.55, st
    assert 0.6 <= st["town_share"] <= 0.9, st
    # the shares from the edges directly: a motorway carriageway is one of two, a two-way road one of two edges
    cls, length = country.meta["road_class"], country.length_m
    two_way = ~country.meta["oneway"] | (cls == "motorway")
    km = (length * np.where(two_way, 0.5, 1.0)).sum() / 1e3
    assert st["motorway_share"] == pytest.approx(length[cls == "motorway"].sum() / 2e3 / km, rel=1e-9)
    assert st["road_km_per_km2"] * st["area_km2"] == pytest.approx(km, rel=1e-9)


def test_settlement_sizes_follow_zipf(country):
    """Rank-size slope of the towns (settlements of at least VILLAGE_MIN_EDGES edges) near -1 (Zipf's law); many
    towns and many more hamlets."""
    sizes = country.meta["settlement_edges"]
    towns = np.sort(sizes[sizes >= VILLAGE_MIN_EDGES])[::-1]
    assert len(towns) >= 50 and np.count_nonzero(sizes < VILLAGE_MIN_EDGES) > len(towns)
    slope = np.polyfit(np.log(np.arange(1, len(towns) + 1)), np.log(towns), 1)[0]
    assert -1.25 <= slope <= -0.8, slope
    # the largest city holds a tenth to a third of the settlement edges, not all of them (not one grid)
    assert 0.05 <= towns[0] / sizes.sum() <= 0.35


def test_junction_degrees_resemble_street_networks(country):
    """Distinct neighbouring junctions, degree 2 excluded (OSMnx's streets per node): 3-way junctions outnumber 4-way
    ones, the mean is 2.5-3.5 and 3-20 % are dead ends (module doc)."""
    (fi, ti), ids = node_codes(country.from_node, country.to_node)
    n = len(ids)
    pairs = np.unique(np.concatenate([fi * n + ti, ti * n + fi]))
    deg = np.bincount(pairs // n, minlength=n)
    d = deg[deg != 2]
    assert np.count_nonzero(d == 3) > np.count_nonzero(d == 4)
    assert 2.5 <= d.mean() <= 3.5
    assert 0.03 <= np.mean(d == 1) <= 0.20


def test_edge_lengths_per_class(country):
    """Rural roads are cut into 100-800 m edges, motorways into 300-2,000 m; town streets keep the city's blocks."""
    s = country.meta["settlement"]
    cls = country.meta["road_class"]
    rural = country.length_m[s == -1]
    assert rural.min() >= 100.0 and rural.max() <= 800.0
    mw = country.length_m[cls == "motorway"]
    assert len(mw) and mw.min() >= 300.0 and mw.max() <= 2000.0
    town = country.length_m[s >= 0]
    assert 50.0 <= np.median(town) <= 250.0


def test_speeds_are_the_project_defaults_and_motorways_one_way(country):
    cls = country.meta["road_class"]
    assert set(cls.tolist()) == set(CLASSES)
    urban = country.meta["settlement"] >= 0
    town_kmh = np.array([default_speed_kmh(c, "urban") for c in cls[urban]])
    rural_kmh = np.array([default_speed_kmh(c, "rural") for c in cls[~urban]])
    limit = np.empty(country.n_edges)
    limit[urban], limit[~urban] = town_kmh / 3.6, rural_kmh / 3.6
    np.testing.assert_allclose(country.speed_mps, limit * free_flow_factor(limit, cls), rtol=1e-12)
    np.testing.assert_allclose(country.speed_mps[cls == "motorway"] * 3.6, 130.0)
    # motorway carriageways are one-way: no motorway edge has an edge back between the same junctions
    mw = cls == "motorway"
    back = set(zip(country.to_node[mw].tolist(), country.from_node[mw].tolist(), strict=True))
    assert not back & set(zip(country.from_node.tolist(), country.to_node.tolist(), strict=True))
    # every motorway link joins at a ramp: some motorway_link edges start or end where motorways do
    links = cls == "motorway_link"
    ends = set(country.to_node[mw].tolist())
    assert ends & set(country.from_node[links].tolist())


def test_geometry_matches_lengths(country):
    """Haversine length of each polyline against ``length_m`` (planar length times the slope factor <= 1.002 for
    the 6 % terrain): within 0.5 % (the sinusoidal projection's distortion over ~60 km is far below it)."""
    lines = as_polylines(country.geometry)
    lon, lat = np.radians(lines.xy[:, 0]), np.radians(lines.xy[:, 1])
    a = np.sin(np.diff(lat) / 2) ** 2 + np.cos(lat[:-1]) * np.cos(lat[1:]) * np.sin(np.diff(lon) / 2) ** 2
    seg = 2 * 6_371_008.8 * np.arcsin(np.sqrt(a))
    starts = np.r_[0, np.cumsum(lines.counts)[:-1]]
    seg = np.r_[seg, 0.0]
    seg[np.cumsum(lines.counts) - 1] = 0.0
    hav = np.add.reduceat(seg, starts)
    np.testing.assert_allclose(country.length_m, hav, rtol=5e-3)


def test_gabriel_edges_against_brute_force():
    rng = np.random.default_rng(5)
    for k in (2, 3, 5, 40):
        pts = rng.random((k, 2))
        got = {tuple(e) for e in gabriel_edges(pts).tolist()}
        want = set()
        for i in range(k):
            for j in range(i + 1, k):
                others = [m for m in range(k) if m not in (i, j)]
                dots = [(pts[m] - pts[i]) @ (pts[m] - pts[j]) for m in others]
                if all(d >= 0 for d in dots):
                    want.add((i, j))
        if k >= 4:
            assert got == want
        else:  # the path in x order: connected, and here also Gabriel edges
            assert len(got) == k - 1 and got <= want


def test_every_consumer_takes_it(small):
    """Line graph, CCH against Dijkstra, reach and the osmnx export on a small country."""
    from evroute.driver.answers import BatteryState
    from evroute.driver.query import QueryContext, make_belief
    from evroute.driver.reach import reachable
    from evroute.energy import VehicleProfile
    from evroute.linegraph import build_line_graph
    from evroute.models.store import prior_model
    from evroute.oracle import RouteOracle

    lg = build_line_graph(small)
    assert lg.n_nodes == small.n_edges
    vehicle = VehicleProfile.load("chevrolet_bolt_2020")
    belief = make_belief(lg, prior_model("bi", lg, vehicle), vehicle)
    ctx = QueryContext(lg, belief, vehicle, engine="dijkstra")
    arcs = ctx.least_mean_arcs()
    oracle = RouteOracle(lg)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, lg.n_nodes, (5, 2))
    from evroute.cch import CCHIndex, available

    if available():
        router = CCHIndex(lg).customize(arcs)
        for a, b in pairs.tolist():
            c, d = router.route(a, b).cost, oracle.shortest_route_arcs(arcs, a, b).cost
            assert abs(c - d) <= router.error_bound + 1e-9
    res = reachable(lg, belief, int(pairs[0, 0]), BatteryState.from_vehicle(vehicle, 0.8), h0=ctx.h0)
    assert res.reachable.mean() > 0.5
    g = small.to_networkx()
    assert g.number_of_edges() == small.n_edges
    assert g.number_of_nodes() == len(set(small.from_node.tolist()) | set(small.to_node.tolist()))


def test_registry_and_cache(monkeypatch, tmp_path, small):
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    first = load_network("synthetic-country:4000:2")
    again = load_network("synthetic-country:4000:2")  # from the cache entry the first load wrote
    assert _digest(first) == _digest(again) == _digest(small)
    assert any(tmp_path.rglob("*")), "the first load wrote a cache entry"
    np.testing.assert_array_equal(again.meta["settlement"], small.meta["settlement"])


@pytest.mark.parametrize(
    "spec",
    [
        "synthetic-country",
        "synthetic-country:abc",
        "synthetic-country:100",
        "synthetic-country:4000:-1",
        "synthetic-country:1:2:3",
    ],
)
def test_bad_specs_raise(spec):
    with pytest.raises(ParameterError):
        load_network(spec)


def test_cli_bad_spec_is_one_line_exit_2():
    p = subprocess.run(
        [sys.executable, "-m", "evroute", "info", "--network", "synthetic-country:12"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "evroute: error: a synthetic country's n_edges must be an integer in 2000..10000000, got 12"
    ]


def test_parameters_are_checked():
    with pytest.raises(ParameterError):
        synthetic_country(1000)
    with pytest.raises(ParameterError):
        synthetic_country(5000, max_incline=0.9)
    with pytest.raises(ParameterError):
        synthetic_country(5000, origin_lonlat=(0.0, 80.0))
