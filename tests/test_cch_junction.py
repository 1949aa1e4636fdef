"""The junction-graph CCH (:mod:`evroute.cch_junction`) against Dijkstra on the line graph
(:class:`evroute.oracle.RouteOracle`): on random cities with random turn restrictions, U-turn bans and allowed
U-turns, and energies with regeneration made non-negative by the height potential, every route is a legal route of
the line graph from start to goal whose real cost is within the stated quantization bound of Dijkstra's optimum;
unreachable goals raise as the oracle does; weights with turn terms are refused."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_search_junction import CITY_GRID, restricted_city

from evroute.cch_junction import JunctionCCHIndex, hybrid_graph, junction_order
from evroute.driver.paths import potential_h
from evroute.energy import VehicleProfile
from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import LineGraph, build_line_graph
from evroute.network.synthetic import synthetic_city
from evroute.oracle import RouteOracle

pytest.importorskip("routingkit_cch")


def _no_fallback():  # a fallback factory for queries that must be certified on the junction graph
    raise AssertionError("the query fell back to the line graph")


@functools.lru_cache(maxsize=8)
def _graph(n: int, seed: int, ban: float, allow_u: float):
    """:func:`test_search_junction.restricted_city`, its junction-graph CCH index and its Dijkstra oracle."""
    g = restricted_city(n, seed, ban, allow_u)
    return g, JunctionCCHIndex(g), RouteOracle(g)


def _energy_arcs(lg: LineGraph, index: JunctionCCHIndex, rng: np.random.Generator, zeros: float) -> np.ndarray:
    """Turn weights as served: reduced costs ``m_v + h_u - h_v >= 0`` of edge energies ``m`` with regeneration
    (negative downhill: the potential drop plus a non-negative dissipation, some exactly 0)."""
    v = VehicleProfile()
    k = v.mass_kg * v.gravity_mps2 * v.recuperation_efficiency / 3600.0
    h = potential_h(lg.network, v)  # k z_to
    pot = k * (np.asarray(lg.network.z_to_m) - np.asarray(lg.network.z_from_m))
    m = pot + rng.exponential(50.0, lg.n_nodes) * (rng.random(lg.n_nodes) >= zeros)
    arcs = m[index.heads] + h[index.tails] - h[index.heads]
    return np.maximum(arcs, 0.0)  # rounding only: the exact values are >= 0


def _turns_ok(index: JunctionCCHIndex, path: np.ndarray) -> bool:
    keys = path[:-1] * index.linegraph.n_nodes + path[1:]
    k = np.minimum(np.searchsorted(index.arc_keys, keys), len(index.arc_keys) - 1)
    return bool(np.all(index.arc_keys[k] == keys))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CITY_GRID, zeros=st.floats(0.0, 0.3), by_node=st.booleans())
def test_junction_routes_are_legal_and_optimal_within_the_bound(size, seed, ban, allow_u, wseed, zeros, by_node):
    lg, index, oracle = _graph(size, seed, ban, allow_u)
    rng = np.random.default_rng(wseed)
    line = None
    if by_node:
        w = rng.exponential(100.0, lg.n_nodes) * (rng.random(lg.n_nodes) >= zeros)
        router = index.customize_nodes(w, lambda: line)
        ref = lambda s, g: oracle.shortest_route(w, s, g)  # noqa: E731
    else:
        a = _energy_arcs(lg, index, rng, zeros)
        assert index.turn_free(a)
        router = index.customize(a, lambda: line)
        ref = lambda s, g: oracle.shortest_route_arcs(a, s, g)  # noqa: E731
    from evroute.cch import CCHIndex

    line = CCHIndex(lg).customize_nodes(w) if by_node else CCHIndex(lg).customize(a)
    for s, g in rng.integers(0, lg.n_nodes, (15, 2)):
        try:
            want = ref(int(s), int(g))
        except UnreachableError:
            with pytest.raises(UnreachableError):
                router.route(int(s), int(g))
            continue
        got = router.route(int(s), int(g))
        assert got.edges[0] == s and got.edges[-1] == g and _turns_ok(index, got.edges)
        # the route's real cost is within the stated bound of the optimum and never below it; 1e-9 relative
        # covers the float sums' rounding
        tol = 1e-9 * max(1.0, want.cost)
        assert want.cost - tol <= got.cost <= want.cost + router.error_bound + tol
    assert router.junction_bound <= (index.n_hybrid + 2) * router.quantum * (1 + 1e-12)
    assert router.fallbacks <= router.queries


@pytest.mark.parametrize("size", [300, 1000])
def test_city_with_u_turn_bans_needs_no_fallback(size) -> None:
    """The synthetic city bans U-turns only: the end searches repair every U-turn next to an end, continuous random
    weights have no ties, so no query may fall back (the fallback factory raises)."""
    lg, index, oracle = _graph(size, 1, 0.0, 0.0)
    assert not index.restricted.any() and index.n_hybrid == index.n_junctions
    rng = np.random.default_rng(size)
    w = rng.exponential(1.0, lg.n_nodes)
    router = index.customize_nodes(w, _no_fallback)
    for s, g in rng.integers(0, lg.n_nodes, (150, 2)):
        got, want = router.route(int(s), int(g)), oracle.shortest_route(w, int(s), int(g))
        assert abs(got.cost - want.cost) <= router.error_bound + 1e-9 * want.cost
    assert router.fallbacks == 0 and router.queries == 150


def test_turn_terms_are_refused_and_bad_input_raises() -> None:
    lg, index, _ = _graph(60, 0, 0.0, 0.0)
    rng = np.random.default_rng(0)
    a = rng.exponential(1.0, index.n_arcs)  # a weight per turn: turn terms
    assert not index.turn_free(a)
    with pytest.raises(ParameterError, match="turn terms"):
        index.customize(a, _no_fallback)
    assert index.turn_free(rng.exponential(1.0, lg.n_nodes)[index.heads])
    with pytest.raises(ParameterError, match="non-negative"):
        index.customize_nodes(-np.ones(lg.n_nodes), _no_fallback)
    with pytest.raises(ParameterError, match="shape"):
        index.customize(np.ones(3), _no_fallback)
    router = index.customize_nodes(np.ones(lg.n_nodes), _no_fallback)
    with pytest.raises(ParameterError, match="outside"):
        router.route(0, lg.n_nodes)
    r = router.route(5, 5)
    assert list(r.edges) == [5] and r.cost == 1.0


def test_hybrid_graph_expands_only_junctions_with_turn_restrictions() -> None:
    """A plus-shaped crossing (junction 0, arms 1-4, two-way roads) with one left turn banned: junction 0 is split
    into one node per incoming edge, with an arc for each allowed turn; the arms stay plain."""
    arms = [1, 2, 3, 4]
    fi = np.array([a for a in arms] + [0] * 4)  # edges 0-3: arm -> centre; 4-7: centre -> arm
    ti = np.array([0] * 4 + arms)
    turns = [(i, 4 + j) for i in range(4) for j in range(4) if i != j and (i, j) != (0, 1)]
    turns += [(4 + j, j) for j in range(4)]  # U-turns at the arms' dead ends
    t = np.array(sorted(turns))
    restricted, head_node, arc_tail, arc_head, arc_edge = hybrid_graph(
        fi, ti, 5, t[:, 0], t[:, 1], t[:, 0] * 8 + t[:, 1]
    )
    assert restricted.tolist() == [True, False, False, False, False]
    assert head_node[:4].tolist() == [5, 6, 7, 8] and head_node[4:].tolist() == arms
    got = sorted(zip(arc_tail.tolist(), arc_head.tolist(), arc_edge.tolist(), strict=True))
    want = sorted(
        [(a, 5 + i, i) for i, a in enumerate(arms)]
        + [
            (5 + i, arms[j], 4 + j)
            for i, j in [(i, j) for i in range(4) for j in range(4) if i != j and (i, j) != (0, 1)]
        ]
    )
    assert got == want


@pytest.mark.parametrize("size", [60, 500])
def test_junction_order_is_a_permutation(size) -> None:
    lg = build_line_graph(synthetic_city(size, seed=2))
    from evroute.cch import junction_frame

    fi, ti, x, y = junction_frame(lg)
    order = junction_order(fi, ti, x, y, leaf=8)
    assert sorted(order.tolist()) == list(range(len(x)))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n_edges=st.integers(60, 400))
def test_root_separator_is_one_side_of_a_straight_cut(seed, n_edges) -> None:
    """``dissection(below=...)`` marks, for every edge its root cut crosses, the end below the cut: those ends and
    the other ends lie on opposite sides of one straight line along one of the cut directions."""
    from evroute.cch import dissection, junction_frame

    lg = build_line_graph(synthetic_city(n_edges, seed=seed))
    fi, ti, x, y = junction_frame(lg)
    below = np.zeros(len(fi), bool)
    depth, _, sep = dissection(fi, ti, x, y, below=below)
    root = np.flatnonzero(sep & (depth == 0))
    if not len(root):
        return
    lo = np.where(below[root], fi[root], ti[root])
    hi = np.where(below[root], ti[root], fi[root])
    found = False
    for t in np.arange(4) * (np.pi / 4):
        proj = x * np.cos(t) + y * np.sin(t)
        found |= bool(proj[lo].max() < proj[hi].min())
    assert found
