"""Models from priors (issue 33, item 3): every registered kind builds from a ModelPrior without an environment,
``make_model(name, env)`` is ``build(name, model_prior(env))``, and adding a kind is one registry entry."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from netfixtures import grid_network

import evroute
from evroute.arms import make_arms
from evroute.errors import ParameterError
from evroute.models.registry import build, kind_descriptions, model_kinds, register_model

LG = evroute.build_line_graph(grid_network(3, 3, seed=1))
E_DET = evroute.edge_prior(LG.network, evroute.load_vehicle()).energy_wh
PRIOR = evroute.default_prior(LG, E_DET)
#: the kinds every evroute ships (the registry may hold more)
SHIPPED = ("bi", "gp", "gp-exact", "gp-tv", "kr")


@pytest.mark.slow
def test_every_kind_builds_from_a_prior_with_no_environment_in_the_process():
    """In a fresh process that never imports :mod:`evroute.environments`: every registered kind builds from the
    physics prior of a vehicle on a small network, its posterior before data is that prior (mean ``E_det`` to
    1e-9 Wh: the models add nothing to it; positive variances), and one observation of three edges 5 prior sd above
    ``E_det`` moves their means up without raising their variances.  ``gp`` (the SVGP: seconds of Adam steps per
    update) is built and checked before data only."""
    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        import evroute
        from netfixtures import grid_network

        lg = evroute.build_line_graph(grid_network(3, 3, seed=1))
        e_det = evroute.edge_prior(lg.network, evroute.load_vehicle()).energy_wh
        prior = evroute.default_prior(lg, e_det)
        edges = np.array([0, 1, 2])
        for kind in evroute.models.model_kinds():
            model = evroute.models.build(kind, prior, seed=0)
            p0 = model.posterior()
            assert p0.mean.shape == (lg.n_nodes,) and np.abs(p0.mean - e_det).max() < 1e-9, kind
            assert np.all(p0.variance > 0), kind
            if kind != "gp":
                model.update(edges, e_det[edges] + 5 * np.sqrt(prior.prior_var))
                p1 = model.posterior()
                assert np.all(p1.mean[edges] > p0.mean[edges] + 1.0), kind
                assert np.all(p1.variance[edges] <= p0.variance[edges] * (1 + 1e-9)), kind
            print(kind)
        assert "evroute.environments" not in sys.modules, "an environment module was imported"
        """
    )
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert set(SHIPPED) <= set(res.stdout.split())


@pytest.mark.slow
def test_turn_arms_build_the_kinds_that_learn_them():
    """``prior.arms`` with turn arms: bi has one posterior per arm with its edge's prior mean; gp-exact the arc
    kernel's; a kind without an arms builder fails in one ParameterError naming the ones that can."""
    arms = make_arms(LG, "turn")
    prior = dataclasses.replace(PRIOR, arms=arms)
    for kind in ("bi", "gp-exact"):
        post = build(kind, prior, seed=0).posterior()
        assert post.mean.shape == (arms.n_arms,)
        np.testing.assert_allclose(post.mean, arms.lift(E_DET), atol=1e-9)
    with pytest.raises(ParameterError, match="cannot learn turn arms.*bi, gp-exact"):
        build("kr", prior)
    with pytest.raises(ParameterError, match="needs --arms turn"):
        build("gp-exact", PRIOR, turn_outputscale=0.1)


def test_build_errors_are_one_parameter_error():
    with pytest.raises(ParameterError, match="unknown model 'nope'"):
        build("nope", PRIOR)
    with pytest.raises(ParameterError, match="no network"):
        build("bi", dataclasses.replace(PRIOR, linegraph=None))
    with pytest.raises(ParameterError, match="invalid parameters for model 'bi'"):
        build("bi", PRIOR, not_a_parameter=1)


@pytest.mark.parametrize(
    "kind", ["bi", pytest.param("gp-exact", marks=pytest.mark.slow), pytest.param("kr", marks=pytest.mark.slow)]
)
def test_make_model_is_build_of_the_environments_prior(kind):
    """The composition root adds nothing but the prior: ``make_model(kind, env)`` and
    ``build(kind, model_prior(env))`` have the same posterior (bit for bit) before and after the same data."""
    from evroute.environments import make_environment
    from evroute.experiments.registry import make_model, model_prior

    env = make_environment(LG, "consistent", seed=0)
    a, b = make_model(kind, env, seed=3), build(kind, model_prior(env), seed=3)
    for m in (a, b):
        m.update(np.array([0, 4]), np.array([10.0, -3.0]))
    pa, pb = a.posterior(), b.posterior()
    np.testing.assert_array_equal(pa.mean, pb.mean)
    np.testing.assert_array_equal(pa.variance, pb.variance)


def test_a_new_kind_is_one_registry_entry_and_reaches_the_cli_help(monkeypatch):
    """One :func:`register_model` call: the kind builds, the experiments layer and ``evroute run --help`` know it."""
    import evroute.models.registry as registry
    from evroute.cli import build_parser
    from evroute.experiments.registry import check_model, model_names

    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))  # noqa: SLF001 - undone after the test
    register_model("bi-wide", "evroute.models.builders:build_bi", description="BI with a wider prior")
    model = build("bi-wide", PRIOR, prior_var_scale=4.0)
    np.testing.assert_allclose(model.posterior().variance, 4.0 * PRIOR.prior_var)
    assert "bi-wide" in model_kinds() and "bi-wide" in model_names()
    check_model("bi-wide")
    sub = next(a for a in build_parser()._actions if a.dest == "command")  # noqa: SLF001
    text = " ".join(sub.choices["run"].format_help().split())
    assert "bi-wide (BI with a wider prior)" in text


def test_help_lists_every_kind_and_learner():
    """The ``--model`` help is generated from the registries: every kind (gp-tv included) with its line."""
    from evroute.cli.experiment import kinds_help
    from evroute.experiments.registry import model_names

    text = kinds_help()
    for name in model_names():
        assert f"{name} (" in text
    assert set(SHIPPED) <= set(kind_descriptions())
