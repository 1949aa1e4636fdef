"""Noise and hyper-parameters from data: BI by empirical Bayes (ML-II), the exact GP by ML-II including the noise, and
the trip-level random effect (method of moments)."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.models.bi import BayesianEdgeModel


def _bi_data(rng: np.random.Generator, n_edges: int, noise_sd: float, prior_sd: float):
    m0 = rng.uniform(20.0, 80.0, n_edges)
    f = m0 + prior_sd * rng.standard_normal(n_edges)
    n = rng.integers(2, 12, n_edges)
    e = np.repeat(np.arange(n_edges), n)
    y = f[e] + noise_sd * rng.standard_normal(len(e))
    return m0, e, y, n


def test_bi_empirical_bayes_recovers_noise_and_prior_variance() -> None:
    """Synthetic: 400 edges, 2-11 observations each, noise s.d. 3 Wh, prior s.d. 5 Wh; the fit starts 10x off.
    Tolerances: 4 standard errors of each ML-II estimate, ``s_n^2 sqrt(2 / df)`` with ``df = sum (n_e - 1)`` for the
    noise (the within-edge scatter), ``sqrt(2 / E) mean(s0^2 + s_n^2 / n_e)`` for the prior variance."""
    rng = np.random.default_rng(7)
    noise_sd, prior_sd = 3.0, 5.0
    m0, e, y, n = _bi_data(rng, 400, noise_sd, prior_sd)
    model = BayesianEdgeModel(m0, 250.0, 0.9)
    model.update(e, y)
    noise, prior = model.fit_variances()
    df = float((n - 1).sum())
    assert abs(noise - noise_sd**2) < 4 * noise_sd**2 * np.sqrt(2 / df)
    se_prior = np.sqrt(2 / len(n)) * float(np.mean(prior_sd**2 + noise_sd**2 / n))
    assert abs(prior - prior_sd**2) < 4 * se_prior
    assert np.all(model.noise_var == noise) and np.all(model.prior_var == prior)
    # the maximum: the likelihood is lower 10 % either side in each variance
    best = model.log_marginal_likelihood(noise, prior)
    for dn, dp in ((1.1, 1), (0.9, 1), (1, 1.1), (1, 0.9)):
        assert model.log_marginal_likelihood(noise * dn, prior * dp) < best


def test_bi_empirical_bayes_needs_a_repeated_edge_and_survives_the_store(tmp_path) -> None:
    from evroute.errors import DataError
    from evroute.linegraph import build_line_graph
    from evroute.models.store import load_model, save_model
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("synthetic:60:0"))
    model = BayesianEdgeModel(np.full(lg.n_nodes, 10.0), 4.0, 1.0)
    model.update(np.arange(5), np.ones(5))
    with pytest.raises(DataError, match="observed twice"):
        model.fit_variances()
    rng = np.random.default_rng(1)
    model.update(np.repeat(np.arange(lg.n_nodes), 4), 10.0 + rng.standard_normal(4 * lg.n_nodes))
    path = save_model(tmp_path / "bi.npz", model, lg)
    loaded, _ = load_model(path, lg)
    assert isinstance(loaded, BayesianEdgeModel)
    np.testing.assert_array_equal(loaded.total_sq, model.total_sq)
    assert loaded.fit_variances() == pytest.approx(model.fit_variances(), rel=1e-9)


def test_exact_gp_ml2_learns_the_noise() -> None:
    """The exact GP with ``learn_noise`` (ML-II over outputscales, lengthscales and the noise) recovers a known noise
    variance from per-edge observations (truth: a draw of the prior; 10 observations on each of 150 edges, noise s.d.
    0.4 sigma_det, the model starting at 0.1).  Tolerance: 4 standard errors ``s_n^2 sqrt(2 / df)``, ``df = sum (n_e
    - 1)`` (the within-edge scatter, which identifies the noise)."""
    from evroute.linegraph import build_line_graph
    from evroute.models.store import prior_model
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("synthetic:150:3"))
    from evroute.models.gp_exact import ExactGPEdgeModel

    model = prior_model("gp-exact", lg, noise_frac=0.1, learn_noise=True, fit_iters=200, refit_first=0)
    assert isinstance(model, ExactGPEdgeModel)
    s2 = float(model.scale) ** 2
    noise_true = (0.4**2 / 0.25**2) * s2  # (0.4 sigma_det)^2; the prior variance is (0.25 sigma_det)^2
    rng = np.random.default_rng(3)
    kern = model.kernel().dense() * s2
    f = model.prior_mean_wh + np.linalg.cholesky(kern + 1e-9 * s2 * np.eye(len(kern))) @ rng.standard_normal(len(kern))
    n_per = 10
    e = np.repeat(np.arange(model.n_edges), n_per)
    y = f[e] + np.sqrt(noise_true) * rng.standard_normal(len(e))
    model.update(e, y)
    before = model.noise_var
    model.fit_hyperparameters()
    df = model.n_edges * (n_per - 1)
    assert abs(before - noise_true) > 10 * noise_true * np.sqrt(2 / df)  # it started far off
    assert abs(model.noise_var - noise_true) < 4 * noise_true * np.sqrt(2 / df)
