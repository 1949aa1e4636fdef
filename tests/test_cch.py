"""The CCH route engine (:mod:`evroute.cch`) against Dijkstra (:class:`evroute.oracle.RouteOracle`) on random graphs
and weights: every route is a legal route from start to goal whose real cost is within the stated quantization
bound of Dijkstra's optimum; unreachable goals and bad weights raise as the oracle does."""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evroute.cch import CUT_QUANTILES, CCHIndex, dissection, dissection_order, junction_frame
from evroute.errors import ParameterError, UnreachableError
from evroute.linegraph import build_line_graph
from evroute.network.synthetic import synthetic_city
from evroute.oracle import RouteOracle, is_valid_route

pytest.importorskip("routingkit_cch")


@functools.lru_cache(maxsize=4)
def _graph(n: int, seed: int):
    lg = build_line_graph(synthetic_city(n, seed=seed))
    return lg, CCHIndex(lg), RouteOracle(lg)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.sampled_from([40, 150, 400]),
    seed=st.integers(0, 3),
    wseed=st.integers(0, 10_000),
    scale=st.sampled_from([1e-3, 1.0, 1e4]),
    zeros=st.floats(0.0, 0.5),
)
def test_cch_routes_are_optimal_within_the_quantization_bound(size, seed, wseed, scale, zeros) -> None:
    lg, index, oracle = _graph(size, seed)
    rng = np.random.default_rng(wseed)
    w = rng.exponential(scale, lg.n_nodes) * (rng.random(lg.n_nodes) >= zeros)  # some free edges: ties
    a = rng.exponential(scale, index.n_arcs) * (rng.random(index.n_arcs) >= zeros)
    by_node, by_arc = index.customize_nodes(w), index.customize(a)
    for s, g in rng.integers(0, lg.n_nodes, (12, 2)):
        for router, ref in (
            (by_node, lambda s, g: oracle.shortest_route(w, s, g)),
            (by_arc, lambda s, g: oracle.shortest_route_arcs(a, s, g)),
        ):
            try:
                want = ref(int(s), int(g))
            except UnreachableError:
                with pytest.raises(UnreachableError):
                    router.route(int(s), int(g))
                continue
            got = router.route(int(s), int(g))
            assert got.edges[0] == s and got.edges[-1] == g and is_valid_route(lg, got.edges)
            # the route is optimal for the rounded weights: its real cost is within the bound of the optimum, and
            # never below it (the optimum is the optimum); 1e-9 relative covers the float sums' rounding
            assert (
                want.cost - 1e-9 * max(1.0, want.cost)
                <= got.cost
                <= want.cost + router.error_bound + 1e-9 * max(1.0, want.cost)
            )
            assert router.error_bound <= lg.n_nodes * (float(router.arc_weights.sum()) / 2**30) * (1 + 1e-12) + 1e-300


