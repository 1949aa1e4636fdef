"""Kernel-regression edge model (``--model kr``): BI limit, NW limit, incremental statistics, bonus, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from netfixtures import grid_network

from evroute.bo import NadarayaWatson, scott_bandwidth
from evroute.environments import PaperEnvironment
from evroute.errors import DataError, ParameterError
from evroute.experiments.registry import make_model, model_names
from evroute.linegraph import build_line_graph
from evroute.models import BayesianEdgeModel
from evroute.models.builders import default_prior
from evroute.models.kr import KernelRegressionEdgeModel, hop_distances


@pytest.fixture(scope="module")
def env() -> PaperEnvironment:
    return PaperEnvironment.sample(build_line_graph(grid_network(5, 4, seed=1)), seed=3)


def _batches(env: PaperEnvironment, n: int, size: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        e = rng.integers(0, env.n_edges, size=size)
        out.append((e, env.observe(e, rng)))
    return out


def test_registered_and_built_from_environment(env):
    assert "kr" in model_names()
    m = make_model("kr", env, hops=1)
    assert isinstance(m, KernelRegressionEdgeModel) and m.n_edges == env.n_edges
    post = m.posterior()  # no data: the physics prior
    np.testing.assert_allclose(post.mean, env.prior_mean_wh)
    np.testing.assert_allclose(post.var, default_prior(env.linegraph, env.prior_mean_wh).prior_var)


def test_zero_hops_is_exactly_the_bi_model(env):
    kr = make_model("kr", env, hops=0)
    bi = BayesianEdgeModel(
        env.prior_mean_wh,
        default_prior(env.linegraph, env.prior_mean_wh).prior_var,
        default_prior(env.linegraph, env.prior_mean_wh).noise_var,
    )
    for e, y in _batches(env, 6, 15):
        kr.update(e, y)
        bi.update(e, y)
    a, b = kr.posterior(), bi.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(a.var, b.var, rtol=1e-12)


def test_full_graph_without_prior_weight_is_nadaraya_watson(env):
    """Graph factor 1 everywhere and W0 = 0: the model is evroute.bo's NW estimator on the residual data."""
    h = 0.7
    kr = KernelRegressionEdgeModel(
        env.linegraph,
        env.prior_mean_wh,
        env.prior_var,
        env.noise_var,
        hops=env.n_edges,
        graph_decay=1.0,
        bandwidth=h,
        prior_weight=0.0,
    )
    xs, rs = [], []
    for e, y in _batches(env, 4, 10):
        kr.update(e, y)
        xs.append(env.linegraph.contexts()[e])
        rs.append(y - env.prior_mean_wh[e])
    nw_mean, log_w = NadarayaWatson(np.vstack(xs), np.concatenate(rs), h).predict(env.linegraph.contexts())
    np.testing.assert_allclose(kr.posterior().mean - env.prior_mean_wh, nw_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.log(kr.density), log_w, rtol=1e-9)


def test_incremental_statistics_match_a_rebuild(env):
    """Row updates between bandwidth rebuilds give the same W and K S as recomputing them from scratch."""
    kr = make_model("kr", env, hops=2)
    for e, y in _batches(env, 12, 20, seed=4):
        kr.update(e, y)
    assert kr.n_rebuilds > 1  # Scott's bandwidth shrank several times
    assert kr.h == pytest.approx(scott_bandwidth(kr.n_obs, 3, 1.0), rel=0.12)
    np.testing.assert_allclose(kr.density, kr.kernel @ kr.count, rtol=1e-10)
    np.testing.assert_allclose(kr.numerator, kr.kernel @ kr.total, rtol=1e-10, atol=1e-9)
    k = kr.kernel.toarray()
    np.testing.assert_allclose(k, k.T)
    assert np.all(np.diag(k) == 1.0)


def test_posterior_moves_toward_observations_and_neighbours(env):
    kr = make_model("kr", env, hops=1, graph_decay=0.5, bandwidth=5.0)
    edge = 7
    target = env.prior_mean_wh[edge] + 50.0
    kr.update(np.full(30, edge), np.full(30, target))
    post = kr.posterior()
    assert abs(post.mean[edge] - target) < 0.05 * 50.0
    nbrs = kr.kernel[edge].indices
    nbrs = nbrs[nbrs != edge]
    moved = post.mean[nbrs] - env.prior_mean_wh[nbrs]
    assert np.all(moved > 0) and np.all(moved < 50.0 + 1e-9)  # neighbours pulled part of the way
    far = np.setdiff1d(np.arange(env.n_edges), kr.kernel[edge].indices)
    np.testing.assert_allclose(post.mean[far], env.prior_mean_wh[far])  # outside the neighbourhood: prior


