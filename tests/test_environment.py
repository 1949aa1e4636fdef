import numpy as np
import pytest
from netfixtures import grid_network

from evroute.energy import network_energy_wh
from evroute.environments import EnvironmentConfig, PaperEnvironment, sample_prior_function
from evroute.errors import ParameterError
from evroute.kernels import GraphMaternKernel, matern52
from evroute.linegraph import build_line_graph


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(grid_network(3, 3))


def test_paper_variances_and_prior_mean(lg):
    env = PaperEnvironment.sample(lg, seed=1)
    e_det = network_energy_wh(lg.network)
    np.testing.assert_array_equal(env.prior_mean_wh, e_det)
    assert env.prior_var == pytest.approx(0.25**2 * e_det.var())
    assert env.noise_var == pytest.approx(0.1**2 * e_det.var())
    assert not np.allclose(env.true_mean_wh, e_det)


def test_same_seed_same_environment(lg):
    a, b = PaperEnvironment.sample(lg, seed=3), PaperEnvironment.sample(lg, seed=3)
    np.testing.assert_array_equal(a.true_mean_wh, b.true_mean_wh)
    assert not np.allclose(a.true_mean_wh, PaperEnvironment.sample(lg, seed=4).true_mean_wh)
    cfg = EnvironmentConfig(method="sparse")
    np.testing.assert_array_equal(
        PaperEnvironment.sample(lg, seed=3, config=cfg).true_mean_wh,
        PaperEnvironment.sample(lg, seed=3, config=cfg).true_mean_wh,
    )


def exact_covariance(lg, cfg):
    kg = GraphMaternKernel(lg.laplacian(), cfg.graph_nu, cfg.graph_kappa, method="dense").dense()
    kf = matern52(lg.contexts(), lengthscale=cfg.lengthscale)
    return cfg.product_weight * kg * kf + (1 - cfg.product_weight) * kf


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_prior_draws_have_the_paper_covariance(lg, method):
    cfg = EnvironmentConfig(method=method, n_features=256, lengthscale=1.0)
    rng = np.random.default_rng(0)
    draws = np.stack([sample_prior_function(lg, cfg, rng) for _ in range(1500)])
    emp = draws.T @ draws / len(draws)
    # Monte Carlo error ~ sqrt(2/1500) ~ 0.04 on unit variances; RFF error ~ 1/sqrt(256) ~ 0.06
    assert np.abs(emp - exact_covariance(lg, cfg)).max() < 0.25
    assert np.mean(np.diag(emp)) == pytest.approx(1.0, abs=0.1)


def test_feedback_noise(lg):
    env = PaperEnvironment.sample(lg, seed=0)
    rng = np.random.default_rng(1)
    y = np.stack([env.observe(np.array([0, 5]), rng) for _ in range(20000)])
    np.testing.assert_allclose(y.mean(0), env.true_mean_wh[[0, 5]], atol=4 * np.sqrt(env.noise_var / 20000))
    np.testing.assert_allclose(y.var(0), env.noise_var, rtol=0.05)
    assert env.expected_energy(np.array([0, 5])) == pytest.approx(env.true_mean_wh[[0, 5]].sum())


def test_invalid_config():
    with pytest.raises(ParameterError):
        EnvironmentConfig(noise_frac=0)
    with pytest.raises(ParameterError):
        EnvironmentConfig(method="magic")
    with pytest.raises(ParameterError):
        EnvironmentConfig(product_weight=2)


def test_registry_names_and_validation(lg):
    from evroute.environments import ConsistentEnvironment, check_environment, environment_names, make_environment

    assert {"consistent", "paper", "drifting"} <= set(environment_names())
    assert isinstance(make_environment(lg, "paper", seed=1), PaperEnvironment)
    assert isinstance(make_environment(lg, seed=1), ConsistentEnvironment)  # the default
    np.testing.assert_array_equal(
        make_environment(lg, "paper", {"lengthscale": 0.5}, seed=1).true_mean_wh,
        PaperEnvironment.sample(lg, seed=1, config=EnvironmentConfig(lengthscale=0.5)).true_mean_wh,
    )
    with pytest.raises(ParameterError):
        check_environment("nope", {})
    with pytest.raises(ParameterError):
        check_environment("paper", {"max_cv": 1.0})  # a consistent-only parameter
    assert check_environment("consistent", {"max_cv": 2}).max_cv == 2