def test_cch_refuses_bad_weights_and_indices() -> None:
    lg, index, _ = _graph(40, 0)
    with pytest.raises(ParameterError, match="non-negative"):
        index.customize_nodes(-np.ones(lg.n_nodes))
    with pytest.raises(ParameterError, match="shape"):
        index.customize(np.ones(3))
    router = index.customize_nodes(np.ones(lg.n_nodes))
    with pytest.raises(ParameterError, match="outside"):
        router.route(0, lg.n_nodes)
    r = router.route(5, 5)
    assert list(r.edges) == [5] and r.cost == 1.0


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), charge=st.floats(0.02, 0.9), engine=st.sampled_from(["cch", "cch-line"]))
def test_route_query_on_cch_answers_what_dijkstra_answers(seed, charge, engine) -> None:
    """The driver's query with ``engine="cch"`` against ``engine="dijkstra"``: energy-optimal, shortest and fastest
    routes of the same cost (within the quantization bound), and a risk-aware answer of the same feasibility."""
    from evroute.driver.answers import BatteryState
    from evroute.driver.belief import RouteBelief
    from evroute.driver.query import QueryContext, route_query
    from evroute.energy import VehicleProfile
    from evroute.models.store import prior_model

    lg, _, _ = _graph(400, 1)
    v = VehicleProfile()
    m = prior_model("bi", lg, v)
    rng = np.random.default_rng(seed)
    e = rng.integers(0, lg.n_nodes, 80)
    m.update(e, m.posterior().mean[e] * rng.uniform(0.5, 1.5, 80))
    b = RouteBelief(m)
    fast, ref = QueryContext(lg, b, v, engine=engine), QueryContext(lg, b, v, engine="dijkstra")
    assert (fast.engine, ref.engine) == (engine, "dijkstra")
    bat = BatteryState.from_vehicle(v, charge, 0.01)
    with mock.patch("evroute.cch_junction.JUNCTION_MIN_NODES", 0):  # the junction graph at this size too
        junction = type(fast.least_router()).__name__ == "JunctionRouter"
        assert junction == (engine == "cch") and junction == (
            type(fast.node_router("fastest")).__name__ == "JunctionRouter"
        )
    for s, g in rng.integers(0, lg.n_nodes, (5, 2)):
        got, want = route_query(fast, int(s), int(g), bat), route_query(ref, int(s), int(g), bat)
        mu_got, mu_want = fast.least_mean_route(int(s), int(g))[0], ref.least_mean_route(int(s), int(g))[0]
        bound = fast.least_router().error_bound
        assert mu_want - 1e-9 <= mu_got <= mu_want + bound + 1e-9
        net = lg.network
        for kind, w in (("shortest", net.length_m), ("fastest", fast.time_s)):
            a, b_ = w[got.routes[kind]].sum(), w[want.routes[kind]].sum()
            assert b_ - 1e-9 <= a <= b_ + fast.node_router(kind).error_bound + 1e-9
        assert got.risk is not None and want.risk is not None
        assert got.risk.feasible == want.risk.feasible or abs(got.risk.mean_wh - want.risk.mean_wh) < 1e-3


def test_unknown_engine_is_refused() -> None:
    from evroute.driver.belief import RouteBelief
    from evroute.driver.query import QueryContext
    from evroute.energy import VehicleProfile
    from evroute.models.store import prior_model

    lg, _, _ = _graph(40, 0)
    with pytest.raises(ParameterError, match="route engine"):
        QueryContext(lg, RouteBelief(prior_model("bi", lg, VehicleProfile())), VehicleProfile(), engine="ch")


