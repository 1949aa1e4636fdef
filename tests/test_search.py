"""The compiled lazy Thompson search (evroute.search): its counter-based normals, its weights, and its routes against
SciPy's Dijkstra on every weight of the same round."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from test_oracle import random_linegraph

from evroute import search
from evroute.errors import ParameterError, UnreachableError
from evroute.oracle import MIN_WEIGHT_WH, RouteOracle, is_valid_route, rectified_gaussian_mean
from evroute.search import ConjugateNormalState, LazyThompsonEngine

if not search.numba_available():  # pragma: no cover - numba is a dependency
    pytest.skip("numba is not installed", allow_module_level=True)


def test_counter_normals_are_standard_normal():
    """200k numbers of one key: mean and variance within 4 standard errors (1/sqrt(n), sqrt(2/n)); the KS test of
    N(0, 1) does not reject at 1e-3 (a fixed key: the test is deterministic, and passes for the keys 1..5 too)."""
    n = 200_000
    for key in (1, 2, 3, 4, 5):
        z = search.standard_normals(key, np.arange(n))
        assert abs(z.mean()) < 4 / np.sqrt(n)
        assert abs(z.var() - 1) < 4 * np.sqrt(2 / n)
        assert stats.kstest(z, "norm").pvalue > 1e-3
    # two keys are independent streams: correlation within 4 standard errors of 0
    a, b = search.standard_normals(11, np.arange(n)), search.standard_normals(12, np.arange(n))
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / np.sqrt(n)
    # neighbouring indices too (a hash, not a sequence)
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 4 / np.sqrt(n)


def test_counter_normals_do_not_depend_on_order():
    idx = np.arange(1000)
    perm = np.random.default_rng(0).permutation(1000)
    z = search.standard_normals(7, idx)
    assert np.array_equal(search.standard_normals(7, perm), z[perm])
    assert np.array_equal(search.standard_normals(7, idx[500:]), z[500:])
    assert not np.array_equal(search.standard_normals(8, idx), z)
    with pytest.raises(ParameterError):
        search.standard_normals(-1, idx)


def test_rectified_mean_matches_the_oracles():
    """The compiled erfc form against the oracle's erfcx form: relative error below 1e-12 for a >= -8 and 1e-9 down to
    a = -38 (the cancellation of the two terms costs about a^4 eps; measured 6e-13 and 3e-10)."""
    a = np.linspace(-38, 20, 5001)
    for s in (0.01, 1.0, 30.0):
        mu, var = a * s, np.full_like(a, s * s)
        got, ref = search.rectified_mean(mu, var), rectified_gaussian_mean(mu, var)
        rel = np.abs(got - ref) / np.maximum(ref, 1e-300)
        assert rel[a >= -8].max() < 1e-12
        assert rel.max() < 1e-9
    assert np.array_equal(search.rectified_mean(np.array([-1.0, 2.0]), np.zeros(2)), [0.0, 2.0])


def _state(rng: np.random.Generator, n: int, *, positive: bool) -> ConjugateNormalState:
    """BI statistics: prior means 1-10 Wh, prior sd 40% (``positive``: 5%, so no weight is rectified towards 0 and
    ties are improbable), some edges observed."""
    m0 = rng.uniform(1.0, 10.0, n)
    count = rng.integers(0, 4, n).astype(float)
    total = count * (m0 + rng.normal(0.0, 1.0, n))
    sd = (0.05 if positive else 0.4) * m0
    return ConjugateNormalState(m0, sd**2, count, total, np.full(n, 0.25 if positive else 1.0))


def test_weights_are_the_policys_formula():
    """thompson_weights = max(E[max(0, N(mean + std z - potential, noise))], MIN_WEIGHT_WH) with the BI model's
    posterior (evroute.models.bi) and the counter normals z, to the rectified mean's precision (1e-9 relative)."""
    from evroute.models.bi import BayesianEdgeModel

    rng = np.random.default_rng(3)
    n = 2000
    m = BayesianEdgeModel(rng.uniform(1, 10, n), 4.0, 1.5)
    edges = rng.integers(0, n, 5000)
    m.update(edges, rng.normal(5, 2, len(edges)))
    post = m.posterior()
    pot = rng.normal(0, 3, n)
    z = search.standard_normals(99, np.arange(n))
    ref = np.maximum(rectified_gaussian_mean(post.mean + post.std * z - pot, post.noise_var), MIN_WEIGHT_WH)
    got = search.thompson_weights(m.conjugate_state(), 99, pot)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=0)
    assert got.min() >= MIN_WEIGHT_WH


