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


def _linear_bi(n_edges: int, prior_var: float, rng: np.random.Generator):
    from evroute.models.linear_obs import DiagonalKernel, LinearObsEdgeModel

    m0 = rng.uniform(20.0, 60.0, n_edges)
    f = m0 + np.sqrt(prior_var) * rng.standard_normal(n_edges)
    model = LinearObsEdgeModel(m0, DiagonalKernel(np.full(n_edges, prior_var)), 1.0, 1.0, "bi")
    return model, f


def test_linear_readings_ml2_recover_the_noise_scale() -> None:
    """Readings over random pairs of 40 edges with a known nominal noise ``R_0`` (diagonal, 1-4 Wh^2) and a true
    noise 3 ``R_0``; the model starts at scale 1.  Tolerance: 4 standard errors of a variance-scale ML estimate,
    ``phi sqrt(2 / (m - E))`` for ``m`` readings and ``E`` edges (the parameters the readings also pin down)."""
    rng = np.random.default_rng(11)
    model, f = _linear_bi(40, 25.0, rng)
    phi_true, m = 3.0, 0
    for _ in range(600):
        e = rng.choice(40, size=4, replace=False)
        a = np.zeros((3, 4))
        a[0, :2], a[1, 1:3], a[2, 2:] = rng.uniform(0.2, 1.0, (3, 2))
        r0 = np.diag(rng.uniform(1.0, 4.0, 3))
        y = a @ f[e] + np.sqrt(phi_true) * np.sqrt(np.diag(r0)) * rng.standard_normal(3)
        model.observe(e, a, y, r0)
        m += 3
    phi = model.fit_noise_scale()
    assert abs(phi - phi_true) < 4 * phi_true * np.sqrt(2 / (m - 40))
    assert model.posterior().noise_var[0] == pytest.approx(phi * model.noise_var)


def test_trip_effect_is_recovered_by_moments() -> None:
    """400 synthetic trips over 8 of 60 edges each (4 windows of 2 edges), each trip's energy scaled by ``1 + beta``,
    ``beta ~ N(0, 0.1^2)``, reading noise known; ``tau^2`` by moments (noise scale 1, the truth).  Tolerance: 4 of the
    estimator's own standard errors (trips as clusters); with no effect in the data the estimate is within 4 SE of 0
    (the test can fail both ways)."""
    from evroute.models.trip_effect import fit_trip_effect

    for tau in (0.1, 0.0):
        rng = np.random.default_rng(5)
        model, f = _linear_bi(60, 25.0, rng)
        for _ in range(400):
            e = rng.choice(60, size=8, replace=False)
            a = np.kron(np.eye(4), np.ones((1, 2)))
            r0 = np.diag(rng.uniform(0.5, 2.0, 4))
            beta = tau * rng.standard_normal()
            y = (1 + beta) * (a @ f[e]) + np.sqrt(np.diag(r0)) * rng.standard_normal(4)
            model.observe(e, a, y, r0)
            model.trips.add(e, a.sum(axis=0), float(y.sum()), float(r0.sum()))
        post = model.posterior()
        fit = fit_trip_effect(post.mean, post.covariance_of, model.trips)
        assert fit.trips == 400 and np.isfinite(fit.se) and fit.se > 0
        assert abs(fit.rel_var - tau**2) < 4 * fit.se + 1e-12
        if tau > 0:
            assert fit.rel_var > 4 * fit.se  # detected


