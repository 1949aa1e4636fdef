"""Model and learner registry of the composition root: ``--model bi``, ``--model gp``, ... for an environment.

This is the one place where an environment meets a model: :func:`model_prior` turns the environment into the
:class:`~evroute.models.build.ModelPrior` a model is built from (by default only the environment's physics prior
mean ``E_det`` and its network; the environment's own generating variances and kernel only under the ablation
``init="oracle"``), and the builders of :mod:`evroute.models.build` never see the environment.

Builders are looked up lazily by dotted path so that heavy dependencies (torch for the GP models) are imported only
when that model is used.  Third-party models can be added with :func:`register_model`.

A few names are *learners* instead of edge models: they replace the whole edge-model + index-policy + oracle loop
of :class:`~evroute.bandit.RoutingBandit` (``--model routeset``: IGP-UCB / GP-TS over a fixed set of candidate
routes).  :func:`make_learner` builds them; the runner asks :func:`is_learner` once per run.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from evroute.environments import EnergyEnvironment
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel
from evroute.models.build import (
    INITS,
    KERNEL_FIELDS,
    KernelInit,
    ModelPrior,
    arm_prior,
    build_gp_family,
    default_prior,
)

if TYPE_CHECKING:  # pragma: no cover
    from evroute.arms import ArmSpace

__all__ = [
    "TURN_PARAMS",
    "check_arms",
    "check_model",
    "check_model_params",
    "is_learner",
    "make_learner",
    "make_model",
    "model_names",
    "model_param_sources",
    "model_prior",
    "register_model",
    "runner_keywords",
]

#: floor of the oracle's per-edge prior variances, relative to ``prior_var``: an edge whose reduced cost is zero has
#: a deterministic energy (variance 0), which BI's conjugate prior cannot take
ORACLE_VAR_FLOOR = 1e-6

#: ``builder(linegraph, prior, **params) -> EdgeModel`` (``seed`` is passed when the builder takes it)
ModelBuilder = Callable[..., EdgeModel]

#: GP model name -> (model class, config dataclass, whether ``threads`` also limits BLAS), built by
#: :func:`~evroute.models.build.build_gp_family` (the SVGP computes in torch and never limited BLAS; limiting it now
#: would change the last bits of later seeds' environments in the same process, so its results would not reproduce)
_GP_MODELS: dict[str, tuple[str, str, bool]] = {
    "gp": ("evroute.models.gp:GPEdgeModel", "evroute.models.gp:GPConfig", False),
    "gp-exact": ("evroute.models.gp_exact:ExactGPEdgeModel", "evroute.models.gp_exact:ExactGPConfig", True),
    "gp-tv": ("evroute.models.gp_tv:TimeVaryingGPEdgeModel", "evroute.models.gp_tv:TVGPConfig", True),
}

_REGISTRY: dict[str, str | ModelBuilder] = {
    "bi": "evroute.models.build:build_bi",
    "kr": "evroute.models.build:build_kr",
    "blr": "evroute.models.blr:build_blr",
}

#: learner name -> (``"module:function"`` builder, allowed ``--policy`` names); see :func:`make_learner`.
_LEARNERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "routeset": ("evroute.routeset:build_routeset_bandit", ("ucb", "ts")),
}

_PRIOR = "evroute.models.build:PriorParams"

#: model name -> ``"module:object"`` whose fields (dataclass) or keyword parameters with defaults (class ``__init__``,
#: function) are the model's ``--model-param`` names and types.  Default: the builder's own keyword parameters
#: and ``init``.
_PARAM_SOURCES: dict[str, tuple[str, ...]] = {
    **{name: (config, "evroute.models.build:KernelInitParams", _PRIOR) for name, (_, config, _) in _GP_MODELS.items()},
    "gp-exact": (
        _GP_MODELS["gp-exact"][1],
        "evroute.models.build:KernelInitParams",
        "evroute.models.build:TurnKernelParams",
        _PRIOR,
    ),
    "bi": ("evroute.models.build:build_bi", _PRIOR),
    "kr": ("evroute.models.kr:KernelRegressionEdgeModel", _PRIOR),
    "blr": ("evroute.models.blr:build_blr", _PRIOR),
    "routeset": ("evroute.routeset:RouteSetBandit", _PRIOR),
}


def register_model(name: str, builder: str | ModelBuilder, params: tuple[str, ...] | None = None) -> None:
    """Register ``builder(linegraph, prior, **params) -> EdgeModel`` (or its ``"module:function"`` path) as ``name``.

    ``prior`` is the :class:`~evroute.models.build.ModelPrior` of the run.  ``params``: ``"module:object"`` paths
    whose fields / keyword parameters are the model's parameters (default: the builder's keyword parameters).
    """
    key = name.lower()
    _REGISTRY[key] = builder
    _PARAM_SOURCES[key] = (*params, _PRIOR) if params is not None else (builder, _PRIOR)  # type: ignore[assignment]


def _resolve(path: str | Callable[..., Any]) -> Any:
    if not isinstance(path, str):
        return path
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def model_prior(env: EnergyEnvironment, init: str = "default") -> ModelPrior:
    """The prior a model of ``env`` is built from.

    ``init="default"``: :func:`~evroute.models.build.default_prior` of the environment's physics prior mean
    ``E_det`` and network; nothing else of the environment is read.  ``init="oracle"`` (ablation): the
    environment's own prior and noise variances and its generating kernel (``env.config``'s ``graph_nu``,
    ``graph_kappa``, ``lengthscale``, ``product_weight``), the initialisation of the paper and of evroute before
    the ablation existed; where the environment's actual marginal variances differ from ``prior_var`` times its
    kernel's diagonal (:meth:`~evroute.environments.EnergyEnvironment.marginal_variances`: the consistent
    environment's capped variances), also those, per edge (``ModelPrior.prior_var_edges``, floored at
    :data:`ORACLE_VAR_FLOOR` times ``prior_var``).  ``init="oracle-v1"``: the oracle without those per-edge
    variances (the scalar ``prior_var``), as before they were handed over; results made before reproduce with it.
    """
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
    return ModelPrior(env.prior_mean_wh, env.prior_var, env.noise_var, kernel, init, actual)


def model_param_sources(name: str) -> list[Any]:
    """The objects whose parameters make up model ``name``'s parameters (see :data:`_PARAM_SOURCES`)."""
    key = name.lower()
    check_model(key)
    return [_resolve(p) for p in _PARAM_SOURCES[key]]


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
    return sorted([*_GP_MODELS, *_REGISTRY, *_LEARNERS])


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
    builder = _resolve(_LEARNERS[key][0])
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