@settings(max_examples=80, deadline=None)
@given(n=st.integers(3, 40), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000), positive=st.booleans())
def test_lazy_route_is_dijkstras_on_every_weight(n, p, seed, positive):
    """The lazy bidirectional search returns SciPy's Dijkstra route on all weights of the same key (the same route
    when no weight is rectified towards 0, so ties are improbable; the same cost to 1e-12 relative always), and the
    engine's reused state does not leak between rounds."""
    lg = random_linegraph(n, p, seed)
    rng = np.random.default_rng(seed)
    state = _state(rng, lg.n_nodes, positive=positive)
    pot = rng.normal(0, 2, lg.n_nodes) if not positive else None
    eng, oracle = LazyThompsonEngine(lg), RouteOracle(lg)
    for key in range(3):
        s, t = (int(x) for x in rng.integers(0, lg.n_nodes, 2))
        w = search.thompson_weights(state, key, pot)
        try:
            ref = oracle.shortest_route(w, s, t)
        except UnreachableError:
            with pytest.raises(UnreachableError):
                eng.route(state, key, s, t, pot)
            continue
        got = eng.route(state, key, s, t, pot)
        assert got is not None
        assert got.edges[0] == s and got.edges[-1] == t and is_valid_route(lg, got.edges)
        assert got.cost == pytest.approx(ref.cost, rel=1e-12)
        assert got.cost == pytest.approx(float(w[got.edges].sum()), rel=1e-12)
        if positive:
            assert np.array_equal(got.edges, ref.edges)
        assert np.all(eng._wv == -1.0) and np.all(eng._posf == -1) and np.all(eng._posb == -1)


def test_lazy_search_draws_only_what_it_touches_and_gives_up_on_request():
    from netfixtures import grid_network

    from evroute.linegraph import build_line_graph

    lg = build_line_graph(grid_network(12, 12))
    state = _state(np.random.default_rng(0), lg.n_nodes, positive=True)
    eng = LazyThompsonEngine(lg)
    r = eng.route(state, 5, 0, 1)  # neighbours: a short route settles a small part
    assert r is not None
    st_ = eng.last_stats
    assert st_["draws"] < lg.n_nodes / 2
    assert st_["settled_forward"] + st_["settled_backward"] <= st_["draws"] + 1
    far = lg.n_nodes - 1
    assert eng.route(state, 5, 0, far, max_settled=3) is None
    assert eng.route(state, 5, 0, far) is not None
    assert eng.route(state, 5, 4, 4).edges.tolist() == [4]
    with pytest.raises(ParameterError):
        eng.route(state, 5, 0, lg.n_nodes)
    with pytest.raises(ParameterError):
        eng.route(ConjugateNormalState(*(a[:-1] for a in state.arrays())), 5, 0, 1)


def _bandit(lazy_ts, seed=3, policy="ts"):
    from evroute.bandit import RoutingBandit
    from evroute.environments import make_environment
    from evroute.experiments.registry import make_model
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.policies import make_policy
    from evroute.routes import corner_route

    lg = build_line_graph(load_network("synthetic:300:2"))
    env = make_environment(lg, "consistent", {}, seed=1)
    s, g = corner_route(lg, "A")
    return RoutingBandit(env, make_model("bi", env), make_policy(policy), s, g, seed=seed, lazy_ts=lazy_ts)


