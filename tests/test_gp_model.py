"""SVGP edge model: posterior moves toward observations, variance shrinks, inducing-set updates, GP-TS runs."""

from __future__ import annotations

import json
import pickle

import gpytorch
import numpy as np
import pytest
import torch

from evroute.bandit import RoutingBandit
from evroute.cli import main
from evroute.environments import PaperEnvironment
from evroute.experiments import ExperimentConfig, run_experiment
from evroute.experiments.registry import make_model, model_names
from evroute.linegraph import build_line_graph
from evroute.models.builders import default_prior
from evroute.models.gp import GPEdgeModel
from evroute.network.registry import load_network
from evroute.policies import make_policy
from evroute.routes import corner_route

NET = "synthetic:200:3"


@pytest.fixture(scope="module")
def env():
    return PaperEnvironment.sample(build_line_graph(load_network(NET)), seed=2)


def test_gp_registered_and_prior_matches_environment(env):
    assert "gp" in model_names()
    m = make_model("gp", env, seed=3)
    assert isinstance(m, GPEdgeModel) and m.config.seed == 3
    post = m.posterior()
    np.testing.assert_allclose(post.mean, env.prior_mean_wh, rtol=1e-12)
    prior = default_prior(env.linegraph, env.prior_mean_wh)  # the model's prior, never the environment's
    assert abs(post.var.mean() - prior.prior_var) < 1e-9 * prior.prior_var  # unit-average-variance components
    np.testing.assert_allclose(post.noise_var, prior.noise_var)


@pytest.mark.slow
def test_update_moves_posterior_toward_observations_and_shrinks_variance(env):
    m = make_model("gp", env, steps=5)
    post0 = m.posterior()
    edges = np.arange(0, 40, 2)
    target = env.prior_mean_wh[edges] + 2.0 * np.sqrt(env.prior_var)  # far above the prior mean
    for _ in range(6):
        m.update(edges, target)
    post = m.posterior()
    before = np.abs(post0.mean[edges] - target)
    after = np.abs(post.mean[edges] - target)
    assert np.all(after < 0.5 * before)
    assert np.all(post.var[edges] < 0.5 * post0.var[edges])
    far = np.setdiff1d(np.arange(env.n_edges), edges)
    assert np.median(post.var[far] / post0.var[far]) > np.max(post.var[edges] / post0.var[edges])
    assert np.all(np.isfinite(post.mean)) and np.all(post.var > 0)


def test_custom_predictive_equals_gpytorch_predictive(env):
    m = make_model("gp", env, steps=2)
    rng = np.random.default_rng(0)
    for _ in range(4):
        e = rng.choice(env.n_edges, 15, replace=False)
        m.update(e, env.observe(e, rng))
    post = m.posterior()
    m.gp.eval()
    with torch.no_grad():
        out = m.gp(m._all_inputs())
    np.testing.assert_allclose(post.mean, out.mean.numpy() * m.scale, rtol=1e-6, atol=1e-6 * m.scale)
    np.testing.assert_allclose(post.var, out.variance.numpy() * m.scale**2, rtol=1e-5, atol=1e-8 * m.scale**2)


def test_elbo_from_statistics_equals_gpytorch_variational_elbo(env):
    """The aggregated objective is GPyTorch's VariationalELBO over the minibatch, in value and in gradient."""
    from evroute.models.gp_elbo import elbo_from_statistics, minibatch_statistics

    m = make_model("gp", env, steps=1, batch_size=60)
    rng = np.random.default_rng(4)
    for _ in range(5):
        e = rng.choice(40, 12, replace=False)  # few distinct edges: the minibatch repeats them
        m.update(e, env.observe(e, rng))
    e_b = m._hist_e[: m.n_obs]
    y_b = m._hist_y[: m.n_obs] / m.scale
    assert len(np.unique(e_b)) < len(e_b)
    m.gp.train()
    m.likelihood.train()

    def grads(loss):
        params = [p for p in list(m.gp.parameters()) + list(m.likelihood.parameters()) if p.requires_grad]
        m.gp.zero_grad()
        loss.backward()
        return float(loss.detach()), [p.grad.clone() for p in params]

    n_data = 10 * len(e_b)
    mll = gpytorch.mlls.VariationalELBO(m.likelihood, m.gp, num_data=n_data)
    ref, g_ref = grads(mll(m.gp(m._inputs(e_b)), torch.as_tensor(y_b)))
    edges, cnt, s1, s2 = minibatch_statistics(e_b, y_b)
    assert cnt.sum() == len(e_b) and np.allclose(s1, [y_b[e_b == u].sum() for u in edges])
    t = torch.as_tensor
    got, g_got = grads(
        elbo_from_statistics(
            m.gp, m.likelihood, m._inputs(edges), t(cnt), t(s1), t(s2), batch_size=len(e_b), num_data=n_data
        )
    )
    assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)
    for a, b in zip(g_got, g_ref, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-10)