def test_route_interval_carries_the_trip_effect() -> None:
    """A route's trip variance is the edges' posterior covariance summed, their noise and ``tau^2 (sum m)^2``; the
    per-edge s.d.s still bound it (Cauchy-Schwarz, what reach relies on)."""
    from evroute.driver.belief import RouteBelief

    rng = np.random.default_rng(2)
    model, f = _linear_bi(30, 16.0, rng)
    e = np.arange(6)
    model.observe(e, np.ones((1, 6)), np.array([f[e].sum()]), np.eye(1))
    plain, eff = RouteBelief(model), RouteBelief(model, trip_rel_var=0.04)
    route = np.array([0, 1, 2, 7])
    m, v0 = plain.route_moments(route)
    m1, v1 = eff.route_moments(route)
    cov = model.posterior().covariance_of(route)
    assert m1 == m
    assert v0 == pytest.approx(cov.sum() + model.noise_var * 4, rel=1e-9)
    assert cov[0, 1] < 0  # one reading over edges 0-5: their posteriors are correlated, and it is used
    assert v1 - v0 == pytest.approx(0.04 * plain.mean[route].sum() ** 2, rel=1e-9)
    assert np.sqrt(v1) <= eff.edge_sd()[route].sum() + 1e-9


def test_route_noise_recovers_whole_trip_noise_and_trip_effect() -> None:
    """Readings whose window noise partly cancels over a trip (a zero-sum spread along the trip, as energy spread
    along an edge is, plus independent noise), nominal ``R_0`` the windows' true marginal variance: the readings' scale
    is right, a whole trip's noise is ``k = c^2 / (s^2 (1 - 1/n) + c^2)`` of the nominal, and each trip scales by
    ``1 + beta``, ``beta ~ N(0, tau^2)``.  :func:`fit_route_noise` recovers ``k`` and ``tau^2``.  Tolerance: 4 of the
    least-squares estimator's own standard errors (sandwich, trips as clusters), computed here from its residuals."""
    from evroute.models.trip_effect import fit_route_noise

    rng = np.random.default_rng(8)
    n_w, s, c, tau = 4, 3.0, 1.0, 0.15
    var_w = s**2 * (1 - 1 / n_w) + c**2
    k_true = c**2 / var_w
    model, f = _linear_bi(60, 25.0, rng)
    a = np.kron(np.eye(n_w), np.ones((1, 2)))
    for _ in range(600):
        e = rng.choice(60, size=2 * n_w, replace=False)
        g = s * rng.standard_normal(n_w)
        noise = (g - g.mean()) + c * rng.standard_normal(n_w)
        y = (1 + tau * rng.standard_normal()) * (a @ f[e]) + noise
        r0 = var_w * np.eye(n_w)
        model.observe(e, a, y, r0)
        model.trips.add(e, a.sum(axis=0), float(y.sum()), float(r0.sum()))
    phi = model.fit_noise_scale()
    post = model.posterior()
    fit = fit_route_noise(post.mean, post.covariance_of, model.trips, phi)
    assert fit.trips == 600
    x, t = [], []
    for e, w, y, r in model.trips.trips():
        mu = float(w @ post.mean[e])
        x.append((phi * r, mu * mu))
        t.append((y - mu) ** 2 + float(w @ post.covariance_of(e) @ w))
    x_arr, t_arr = np.array(x), np.array(t)
    coef = np.array([fit.noise_mult, fit.rel_var])
    res = t_arr - x_arr @ coef
    inv = np.linalg.inv(x_arr.T @ x_arr)
    se = np.sqrt(np.diag(inv @ (x_arr.T * res**2) @ x_arr @ inv))
    assert (fit.noise_mult_se, fit.rel_var_se) == pytest.approx(tuple(se), rel=1e-6)  # the fit's own, as computed here
    assert abs(fit.noise_mult * phi - k_true) < 4 * se[0] * phi
    assert abs(fit.rel_var - tau**2) < 4 * se[1]
    assert fit.rel_var > 2 * se[1] and fit.noise_mult < 0.5  # detected (one-sided 2 SE), and noise below nominal


