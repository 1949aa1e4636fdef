"""Exact GP edge model: rank-k updates vs the from-scratch solve, low-rank vs dense, MLL vs GPyTorch, resume."""

from __future__ import annotations

import math
import pickle

import gpytorch
import numpy as np
import pytest
import torch

from evroute.bandit import RoutingBandit
from evroute.environments import PaperEnvironment
from evroute.errors import ParameterError
from evroute.experiments.registry import make_model, model_names
from evroute.linegraph import build_line_graph
from evroute.models.builders import default_prior
from evroute.models.exact_posterior import DensePosterior, exact_solve
from evroute.models.gp_exact import ExactGPEdgeModel, Hyper
from evroute.models.gp_exact_mll import marginal_log_likelihood
from evroute.models.gp_kernels import EdgeContextKernel, EdgePriorMean, GraphMaternIndexKernel
from evroute.network.registry import load_network
from evroute.policies import make_policy
from evroute.routes import corner_route

NET = "synthetic:300:1"


@pytest.fixture(scope="module")
def env():
    return PaperEnvironment.sample(build_line_graph(load_network(NET)), seed=4)


def _observe(env, rng, k=15):
    e = rng.choice(env.n_edges, size=k, replace=True)  # repeats within a batch are allowed
    return e, env.true_mean_wh[e] + math.sqrt(env.noise_var) * rng.standard_normal(k)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_registered_prior_and_bad_parameters(env):
    assert "gp-exact" in model_names()
    m = make_model("gp-exact", env, seed=1)
    assert isinstance(m, ExactGPEdgeModel) and m.method == "incremental"  # auto: incremental on the CPU
    post = m.posterior()
    np.testing.assert_allclose(post.mean, env.prior_mean_wh, rtol=1e-12)
    prior_var = default_prior(env.linegraph, env.prior_mean_wh).prior_var  # the model's, never the environment's
    assert abs(post.var.mean() - prior_var) < 1e-9 * prior_var  # unit-average-variance kernel
    with pytest.raises(ParameterError):
        make_model("gp-exact", env, method="svd")
    with pytest.raises(ParameterError):
        make_model("gp-exact", env, n_inducing=10)


@pytest.mark.parametrize("refresh_every", [0, 100])
def test_rank_k_updates_equal_from_scratch_exact_solve_after_hundreds_of_rounds(env, refresh_every):
    """300 rounds of rank-k updates (no refresh / refreshes) vs K_{.U} (K_UU + diag(noise / n_u))^-1 ... ."""
    m = make_model("gp-exact", env, method="dense", refresh_every=refresh_every, refit_first=0)
    rng = np.random.default_rng(0)
    for _ in range(300):
        m.update(*_observe(env, rng))
    e, n, ybar, _ = m.statistics()
    assert n.max() > 5  # revisited edges: the noise / n_u terms matter
    k = m.kernel()
    mu, var, b = exact_solve(k, m.m0, e, n, ybar, m.hyper.noise)
    # independent reference: a plain dense solve with the textbook formula
    kd = k.dense()
    a = kd[np.ix_(e, e)] + np.diag(m.hyper.noise / n)
    sigma_ref = kd - kd[:, e] @ np.linalg.solve(a, kd[e, :])
    mu_ref = m.m0 + kd[:, e] @ np.linalg.solve(a, ybar - m.m0[e])
    assert _rel(mu, mu_ref) < 1e-10 and _rel(var, np.diag(sigma_ref)) < 1e-9
    post = m.posterior()
    s = m.scale
    assert _rel(post.mean / s, mu_ref) < 1e-8
    assert np.max(np.abs(post.var / s**2 - np.diag(sigma_ref)) / np.diag(sigma_ref)) < 1e-8
    sig = m._post.sigma
    full = np.tril(sig) + np.tril(sig, -1).T
    assert _rel(full, sigma_ref) < 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"graph_solver": "global"}, {"graph_tol": 1e-12}])
def test_lowrank_path_equals_dense_path(env, params):
    """The no-E x E formulation (global sparse-solve or tight local graph columns) gives the dense path's posterior."""
    md = make_model("gp-exact", env, method="dense", refresh_every=0, refit_first=0)
    ml = make_model("gp-exact", env, method="lowrank", refresh_every=37, refit_first=0, **params)
    rng = np.random.default_rng(1)
    for _ in range(120):
        e, y = _observe(env, rng)
        md.update(e, y)
        ml.update(e, y)
    pd_, pl = md.posterior(), ml.posterior()
    assert _rel(pl.mean, pd_.mean) < 1e-9
    assert np.max(np.abs(pl.var - pd_.var) / pd_.var) < 1e-8
    assert not hasattr(ml._post, "sigma")


