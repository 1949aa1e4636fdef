"""Thompson rounds searched on the hybrid junction graph (evroute.search.junction, evroute.search.full_draw): against
SciPy's Dijkstra on the line graph (RouteOracle) on random cities with random turn restrictions, U-turn bans and
allowed U-turns, the multi-source bucket search against SciPy with a virtual source, and the rectified mean's table
against 50-digit arithmetic."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import dijkstra

from evroute import search
from evroute.errors import UnreachableError
from evroute.linegraph import LineGraph, build_line_graph
from evroute.network.synthetic import synthetic_city
from evroute.oracle import RouteOracle, is_valid_route

if not search.numba_available():  # pragma: no cover - numba is a dependency
    pytest.skip("numba is not installed", allow_module_level=True)

from evroute.search.full_draw import TABLE_STEPS, FullDrawThompson, _rect_interp  # noqa: E402 - needs numba
from evroute.search.junction import junction_graph, junction_route  # noqa: E402


@functools.lru_cache(maxsize=8)
def restricted_city(n: int, seed: int, ban: float, allow_u: float) -> LineGraph:
    """A synthetic city's line graph with a share ``ban`` of its turns removed (turn restrictions) and a share
    ``allow_u`` of its banned U-turns added (the city bans all but dead ends' U-turns)."""
    lg = build_line_graph(synthetic_city(n, seed=seed))
    rng = np.random.default_rng(seed)
    t = lg.turns
    t = t[rng.random(len(t)) >= ban]
    fi, ti, _ = lg.network.junction_codes()
    # U-turn candidates: e -> f with f leaving e's end junction back to e's start
    pairs = np.argwhere((ti[:, None] == fi[None, :]) & (fi[:, None] == ti[None, :]))
    pairs = pairs[rng.random(len(pairs)) < allow_u]
    t = np.unique(np.concatenate([t, pairs]), axis=0)
    adj = sp.csr_matrix((np.ones(len(t)), (t[:, 0], t[:, 1])), shape=(lg.n_nodes, lg.n_nodes))
    adj.sort_indices()
    return LineGraph(network=lg.network, adjacency=adj, parent_index=lg.parent_index)


def _state(rng: np.random.Generator, n: int):
    from evroute.models.bi import BayesianEdgeModel

    m = BayesianEdgeModel(rng.uniform(0.5, 40.0, n), rng.uniform(1.0, 9.0, n), rng.uniform(0.5, 3.0, n))
    edges = rng.integers(0, n, 2 * n)
    m.update(edges, rng.normal(8.0, 3.0, len(edges)))
    return m.conjugate_state()


#: the random cities of :func:`restricted_city` and a weight seed, as the property tests draw them
CITY_GRID = {
    "size": st.sampled_from([60, 200, 500]),
    "seed": st.integers(0, 3),
    "ban": st.sampled_from([0.0, 0.05, 0.2]),
    "allow_u": st.sampled_from([0.0, 0.5]),
    "wseed": st.integers(0, 10_000),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**CITY_GRID, potential=st.booleans())
def test_junction_rounds_are_dijkstras_on_the_line_graph(size, seed, ban, allow_u, wseed, potential):
    """Every round's route is a legal route from start to goal whose cost is SciPy's line-graph optimum on the same
    weights as the same float, and the route SciPy finds unless two tie; rounds whose least walk is not legal are
    answered on the line graph and counted; unreachable goals raise as the oracle does."""
    lg = restricted_city(size, seed, ban, allow_u)
    n = lg.n_nodes
    rng = np.random.default_rng(wseed)
    state = _state(rng, n)
    pot = rng.normal(0.0, 4.0, n) if potential else None  # weights rectified towards 0: near-ties
    eng, line, oracle = FullDrawThompson(lg), FullDrawThompson(lg, "line"), RouteOracle(lg)
    assert junction_graph(lg) is not None
    for _ in range(4):
        s, g = (int(x) for x in rng.integers(0, n, 2))
        z = rng.standard_normal(n)
        w = eng.weights(state, z, pot).copy()
        try:
            ref = oracle.shortest_route(w, s, g)
        except UnreachableError:
            with pytest.raises(UnreachableError):
                eng.search(s, g)
            continue
        got = eng.search(s, g)
        assert got.cost == ref.cost
        assert got.edges[0] == s and got.edges[-1] == g and is_valid_route(lg, got.edges)
        assert float(w[got.edges].sum()) == pytest.approx(ref.cost, rel=1e-12)
        costs = sorted(float(w[r].sum()) for r in (got.edges, ref.edges))
        assert np.array_equal(got.edges, ref.edges) or costs[1] - costs[0] <= 1e-12 * costs[1]
        line.weights(state, z, pot)
        assert line.search(s, g).cost == got.cost
    assert line.fallbacks == 0


def test_an_illegal_least_walk_falls_back_to_the_line_graph():
    """A start whose only cheap way back is a banned U-turn at its first edge's head: the junction graph's least
    walk turns there, junction_route says so (None) and the engine answers on the line graph, counting it."""
    lg = restricted_city(200, 0, 0.0, 0.0)
    n = lg.n_nodes
    jg = junction_graph(lg)
    fi, ti, _ = lg.network.junction_codes()
    indptr, heads, _ = lg.arc_pattern()
    # an edge s -> f -> reverse(f) pattern: f legal after s, reverse(f) banned after f, goal reverse(f)'s successor
    found = None
    for s in range(n):
        for f in heads[indptr[s] : indptr[s + 1]]:
            rev = np.flatnonzero((fi == ti[f]) & (ti == fi[f]))
            if len(rev) and not np.isin(rev, heads[indptr[f] : indptr[f + 1]]).any():
                nxt = heads[indptr[rev[0]] : indptr[rev[0] + 1]]
                nxt = [int(x) for x in nxt if x != s and x not in heads[indptr[s] : indptr[s + 1]]]
                if nxt:
                    found = (s, int(f), int(rev[0]), nxt[0])
                    break
        if found:
            break
    assert found is not None
    s, f, r, g = found
    w = np.full(n, 100.0)
    w[[f, r, g]] = 1.0  # s, f, reverse(f), g: cheap but for the banned U-turn f -> reverse(f)
    stats = (float(w.min()), float(w.max()), float(w.mean()))
    assert junction_route(jg, lg, w, w[jg.arc_edge], s, g, stats) is None
    eng = FullDrawThompson(lg)
    eng._w[:], eng._drawn, eng._stats[:] = w, True, (w.min(), w.max(), w.sum())
    eng._wa = w[jg.arc_edge]
    eng._fresh = "junction"
    got = eng.search(s, g)
    assert eng.fallbacks == 1 and is_valid_route(lg, got.edges)
    assert got.cost == RouteOracle(lg).shortest_route(w, s, g).cost


def test_no_junction_graph_where_turns_do_not_meet_at_junctions():
    from test_oracle import random_linegraph

    lg = random_linegraph(8, 0.5, 3)  # each edge its own junctions: no turn joins two edges at one
    assert junction_graph(lg) is None
    state = _state(np.random.default_rng(0), lg.n_nodes)
    eng = FullDrawThompson(lg)
    eng.weights(state, np.zeros(lg.n_nodes))
    assert eng._fresh == "line"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 30), p=st.floats(0.05, 0.6), k=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_sources_search_is_dijkstra_from_a_virtual_source(n, p, k, seed):
    """The multi-source bucket search's labels are SciPy's Dijkstra labels from a virtual source joined to each
    source by an arc of its initial label; each label's pred is the CSR slot of the arc that set it, or the
    source's own marker."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=p, random_state=seed, format="csr")
    a.setdiag(0.0)
    a.eliminate_zeros()
    a.sort_indices()
    a.data = rng.choice([0.5, 1.0, 2.5, 7.0], len(a.data))  # dyadic: every sum exact, whatever the order
    srcs = rng.integers(0, n, k)
    init = rng.choice([0.0, 1.0, 3.5], k)
    tails = np.repeat(np.arange(n), np.diff(a.indptr))
    # the virtual source n joined to each source by an arc of its label + 1 (a positive weight; 1 taken off below)
    rows = np.concatenate([tails, np.full(k, n)])
    cols = np.concatenate([a.indices, srcs])
    vals = np.concatenate([a.data, init + 1.0])
    big = sp.coo_matrix((vals, (rows, cols)), shape=(n + 1, n + 1)).tocsr()  # duplicates summed: keep the least
    big.data[:] = 0.0
    for r, c, v in zip(rows, cols, vals, strict=True):
        big[r, c] = v if big[r, c] == 0.0 else min(big[r, c], v)
    ref = dijkstra(big, directed=True, indices=n) - 1.0
    lo = float(a.data.min()) if a.nnz else 0.0
    hi = float(max(a.data.max() if a.nnz else 0.0, init.max()))
    mean = float(a.data.mean()) if a.nnz else 0.0
    marks = -(np.arange(k) + 2)
    dist, pred = search.bucket_search(
        a.indptr.astype(np.int64), a.indices.astype(np.int32), a.data, 0, -1, lo, hi, mean,
        sources=(srcs.astype(np.int64), init, marks.astype(np.int64)),
    )  # fmt: skip
    np.testing.assert_allclose(dist[:n], ref[:n], rtol=0, atol=1e-12)
    for v in np.flatnonzero(np.isfinite(dist)):
        p_ = int(pred[v])
        if p_ <= -2:
            i = -p_ - 2
            assert srcs[i] == v and init[i] == dist[v]
        else:
            assert a.indices[p_] == v and dist[tails[p_]] + a.data[p_] == dist[v]


def test_rectified_mean_table_is_within_its_bound():
    """The table's cubic Hermite interpolation of g(a) = a Phi(a) + phi(a) on [0, 8.5) against 50-digit arithmetic:
    within h^4 / 384 relative (h = 1 / TABLE_STEPS; 6.1e-13), plus a few ulps of evaluation."""
    mpmath = pytest.importorskip("mpmath")
    from evroute.search.full_draw import RECT_DG, RECT_G

    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.uniform(0.0, 8.5, 400), np.arange(0, 8.5, 1 / TABLE_STEPS)[:200] + 0.5 / TABLE_STEPS])
    bound = (1.0 / TABLE_STEPS) ** 4 / 384 + 8 * np.finfo(float).eps
    worst = 0.0
    for a in pts:
        exact = a * mpmath.ncdf(a) + mpmath.npdf(a)
        got = _rect_interp.py_func(float(a), RECT_G, RECT_DG)
        worst = max(worst, float(abs(got - exact) / exact))
    assert worst <= bound
    assert worst > bound / 20  # the bound is the interpolation's, not slack: the midpoints near 0 come close
