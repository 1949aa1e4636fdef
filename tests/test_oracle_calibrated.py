"""The oracle ablation hands models the consistent environment's ACTUAL marginal variances (issue 24, item 2).

The consistent environment caps the paper's variance ``sigma0^2 v_e`` at ``(max_cv r_det(e))^2``; the oracle prior
must carry the capped values, per edge, not the paper's prior variance.  Checked against the environment's own draws:

* Monte-Carlo tolerance: the mean of every ``f_e`` is ``E_det(e)`` exactly (the log-normal multiplier has mean 1),
  so ``v_hat_e = mean_n (f_{n,e} - E_det(e))^2`` over ``N`` environment seeds is unbiased for ``Var f_e``, and a sum
  over a set of edges ``G`` is the mean of the ``N`` i.i.d. draws ``q_n = sum_{e in G} (f_{n,e} - E_det(e))^2``: its
  standard error is ``std(q) / sqrt(N)``, estimated from the same draws.  The oracle's sum over ``G`` must lie within
  4 standard errors (two-sided normal tail 6e-5; the seeds are fixed, so the test is deterministic), separately on
  the capped and the uncapped edges; per edge likewise with each edge's own standard error.
* The same criterion rejects what the oracle handed the models before (the paper's ``sigma0^2 v_e``) on the capped
  edges, so the check has the power to fail.
* BI takes the variances as its per-edge prior; ``gp-exact`` scales its kernel ``a_i a_j K_ij`` so that its prior
  variances are them (checked to round-off), its posterior is the exact GP posterior of that scaled kernel (checked
  against a from-scratch dense solve) and its marginal likelihood is the Gaussian density of that kernel (checked
  against SciPy).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from netfixtures import grid_network

from evroute.environments import ConsistentConfig, ConsistentEnvironment, PaperEnvironment
from evroute.environments.paper import sample_prior_function_and_variance
from evroute.errors import ParameterError
from evroute.experiments.registry import ORACLE_VAR_FLOOR, make_model, model_prior
from evroute.kernels.graph_gram import dense_graph_gram
from evroute.linegraph import build_line_graph
from evroute.models.gp_exact import EdgeKernelColumns
from evroute.models.gp_exact_mll import marginal_log_likelihood

#: every test here starts a browser / SUMO or builds a large fixture (seconds of CPU each): the slow tier
pytestmark = pytest.mark.slow

#: a hilly 4x4 grid with the default parameters (max_cv = 1): 40 % of its edges are capped
CFG = ConsistentConfig()
N_DRAWS = 400


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(grid_network(4, 4, spacing_m=100.0, seed=3))


@pytest.fixture(scope="module")
def draws(lg):
    """``(N, E)`` true energies of environment seeds ``0..N-1`` and the environment of seed 0."""
    envs = [ConsistentEnvironment.sample(lg, config=CFG, seed=s) for s in range(N_DRAWS)]
    return np.stack([e.true_mean_wh for e in envs]), envs[0]


def _within(q: np.ndarray, expected: float, k: float = 4.0) -> bool:
    """Whether ``expected`` is within ``k`` standard errors of the mean of the i.i.d. draws ``q``."""
    return bool(abs(q.mean() - expected) <= k * q.std(ddof=1) / np.sqrt(len(q)))


@pytest.mark.slow
def test_oracle_prior_variance_is_the_variance_of_the_environments_draws(lg, draws):
    f, env = draws
    prior = model_prior(env, "oracle")
    assert prior.init == "oracle" and prior.prior_var_edges is not None
    paper_var = env.prior_var * sample_prior_function_and_variance(lg, CFG, np.random.default_rng(0))[1]
    capped = prior.prior_var_edges < paper_var * (1 - 1e-9)
    assert 0.2 < capped.mean() < 0.8  # both groups are well populated
    dev2 = (f - env.prior_mean_wh) ** 2  # (N, E)
    for group in (capped, ~capped):
        assert _within(dev2[:, group].sum(1), float(prior.prior_var_edges[group].sum()))
    # the paper's prior variance (the oracle's value before the fix) is rejected where the cap binds
    assert not _within(dev2[:, capped].sum(1), float(paper_var[capped].sum()))
    # edge by edge, each with its own standard error
    z = (dev2.mean(0) - prior.prior_var_edges) / (dev2.std(0, ddof=1) / np.sqrt(N_DRAWS))
    assert np.all(np.abs(z) < 4.0)
    # uncapped edges keep the paper's variance exactly; the floor never binds here
    np.testing.assert_allclose(prior.prior_var_edges[~capped], paper_var[~capped], rtol=1e-12)
    assert prior.prior_var_edges.min() > ORACLE_VAR_FLOOR * env.prior_var


def test_bi_and_exact_gp_start_from_the_oracle_variances(draws):
    env = draws[1]
    target = model_prior(env, "oracle").prior_var_edges
    for name in ("bi", "gp-exact"):
        post = make_model(name, env, seed=0, init="oracle").posterior()
        np.testing.assert_allclose(post.variance, target, rtol=1e-12, err_msg=name)
    # the default prior knows nothing of them: one scalar prior variance (BI)
    assert np.ptp(make_model("bi", env, seed=0).posterior().variance) == 0.0


@pytest.mark.parametrize("method", ["dense", "lowrank"])
def test_exact_gp_with_per_edge_variances_is_the_gp_of_the_scaled_kernel(draws, method):
    env = draws[1]
    model = make_model("gp-exact", env, seed=0, init="oracle", method=method, refit_first=0)
    rng = np.random.default_rng(1)
    batches = [rng.choice(env.n_edges, 5, replace=False) for _ in range(6)]
    for e in batches:
        model.update(e, env.observe(e, rng))
    # from scratch: K0 the unscaled kernel at the oracle's hyper-parameters on the exact dense graph Gram matrix,
    # a = sqrt(target / (sigma0^2 diag K0))
    gram = dense_graph_gram(env.linegraph.laplacian(), model.graph_nu, model.graph_kappa, memo=False)
    k0 = EdgeKernelColumns(gram, model.contexts, model.hyper).dense()
    s2 = env.prior_var
    a = np.sqrt(model_prior(env, "oracle").prior_var_edges / (s2 * np.diag(k0)))
    cov = s2 * a[:, None] * k0 * a[None, :]  # (E, E) Wh^2
    e = np.concatenate(batches)
    y = (model.sum_y / np.maximum(model.counts, 1) * model.scale)[np.unique(e)]
    u = np.unique(e)
    n = model.counts[u]
    a_uu = cov[np.ix_(u, u)] + np.diag(env.noise_var / n)
    kxu = cov[:, u]
    mean = env.prior_mean_wh + kxu @ np.linalg.solve(a_uu, y - env.prior_mean_wh[u])
    var = np.diag(cov) - np.einsum("ij,ji->i", kxu, np.linalg.solve(a_uu, kxu.T))
    post = model.posterior()
    # dense: round-off; lowrank: truncated local graph columns, entry-wise error <= graph_tol = 1e-6 of the mean
    # prior variance, propagated through the solves (a few times that, relative)
    tol = 1e-9 if method == "dense" else 1e-4
    np.testing.assert_allclose(post.mean, mean, rtol=tol, atol=tol * np.abs(mean).max())
    np.testing.assert_allclose(post.variance, var, rtol=tol, atol=tol * var.max())


def test_marginal_likelihood_with_amplitude_is_the_gaussian_density():
    """Value: the multivariate-normal density of ``a a^T o K + s^2 I`` (float64 round-off of a 7 x 7 Cholesky,
    relative 1e-10); gradient: central differences (step 1e-6 in the log-parameters, error O(1e-10) on values O(10),
    compared at 1e-5 relative)."""
    from evroute.models.gp_exact_mll import Hyper, MarginalLikelihood

    rng = np.random.default_rng(2)
    u, d = 7, 2
    x = rng.standard_normal((u, d))
    g = np.exp(-0.5 * (np.arange(u)[:, None] - np.arange(u)[None, :]) ** 2)  # a PSD "graph" Gram matrix
    amp = rng.uniform(0.3, 1.5, u)
    m, ybar = rng.standard_normal(u), rng.standard_normal(u)
    ones = np.ones(u)
    h = Hyper(0.6, 0.4, np.array([1.2, 0.7]), np.array([0.9, 1.5]), 0.05)
    ll = marginal_log_likelihood(h, g, x, m, ones, ybar, 0 * ones, amplitude=amp)
    k = EdgeKernelColumns(g, x, h).dense()
    cov = amp[:, None] * k * amp[None, :] + 0.05 * np.eye(u)
    assert float(ll) == pytest.approx(scipy.stats.multivariate_normal(m, cov).logpdf(ybar), rel=1e-10)
    f = MarginalLikelihood(g, x, m, ones + 1, ybar, 0.1 * ones, amplitude=amp)
    theta = h.pack()
    _, grad = f(theta)
    eps = 1e-6
    fd = [
        (f(theta + eps * e, grad=False)[0] - f(theta - eps * e, grad=False)[0]) / (2 * eps) for e in np.eye(len(theta))
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_models_that_cannot_take_per_edge_variances_refuse_and_the_paper_oracle_has_none(lg, draws):
    env = draws[1]
    for name in ("gp", "kr"):
        with pytest.raises(ParameterError, match="per-edge prior variances"):
            make_model(name, env, seed=0, init="oracle")
    paper = PaperEnvironment.sample(lg, seed=0)
    assert paper.marginal_variances() is None and model_prior(paper, "oracle").prior_var_edges is None
    assert model_prior(env, "default").prior_var_edges is None


def test_cli_refuses_per_edge_variances_for_the_svgp_in_one_line_and_writes_nothing(tmp_path, capsys):
    from evroute.cli import main

    out = tmp_path / "r"
    argv = ["run", "--network", "synthetic:200:3", "--env", "consistent", "--model", "gp", "--horizon", "2"]
    assert main([*argv, "--model-param", "init=oracle", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evroute: error:") and "per-edge prior variances" in err[0]
    assert not out.exists()