@pytest.mark.slow
def test_lowrank_local_columns_within_the_propagated_bound(env):
    """Default local columns (entry-wise graph-kernel error eps = s1 tol (1 + max K_G)): the posterior moves by at most
    the first-order perturbation bound |d mu_i| <= eps ||alpha||_1 (1 + ||P_i||_1), |d var_i| <= eps (1 + ||P_i||_1)^2,
    with alpha = A^-1 (ybar - m_U) and P = K_{.U} A^-1 (A = K_UU + diag(noise / n_U))."""
    md = make_model("gp-exact", env, method="dense", refresh_every=0, refit_first=0)
    ml = make_model("gp-exact", env, method="lowrank", refresh_every=37, refit_first=0)
    rng = np.random.default_rng(1)
    for _ in range(120):
        e, y = _observe(env, rng)
        md.update(e, y)
        ml.update(e, y)
    e, n, ybar, _ = md.statistics()
    kd = md.kernel().dense()
    a = kd[np.ix_(e, e)] + np.diag(md.hyper.noise / n)
    alpha = np.linalg.solve(a, ybar - md.m0[e])
    p1 = 1.0 + np.abs(np.linalg.solve(a, kd[e, :])).sum(axis=0)  # 1 + ||P_i||_1
    eps = md.hyper.s1 * ml.config.graph_tol * (1.0 + md._graph_source()[0].max())
    s = md.scale
    d_mu = np.abs(ml.posterior().mean - md.posterior().mean) / s
    d_var = np.abs(ml.posterior().var - md.posterior().var) / s**2
    assert np.all(d_mu <= 1.01 * eps * np.abs(alpha).sum() * p1)
    assert np.all(d_var <= 1.01 * eps * p1**2)
    assert d_mu.max() > 0  # the truncation is active (not an exact solve in disguise)


def test_auto_switches_from_lowrank_to_dense_exactly(env):
    ma = make_model("gp-exact", env, refresh_every=0, refit_first=0, switch_edges=60)
    md = make_model("gp-exact", env, method="dense", refresh_every=0, refit_first=0)
    rng = np.random.default_rng(7)
    methods = []
    for _ in range(40):
        e, y = _observe(env, rng)
        ma.update(e, y)
        md.update(e, y)
        methods.append(ma.method)
    assert methods[0] == "incremental" and methods[-1] == "dense"
    assert _rel(ma.posterior().mean, md.posterior().mean) < 1e-10
    assert np.max(np.abs(ma.posterior().var - md.posterior().var) / md.posterior().var) < 1e-8


def test_dsyrk_update_is_in_place_and_torch_path_agrees(env):
    m = make_model("gp-exact", env, method="dense", refit_first=0)
    k = m.kernel()
    cpu = DensePosterior(k, m.m0, m.hyper.noise)
    tor = DensePosterior(k, m.m0, m.hyper.noise, device=torch.device("cpu"))  # the CUDA code path, on the CPU
    ptr = cpu.sigma.ctypes.data
    rng = np.random.default_rng(2)
    for _ in range(40):
        e, y = _observe(env, rng)
        cpu.condition(e, y / m.scale)
        tor.condition(e, y / m.scale)
    assert cpu.sigma.ctypes.data == ptr  # BLAS dsyrk updated Sigma in place (no E x E copy per round)
    assert _rel(tor.mu, cpu.mu) < 1e-12 and _rel(tor.var, cpu.var) < 1e-10


def test_marginal_likelihood_equals_gpytorch_exact_gp(env):
    """Sufficient-statistics MLL == GPyTorch ExactMarginalLogLikelihood on the raw observations (times N)."""
    lg = env.linegraph
    rng = np.random.default_rng(3)
    edges = rng.choice(40, size=120, replace=True)  # 120 observations of <= 40 edges
    y = env.true_mean_wh[edges] / math.sqrt(env.prior_var) + 0.4 * rng.standard_normal(120)
    hyper = Hyper(0.7, 0.4, np.array([0.8, 1.3, 2.0]), np.array([1.5, 0.6, 0.9]), 0.23)
    m0 = env.prior_mean_wh / math.sqrt(env.prior_var)
    graph = GraphMaternIndexKernel(lg.laplacian(), 2.0, 1.0, method="dense")
    kern = EdgeContextKernel(graph, 3, outputscales=(hyper.s1, hyper.s2)).double()
    kern.kf.lengthscale = torch.tensor(hyper.ls1)
    kern.kf2.lengthscale = torch.tensor(hyper.ls2)
    x = torch.as_tensor(np.column_stack([edges, lg.contexts()[edges]]), dtype=torch.float64)
    yt = torch.as_tensor(y)

    class _GP(gpytorch.models.ExactGP):
        def __init__(self, lik):
            super().__init__(x, yt, lik)
            self.mean_module = EdgePriorMean(m0).double()
            self.covar_module = kern

        def forward(self, z):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))

    lik = gpytorch.likelihoods.GaussianLikelihood().double()
    lik.noise = hyper.noise
    gp = _GP(lik)
    gp.train()
    with gpytorch.settings.max_cholesky_size(10_000), gpytorch.settings.cholesky_jitter(1e-12):
        ref = float(gpytorch.mlls.ExactMarginalLogLikelihood(lik, gp)(gp(x), yt).detach()) * len(y)
    uniq, inv = np.unique(edges, return_inverse=True)
    n = np.bincount(inv).astype(float)
    ybar = np.bincount(inv, weights=y) / n
    scatter = np.bincount(inv, weights=y * y) - n * ybar**2
    g_uu = graph.gram().numpy()[np.ix_(uniq, uniq)]
    ours = marginal_log_likelihood(hyper, g_uu, lg.contexts()[uniq], m0[uniq], n, ybar, scatter)
    assert abs(ours - ref) < 1e-7 * abs(ref)