@pytest.mark.parametrize("kind", ["bi", "bi-dense", "gp"])
def test_noise_log_ml_equals_the_posterior_log_ml_at_every_scale(kind: str) -> None:
    """:func:`noise_log_ml` (one eigendecomposition; for independent edges a sparse LU per evaluation, or with
    ``dense=True`` the eigendecomposition too) gives the log marginal likelihood :func:`linear_posterior` computes by a
    Cholesky at each noise scale and prior covariance factor (float rounding only: rtol 1e-9), for independent edges
    and a dense kernel; and the posterior's :meth:`SubsetCovariance.quad` is ``w^T cov_of(idx) w``."""
    from evroute.models.linear_obs import (
        DiagonalKernel,
        LinearObsEdgeModel,
        linear_posterior,
        noise_log_ml,
    )

    rng = np.random.default_rng(4)
    n = 30
    if kind.startswith("bi"):
        kernel: object = DiagonalKernel(rng.uniform(5.0, 20.0, n))
    else:
        x = rng.standard_normal((n, n))

        class Dense:
            def __init__(self, k: np.ndarray) -> None:
                self.k, self.n = k, len(k)

            def diag(self) -> np.ndarray:
                return np.diag(self.k).copy()

            def columns(self, idx: np.ndarray) -> np.ndarray:
                return self.k[:, idx]

        kernel = Dense(x @ x.T / n + 0.5 * np.eye(n))
    model = LinearObsEdgeModel(rng.uniform(20, 60, n), kernel, 4.0, 1.0, "bi")  # type: ignore[arg-type]
    for _ in range(40):
        e = rng.choice(n - 5, size=3, replace=False)  # the last 5 edges never read: U is a strict subset
        model.observe(e, rng.uniform(0.2, 1, (2, 3)), rng.uniform(20, 90, 2), np.diag(rng.uniform(1, 3, 2)))
    log_ml = noise_log_ml(model.kernel, model.scale2, model.prior_mean, model.stats, dense=kind != "bi")
    for phi, c in ((0.01, 1.0), (0.3, 1.0), (1.0, 1.0), (7.0, 1.0), (500.0, 1.0), (0.3, 0.01), (2.0, 30.0)):
        want = linear_posterior(model.kernel, model.scale2 * c, model.prior_mean, model.stats, noise_scale=phi)[3]
        assert log_ml(phi, c) == pytest.approx(want, rel=1e-9)
    post = model.posterior()
    idx, w = np.array([0, 4, 27, 9]), rng.uniform(0, 1, 4)
    assert post.quad_of(idx, w) == pytest.approx(float(w @ post.covariance_of(idx) @ w), rel=1e-9)


def test_fit_hyperparameters_recovers_the_prior_scale_and_the_noise() -> None:
    """300 independent edges whose truth is drawn with 4 times the model's prior variance, each read 6 times in pairs
    (``y = f_a + f_b`` style windows over 2 edges) with 2.5 times the nominal noise: the joint ML-II gives ``c`` and
    ``phi`` within 4 standard errors of a variance estimate from 300 (prior) and 900 (noise) degrees of freedom,
    ``sqrt(2 / df)`` relative; the posterior then uses ``c`` (its prior variance on an unread edge is ``c`` times the
    kernel's) and the model file keeps both."""
    from evroute.models.linear_obs_build import fit_hyperparameters

    rng = np.random.default_rng(12)
    n, pv = 300, 25.0
    model, _ = _linear_bi(n + 1, pv, rng)  # edge n is never read
    f = model.prior_mean + np.sqrt(4.0 * pv) * rng.standard_normal(n + 1)
    for _ in range(900):
        e = rng.choice(n, size=2, replace=False)
        a = rng.uniform(0.3, 1.0, (2, 2))
        r0 = np.diag(rng.uniform(1.0, 3.0, 2))
        model.observe(e, a, a @ f[e] + np.sqrt(2.5 * np.diag(r0)) * rng.standard_normal(2), r0)
    phi, c = fit_hyperparameters(model)
    assert abs(c - 4.0) < 4 * 4.0 * np.sqrt(2 / n) and abs(phi - 2.5) < 4 * 2.5 * np.sqrt(2 / 900)
    assert model.posterior().var[n] == pytest.approx(c * pv, rel=1e-9)