def test_bonus_shrinks_where_data_is_dense(env):
    kr = make_model("kr", env, hops=1)
    rng = np.random.default_rng(0)
    dense, sparse_ = 3, 12
    kr.update(np.r_[np.full(40, dense), [sparse_]], env.observe(np.r_[np.full(40, dense), [sparse_]], rng))
    var = kr.posterior().var
    assert var[dense] < var[sparse_] < default_prior(env.linegraph, env.prior_mean_wh).prior_var
    assert var[dense] == pytest.approx(
        default_prior(env.linegraph, env.prior_mean_wh).noise_var / (kr.density[dense] + kr.prior_weight)
    )
    before = var[dense]
    kr.update(np.full(40, dense), env.observe(np.full(40, dense), rng))
    assert kr.posterior().var[dense] < before


def test_neighbour_cap_bounds_the_neighbours_share(env):
    """With a cap the neighbours weigh at most c observations: a much-driven edge converges to its own mean."""
    plain = make_model("kr", env, hops=1, bandwidth=5.0)
    capped = make_model("kr", env, hops=1, bandwidth=5.0, neighbour_cap=2.0)
    edge = 7
    nbr = int(next(j for j in plain.kernel[edge].indices if j != edge))
    e = np.r_[np.full(200, edge), np.full(200, nbr)]  # both driven equally often, as on one route
    y = np.r_[np.full(200, env.prior_mean_wh[edge] + 10.0), np.full(200, env.prior_mean_wh[nbr] - 30.0)]
    for m in (plain, capped):
        m.update(e, y)
    k = plain.kernel[edge, nbr]
    # plain NW keeps a fixed share k / (1 + k) of the neighbour's residual however much data there is
    assert plain.posterior().mean[edge] - env.prior_mean_wh[edge] == pytest.approx(
        (200 * 10.0 - 200 * k * 30.0) / (200 * (1 + k) + plain.prior_weight)
    )
    cap_resid = capped.posterior().mean[edge] - env.prior_mean_wh[edge]
    assert cap_resid == pytest.approx((200 * 10.0 - 2.0 * 30.0) / (200 + 2.0 + capped.prior_weight))
    assert capped.posterior().var[edge] == pytest.approx(
        default_prior(env.linegraph, env.prior_mean_wh).noise_var / (202 + capped.prior_weight)
    )
    with pytest.raises(ParameterError, match="neighbour_cap"):
        make_model("kr", env, neighbour_cap=0.0)


def test_pickles_and_continues_identically(env):
    kr = make_model("kr", env)
    batches = _batches(env, 8, 12, seed=9)
    for e, y in batches[:4]:
        kr.update(e, y)
    clone = pickle.loads(pickle.dumps(kr))
    for e, y in batches[4:]:
        kr.update(e, y)
        clone.update(e, y)
    np.testing.assert_array_equal(kr.posterior().mean, clone.posterior().mean)
    np.testing.assert_array_equal(kr.posterior().var, clone.posterior().var)


def test_hop_distances_on_a_path():
    import scipy.sparse as sp

    adj = sp.csr_matrix((np.ones(3), ([0, 1, 2], [1, 2, 3])), shape=(4, 4))  # 0 -> 1 -> 2 -> 3
    d = hop_distances(adj, 2).toarray() - 1  # stored as 1 + hop
    assert d[0, 0] == 0 and d[0, 1] == 1 and d[1, 0] == 1 and d[0, 2] == 2 and d[3, 1] == 2
    assert d[0, 3] == -1  # beyond 2 hops: not stored


def test_bad_input_raises_one_line_errors(env):
    with pytest.raises(ParameterError, match="hops"):
        make_model("kr", env, hops=-1)
    with pytest.raises(ParameterError, match="graph_decay"):
        make_model("kr", env, graph_decay=1.5)
    with pytest.raises(ParameterError, match="bandwidth"):
        make_model("kr", env, bandwidth="wide")
    with pytest.raises(ParameterError, match="invalid parameters"):
        make_model("kr", env, lengthscale=1.0)
    m = make_model("kr", env)
    with pytest.raises(DataError):
        m.update([0], [np.nan])
    with pytest.raises(ParameterError):
        m.update([env.n_edges], [1.0])