def _nested(depth: np.ndarray, path: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whether the cells of ``u`` and ``v`` (:func:`dissection`) are nested: the shallower path is a prefix."""
    lo = np.minimum(depth[u], depth[v])
    return (path[u] >> (depth[u] - lo)) == (path[v] >> (depth[v] - lo))


@settings(max_examples=40, deadline=None)
@given(
    n_junctions=st.integers(2, 60),
    n_edges=st.integers(1, 300),
    seed=st.integers(0, 10_000),
    leaf=st.integers(1, 8),
)
def test_dissection_separates_every_turn(n_junctions, n_edges, seed, leaf) -> None:
    """On random junction graphs at random positions (not planar, not geometric): every turn ``u -> v`` (``u`` ends
    where ``v`` starts) joins edges of nested cells, i.e. the separators separate; every non-leaf cell is split."""
    rng = np.random.default_rng(seed)
    fi = rng.integers(0, n_junctions, n_edges)
    ti = (fi + rng.integers(1, n_junctions, n_edges)) % n_junctions  # no self-loops: every cell can be cut
    x, y = rng.normal(size=n_junctions), rng.normal(size=n_junctions)
    depth, path, sep = dissection(fi, ti, x, y, leaf=leaf)
    u, v = np.nonzero(ti[:, None] == fi[None, :])
    assert _nested(depth, path, u, v).all()
    # an edge in a leaf cell shares it with at most leaf - 1 others; the recursion ends (depth bounded by log2)
    leaves = ~sep
    if leaves.any():
        key = depth[leaves] * 2**40 + path[leaves]
        assert np.unique(key, return_counts=True)[1].max() <= leaf
    assert depth.max() <= 2 * np.log2(n_edges + 1) + 2


def test_dissection_ends_when_no_line_cuts() -> None:
    """Self-loops at junctions of one position cannot be cut: they become one leaf cell, the recursion ends."""
    fi = ti = np.array([0, 0, 1, 1, 0] * 20)
    depth, path, sep = dissection(fi, ti, np.zeros(2), np.zeros(2), leaf=4)
    assert not sep.any() and (depth == 0).all() and (path == 0).all()


@pytest.mark.parametrize("size", [400, 3000])
def test_dissection_order_is_a_permutation_with_separators_last(size) -> None:
    """On the synthetic city: the order ranks every line-graph node once, every turn joins nested cells, the root's
    cut is small and ranks last."""
    lg = _graph(size, 0)[0]
    order = dissection_order(lg)
    assert np.array_equal(np.sort(order), np.arange(lg.n_nodes))
    depth, path, sep = dissection(*junction_frame(lg))
    _, heads, tails = lg.arc_pattern()
    assert _nested(depth, path, tails, heads).all()
    root = np.flatnonzero(sep & (depth == 0))
    assert len(root) and set(order[-len(root) :].tolist()) == set(root.tolist())
    # a straight cut through the jittered grid of ~E / 3.4 junctions crosses ~sqrt(E / 3.4) streets, two edges each
    # (plus diagonals): ~1.1 sqrt(E); a cut that ignored geometry would take ~E / 2
    assert len(root) <= 4 * np.sqrt(lg.n_nodes)


def test_inertial_order_gives_the_same_costs() -> None:
    """RoutingKit's own order and the dissection order: the same optimal costs (within both quantization bounds)."""
    lg, index, oracle = _graph(400, 2)
    other = CCHIndex(lg, order="inertial")
    w = np.random.default_rng(1).exponential(1.0, lg.n_nodes)
    a, b = index.customize_nodes(w), other.customize_nodes(w)
    for s, g in np.random.default_rng(2).integers(0, lg.n_nodes, (20, 2)):
        ca, cb = a.route(int(s), int(g)).cost, b.route(int(s), int(g)).cost
        assert abs(ca - cb) <= a.error_bound + b.error_bound + 1e-9 * max(1.0, ca)
    with pytest.raises(ParameterError, match="unknown CCH order"):
        CCHIndex(lg, order="metis")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_edges=st.integers(40, 300), median_only=st.booleans())
def test_root_cut_is_the_fewest_crossings_over_directions_and_positions(seed, n_edges, median_only) -> None:
    """The root separator of :func:`dissection` is a straight cut with the fewest crossing edges over the tried
    directions and positions (brute force: every direction and quantile, crossings ``min(pa, pb) < c <= max``)."""
    rng = np.random.default_rng(seed)
    n_j = max(4, n_edges // 2)
    x, y = rng.random(n_j), rng.random(n_j)
    fi, ti = rng.integers(0, n_j, n_edges), rng.integers(0, n_j, n_edges)
    qs = (0.5,) if median_only else CUT_QUANTILES
    depth, path, sep = dissection(fi, ti, x, y, leaf=8, quantiles=qs)
    best = np.inf
    for t in np.arange(4) * (np.pi / 4):
        p = x * np.cos(t) + y * np.sin(t)
        pa, pb = p[fi], p[ti]
        mids = np.sort(0.5 * (pa + pb))
        for q in qs:
            c = mids[min(int(q * n_edges), n_edges - 1)]
            best = min(best, int(np.sum((np.minimum(pa, pb) < c) & (c <= np.maximum(pa, pb)))))
    assert int(np.sum(sep & (depth == 0))) == best