@pytest.mark.slow
def test_refit_increases_marginal_likelihood_and_recovers_noise(env):
    m = make_model("gp-exact", env, refit_first=0, learn_noise=True)
    m.hyper = Hyper(0.5, 0.5, np.ones(3), np.ones(3), 1.0)  # noise 6x too large
    rng = np.random.default_rng(4)
    for _ in range(60):
        m.update(*_observe(env, rng, 30))
    e, n, ybar, sc = m.statistics()

    def mll(h):
        g = m._graph_source()[0]
        return marginal_log_likelihood(h, g[np.ix_(e, e)], m.contexts[e], m.m0[e], n, ybar, sc)

    before = mll(m.hyper)
    m.fit_hyperparameters()
    assert mll(m.hyper) > before
    true_noise = env.noise_var / float(m.scale) ** 2  # model units: the model prior's sigma0^2
    assert abs(m.hyper.noise / true_noise - 1) < 0.3  # the within-edge scatter identifies the noise


def test_bandit_run_deterministic_and_resumes_bit_identically(env):
    lg = env.linegraph
    s, g = corner_route(lg, "A")

    def bandit():
        m = make_model("gp-exact", env, seed=0, refit_first=8, refresh_every=6)
        return RoutingBandit(env, m, make_policy("ucb"), s, g, seed=5)

    a = bandit()
    ra = a.run(25)
    b = bandit()
    b.run(13)  # stop between refreshes: the resumed model replays the batches since the last one
    c = bandit()
    c.load_state(pickle.loads(pickle.dumps(b.state())))
    rc = c.run(12)
    assert [r.route for r in ra[13:]] == [r.route for r in rc]
    np.testing.assert_array_equal(a.model.posterior().var, c.model.posterior().var)
    np.testing.assert_array_equal(a.model.posterior().mean, c.model.posterior().mean)
    assert a.model.hyperparameters()["outputscale_prod"] != 0.5  # refits happened (rounds 8, 16)


@pytest.mark.slow
def test_joint_thompson_sample_has_the_posterior_mean_and_covariance(env):
    """Matheron draws: sample mean and covariance of 3000 draws match mu and Sigma within 5 standard errors."""
    m = make_model("gp-exact", env, refit_first=0, ts_joint=True)
    rng = np.random.default_rng(6)
    for _ in range(30):
        m.update(*_observe(env, rng))
    post = m.posterior()
    assert post.sampler is not None
    n = 3000
    draws = np.stack([post.sampler(rng) for _ in range(n)])
    e, cnt, _, _ = m.statistics()
    kd = m.kernel().dense()
    sig = (kd - kd[:, e] @ np.linalg.solve(kd[np.ix_(e, e)] + np.diag(m.hyper.noise / cnt), kd[e])) * m.scale**2
    corr = sig / np.sqrt(np.outer(np.diag(sig), np.diag(sig)))
    np.fill_diagonal(corr, 0.0)
    i, j = np.unravel_index(np.argmax(np.abs(corr)), corr.shape)
    assert abs(corr[i, j]) > 0.2  # the posterior couples edges (per-edge draws would not)
    sub = np.unique(np.concatenate([[i, j], m.order[:10], np.setdiff1d(np.arange(env.n_edges), m.order)[:10]]))
    z = (draws[:, sub].mean(0) - post.mean[sub]) / np.sqrt(np.diag(sig)[sub] / n)
    assert np.max(np.abs(z)) < 5
    c_hat = np.cov(draws[:, sub].T)
    s = sig[np.ix_(sub, sub)]
    se = np.sqrt((np.outer(np.diag(s), np.diag(s)) + s**2) / n)
    assert np.max(np.abs(c_hat - s) / se) < 5
    ts = make_policy("ts")
    np.testing.assert_array_equal(
        ts.estimates(post, 1, np.random.default_rng(9)), post.sampler(np.random.default_rng(9))
    )


def test_bad_model_parameter_is_one_line_error_and_writes_nothing(tmp_path):
    from evroute.cli import main

    out = tmp_path / "run"
    rc = main(["run", "--network", NET, "--model", "gp-exact", "--model-param", "method=qr", "--out", str(out)])
    assert rc == 2
    assert not out.exists()