def _gp_builder(name: str) -> ModelBuilder:
    model, config, blas = _GP_MODELS[name]

    def build(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
        return build_gp_family(
            _resolve(model), _resolve(config), name, linegraph, prior, seed=seed, blas_threads=blas, **params
        )

    return build


def _builder(name: str) -> ModelBuilder:
    key = name.lower()
    if key in _GP_MODELS:
        return _gp_builder(key)
    if key not in _REGISTRY:
        raise ParameterError(f"unknown model {name!r} (choose from {', '.join(model_names())})")
    b = _resolve(_REGISTRY[key])
    _REGISTRY[key] = b
    return b


#: models that can learn turn arms (``--arms turn``), with their builder on arms
_ARM_MODELS: dict[str, str] = {"bi": "evroute.models.build:build_bi", "gp-exact": "evroute.models.build:build_arc_gp"}
#: model parameters only turn arms take
TURN_PARAMS: tuple[str, ...] = ("turn_outputscale", "turn_lengthscale")


def check_arms(name: str, arms: str, params: Mapping[str, Any] | None = None) -> None:
    """:class:`ParameterError` unless model ``name`` can learn ``arms`` (``edge``: every model; ``turn``: bi, gp-exact)
    and its ``params`` suit them (the turn term's parameters need turn arms)."""
    from evroute.arms import ARM_KINDS

    if arms not in ARM_KINDS:
        raise ParameterError(f"arms must be one of {', '.join(ARM_KINDS)}, got {arms!r}")
    if arms == "turn" and name.lower() not in _ARM_MODELS:
        raise ParameterError(f"model {name!r} cannot learn turn arms (--arms turn works with {', '.join(_ARM_MODELS)})")
    turn_only = sorted(set(params or {}) & set(TURN_PARAMS))
    if arms == "edge" and turn_only:
        raise ParameterError(f"model parameter {turn_only[0]!r} needs --arms turn")


def make_model(
    name: str, env: EnergyEnvironment, *, seed: int | None = None, arms: ArmSpace | None = None, **params: Any
) -> EdgeModel:
    """Build edge model ``name`` for ``env`` from :func:`model_prior` (``params["init"]``, default ``"default"``).

    ``seed`` (the run's seed) is passed on to builders that take a ``seed`` keyword (models with their own
    randomness, e.g. the GP's minibatches) unless ``params`` sets one (a user's ``seed`` model parameter wins).
    ``arms``: turn arms (:mod:`evroute.arms`) build the model over the arms (``bi``: one conjugate posterior per
    arm, prior mean the arm's edge's; ``gp-exact``: the arc kernel, :mod:`evroute.models.gp_arcs`).
    """
    if arms is not None and arms.kind != "edge":
        check_arms(name, arms.kind, params)
        prior = model_prior(env, params.pop("init", "default"))
        if name.lower() == "bi":
            return _resolve(_ARM_MODELS["bi"])(env.linegraph, arm_prior(prior, arms), **params)
        params = {"seed": int(seed), **params} if seed is not None else params
        try:
            return _resolve(_ARM_MODELS[name.lower()])(env.linegraph, prior, arms, **params)
        except TypeError as exc:
            raise ParameterError(f"invalid parameters for model {name!r}: {exc}") from None
    builder = _builder(name)
    prior = model_prior(env, params.pop("init", "default"))
    if seed is not None and "seed" not in params and "seed" in inspect.signature(builder).parameters:
        params = {**params, "seed": int(seed)}
    try:
        return builder(env.linegraph, prior, **params)
    except TypeError as exc:
        raise ParameterError(f"invalid parameters for model {name!r}: {exc}") from None


def check_model(name: str, policy: str | None = None) -> None:
    """Raise :class:`ParameterError` unless ``name`` is a registered model or learner (and suits ``policy``)."""
    key = name.lower()
    if key in _LEARNERS:
        allowed = _LEARNERS[key][1]
        if policy is not None and policy.lower() not in allowed:
            raise ParameterError(f"model {name!r} supports the policies {', '.join(allowed)}, got {policy!r}")
        return
    _builder(name)
