"""No model reads the environment: models are built from a ModelPrior (neutral defaults, or the oracle ablation).

* default prior: the documented neutral values, computed from the physics energies and the network only;
* a model built for an environment whose configuration, prior variance and noise variance are replaced by garbage
  drives bit-identical rounds (every model and the route-set learner);
* ``init="oracle"``: the environment's generating values, exactly what the builders used before the ablation
  existed (the previous builders' constructor calls are spelled out here), on the paper's environment;
* the ``seed`` model parameter works and ``init`` is recorded in ``summary.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from evroute.bandit import RoutingBandit
from evroute.cli import main
from evroute.environments import EnergyEnvironment, EnvironmentConfig, PaperEnvironment
from evroute.environments.consistent import ConsistentConfig, ConsistentEnvironment
from evroute.errors import ParameterError
from evroute.experiments.registry import make_learner, make_model, model_prior
from evroute.linegraph import build_line_graph
from evroute.models.builders import NEUTRAL, default_prior
from evroute.network.registry import load_network
from evroute.policies import make_policy
from evroute.routes import corner_route

NET = "synthetic:200:3"
TIMING = ("posterior_ms", "index_ms", "oracle_ms", "update_ms")
#: an environment configuration unlike the defaults, so that the oracle ablation and the defaults differ
ODD = ConsistentConfig(outputscale_frac=0.4, noise_frac=0.2, lengthscale=2.5, graph_kappa=2.0, product_weight=0.3)
#: small, fast settings of each model (rounds must be deterministic: gp-tv's cap off, ``compute_scale=0``)
MODELS: dict[str, dict] = {
    "bi": {},
    "kr": {},
    "gp-exact": {},
    "gp-tv": {"compute_scale": 0.0, "n_max": 80},
    "gp": {"n_inducing": 30, "batch_size": 60},
}


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(load_network(NET))


@pytest.fixture(scope="module")
def env(lg):
    return ConsistentEnvironment.sample(lg, config=ODD, seed=4)


def garbage_twin(env: EnergyEnvironment) -> EnergyEnvironment:
    """``env`` with its configuration, prior variance and noise variance replaced by garbage; the feedback noise
    stays the real one (``observe`` of the original), so only a model that reads them can behave differently."""
    twin = copy.copy(env)
    twin.config = SimpleNamespace(
        graph_nu=-3.0, graph_kappa=float("nan"), lengthscale=1e9, product_weight=7.0, to_dict=lambda: {}
    )
    twin.prior_var, twin.noise_var = -1.0, float("nan")
    twin.observe = env.observe  # type: ignore[method-assign]
    return twin


def rounds(bandit, horizon: int) -> list[dict]:
    return [{k: v for k, v in r.to_dict().items() if k not in TIMING} for r in bandit.run(horizon)]


def run_model(env, name: str, horizon: int = 6, **params) -> tuple[list[dict], dict[str, np.ndarray | None]]:
    """The rounds of a TS run of model ``name`` and the model's final posterior (``mean``, ``var``, ``noise_var``)."""
    s, g = corner_route(env.linegraph, "A")
    model = make_model(name, env, seed=0, **MODELS[name], **params)
    recs = rounds(RoutingBandit(env, model, make_policy("ts"), s, g, seed=5), horizon)
    post = model.posterior()
    return recs, {"mean": post.mean, "var": post.var, "noise_var": post.noise_var}


def assert_same_run(a: tuple[list[dict], dict], b: tuple[list[dict], dict]) -> None:
    """Same rounds (routes, energies, regret: exactly) and the same final posterior.  The posterior is compared at a
    relative 1e-12: the exact GP's variances come from BLAS solves whose summation order depends on the number of
    BLAS threads a process has (a pytest-xdist worker that ran other tests first can differ in the last bit, 1.9e-16
    relative was seen), while a different prior would move them by orders of magnitude more."""
    assert a[0] == b[0]
    for k in a[1]:
        np.testing.assert_allclose(a[1][k], b[1][k], rtol=1e-12, atol=0, err_msg=k)


def test_default_prior_is_the_documented_neutral_prior(lg, env):
    prior = default_prior(lg, env.prior_mean_wh)
    rms2 = float(np.mean(env.prior_mean_wh**2))  # sigma0 = 0.16 rms(E_det), noise s.d. sigma0 / 2 (module doc)
    assert prior.prior_var == pytest.approx(0.16**2 * rms2, rel=1e-12)
    assert prior.noise_var == pytest.approx(0.08**2 * rms2, rel=1e-12)
    assert (NEUTRAL.prior_cv, NEUTRAL.noise_to_prior) == (0.16, 0.5)
    assert prior.kernel.lengthscale == math.sqrt(3)  # three standardised contexts: length, speed, incline
    kappa = 300.0 / float(np.mean(lg.network.length_m))  # 300 m in graph hops
    assert (prior.kernel.graph_nu, prior.kernel.product_weight) == (1.0, 0.75)
    assert prior.kernel.graph_kappa == pytest.approx(kappa, rel=1e-12)
    assert prior.init == "default" and np.array_equal(prior.prior_mean_wh, env.prior_mean_wh)
    # the environment's own values differ (ODD), and the oracle ablation hands those over
    oracle = model_prior(env, "oracle")
    assert (oracle.prior_var, oracle.noise_var) == (env.prior_var, env.noise_var)
    assert dataclasses.asdict(oracle.kernel) == {
        "graph_nu": 2.0,
        "graph_kappa": 2.0,
        "lengthscale": 2.5,
        "product_weight": 0.3,
    }
    assert oracle.prior_var != prior.prior_var and oracle.kernel.lengthscale != prior.kernel.lengthscale


