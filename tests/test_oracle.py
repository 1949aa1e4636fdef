import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from netfixtures import grid_network

from evroute.errors import NegativeCycleError, ParameterError, UnreachableError
from evroute.linegraph import LineGraph, build_line_graph
from evroute.network.road_network import RoadNetwork
from evroute.oracle import RouteOracle, best_simple_route, is_valid_route, optimal_route, route_cost


def random_linegraph(n: int, p: float, seed: int) -> LineGraph:
    """A random directed 'line graph' (turn graph) on n road edges, not restricted to its SCC."""
    rng = np.random.default_rng(seed)
    turns = np.array([(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < p]).reshape(-1, 2)
    net = RoadNetwork(
        name="rand",
        edge_ids=np.array([f"e{i}" for i in range(n)]),
        from_node=np.array([f"a{i}" for i in range(n)]),
        to_node=np.array([f"b{i}" for i in range(n)]),
        length_m=np.full(n, 10.0),
        speed_mps=np.full(n, 10.0),
        z_from_m=np.zeros(n),
        z_to_m=np.zeros(n),
        geometry=[np.zeros((2, 2))] * n,
        turns=turns,
    )
    return build_line_graph(net, largest_scc=False)


def nx_cost(lg: LineGraph, w: np.ndarray, s: int, t: int) -> float:
    g = nx.DiGraph()
    g.add_nodes_from(range(lg.n_nodes))
    for a, b in lg.turns:
        g.add_edge(int(a), int(b), weight=float(w[b]))
    return float(w[s] + nx.dijkstra_path_length(g, s, t, weight="weight"))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 25), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000))
def test_dijkstra_matches_networkx(n, p, seed):
    lg = random_linegraph(n, p, seed)
    rng = np.random.default_rng(seed)
    w = rng.exponential(size=n) * (rng.random(n) > 0.1)  # includes zero weights
    s, t = rng.integers(0, n, size=2)
    oracle = RouteOracle(lg)
    g = lg.to_networkx()
    if not nx.has_path(g, int(s), int(t)):
        with pytest.raises(UnreachableError):
            oracle.shortest_route(w, int(s), int(t))
        return
    route = oracle.shortest_route(w, int(s), int(t))
    assert route.edges[0] == s and route.edges[-1] == t
    assert is_valid_route(lg, route.edges)
    assert route.cost == pytest.approx(nx_cost(lg, w, int(s), int(t)), abs=1e-9)
    assert route.cost == pytest.approx(route_cost(w, route.edges))


def brute_force_best_simple(lg: LineGraph, w: np.ndarray, s: int, t: int) -> float:
    g = lg.to_networkx()
    if s == t:
        return float(w[s])
    return min(route_cost(w, np.array(p)) for p in nx.all_simple_paths(g, s, t))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(n=st.integers(3, 9), seed=st.integers(0, 10_000))
def test_optimal_route_with_negative_energies_is_best_simple_path(n, seed):
    lg = random_linegraph(n, 0.45, seed)
    rng = np.random.default_rng(seed)
    w = rng.normal(0.5, 1.5, size=n)
    s, t = (int(v) for v in rng.choice(n, size=2, replace=False))
    if not nx.has_path(lg.to_networkx(), s, t):
        return
    route = optimal_route(lg, w, s, t)
    assert is_valid_route(lg, route.edges)
    assert route.edges[0] == s and route.edges[-1] == t
    assert route.cost == pytest.approx(brute_force_best_simple(lg, w, s, t), abs=1e-9)


def test_negative_cycle_policy():
    # edges 0 -> 1 <-> 2 -> 3 with the cycle 1 <-> 2 of negative total energy
    net = RoadNetwork(
        name="cyc",
        edge_ids=list("abcd"),
        from_node=list("pqrs"),
        to_node=list("qrst"),
        length_m=np.ones(4),
        speed_mps=np.ones(4),
        z_from_m=np.zeros(4),
        z_to_m=np.zeros(4),
        geometry=[np.zeros((2, 2))] * 4,
        turns=np.array([(0, 1), (1, 2), (2, 1), (2, 3)]),
    )
    lg = build_line_graph(net, largest_scc=False)
    w = np.array([1.0, -2.0, -3.0, 1.0])
    with pytest.raises(NegativeCycleError, match="negative-energy cycle"):
        optimal_route(lg, w, 0, 3, on_negative_cycle="raise")
    r = best_simple_route(lg, w, 0, 3)
    assert r.edges.tolist() == [0, 1, 2, 3] and r.cost == pytest.approx(-3.0)
    assert optimal_route(lg, w, 0, 3).cost == pytest.approx(-3.0)