def test_bandit_lazy_rounds_are_reproducible_resumable_and_off_below_the_threshold():
    """``lazy_ts=True``: valid routes, the same ones from the same seed, and a run restored from its state after 6
    rounds plays rounds 7-12 as the uninterrupted run; the default keeps the full draw on a small network (so the
    committed studies' streams are unchanged) and does not add a state key there; other policies refuse it."""
    whole = _bandit(True)
    ref = [(r.route, r.observed_wh) for r in whole.run(12)]
    assert ref == [(r.route, r.observed_wh) for r in _bandit(True).run(12)]
    net = whole.env.linegraph.network
    ids = {e: i for i, e in enumerate(net.edge_ids.tolist())}
    for route, _ in ref:
        assert is_valid_route(whole.env.linegraph, np.array([ids[e] for e in route.split()]))
    first = _bandit(True)
    first.run(6)
    snap = first.state()
    assert snap["lazy_ts"] is True
    resumed = _bandit(True)
    resumed.load_state(snap)
    assert [(r.route, r.observed_wh) for r in resumed.run(6)] == ref[6:]
    default = _bandit(None)
    assert default._lazy is None and "lazy_ts" not in default.state()
    full = _bandit(False)
    assert [r.route for r in default.run(5)] == [r.route for r in full.run(5)]
    with pytest.raises(ParameterError):
        _bandit(True, policy="ucb")


def test_bandit_leaves_the_lazy_search_when_it_covers_the_graph(monkeypatch):
    """By default (``lazy_ts=None``, here forced on by lowering the size threshold) a round whose search would settle
    more than LAZY_TS_MAX_SHARE of the nodes gives up, plays the full draw, and the run stays on it (the state says
    so, and a restored run follows)."""
    import evroute.bandit as B

    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    monkeypatch.setattr(B, "LAZY_TS_EXPECTED_SHARE", 2.0)  # build the engine whatever the route's extent
    monkeypatch.setattr(B, "LAZY_TS_MAX_SHARE", 1e-9)  # every search gives up at once
    b = _bandit(None)
    assert b._lazy is not None
    rec = b.step()
    assert b._lazy is None and b.state()["lazy_ts"] is False
    assert rec.route_edges >= 1
    fresh = _bandit(None)
    fresh.load_state(b.state())
    assert fresh._lazy is None
    monkeypatch.setattr(B, "LAZY_TS_MAX_SHARE", 1.0)  # never gives up: stays lazy
    c = _bandit(None)
    c.run(3)
    assert c._lazy is not None


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000), floor=st.booleans())
def test_node_weighted_route_is_the_oracles(n, p, seed, floor):
    """The compiled route has the SciPy oracle's cost as the same float and, weights being distinct, its edges (with
    ``floor``, a third of the weights sit at MIN_WEIGHT_WH: still one minimum); the same errors."""
    lg = random_linegraph(n, p, seed)
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.0, 20.0, n)
    if floor:
        w[rng.random(n) < 1 / 3] = MIN_WEIGHT_WH * rng.uniform(1.0, 2.0)
    s, g = (int(x) for x in rng.integers(n, size=2))
    try:
        ref = RouteOracle(lg).shortest_route(w, s, g)
    except UnreachableError:
        with pytest.raises(UnreachableError):
            search.node_weighted_route(lg, w, s, g)
        return
    got = search.node_weighted_route(lg, w, s, g)
    assert got.cost == ref.cost and is_valid_route(lg, got.edges) and got.edges[0] == s and got.edges[-1] == g
    assert float(w[got.edges].sum()) == pytest.approx(ref.cost, rel=1e-12)
    costs = sorted(float(w[r].sum()) for r in (got.edges, ref.edges))
    assert np.array_equal(got.edges, ref.edges) or costs[1] - costs[0] <= 1e-12 * costs[1]  # a tie up to rounding
    with pytest.raises(ParameterError, match="non-negative"):  # as the oracle, even when start is the goal
        search.node_weighted_route(lg, -w - 1.0, s, g)


def test_bandit_full_rounds_search_compiled_from_the_threshold(monkeypatch):
    """From LAZY_TS_MIN_ARMS edge arms (lowered) a round that draws every edge (lazy search not built) routes by the
    compiled bucket search: the same routes and record as SciPy's (lazy_ts=False); below it SciPy's."""
    import evroute.bandit as B

    assert not _bandit(None)._compiled_oracle  # the small studies: SciPy's search
    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    monkeypatch.setattr(B, "LAZY_TS_EXPECTED_SHARE", -1.0)  # no lazy engine: every round draws every edge
    b = _bandit(None)
    assert b._lazy is None and b._compiled_oracle
    assert [r.route for r in b.run(4)] == [r.route for r in _bandit(False).run(4)]


