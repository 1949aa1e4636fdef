"""Model and learner registry of the composition root: ``--model bi``, ``--model gp``, ... for an environment.

This is the one place where an environment meets a model: :func:`model_prior` turns the environment into the
:class:`~evroute.models.builders.ModelPrior` a model is built from (by default only the environment's physics prior
mean ``E_det`` and its network; the environment's own generating variances and kernel only under the ablation
``init="oracle"``), and :func:`make_model` hands it to :func:`evroute.models.build`, which never sees the
environment.  The model kinds are registered in :mod:`evroute.models.registry`
(:func:`~evroute.models.registry.register_model`).

A few names are *learners* instead of edge models: they replace the whole edge-model + index-policy + oracle loop
of :class:`~evroute.bandit.RoutingBandit` (``--model routeset``: IGP-UCB / GP-TS over a fixed set of candidate
routes).  :func:`make_learner` builds them; the runner asks :func:`is_learner` once per run.

Importing this module imports nothing heavy (the command line's help lists the kinds from it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evroute.errors import ParameterError
from evroute.models.registry import (
    TURN_PARAMS,
    check_arms,
    kind_descriptions,
    model_kinds,
    param_sources,
    register_model,
    resolve,
)

if TYPE_CHECKING:  # pragma: no cover
    from evroute.arms import ArmSpace
    from evroute.environments import EnergyEnvironment
    from evroute.models.base import EdgeModel
    from evroute.models.builders import ModelPrior

__all__ = [
    "ORACLE_VAR_FLOOR",
    "TURN_PARAMS",
    "check_arms",
    "check_model",
    "check_model_params",
    "is_learner",
    "make_learner",
    "make_model",
    "model_descriptions",
    "model_names",
    "model_param_sources",
    "model_prior",
    "register_model",
    "runner_keywords",
]

#: floor of the oracle's per-edge prior variances, relative to ``prior_var``: an edge whose reduced cost is zero has
#: a deterministic energy (variance 0), which BI's conjugate prior cannot take
ORACLE_VAR_FLOOR = 1e-6

#: learner name -> (``"module:function"`` builder, allowed ``--policy`` names, description, ``"module:object"``
#: whose fields or keyword parameters are its ``--model-param`` names); see :func:`make_learner`.
_LEARNERS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "routeset": (
        "evroute.routeset:build_routeset_bandit",
        ("ucb", "ts"),
        "IGP-UCB with --policy ucb, GP-TS with --policy ts, over the k prior-shortest routes",
        "evroute.routeset:RouteSetBandit",
    ),
}

_PRIOR = "evroute.models.builders:PriorParams"


def model_prior(env: EnergyEnvironment, init: str = "default") -> ModelPrior:
    """The prior a model of ``env`` is built from.

    ``init="default"``: :func:`~evroute.models.builders.default_prior` of the environment's physics prior mean
    ``E_det`` and network; nothing else of the environment is read.  ``init="oracle"`` (ablation): the
    environment's own prior and noise variances and its generating kernel (``env.config``'s ``graph_nu``,
    ``graph_kappa``, ``lengthscale``, ``product_weight``), the initialisation of the paper and of evroute before
    the ablation existed; where the environment's actual marginal variances differ from ``prior_var`` times its
    kernel's diagonal (:meth:`~evroute.environments.EnergyEnvironment.marginal_variances`: the consistent
    environment's capped variances), also those, per edge (``ModelPrior.prior_var_edges``, floored at
    :data:`ORACLE_VAR_FLOOR` times ``prior_var``).  ``init="oracle-v1"``: the oracle without those per-edge
    variances (the scalar ``prior_var``), as before they were handed over; results made before reproduce with it.
    """
    import numpy as np

    from evroute.models import builders
    from evroute.models.builders import INITS, KERNEL_FIELDS, KernelInit, default_prior

    if init == "default":
        return default_prior(env.linegraph, env.prior_mean_wh)
    if init not in ("oracle", "oracle-v1"):
        raise ParameterError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    cfg = env.config
    missing = [k for k in KERNEL_FIELDS if not hasattr(cfg, k)]
    if missing:
        raise ParameterError(f"init={init}: the {env.name} environment has no generating {', '.join(missing)}")
    kernel = KernelInit(**{k: float(getattr(cfg, k)) for k in KERNEL_FIELDS})
    actual = env.marginal_variances() if init == "oracle" else None
    if actual is not None:  # zero where f_e is deterministic: floored so that every model's prior stays proper
        actual = np.maximum(actual, ORACLE_VAR_FLOOR * env.prior_var)
    return builders.ModelPrior(
        env.prior_mean_wh, env.prior_var, env.noise_var, kernel, init, actual, linegraph=env.linegraph
    )


def model_param_sources(name: str) -> list[Any]:
    """The objects whose parameters make up model ``name``'s parameters: the kind's
    (:func:`~evroute.models.registry.param_sources`) or the learner's, and ``init`` (:class:`PriorParams`)."""
    key = name.lower()
    check_model(key)
    own = [resolve(_LEARNERS[key][3])] if key in _LEARNERS else param_sources(key)
    return [*own, resolve(_PRIOR)]


