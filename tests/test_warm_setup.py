"""The warm set-up's shortcuts (issue 39): the line graph's content digest keys what is derived from it, the cached
optimal route is the Dijkstra's, oracles share the line graph's turn pattern, and the midpoints are the per-edge
means."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.environments import consistent, make_environment
from evroute.experiments.runner import load_linegraph
from evroute.linegraph import build_line_graph
from evroute.network.registry import load_network
from evroute.oracle import RouteOracle
from evroute.routes import resolve_route

NET = "synthetic:400:0"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "compute"
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(folder))
    return folder


def _entries(folder: Path, kind: str) -> list[Path]:
    return sorted(p for p in (folder / kind).glob("*") if p.suffix in (".npy", ".npz"))


def test_content_digest_follows_exactly_what_the_laplacian_and_contexts_are_made_of() -> None:
    net = load_network(NET)
    lg = build_line_graph(net)
    again = build_line_graph(load_network(NET))
    assert lg.content_digest() == again.content_digest()
    # one ulp of one length changes the Laplacian's weights and the contexts: another digest
    length = net.length_m.copy()
    length[5] = np.nextafter(length[5], np.inf)
    longer = build_line_graph(dataclasses.replace(net, length_m=length))
    assert longer.content_digest() != lg.content_digest()
    # the same turns and attributes under another name or edge ids: the same Laplacian, the same digest
    renamed = dataclasses.replace(net, name="other", edge_ids=np.char.add("x", net.edge_ids))
    assert build_line_graph(renamed).content_digest() == lg.content_digest()
    np.testing.assert_array_equal(build_line_graph(renamed).laplacian().toarray(), lg.laplacian().toarray())
    # one turn less: another digest
    fewer = build_line_graph(dataclasses.replace(net, turns=net.turns[1:]))
    assert fewer.content_digest() != lg.content_digest()


def test_cached_optimal_route_is_the_dijkstra_route_and_heals(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = load_linegraph(NET)
    route = resolve_route(lg, NET, "A", None, None)
    env = make_environment(lg, "consistent", {}, seed=2)
    assert isinstance(env, consistent.ConsistentEnvironment)
    fresh = RouteOracle(lg).shortest_route(env.reduced_wh, route.start, route.goal)
    small = env.optimal_route(route.start, route.goal)  # below the threshold: computed, nothing stored
    assert not _entries(cache, "reduced-route")
    monkeypatch.setattr(consistent, "ROUTE_CACHE_MIN_EDGES", 1)
    first = env.optimal_route(route.start, route.goal)  # computes and stores
    (entry,) = _entries(cache, "reduced-route")
    second = env.optimal_route(route.start, route.goal)  # loads
    for r in (small, first, second):
        np.testing.assert_array_equal(r.edges, fresh.edges)
        assert r.method == "dijkstra-reduced"
        assert r.cost == float(env.true_mean_wh[fresh.edges].sum())
    entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")
    with pytest.warns(UserWarning, match="optimal route"):
        healed = env.optimal_route(route.start, route.goal)
    np.testing.assert_array_equal(healed.edges, fresh.edges)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(env.optimal_route(route.start, route.goal).edges, fresh.edges)
    # other ends: another entry, the other route
    other = env.optimal_route(route.goal, route.start)
    np.testing.assert_array_equal(
        other.edges, RouteOracle(lg).shortest_route(env.reduced_wh, route.goal, route.start).edges
    )
    assert len(_entries(cache, "reduced-route")) == 2


def test_oracles_share_the_turn_pattern_and_keep_the_turns() -> None:
    lg = load_linegraph(NET)
    a, b = RouteOracle(lg), RouteOracle(lg)
    t = lg.turns
    np.testing.assert_array_equal(a.arc_tails, t[:, 0])
    np.testing.assert_array_equal(a.arc_heads, t[:, 1])
    assert a.arc_heads.dtype == np.int64 and a.arc_tails.dtype == np.int64
    assert a.arc_tails is b.arc_tails  # one copy of the pattern per line graph
    # a query on one oracle leaves the other's weights alone
    rng = np.random.default_rng(0)
    w1, w2 = rng.uniform(0.1, 2.0, lg.n_nodes), rng.uniform(0.1, 2.0, lg.n_nodes)
    r1 = a.shortest_route(w1, 0, lg.n_nodes - 1)
    b.shortest_route(w2, 0, lg.n_nodes - 1)
    assert a.shortest_route(w1, 0, lg.n_nodes - 1).cost == r1.cost


def _loop_end_headings(geometry: list[np.ndarray], scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-edge definition of :func:`evroute.network.headings.end_headings` (first and last segment longer than
    1e-12 of each scaled polyline, normalised)."""
    start, end = np.zeros((len(geometry), 2)), np.zeros((len(geometry), 2))
    for i, g in enumerate(geometry):
        d = np.diff(np.asarray(g, dtype=np.float64) * scale, axis=0)
        d = d[np.hypot(d[:, 0], d[:, 1]) > 1e-12]
        if len(d):
            start[i], end[i] = d[0], d[-1]
    for h in (start, end):
        n = np.hypot(h[:, 0], h[:, 1])
        h[n > 0] /= n[n > 0, None]
    return start, end


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=30), st.integers(0, 2**32 - 1))
def test_end_headings_equal_the_per_edge_loop(counts: list[int], seed: int) -> None:
    from evroute.network.headings import end_headings

    net = load_network("synthetic:200:0")
    rng = np.random.default_rng(seed)
    geometry = []
    for k in counts:  # random polylines with repeated points (degenerate segments) and single points
        g = rng.normal([6.1, 49.6], 0.001, size=(k, 2))
        if k > 2:
            g[1] = g[0]
        geometry.append(g)
    n = len(geometry)
    small = dataclasses.replace(net.subnetwork(np.arange(n)), geometry=geometry, turns=np.zeros((0, 2), dtype=np.int64))
    lat = float(np.mean([g[0, 1] for g in geometry]))
    want = _loop_end_headings(geometry, np.array([np.cos(np.radians(lat)), 1.0]))
    got = end_headings(small)
    np.testing.assert_array_equal(got[0], want[0])  # bit for bit: the same differences and divisions
    np.testing.assert_array_equal(got[1], want[1])