def test_bidirectional_share_predicts_the_searches_and_chooses_the_engine(monkeypatch):
    """The geometric estimate counts the edges' first points within half the ends' distance of either end (brute
    force, one node at a time); on the cross-city corner route it is large and within a factor 2 of what the lazy
    search settles, on neighbouring edges small; by default (size threshold lowered) the bandit builds no engine for
    the wide route."""
    import math

    import evroute.bandit as B

    b = _bandit(True)
    lg, s, g = b.env.linegraph, b.start, b.goal
    est = search.bidirectional_share(lg, s, g)
    xy = np.array([np.asarray(g)[0] for g in lg.network.geometry])
    c = math.cos(math.radians(float(np.mean(xy[:, 1]))))
    d = lambda i, j: math.hypot(c * (xy[i, 0] - xy[j, 0]), xy[i, 1] - xy[j, 1])  # noqa: E731
    r = d(s, g) / 2
    brute = sum((d(v, s) <= r) + (d(v, g) <= r) for v in range(lg.n_nodes)) / lg.n_nodes
    assert est == pytest.approx(brute, abs=1.0 / lg.n_nodes)  # a node exactly on a circle may round either way
    eng = LazyThompsonEngine(lg)
    eng.route(b.model.conjugate_state(), 7, s, g, b._arm_potential)
    settled = (eng.last_stats["settled_forward"] + eng.last_stats["settled_backward"]) / lg.n_nodes
    assert est > 0.3 and 0.5 * settled <= est <= 2.0 * settled
    near = int(np.argsort([d(v, s) for v in range(lg.n_nodes)])[1])
    assert search.bidirectional_share(lg, s, near) < 0.1
    with pytest.raises(ParameterError):
        search.bidirectional_share(lg, s, lg.n_nodes)
    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    assert _bandit(None)._lazy is None  # the corner route: estimated above the break-even, no engine


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.05, 0.6), seed=st.integers(0, 10_000))
def test_one_to_all_is_scipys_dijkstra(n, p, seed):
    """Distances equal SciPy's (1e-12 relative: the same sums along possibly other equal-cost paths), the same nodes
    unreached, and every predecessor is a tight arc of the returned distances (a shortest-path tree)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    rng = np.random.default_rng(seed)
    dense = (rng.random((n, n)) < p) * rng.exponential(size=(n, n)) * (rng.random((n, n)) > 0.1)
    mask = (rng.random((n, n)) < p) & ~np.eye(n, dtype=bool)
    g = sp.csr_matrix((dense[mask], np.nonzero(mask)), shape=(n, n))  # explicit zeros kept: zero-weight arcs
    g.sort_indices()
    start = int(rng.integers(n))
    ref = dijkstra(g, directed=True, indices=start)
    dist, pred = search.one_to_all(g.indptr, g.indices, g.data, start)
    assert np.array_equal(np.isfinite(dist), np.isfinite(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(dist[fin], ref[fin], rtol=1e-12, atol=1e-12)
    assert pred[start] == -9999 and np.all(pred[~fin] == -9999)
    for v in np.flatnonzero(fin):
        if v != start:
            u = int(pred[v])
            arc = g.indptr[u] + np.searchsorted(g.indices[g.indptr[u] : g.indptr[u + 1]], v)
            assert dist[v] == pytest.approx(dist[u] + g.data[arc], rel=1e-12, abs=1e-12)


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(2, 40),
    p=st.floats(0.05, 0.6),
    seed=st.integers(0, 10_000),
    ratio=st.floats(1.0, 1e6),
    zeros=st.floats(0.0, 0.5),
    parts=st.sampled_from([16.0, 0.25]),
    ring=st.sampled_from([1 << 14, 2, 3]),
    target=st.booleans(),
)
def test_one_to_all_labels_are_scipys_bit_for_bit(n, p, seed, ratio, zeros, parts, ring, target):
    """Arcs spread over ``ratio`` with a share of zeros, buckets wide (label correcting inside them) or not, a ring
    so short that labels wait in its farthest slot: every label is SciPy's float (one_to_all's doc: the least fixed
    point), and every predecessor a tight arc; with a target, its label and route."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    rng = np.random.default_rng(seed)
    mask = (rng.random((n, n)) < p) & ~np.eye(n, dtype=bool)
    w = 10.0 ** rng.uniform(-3, 3) * np.exp(rng.uniform(0.0, np.log(ratio), mask.sum()))
    w[rng.random(len(w)) < zeros] = 0.0
    g = sp.csr_matrix((w, np.nonzero(mask)), shape=(n, n))  # explicit zeros kept: zero-weight arcs
    g.sort_indices()
    start, goal = (int(x) for x in rng.integers(n, size=2))
    saved = search.BUCKET_MEAN_PARTS, search.BUCKET_RING
    try:
        search.BUCKET_MEAN_PARTS, search.BUCKET_RING = parts, ring
        dist, pred = search.one_to_all(g.indptr, g.indices, g.data, start, goal if target else -1)
    finally:
        search.BUCKET_MEAN_PARTS, search.BUCKET_RING = saved
    ref = dijkstra(g, directed=True, indices=start)
    check = [goal] if target else range(n)
    assert np.array_equal(dist[check], ref[check])
    assert pred[start] == -9999
    for v in check:
        while np.isfinite(ref[v]) and v != start:  # the route: tight arcs back to the start
            u = int(pred[v])
            assert dist[v] == dist[u] + g[u, v] and dist[u] == ref[u]
            v = u
        assert np.isfinite(ref[v]) or pred[v] == -9999


