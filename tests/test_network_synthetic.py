"""Tests of the synthetic city generator and the shared junction-turn helper."""

from __future__ import annotations

import sys
from collections import Counter

import networkx as nx
import numpy as np
import pytest

import evroute
from evroute.errors import ParameterError
from evroute.network import RoadNetwork, synthetic_city
from evroute.network._graph import junction_turns, largest_scc_edges


def _haversine_m(lon1, lat1, lon2, lat2):
    r = 6_371_008.8
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return 2 * r * np.arcsin(np.sqrt(a))


@pytest.fixture(scope="module")
def city() -> RoadNetwork:
    return synthetic_city(1000, seed=0)


def test_same_seed_gives_identical_network(city):
    other = synthetic_city(1000, seed=0)
    for attr in ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns"):
        np.testing.assert_array_equal(getattr(city, attr), getattr(other, attr))
    assert all(np.array_equal(a, b) for a, b in zip(city.geometry, other.geometry, strict=True))


def test_different_seed_gives_different_network(city):
    other = synthetic_city(1000, seed=1)
    same_shape = other.n_edges == city.n_edges
    assert not same_shape or not np.array_equal(other.length_m, city.length_m)
    assert not np.allclose(np.sort(other.z_from_m)[:50], np.sort(city.z_from_m)[:50])


@pytest.mark.parametrize("n", [100, 1000, 20000])
def test_size_close_to_request(n):
    net = synthetic_city(n, seed=3)
    assert abs(net.n_edges - n) <= 0.1 * n
    assert net.name == f"synthetic:{n}:3"


def test_strongly_connected_turn_graph(city):
    assert nx.is_strongly_connected(city.turn_graph())
    assert len(largest_scc_edges(city.n_edges, city.turns)) == city.n_edges


def test_speed_classes_and_street_directions():
    net = synthetic_city(20000, seed=0)
    kmh = set(np.round(net.speed_mps * 3.6).astype(int).tolist())
    assert kmh == {30, 50, 70, 90}
    pairs = set(zip(net.from_node.tolist(), net.to_node.tolist(), strict=True))
    two_way = sum((v, u) in pairs for u, v in pairs)
    one_way = len(pairs) - two_way
    assert one_way > 0.03 * len(pairs)
    assert two_way > 0.5 * len(pairs)
    assert net.meta["oneway"].any() and not net.meta["oneway"].all()
    assert set(net.meta["road_class"].tolist()) == {"residential", "urban", "arterial", "expressway"}


def test_small_city_has_several_speed_classes(city):
    assert len(np.unique(city.speed_mps)) >= 3


def test_terrain_is_hilly_but_drivable(city):
    inc = np.abs(city.incline)
    assert 0.03 < inc.max() <= 0.1
    assert np.median(inc) > 0.005
    z = np.concatenate([city.z_from_m, city.z_to_m])
    assert z.min() >= 0 and z.max() <= 175
    big = synthetic_city(20000, seed=2)
    zb = np.concatenate([big.z_from_m, big.z_to_m])
    assert 40 < zb.max() - zb.min() <= 150 + 1e-9


def test_junction_heights_are_consistent(city):
    z = {}
    for nodes, zs in ((city.from_node, city.z_from_m), (city.to_node, city.z_to_m)):
        for n, v in zip(nodes.tolist(), zs.tolist(), strict=True):
            assert z.setdefault(n, v) == v


def test_geometry_matches_lengths_and_origin(city):
    for i in range(0, city.n_edges, 7):
        g = city.geometry[i]
        assert g.shape[1] == 2 and len(g) in (2, 3)
        seg = _haversine_m(g[:-1, 0], g[:-1, 1], g[1:, 0], g[1:, 1]).sum()
        assert seg == pytest.approx(city.length_m[i], rel=0.01)
    allpts = np.concatenate(city.geometry)
    assert abs(allpts[:, 0].mean() - 6.1) < 0.05 and abs(allpts[:, 1].mean() - 49.6) < 0.05
    assert 25 < city.length_m.min() and city.length_m.max() < 320
    assert 80 < city.length_m.mean() < 220
    assert any(len(g) == 3 for g in city.geometry)


def test_turns_are_all_non_uturn_pairs(city):
    frm, to = city.from_node, city.to_node
    neigh: dict[str, set[str]] = {}
    for u, v in zip(frm.tolist(), to.tolist(), strict=True):
        neigh.setdefault(u, set()).add(v)
        neigh.setdefault(v, set()).add(u)
    expected = set()
    out_of: dict[str, list[int]] = {}
    for i, u in enumerate(frm.tolist()):
        out_of.setdefault(u, []).append(i)
    for e1 in range(city.n_edges):
        v = to[e1]
        for e2 in out_of.get(v, []):
            if to[e2] != frm[e1] or len(neigh[v]) == 1:
                expected.add((e1, e2))
    assert set(map(tuple, city.turns.tolist())) == expected


def test_junction_turns_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        m = int(rng.integers(1, 25))
        f, t = rng.integers(0, n, m), rng.integers(0, n, m)
        got = set(map(tuple, junction_turns(f, t, n_nodes=n).tolist()))
        neigh = {
            k: {int(b) for a, b in zip(f, t, strict=True) if a == k and b != k}
            | {int(a) for a, b in zip(f, t, strict=True) if b == k and a != k}
            for k in range(n)
        }
        want = {
            (i, j) for i in range(m) for j in range(m) if t[i] == f[j] and (t[j] != f[i] or len(neigh[int(t[i])]) <= 1)
        }
        assert got == want


def test_ids_are_strings(city):
    assert city.edge_ids[0] == "e0" and city.from_node[0].startswith("n")
    assert city.index_of("e5") == 5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_edges": 5},
        {"n_edges": 10.5},
        {"n_edges": "many"},
        {"seed": -1},
        {"oneway_fraction": 1.5},
        {"max_incline": float("nan")},
        {"max_elevation_m": -3},
        {"origin_lonlat": (6.1, 91.0)},
    ],
)
def test_invalid_parameters(kwargs):
    with pytest.raises(ParameterError):
        synthetic_city(**kwargs)


def test_flat_option():
    net = synthetic_city(300, seed=1, max_elevation_m=0)
    assert np.all(net.incline == 0)


def _evroute_lines_executed(fn, *args, **kwargs) -> int:
    """Line events in ``evroute/`` source files while ``fn`` runs (``sys.settrace``; library code is not traced)."""
    root = evroute.__path__[0]
    lines: Counter[str] = Counter()

    def local(frame, event, arg):
        if event == "line":
            lines[frame.f_code.co_filename] += 1
        return local

    def on_call(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(root) else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        fn(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return sum(lines.values())


def test_city_generation_is_vectorised():
    """The generator's Python work does not grow with the city (all per-edge work is in NumPy): the lines of
    evroute code executed for 20 000 edges are about those for 2 000 (a few grid-size attempts, terrain waves), where
    one Python loop over the edges or junctions would add >= 18 000 line events."""
    small = _evroute_lines_executed(synthetic_city, 2_000, seed=0)
    large = _evroute_lines_executed(synthetic_city, 20_000, seed=0)
    assert 100 < small and large < 2 * small


@pytest.mark.slow
def test_large_city_has_the_requested_size():
    net = synthetic_city(200_000, seed=0)
    assert abs(net.n_edges - 200_000) <= 20_000