def test_inducing_set_capped_and_projection_preserves_posterior(env):
    m = make_model("gp", env, n_inducing=12, batch_size=30, steps=1)
    rng = np.random.default_rng(1)
    swaps = 0
    for _ in range(6):
        before = m.inducing_edges.copy()
        e = rng.choice(env.n_edges, 8, replace=False)
        m.update(e, env.observe(e, rng))
        after = m.inducing_edges
        if len(before) == 12 and not np.array_equal(before, after):  # a swap at capacity
            swaps += 1
            kept = np.isin(before, after)
            np.testing.assert_array_equal(after[kept], before[kept])  # kept members keep their positions
            assert set(after[~kept]).isdisjoint(before)
    assert swaps > 0
    assert len(m.inducing_edges) == 12 and len(set(m.inducing_edges)) == 12
    top = np.sort(m.counts)[::-1][:12]
    assert np.sort(m.counts[m.inducing_edges])[::-1].tolist() == top.tolist()
    # projecting q(u) onto the same inducing set reproduces the posterior exactly
    post = m.posterior()
    z = m.gp.variational_strategy.inducing_points.detach()
    vec, mat = m._project(z, z.clone())
    m._replace_inducing(z.clone(), vec, mat)
    m._post = None
    post2 = m.posterior()
    np.testing.assert_allclose(post2.mean, post.mean, rtol=1e-5, atol=1e-6 * np.abs(post.mean).max())
    np.testing.assert_allclose(post2.var, post.var, rtol=1e-3, atol=1e-6 * post.var.max())


@pytest.mark.slow
def test_gp_ts_run_is_deterministic_and_pickles(env):
    s, g = corner_route(env.linegraph, "A")

    def run():
        b = RoutingBandit(env, make_model("gp", env, seed=0), make_policy("ts"), s, g, seed=5)
        recs = b.run(8)
        return b, [r.cumulative_regret_wh for r in recs]

    b1, r1 = run()
    _, r2 = run()
    assert r1 == r2
    state = pickle.loads(pickle.dumps(b1.state()))
    b3 = RoutingBandit(env, make_model("gp", env), make_policy("ts"), s, g, seed=5)
    b3.load_state(state)
    np.testing.assert_array_equal(b3.model.posterior().mean, b1.model.posterior().mean)
    b1.step()
    b3.step()
    assert b1.cumulative_regret == b3.cumulative_regret


@pytest.mark.slow
def test_gp_ts_experiment_and_cli(tmp_path):
    cfg = ExperimentConfig(
        network=NET, route="A", model="gp", policy="ts", horizon=6, seeds=(0, 1), model_params={"n_inducing": 50}
    )
    assert cfg.label == "GP-TS"
    s = run_experiment(cfg, tmp_path / "api", progress=False)
    assert len(s["final_cumulative_regret_wh"]) == 2
    rc = main(
        [
            "run",
            "--network",
            NET,
            "--model",
            "gp",
            "--policy",
            "ucb",
            "--horizon",
            "4",
            "--seeds",
            "1",
            "--model-param",
            "n_inducing=30",
            "--model-param",
            "learn_noise=true",
            "--no-progress",
            "--out",
            str(tmp_path / "cli"),
        ]
    )
    assert rc == 0
    saved = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert saved["model"] == "gp" and saved["model_params"] == {"n_inducing": 30, "learn_noise": True}