def test_bucket_pool_overflow_is_reported_not_written_past():
    """A pool too small for the label falls returns -1 (one_to_all then retries with twice the pool)."""
    from evroute.search import bucket_kernels as K

    indptr, heads = np.array([0, 2, 3, 3]), np.array([1, 2, 2], dtype=np.int32)
    data = np.array([1.0, 5.0, 1.0])
    dist, pred = np.full(3, np.inf), np.full(3, -9999, dtype=np.int32)
    ent = np.full(4, 7, dtype=np.int32)  # room for two entries: the start and one more
    done = np.zeros(3, np.uint8)
    assert K.buckets_kernel(indptr, heads, data, 0, -1, dist, pred, 1.0, 8, ent, done, True) == -1
    assert np.array_equal(search.one_to_all(indptr, heads, data, 0)[0], [0.0, 1.0, 2.0])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000), neg=st.booleans())
def test_reduced_one_to_all_is_reweight_then_dijkstra(n, p, seed, neg):
    """On the search order's relabelled graph, the arcs max(w[v] + h[u] - h[v], 0) and the labels in the original names
    are reweight's arcs and SciPy's labels on them, bit for bit (negative node weights: clipped arcs, any ratio)."""
    from scipy.sparse.csgraph import dijkstra

    from evroute.driver.paths import _csr, reweight
    from evroute.search.order import search_order

    lg = random_linegraph(n, p, seed)
    assume(lg.n_arcs > 0)  # reweight needs a turn
    rng = np.random.default_rng(seed)
    w = rng.uniform(-5.0 if neg else 1.0, 20.0, n)
    h = rng.uniform(-3.0, 3.0, n)
    o = search_order(lg)
    assert np.array_equal(np.sort(o.perm), np.arange(n)) and np.array_equal(o.perm[o.inv], np.arange(n))
    start = int(rng.integers(n))
    dist, pred, least = search.reduced_one_to_all(lg, w, h, start)
    _, heads, tails = lg.arc_pattern()
    hh, arcs, _ = reweight(lg, w, h, bellman_ford_first=False)
    assert np.array_equal(hh, h)
    ref = dijkstra(_csr(lg, arcs), directed=True, indices=start)
    assert np.array_equal(dist, ref)
    assert least == np.min(w[heads] + h[tails] - h[heads])
    reached = np.flatnonzero(np.isfinite(ref))
    for v in reached[reached != start]:  # a tight turn of the original graph
        u = int(pred[v])
        j = np.flatnonzero((tails == u) & (heads == v))
        assert len(j) == 1 and dist[v] == dist[u] + arcs[j[0]]


