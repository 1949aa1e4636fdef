"""The compiled full-draw Thompson round (evroute.search.full_draw): its weights against the policy's NumPy formula on
the same normals, its routes against SciPy's Dijkstra on exactly the weights it drew, and the bandit's use of it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_oracle import random_linegraph
from test_search import _bandit, _state

from evroute import search
from evroute.errors import ParameterError, UnreachableError
from evroute.oracle import MIN_WEIGHT_WH, RouteOracle, is_valid_route, rectified_gaussian_mean

if not search.numba_available():  # pragma: no cover - numba is a dependency
    pytest.skip("numba is not installed", allow_module_level=True)

from evroute.search.full_draw import FAST_A, FullDrawThompson  # noqa: E402 - needs numba


def _bi_model(rng: np.random.Generator, n: int):
    from evroute.models.bi import BayesianEdgeModel

    m = BayesianEdgeModel(rng.uniform(0.5, 40.0, n), rng.uniform(1.0, 9.0, n), rng.uniform(0.5, 3.0, n))
    edges = rng.integers(0, n, 4 * n)
    m.update(edges, rng.normal(8.0, 3.0, len(edges)))
    return m


@pytest.mark.parametrize("with_potential", [False, True])
def test_weights_are_the_policys_on_the_same_normals(with_potential):
    """FullDrawThompson.weights(z) = ThompsonSampling.weights with the generator that drew z: the posterior and draw in
    NumPy's order of operations (the same floats before rectification: where the rectified mean is the identity, the
    weights are equal bit for bit), the compiled rectified mean within 1e-12 relative for x / s_n >= -8 and 1e-9
    below (its tested precision, tests/test_search.py)."""
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.policies import ThompsonSampling

    lg = build_line_graph(load_network("synthetic:300:2"))
    n = lg.n_nodes
    rng = np.random.default_rng(4)
    m = _bi_model(rng, n)
    pot = rng.normal(0.0, 10.0, n) if with_potential else None
    gen = np.random.default_rng(17)
    ref = ThompsonSampling().weights(m.posterior(), 1, gen, pot)
    z = np.random.default_rng(17).standard_normal(n)  # the numbers the policy drew
    got = FullDrawThompson(lg).weights(m.conjugate_state(), z, pot)
    post = m.posterior()
    x = post.mean + post.std * z - (0.0 if pot is None else pot)
    a = x / np.sqrt(post.noise_var)
    assert (a >= 8.5).any() and ((a > -8) & (a < 8.5)).any()  # both branches, and far below 0 with the potential
    assert (a < -8).any() == with_potential
    fast = a >= FAST_A  # the kernel's test, the same float (IEEE square root and division)
    assert np.array_equal(got[fast], x[fast])  # the identity branch: the draw itself, no rounding
    rel = np.abs(got - ref) / ref
    assert rel[fast].max() < 1e-15  # the oracle's formula rounds s (phi(a) + a Phi(a)) there: a few ulps
    assert rel[a >= -8].max() < 1e-12 and rel.max() < 1e-9
    assert got.min() >= MIN_WEIGHT_WH


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 40), p=st.floats(0.05, 0.5), seed=st.integers(0, 10_000), positive=st.booleans())
def test_route_is_dijkstras_on_the_drawn_weights(n, p, seed, positive):
    """On random line graphs the compiled round returns SciPy's Dijkstra cost on the weights it drew as the same
    float, a valid route from start to goal that costs it (1e-12 relative: a sum in another order), and SciPy's route
    unless two routes tie to rounding (weights rectified towards 0 make ties; ``positive``: none are)."""
    lg = random_linegraph(n, p, seed)
    rng = np.random.default_rng(seed)
    state = _state(rng, lg.n_nodes, positive=positive)
    pot = None if positive else rng.normal(0.0, 2.0, lg.n_nodes)
    eng, oracle = FullDrawThompson(lg), RouteOracle(lg)
    for _ in range(3):
        s, g = (int(x) for x in rng.integers(0, lg.n_nodes, 2))
        z = rng.standard_normal(lg.n_nodes)
        try:
            ref = oracle.shortest_route(eng.weights(state, z, pot).copy(), s, g)
        except UnreachableError:
            with pytest.raises(UnreachableError):
                eng.route(state, z, s, g, pot)
            continue
        got = eng.route(state, z, s, g, pot)
        w = eng.last_weights
        assert got.cost == ref.cost
        assert got.edges[0] == s and got.edges[-1] == g and is_valid_route(lg, got.edges)
        assert float(w[got.edges].sum()) == pytest.approx(ref.cost, rel=1e-12)
        costs = sorted(float(w[r].sum()) for r in (got.edges, ref.edges))
        assert np.array_equal(got.edges, ref.edges) or costs[1] - costs[0] <= 1e-12 * costs[1]
        if positive:
            assert np.array_equal(got.edges, ref.edges)


def test_bad_inputs_are_parameter_errors():
    lg = random_linegraph(6, 0.5, 1)
    n = lg.n_nodes
    state = _state(np.random.default_rng(0), n, positive=True)
    eng = FullDrawThompson(lg)
    z = np.zeros(n)
    with pytest.raises(ParameterError, match="no weights"):
        eng.search(0, 1)
    assert eng.route(state, z, 2, 2).edges.tolist() == [2]
    assert eng.route(state, z, 2, 2).cost == eng.last_weights[2]
    with pytest.raises(ParameterError, match="outside"):
        eng.route(state, z, 0, n)
    with pytest.raises(ParameterError, match="shape"):
        eng.weights(state, np.zeros(n + 1))
    with pytest.raises(ParameterError, match="potential"):
        eng.weights(state, z, np.zeros(n - 1))
    with pytest.raises(ParameterError, match="not finite"):
        eng.weights(state, np.full(n, np.nan))
    with pytest.raises(ParameterError, match="no weights"):  # a failed draw leaves nothing to search
        eng.search(0, 1)


def test_bandit_uses_it_only_at_scale_for_bi_thompson(monkeypatch):
    """From LAZY_TS_MIN_ARMS edge arms (lowered here) a BI Thompson round that draws every edge runs compiled: the same
    routes, observations and regret as the NumPy/SciPy round (``lazy_ts=False``) from the same seed, and it is resumable
    from a state; below the threshold, for other policies and with ``lazy_ts=False`` it is not built."""
    import evroute.bandit as B

    assert _bandit(None)._full_draw is None  # the committed small studies: NumPy's round
    monkeypatch.setattr(B, "LAZY_TS_MIN_ARMS", 0)
    monkeypatch.setattr(B, "LAZY_TS_EXPECTED_SHARE", -1.0)  # no lazy engine: every round draws every edge
    b = _bandit(None)
    assert b._lazy is None and b._full_draw is not None
    assert _bandit(None, policy="ucb")._full_draw is None and _bandit(False)._full_draw is None
    rows = [(r.route, r.observed_wh, r.regret_wh) for r in b.run(8)]
    assert rows == [(r.route, r.observed_wh, r.regret_wh) for r in _bandit(False).run(8)]
    first = _bandit(None)
    first.run(4)
    resumed = _bandit(None)
    resumed.load_state(first.state())
    assert [(r.route, r.observed_wh) for r in resumed.run(4)] == [x[:2] for x in rows[4:]]


def test_rectified_identity_threshold_is_below_half_an_ulp():
    """Where the kernel returns x itself (x / s_n >= 8.5), the exact rectified mean x + s (phi(a) - a Q(a)) (50-digit
    arithmetic) is x to within half an ulp of x, so x is its correctly rounded value; the bound phi(a) / a^3 of the
    relative gap is below 2^-54 at the threshold (Mills's ratio), and the oracle's float formula agrees to 4 ulps."""
    mpmath = pytest.importorskip("mpmath")
    from scipy.stats import norm

    a0 = FAST_A
    assert norm.pdf(a0) / a0**3 < 2.0**-54
    mpmath.mp.dps = 50
    for s in (1e-3, 1.0, 50.0):
        for a in (a0, 9.0, 12.0, 40.0):
            x = a * s
            xm, sm = mpmath.mpf(x), mpmath.mpf(s)
            am = xm / sm
            exact = sm * (mpmath.npdf(am) + am * mpmath.ncdf(am))
            assert abs(exact - xm) <= mpmath.mpf(np.spacing(x)) / 2
            assert abs(float(rectified_gaussian_mean(np.array([x]), s * s)[0]) - x) <= 4 * np.spacing(x)