@pytest.mark.parametrize("name", list(MODELS))
def test_a_model_for_an_environment_with_garbage_config_drives_identical_rounds(env, name):
    real = run_model(env, name)
    assert_same_run(real, run_model(garbage_twin(env), name))
    assert all(np.isfinite(r["cumulative_regret_wh"]) for r in real[0])


def test_the_route_set_learner_ignores_the_environment_config(env):
    s, g = corner_route(env.linegraph, "A")

    def run(e):
        learner = make_learner("routeset", e, s, g, policy="ts", seed=5, k=5)
        return rounds(learner, 6), (learner.scale, learner.prior.noise_var, learner.candidates.costs.tolist())

    assert run(env) == run(garbage_twin(env))


def _previous_builder(env, name: str):
    """The constructor call of the builder ``name`` before ``init`` existed (environment prior and kernel)."""
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.gp import GPConfig, GPEdgeModel
    from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel
    from evroute.models.gp_tv import TimeVaryingGPEdgeModel, TVGPConfig
    from evroute.models.kr import KernelRegressionEdgeModel

    lg, ec, p = env.linegraph, env.config, dict(MODELS[name])
    if name == "bi":
        return BayesianEdgeModel(env.prior_mean_wh, env.prior_var * 1.0, env.noise_var)
    if name == "kr":
        return KernelRegressionEdgeModel(lg, env.prior_mean_wh, env.prior_var, env.noise_var)
    cls, cfg = {
        "gp": (GPEdgeModel, lambda: GPConfig(seed=0, **p)),
        "gp-exact": (ExactGPEdgeModel, lambda: ExactGPConfig(seed=0, **p)),
        "gp-tv": (TimeVaryingGPEdgeModel, lambda: TVGPConfig(**p)),
    }[name]
    kernel = {k: float(getattr(ec, k)) for k in ("graph_nu", "graph_kappa", "lengthscale", "product_weight")}
    return cls(env.prior_mean_wh, env.prior_var, env.noise_var, lg.laplacian(), lg.contexts(), config=cfg(), **kernel)


@pytest.fixture(scope="module")
def paper_env(lg):
    """The paper's environment with the ODD parameters: its actual variances are ``prior_var`` times the generating
    kernel's diagonal, so the oracle is exactly the previous builders' prior (on the consistent environment the
    oracle also hands over the capped per-edge variances: ``tests/test_oracle_calibrated.py``)."""
    params = {k: v for k, v in dataclasses.asdict(ODD).items() if k != "max_cv"}
    return PaperEnvironment.sample(lg, config=EnvironmentConfig(**params), seed=4)


@pytest.mark.parametrize("init", ["oracle", "oracle-v1"])
@pytest.mark.parametrize("name", list(MODELS))
def test_oracle_init_reproduces_the_previous_builders_and_differs_from_the_default(paper_env, env, name, init):
    """On the paper's environment ``oracle`` and ``oracle-v1`` are the previous builders; on the consistent one
    ``oracle-v1`` is (``oracle`` adds the capped per-edge variances there)."""
    env = paper_env if init == "oracle" else env
    s, g = corner_route(env.linegraph, "A")
    model = _previous_builder(env, name)
    before = rounds(RoutingBandit(env, model, make_policy("ts"), s, g, seed=5), 6)
    post = model.posterior()
    assert_same_run(
        run_model(env, name, init=init), (before, {"mean": post.mean, "var": post.var, "noise_var": post.noise_var})
    )
    default = make_model(name, env, seed=0, **MODELS[name])
    oracle = make_model(name, env, seed=0, init=init, **MODELS[name])
    assert not np.array_equal(default.posterior().var, oracle.posterior().var)  # ODD: another prior variance


def test_oracle_init_needs_a_generating_kernel(lg):
    e_det = np.linspace(0.0, 10.0, lg.n_nodes)
    bare = EnergyEnvironment(lg, e_det, e_det, 1.0, 1.0, config=None)
    with pytest.raises(ParameterError, match="init=oracle: the base environment has no generating graph_nu"):
        make_model("bi", bare, init="oracle")
    np.testing.assert_allclose(make_model("bi", bare).posterior().var, 0.16**2 * np.mean(e_det**2), rtol=1e-12)
    with pytest.raises(ParameterError, match="init must be one of default, oracle, oracle-v1"):
        make_model("bi", bare, init="truth")


def test_seed_model_parameter_and_init_in_the_summary(tmp_path, capsys):
    """``--model-param seed=1`` used to crash the runner (two ``seed`` keywords); ``init`` is recorded."""
    from evroute.experiments import ExperimentConfig, build_problem
    from evroute.experiments.runner import make_bandit

    out = tmp_path / "r"
    argv = ["run", "--network", "synthetic:500:0", "--horizon", "3", "--model", "gp-exact"]
    assert main([*argv, "--model-param", "seed=1", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["model_init"] == "default"
    cfg = ExperimentConfig(network="synthetic:500:0", horizon=3, model="gp-exact", model_params={"seed": 1})
    assert make_bandit(cfg, build_problem(cfg, 0), 0).model.config.seed == 1  # the user's seed wins
    out2 = tmp_path / "o"
    assert main([*argv, "--model-param", "init=oracle", "--out", str(out2), "--no-progress"]) == 0
    assert json.loads((out2 / "summary.json").read_text())["model_init"] == "oracle"


def test_bad_init_is_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["run", "--network", "synthetic:200:3", "--horizon", "2", "--model-param", "init=truth", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evroute: error:") and "init" in err[0]
    assert not out.exists()