def test_compiled_reach_equals_scipys():
    """reachable(compiled=True) reports the same reachable edges and quantile costs (1e-9 relative) as SciPy's."""
    from test_driver import _learned, _small

    from evroute.driver.answers import BatteryState
    from evroute.driver.belief import RouteBelief
    from evroute.driver.paths import potential_h
    from evroute.driver.reach import reachable

    lg, _ = _small()
    b = RouteBelief(_learned("bi", lg, 3))
    bat = BatteryState(10_000.0, 0.01, 0.0)
    for start in (0, lg.n_nodes // 2, lg.n_nodes - 1):
        a = reachable(lg, b, start, bat, 0.05, h0=potential_h(lg.network))
        c = reachable(lg, b, start, bat, 0.05, h0=potential_h(lg.network), compiled=True)
        assert np.array_equal(a.reachable, c.reachable)
        fin = np.isfinite(a.quantile_wh)
        assert np.array_equal(fin, np.isfinite(c.quantile_wh))
        np.testing.assert_allclose(c.quantile_wh[fin], a.quantile_wh[fin], rtol=1e-9)
        np.testing.assert_allclose(c.mean_wh[fin], a.mean_wh[fin], rtol=1e-9, atol=1e-9)
        assert c.exact == a.exact


def test_reach_default_engine_by_size_and_on_monaco(monkeypatch):
    """Below REACH_COMPILED_MIN_EDGES the default is SciPy's (the same result, predecessors included); from it the
    compiled search's.  On Monaco (real streets, learned quantiles with regeneration) both agree."""
    from netfixtures import need_osm
    from test_driver import _learned, _small

    import evroute.driver.reach as R
    from evroute.driver.answers import BatteryState
    from evroute.driver.belief import RouteBelief
    from evroute.driver.paths import potential_h

    lg, _ = _small()
    b = RouteBelief(_learned("bi", lg, 3))
    bat = BatteryState(10_000.0, 0.01, 0.0)
    h0 = potential_h(lg.network)
    a, d = R.reachable(lg, b, 1, bat, h0=h0, compiled=False), R.reachable(lg, b, 1, bat, h0=h0)
    assert np.array_equal(a.pred, d.pred) and np.array_equal(a.quantile_wh, d.quantile_wh)
    monkeypatch.setattr(R, "REACH_COMPILED_MIN_EDGES", 0)
    monkeypatch.setattr(R, "ordered_one_to_all", lambda *a: pytest.fail("the compiled search ran"))
    with pytest.raises(BaseException, match="compiled search ran"):
        R.reachable(lg, b, 1, bat, h0=h0)
    monkeypatch.undo()
    need_osm("monaco")
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("monaco"))
    b = RouteBelief(_learned("bi", lg, 5, n_obs=300))
    h0 = potential_h(lg.network)
    rng = np.random.default_rng(0)
    for start in rng.integers(0, lg.n_nodes, 3):
        s, c = (R.reachable(lg, b, int(start), bat, h0=h0, compiled=x) for x in (False, True))
        assert np.array_equal(s.quantile_wh, c.quantile_wh) and np.array_equal(s.reachable, c.reachable)
        assert s.exact == c.exact
        fin = np.isfinite(s.quantile_wh)
        np.testing.assert_allclose(c.mean_wh[fin], s.mean_wh[fin], rtol=1e-9, atol=1e-9)


def test_without_numba_the_bandit_keeps_scipys_path(monkeypatch):
    """numba missing: the default runs the full draw with SciPy's Dijkstra even at scale (same routes as
    ``lazy_ts=False``), asking for the lazy search is one ParameterError."""
    import evroute.bandit as B

    monkeypatch.setattr(search, "numba_available", lambda: False)
    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    b = _bandit(None)
    assert b._lazy is None
    assert [r.route for r in b.run(3)] == [r.route for r in _bandit(False).run(3)]
    with pytest.raises(ParameterError, match="numba"):
        _bandit(True)