def test_cached_junction_codes_are_node_codes(cache: Path) -> None:
    from evroute.network._graph import node_codes

    load_network(NET)  # fills the cache
    net = load_network(NET)  # from the entry: its junction codes come with it
    assert net._junctions is not None
    (fi, ti), ids = node_codes(net.from_node, net.to_node)
    got = net.junction_codes()
    for a, b in zip(got, (fi, ti, ids), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_network_entry_packs_ascii_strings_and_keeps_the_others() -> None:
    from evroute.network import netstore

    net = load_network(NET)
    n = net.n_edges
    ids = net.edge_ids.astype("<U16")
    ids[3] = "kreuzung-ü"  # one non-ASCII id: the edge ids stay str
    meta = {**net.meta, "names": np.array(["a", "bé"] * (n // 2) + ["c"] * (n % 2)), "kinds": np.array(["x"] * n)}
    other = dataclasses.replace(net, edge_ids=ids, meta=meta)
    arrays = netstore.network_arrays(other)
    assert arrays["edge_ids"].dtype.kind == "U" and arrays["node_ids"].dtype.kind == "S"
    assert arrays["meta"]["kinds"].dtype.kind == "S" and arrays["meta"]["names"].dtype.kind == "U"
    back = netstore.network_from_arrays(arrays)
    for f in ("edge_ids", "from_node", "to_node"):
        assert getattr(back, f).dtype == getattr(other, f).dtype
        np.testing.assert_array_equal(getattr(back, f), getattr(other, f))
    for k in ("names", "kinds", "road_class"):
        assert back.meta[k].dtype == other.meta[k].dtype
        np.testing.assert_array_equal(back.meta[k], other.meta[k])
    # an ASCII network: its ids packed to a quarter of the bytes
    plain = netstore.network_arrays(net)
    assert plain["edge_ids"].dtype.kind == "S" and plain["edge_ids"].nbytes * 4 == net.edge_ids.nbytes


def test_the_prior_draw_does_not_keep_a_laplacian_it_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", "off")
    lg = build_line_graph(load_network(NET))
    env = make_environment(lg, "consistent", {}, seed=1)
    assert "laplacian" not in lg._cache and "incidence" not in lg._cache
    kept = build_line_graph(load_network(NET))
    lap = kept.laplacian()  # built before: it stays, the same object
    again = make_environment(kept, "consistent", {}, seed=1)
    assert kept._cache["laplacian"] is lap
    np.testing.assert_array_equal(again.true_mean_wh, env.true_mean_wh)  # the draw does not depend on it


@pytest.mark.parametrize("block", [64, 256, 512])
def test_profile_energy_in_blocks_is_the_one_pass_result(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from evroute.energy import VehicleProfile
    from evroute.energy import profile as prof

    rng = np.random.default_rng(block)
    n = 1000
    args = (
        rng.uniform(5, 500, n),
        rng.uniform(0, 30, n),
        rng.uniform(3, 35, n),
        rng.uniform(0, 30, n),
        rng.uniform(-0.1, 0.1, n),
        VehicleProfile.load("sumo_ev"),
    )
    whole = prof.profile_energy(*args)  # n < PHASE_BLOCK: one pass
    monkeypatch.setattr(prof, "PHASE_BLOCK", block)
    blocked = prof.profile_energy(*args)
    # bit for bit: rows are independent, and a block of a multiple of 64 rows takes the BLAS matrix-vector kernel's
    # full-width path for all of its rows but the same trailing remainder as one pass (n = 1000 leaves one)
    np.testing.assert_array_equal(blocked.battery_wh, whole.battery_wh)
    np.testing.assert_array_equal(blocked.time_s, whole.time_s)


def test_edge_prior_in_blocks_of_arms_is_the_one_pass_prior(monkeypatch: pytest.MonkeyPatch) -> None:
    from evroute.energy import VehicleProfile, edge_prior
    from evroute.energy import prior as pr
    from evroute.energy import profile as prof

    net = load_network("synthetic:2000:0")
    vehicle = VehicleProfile.load("sumo_ev")
    monkeypatch.setattr(prof, "PHASE_BLOCK", 64)
    monkeypatch.setattr(pr, "PRIOR_BLOCK", 1 << 30)  # one block: every arm at once
    whole = edge_prior(net, vehicle)
    monkeypatch.setattr(pr, "PRIOR_BLOCK", 128)  # ~40 blocks of arms, each a multiple of the quadrature's blocks
    blocked = edge_prior(net, vehicle)
    for f in ("energy_wh", "time_s", "stop_s", "cruise_s"):
        np.testing.assert_array_equal(getattr(blocked, f), getattr(whole, f), err_msg=f)  # bit for bit