#: keywords evroute itself passes to builders and learners (not user parameters)
_RUNNER_KEYWORDS = ("env", "start", "goal", "policy", "seed", "regret_reference", "potential_wh", "prior")


def runner_keywords(name: str) -> tuple[str, ...]:
    """Keywords of model ``name``'s sources that evroute sets itself: ``seed`` is a user parameter of edge models
    (it overrides the run's seed) but not of learners."""
    return _RUNNER_KEYWORDS if is_learner(name) else tuple(k for k in _RUNNER_KEYWORDS if k != "seed")


def check_model_params(name: str, params: Mapping[str, Any]) -> None:
    """Types and unknown keys of ``params`` for model ``name``, then the ranges its config dataclasses check."""
    from dataclasses import fields, is_dataclass

    from evroute.validation import call_checked, check_params

    sources = model_param_sources(name)
    check_params(f"model parameter ({name})", params, sources, skip=runner_keywords(name))
    for src in sources:  # ranges of config dataclasses (their __post_init__), without building the model
        if isinstance(src, type) and is_dataclass(src):
            own = {f.name for f in fields(src)}
            call_checked(f"model parameters for {name!r}", src, **{k: v for k, v in params.items() if k in own})


def model_names() -> list[str]:
    """The model kinds and the learners, sorted."""
    return sorted([*model_kinds(), *_LEARNERS])


def model_descriptions() -> dict[str, str]:
    """Model kind or learner -> one line (the ``--model`` help of the command line), sorted by name."""
    text = {**kind_descriptions(), **{k: v[2] for k, v in _LEARNERS.items()}}
    return {k: text[k] for k in sorted(text)}


def is_learner(name: str) -> bool:
    """Whether ``name`` is a whole-loop learner (e.g. ``routeset``) rather than an edge model."""
    return name.lower() in _LEARNERS


def make_learner(
    name: str,
    env: EnergyEnvironment,
    start: int,
    goal: int,
    *,
    policy: str,
    seed: int,
    regret_reference: str = "auto",
    potential_wh: Any = None,
    **params: Any,
) -> Any:
    """Build learner ``name``: an object with ``step() -> RoundRecord``, ``t``, ``cumulative_regret``, ``optimal``,
    ``state()`` and ``load_state()``, like :class:`~evroute.bandit.RoutingBandit` (``regret_reference`` and the
    ``(E,)`` ``potential_wh`` have the same meaning).  ``params``: its model parameters (``init`` selects the prior
    as in :func:`make_model`).
    """
    key = name.lower()
    check_model(key, policy)
    prior = model_prior(env, params.pop("init", "default"))
    builder = resolve(_LEARNERS[key][0])
    return builder(
        env,
        start,
        goal,
        policy=policy,
        seed=seed,
        regret_reference=regret_reference,
        potential_wh=potential_wh,
        prior=prior,
        **params,
    )


def make_model(
    name: str, env: EnergyEnvironment, *, seed: int | None = None, arms: ArmSpace | None = None, **params: Any
) -> EdgeModel:
    """Build edge model ``name`` for ``env``: :func:`evroute.models.build` of :func:`model_prior`
    (``params["init"]``, default ``"default"``) with the ``arms`` (turn arms build the model over the arms:
    ``bi`` one conjugate posterior per arm, prior mean the arm's edge's; ``gp-exact`` the arc kernel).

    ``seed`` (the run's seed) is passed on to builders that take a ``seed`` keyword (models with their own
    randomness, e.g. the GP's minibatches) unless ``params`` sets one (a user's ``seed`` model parameter wins).
    """
    from evroute.models.registry import build

    if arms is not None and arms.kind != "edge":
        check_arms(name, arms.kind, params)
    else:
        check_model(name)
    prior = model_prior(env, params.pop("init", "default"))
    if arms is not None:
        prior = dataclasses.replace(prior, arms=arms)
    return build(name, prior, seed=seed, **params)


def check_model(name: str, policy: str | None = None) -> None:
    """Raise :class:`ParameterError` unless ``name`` is a registered model or learner (and suits ``policy``)."""
    key = name.lower()
    if key in _LEARNERS:
        allowed = _LEARNERS[key][1]
        if policy is not None and policy.lower() not in allowed:
            raise ParameterError(f"model {name!r} supports the policies {', '.join(allowed)}, got {policy!r}")
        return
    if key not in model_kinds():
        raise ParameterError(f"unknown model {name!r} (choose from {', '.join(model_names())})")
