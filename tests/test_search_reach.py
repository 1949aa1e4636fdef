"""The compiled reach's pieces (evroute.search, evroute.driver.reach): the route costs in the original names, the
quantile arcs kept per belief, and the spatial search order, against numpy and SciPy's Dijkstra."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_oracle import random_linegraph

from evroute import search
from evroute.errors import ParameterError

if not search.numba_available():  # pragma: no cover - numba is a dependency
    pytest.skip("numba is not installed", allow_module_level=True)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000), neg=st.booleans())
def test_route_costs_are_numpys_in_the_original_names(n, p, seed, neg):
    """SearchOrder.route_costs (one compiled pass) gives, in the original names, numpy's w[start] + dist - h[start]
    + h of the relabelled search's labels bit for bit, the same budget test and the same predecessors."""

    lg = random_linegraph(n, p, seed)
    rng = np.random.default_rng(seed)
    w = rng.uniform(-5.0 if neg else 1.0, 20.0, n)
    h = rng.uniform(-3.0, 3.0, n)
    start = int(rng.integers(n))
    o, arcs, st_ = search.reduced_arcs(lg, w, h)
    dist, pred = search.ordered_one_to_all(o, arcs, st_, start)
    d, pr = o.to_original(dist, pred)
    ref = np.where(np.isfinite(d), w[start] + d - h[start] + h, np.inf)
    budget = float(rng.choice(ref[np.isfinite(ref)]))  # a budget equal to some cost: the boundary case
    cost, within, pred_out = o.route_costs(dist, pred, w, h, start, budget)
    assert np.array_equal(cost, ref)
    assert np.array_equal(within, ref <= budget) and within.dtype == bool
    assert np.array_equal(pred_out, pr) and pred_out.dtype == pr.dtype


def test_reach_arcs_are_kept_per_belief_and_renewed_when_it_changes():
    """The compiled reach computes its quantile arcs once per belief (the same object for every start), and anew
    when the belief's arrays, delta or h0 change; a kept one gives the same result bit for bit as a fresh one, and a
    renewed one SciPy's (a stale one would be off by the change)."""
    from test_driver import _learned, _small

    import evroute.driver.reach as R
    from evroute.driver.answers import BatteryState
    from evroute.driver.belief import RouteBelief
    from evroute.driver.paths import potential_h

    lg, _ = _small()
    b = RouteBelief(_learned("bi", lg, 3))
    bat = BatteryState(10_000.0, 0.01, 0.0)
    h0 = potential_h(lg.network)
    first = R.reachable(lg, b, 1, bat, h0=h0, compiled=True)
    kept = R._REACH_ARCS[b]
    for start in (1, 5, lg.n_nodes - 1):
        again = R.reachable(lg, b, start, bat, h0=h0, compiled=True)
        assert R._REACH_ARCS[b] is kept
    again = R.reachable(lg, b, 1, bat, h0=h0, compiled=True)
    assert np.array_equal(again.quantile_wh, first.quantile_wh) and np.array_equal(again.pred, first.pred)
    assert R.reach_arcs(lg, b, 0.05, h0) is kept
    assert R.reach_arcs(lg, b, 0.1, h0) is not kept
    assert R.reach_arcs(lg, b, 0.05, h0.copy()) is not R.reach_arcs(lg, b, 0.05, h0)
    b.mean = b.mean + 3.0  # a new model version's means (replaced, as make_belief does)
    new = R.reachable(lg, b, 1, bat, h0=h0, compiled=True)
    ref = R.reachable(lg, b, 1, bat, h0=h0, compiled=False)
    fin = np.isfinite(ref.quantile_wh)
    assert np.array_equal(np.isfinite(new.quantile_wh), fin) and np.array_equal(new.reachable, ref.reachable)
    np.testing.assert_allclose(new.quantile_wh[fin], ref.quantile_wh[fin], rtol=1e-9)
    assert np.all(new.quantile_wh[fin] >= first.quantile_wh[fin] + 3.0 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), neg=st.booleans())
