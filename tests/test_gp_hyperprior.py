"""``gp-hp`` (bi-level Thompson sampling over candidate GP priors): its evidences are the raw observations' Gaussian
densities, its weights Bayes' rule, its moments the sampled mixture's, and it finds the prior the data came from."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evroute.errors import ParameterError
from evroute.linegraph import build_line_graph
from evroute.models.builders import default_prior
from evroute.models.gp_hyperprior import HyperPriorConfig, HyperPriorGPModel, build_gp_hp
from evroute.network.registry import load_network


@pytest.fixture(scope="module")
def setting():
    lg = build_line_graph(load_network("synthetic:200:3"))
    prior = default_prior(lg, 0.15 * np.asarray(lg.network.length_m))
    return lg, prior


def _dense_wh(model) -> np.ndarray:
    """``(E, E)`` prior covariance of a candidate in Wh^2 (its kernel in model units times ``sigma0^2``)."""
    return model.kernel().dense() * model.scale**2


def _draw(lg, prior, a: float, b: float, seed: int, n_obs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A truth from candidate ``(a, b)``'s own prior and ``n_obs`` noisy observations of random edges."""
    hp = build_gp_hp(lg, prior, prior_scales=str(a), noise_scales=str(b))
    assert isinstance(hp, HyperPriorGPModel)
    cov = _dense_wh(hp.candidates[0])
    rng = np.random.default_rng(seed)
    f = prior.prior_mean_wh + np.linalg.cholesky(cov + 1e-9 * np.eye(len(cov))) @ rng.standard_normal(len(cov))
    e = rng.integers(0, lg.n_nodes, n_obs)
    y = f[e] + math.sqrt(prior.noise_var) * b * rng.standard_normal(n_obs)
    return f, e, y


def test_evidence_is_the_raw_observations_density_and_weights_are_bayes(setting) -> None:
    """Each candidate's ``log_evidence`` equals the multivariate normal log density of the raw observations in Wh
    under its prior (``sigma0^2 K + s^2 I``; 1e-8 relative: two exact formulas, one through the per-edge statistics),
    and the weights are the normalised evidences (uniform hyperprior; 1e-10)."""
    lg, prior = setting
    _, e, y = _draw(lg, prior, 1.0, 1.0, seed=0, n_obs=40)
    model = build_gp_hp(lg, prior, prior_scales="0.5,2", noise_scales="1,3")
    assert isinstance(model, HyperPriorGPModel) and len(model.candidates) == 4
    model.update(e, y)
    ref = []
    for c in model.candidates:
        cov = _dense_wh(c)[np.ix_(e, e)] + c.noise_var * np.eye(len(e))
        ref.append(stats.multivariate_normal(prior.prior_mean_wh[e], cov).logpdf(y))
    np.testing.assert_allclose(model.log_evidences(), ref, rtol=1e-8)
    w = np.exp(np.array(ref) - max(ref))
    np.testing.assert_allclose(model.weights(), w / w.sum(), rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize(("a", "b"), [(3.0, 0.333), (0.333, 3.0)])
def test_the_prior_the_data_came_from_wins(setting, a: float, b: float) -> None:
    """Truth and noise drawn from one of the nine default candidates, 300 observations: that candidate gets
    posterior probability above 0.9 (the neighbours differ by a factor 9 in a variance)."""
    lg, prior = setting
    _, e, y = _draw(lg, prior, a, b, seed=1, n_obs=300)
    model = build_gp_hp(lg, prior)
    assert isinstance(model, HyperPriorGPModel) and len(model.candidates) == 9
    model.update(e, y)
    grid = HyperPriorConfig().grid()
    true = grid.index((a, b, 1.0))
    assert model.weights()[true] > 0.9


def test_posterior_moments_are_the_sampled_mixtures(setting) -> None:
    """Few observations (weights spread over candidates): 40,000 bi-level draws have every edge's mean within 5
    standard errors of ``posterior().mean`` and variance within 10 ``v sqrt(2 / n)`` (a mixture's kurtosis); the same
    generator state gives the same draw."""
    lg, prior = setting
    _, e, y = _draw(lg, prior, 1.0, 1.0, seed=2, n_obs=6)
    model = build_gp_hp(lg, prior)
    assert isinstance(model, HyperPriorGPModel)
    model.update(e, y)
    assert np.sort(model.weights())[-2] > 0.01  # a real mixture
    post = model.posterior()
    assert post.sampler is not None
    rng = np.random.default_rng(3)
    n = 40_000
    draws = np.stack([post.sampler(rng) for _ in range(n)])
    assert np.all(np.abs(draws.mean(axis=0) - post.mean) < 5 * np.sqrt(post.variance / n))
    assert np.all(np.abs(draws.var(axis=0) - post.variance) < 10 * post.variance * math.sqrt(2 / n))
    np.testing.assert_array_equal(post.sampler(np.random.default_rng(9)), post.sampler(np.random.default_rng(9)))


def test_bad_parameters_are_refused(setting) -> None:
    lg, prior = setting
    with pytest.raises(ParameterError, match="prior_scales must be positive"):
        build_gp_hp(lg, prior, prior_scales="0,1")
    with pytest.raises(ParameterError, match="noise_scales must be comma-separated"):
        build_gp_hp(lg, prior, noise_scales="a,b")
    with pytest.raises(ParameterError, match="unknown gp-hp model parameters: beta"):
        build_gp_hp(lg, prior, beta=1)
