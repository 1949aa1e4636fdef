import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erfinv

from evroute.errors import DataError, ParameterError
from evroute.models import BayesianEdgeModel, EdgePosterior
from evroute.policies import (
    UCB,
    BayesUCB,
    Greedy,
    ThompsonSampling,
    bucb_beta,
    bucb_eta,
    make_policy,
    rectified_gaussian_mean,
    ucb_beta,
)


def test_bi_posterior_closed_form():
    m = BayesianEdgeModel(prior_mean_wh=np.array([10.0, -2.0, 5.0]), prior_var=4.0, noise_var=1.0)
    m.update([0, 0, 2], [12.0, 14.0, 3.0])
    m.update([0], [11.0])
    post = m.posterior()
    # edge 0: precision 1/4 + 3/1, mean (10/4 + 37) / 3.25
    assert post.var[0] == pytest.approx(1 / 3.25)
    assert post.mean[0] == pytest.approx((10 / 4 + 37) / 3.25)
    # edge 1 untouched: prior
    assert post.mean[1] == -2.0 and post.var[1] == 4.0
    # edge 2: one observation
    assert post.mean[2] == pytest.approx((5 / 4 + 3) / 1.25)
    np.testing.assert_allclose(post.noise_var, 1.0)


def test_bi_matches_sequential_bayes_updates():
    rng = np.random.default_rng(0)
    m = BayesianEdgeModel(np.zeros(1), prior_var=2.0, noise_var=0.5)
    mu, var = 0.0, 2.0
    for y in rng.normal(3.0, 0.7, size=20):
        m.update([0], [y])
        k = var / (var + 0.5)
        mu, var = mu + k * (y - mu), (1 - k) * var
    post = m.posterior()
    assert post.mean[0] == pytest.approx(mu) and post.var[0] == pytest.approx(var)


def test_bi_rejects_bad_input():
    m = BayesianEdgeModel(np.zeros(3), 1.0, 1.0)
    with pytest.raises(DataError):
        m.update([0], [np.nan])
    with pytest.raises(ParameterError):
        m.update([5], [1.0])
    with pytest.raises(ParameterError):
        BayesianEdgeModel(np.zeros(3), 0.0, 1.0)


@settings(max_examples=25, deadline=None)
@given(mu=st.floats(-4, 4), s=st.floats(0.1, 3.0))
def test_rectified_mean_against_monte_carlo(mu, s):
    x = np.random.default_rng(0).normal(mu, s, size=400_000)
    mc = np.maximum(x, 0).mean()
    se = np.maximum(x, 0).std() / np.sqrt(len(x))
    assert rectified_gaussian_mean(np.array([mu]), np.array([s * s]))[0] == pytest.approx(mc, abs=5 * se + 1e-6)


def test_rectified_mean_tails():
    r = rectified_gaussian_mean(np.array([-30.0, 30.0, 0.0]), np.array([1.0, 1.0, 0.0]))
    assert 0 <= r[0] < 1e-190 and r[1] == pytest.approx(30.0) and r[2] == 0.0
    # asymptotic: E[max(0,X)] ~ s phi(a) / a^2 for a -> -inf
    a = -10.0
    approx = math.exp(-a * a / 2) / math.sqrt(2 * math.pi) / a**2 * (1 - 3 / a**2)
    assert rectified_gaussian_mean(np.array([a]), np.array([1.0]))[0] == pytest.approx(approx, rel=2e-3)


def test_beta_formulas_against_paper():
    n, t = 2107, 17
    assert ucb_beta(t, n) == pytest.approx(2 * math.log(n * t**2 / math.sqrt(2 * math.pi)))
    eta = math.sqrt(2 * math.pi) / (2 * n * t)
    assert bucb_eta(t, n) == pytest.approx(eta)
    assert bucb_beta(t, n) == pytest.approx(2 * erfinv(1 - 2 * eta) ** 2, rel=1e-9)
    eta2 = math.sqrt(2 * math.pi) ** 1 / (2 * n * t**0.5)
    assert bucb_beta(t, n, xi=0.5, omega=1.0) == pytest.approx(2 * erfinv(1 - 2 * eta2) ** 2, rel=1e-9)
    # BUCB quantile = Q(eta_t, N(mu, s^2)) with Q(p) = mu + s sqrt(2) erfinv(2p - 1)
    post = EdgePosterior(mean=np.array([3.0]), variance=np.array([4.0]), noise_var=np.array([1.0]))
    est = BayesUCB().estimates(post, t, np.random.default_rng(0))[0]
    assert est == pytest.approx(3.0 + 2.0 * math.sqrt(2) * erfinv(2 * bucb_eta(t, 1) - 1), rel=1e-9)
    assert UCB(beta_scale=0.5).beta(t, n) == pytest.approx(0.5 * ucb_beta(t, n))


def test_policy_estimates_and_weights():
    post = EdgePosterior(
        mean=np.array([1.0, -5.0, 2.0]), variance=np.array([0.25, 1.0, 0.0]), noise_var=np.full(3, 0.1)
    )
    rng = np.random.default_rng(0)
    ucb = UCB().estimates(post, 3, rng)
    np.testing.assert_allclose(ucb, post.mean - math.sqrt(ucb_beta(3, 3)) * post.std)
    assert np.array_equal(Greedy().estimates(post, 1, rng), post.mean)
    w = Greedy().weights(post, 1, rng)
    assert np.all(w > 0)
    np.testing.assert_allclose(w, rectified_gaussian_mean(post.mean, post.noise_var).clip(1e-12))
    # TS: empirical mean/std of samples
    samples = np.stack([ThompsonSampling().estimates(post, 1, rng) for _ in range(20000)])
    np.testing.assert_allclose(samples.mean(0), post.mean, atol=0.03)
    np.testing.assert_allclose(samples.std(0), post.std, atol=0.03)
    with pytest.raises(ParameterError):
        Greedy().weights(post, 0, rng)


def test_make_policy():
    assert isinstance(make_policy("TS"), ThompsonSampling)
    assert make_policy("bucb", xi=0.5).xi == 0.5
    with pytest.raises(ParameterError, match="unknown policy"):
        make_policy("epsilon")
    with pytest.raises(ParameterError):
        make_policy("ucb", foo=1.0)
    with pytest.raises(ParameterError):
        UCB(beta_scale=-1)


def test_rectified_mean_finite_for_extreme_ratios():
    r = rectified_gaussian_mean(np.array([1e6, -1e6, 50.0, -50.0]), np.array([1e-8, 1e-8, 1.0, 1.0]))
    assert np.all(np.isfinite(r))
    assert r[0] == pytest.approx(1e6) and r[1] == 0.0 and r[2] == pytest.approx(50.0)