def test_spatial_order_searches_are_scipys(seed, neg):
    """The spatial order (Z-order of the edges' first points) is a permutation that keeps a turn's ends closer in
    memory than the breadth-first order on a city, and the search in it gives SciPy's labels on reweight's arcs bit
    for bit, with tight predecessors."""
    from scipy.sparse.csgraph import dijkstra
    from test_driver import _small

    from evroute.driver.paths import _csr, reweight
    from evroute.search.order import search_order, spatial_perm

    lg, _ = _small(seed % 5 + 1)
    n = lg.n_nodes
    perm = spatial_perm(lg)
    assert perm is not None and np.array_equal(np.sort(perm), np.arange(n))
    o, b = search_order(lg, "spatial"), search_order(lg, "bfs")
    assert np.array_equal(o.perm, perm)

    def gap(order):
        tails = np.repeat(np.arange(n), np.diff(order.indptr))
        return np.median(np.abs(order.heads - tails))

    assert gap(o) < gap(b)
    rng = np.random.default_rng(seed)
    w = rng.uniform(-5.0 if neg else 1.0, 20.0, n)
    h = rng.uniform(-3.0, 3.0, n)
    start = int(rng.integers(n))
    o2, arcs, st_ = search.reduced_arcs(lg, w, h, "spatial")
    assert o2 is o
    dist, pred = o.to_original(*search.ordered_one_to_all(o, arcs, st_, start))
    _, heads, tails = lg.arc_pattern()
    _, ref_arcs, _ = reweight(lg, w, h, bellman_ford_first=False)
    ref = dijkstra(_csr(lg, ref_arcs), directed=True, indices=start)
    assert np.array_equal(dist, ref)
    for v in np.flatnonzero(np.isfinite(ref) & (np.arange(n) != start)):
        j = np.flatnonzero((tails == pred[v]) & (heads == v))
        assert len(j) == 1 and dist[v] == dist[pred[v]] + ref_arcs[j[0]]


def test_spatial_order_falls_back_to_breadth_first_and_refuses_unknown_kinds():
    """Without usable geometry (a coordinate not finite) the spatial order is the breadth-first one; an unknown
    kind is one ParameterError."""
    from evroute.search.order import search_order, spatial_perm

    lg = random_linegraph(12, 0.3, 1)
    assert np.array_equal(spatial_perm(lg), np.arange(12))  # every edge at the same point: ties in node order
    lg.network.geometry[0][0, 0] = np.nan  # the fixture's edges share one (2, 2) array
    assert spatial_perm(lg) is None
    assert np.array_equal(search_order(lg, "spatial").perm, search_order(lg, "bfs").perm)
    with pytest.raises(ParameterError, match="unknown search order"):
        search_order(lg, "hilbert")


def test_reach_phases_time_each_phase_between_clock_readings():
    """reach_phases reads the clock once before and once after each of its four phases and reports the differences
    (a counting clock: each phase spans one tick)."""
    from itertools import count

    from test_driver import _learned, _small

    import evroute.driver.reach as R
    from evroute.driver.answers import BatteryState
    from evroute.driver.belief import RouteBelief
    from evroute.driver.paths import potential_h

    lg, _ = _small()
    b = RouteBelief(_learned("bi", lg, 3))
    bat = BatteryState(10_000.0, 0.01, 0.0)
    ticks = count()

    def clock():
        t = next(ticks)
        return (t, 2 * t, 3 * t)

    got = R.reach_phases(lg, b, 2, bat, h0=potential_h(lg.network), clock=clock)
    assert list(got) == ["quantiles", "reduced arcs", "one-to-all", "costs in the original names"]
    assert all(v == {"cpu_s": 1.0, "sys_s": 2.0, "faults": 3.0} for v in got.values())
    assert next(ticks) == 5  # one reading before the first phase and one after each