def test_optimal_route_without_negative_cycle_uses_bellman_ford():
    lg = build_line_graph(grid_network(4, 4, uturns=False))
    rng = np.random.default_rng(3)
    w = rng.normal(1.0, 0.3, size=lg.n_nodes)
    w[rng.choice(lg.n_nodes, 5, replace=False)] = -0.2
    r = optimal_route(lg, w, 0, lg.n_nodes - 1)
    assert r.cost == pytest.approx(best_simple_route(lg, w, 0, lg.n_nodes - 1).cost)


def test_bad_inputs():
    lg = build_line_graph(grid_network(3, 3))
    o = RouteOracle(lg)
    w = np.ones(lg.n_nodes)
    with pytest.raises(ParameterError):
        o.shortest_route(-w, 0, 1)
    with pytest.raises(ParameterError):
        o.shortest_route(w, 0, 10_000)
    w2 = w.copy()
    w2[3] = np.nan
    with pytest.raises(ParameterError):
        o.shortest_route(w2, 0, 1)
    assert o.shortest_route(w, 2, 2).edges.tolist() == [2]


def test_route_is_reproducible_across_calls():
    lg = build_line_graph(grid_network(5, 5))
    o = RouteOracle(lg)
    w = np.random.default_rng(0).exponential(size=lg.n_nodes)
    a, b = o.shortest_route(w, 0, 7), o.shortest_route(w, 0, 7)
    assert np.array_equal(a.edges, b.edges)
    assert list(itertools.pairwise(a.edges))  # at least one turn


def _rectified_whole_array(mean: np.ndarray, var: np.ndarray | float) -> np.ndarray:
    """:func:`rectified_gaussian_mean` as it was before it evaluated each branch on its own half (commit 79808c8)."""
    import math

    from scipy.special import erfcx, ndtr

    mean = np.asarray(mean, dtype=np.float64)
    s = np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(s > 0, mean / np.where(s > 0, s, 1.0), 0.0)
    pos = a >= 0
    ap, an = np.maximum(a, 0.0), np.minimum(a, 0.0)
    out_pos = s * (np.exp(-0.5 * ap**2) / math.sqrt(2 * math.pi) + ap * ndtr(ap))
    out_neg = s * np.exp(-0.5 * an**2) * (1 / math.sqrt(2 * math.pi) + 0.5 * an * erfcx(-an / math.sqrt(2)))
    out = np.where(pos, out_pos, out_neg)
    return np.where(s > 0, np.maximum(out, 0.0), np.maximum(mean, 0.0))


@pytest.mark.parametrize("n", [1, 7, 1000, 20_003])
def test_rectified_mean_is_bit_for_bit_the_whole_array_formula(n: int) -> None:
    # the bandit's oracle weights, hence every route of the committed studies, must not change in the last bit
    from evroute.oracle import rectified_gaussian_mean

    rng = np.random.default_rng(n)
    mean = rng.normal(0, 5, n) * rng.choice([1e-3, 1.0, 30.0, 1e4], n)
    var = np.abs(rng.normal(0, 3, n))
    var[::5] = 0.0
    for v in (var, 4.0, 0.0, 1e-30):
        np.testing.assert_array_equal(rectified_gaussian_mean(mean, v), _rectified_whole_array(mean, v))


def test_ndtr_is_one_from_the_cut() -> None:
    from scipy.special import ndtr

    from evroute.oracle import _NDTR_ONE

    x = np.concatenate([np.linspace(_NDTR_ONE, 40.0, 2_000_001), np.geomspace(40.0, 1e308, 10_000), [np.inf]])
    assert np.all(ndtr(x) == 1.0)
