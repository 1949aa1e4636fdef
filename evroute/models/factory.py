"""Edge-model registry: build a model by name for an environment (``--model bi``, ``--model gp``, ...).

Builders are looked up lazily by dotted path so that heavy dependencies (torch for the GP model) are
imported only when that model is used.  Third-party models can be added with :func:`register_model`.

A few names are *learners* instead of edge models: they replace the whole edge-model + index-policy + oracle
loop of :class:`~evroute.bandit.RoutingBandit` (``--model routeset``: IGP-UCB / GP-TS over a fixed set of
candidate routes).  :func:`make_learner` builds them; the runner asks :func:`is_learner` once per run.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evroute.environments import EnergyEnvironment
from evroute.errors import ParameterError
from evroute.models.base import EdgeModel

ModelBuilder = Callable[..., EdgeModel]

_REGISTRY: dict[str, str | ModelBuilder] = {
    "bi": "evroute.models.bi:build_bi_model",
    "gp": "evroute.models.gp:build_gp_model",
    "gp-exact": "evroute.models.gp_exact:build_exact_gp_model",
    "gp-tv": "evroute.models.gp_tv:build_gp_tv_model",
    "kr": "evroute.models.kr:build_kr_model",
}


#: learner name -> (``"module:function"`` builder, allowed ``--policy`` names); see :func:`make_learner`.
_LEARNERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "routeset": ("evroute.routeset:build_routeset_bandit", ("ucb", "ts")),
}


@dataclass(frozen=True)
class KernelInitParams:
    """Parameters the GP builders take besides their config dataclass: the initial spatial-kernel hyperparameters
    (default: the environment's) and ``threads`` (torch threads, 0 keeps torch's setting)."""

    graph_nu: float | None = None
    graph_kappa: float | None = None
    lengthscale: float | None = None
    product_weight: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        from evroute.errors import check_range

        for name in ("graph_nu", "graph_kappa", "lengthscale"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0.0, low_open=True)
        if self.product_weight is not None:
            check_range("product_weight", self.product_weight, 0.0, 1.0)
        check_range("threads", self.threads, 0)


#: model name -> ``"module:object"`` whose fields (dataclass) or keyword parameters with defaults (class ``__init__``,
#: function) are the model's ``--model-param`` names and types.  Default: the builder's own keyword parameters, so a
#: builder with explicit keywords needs no entry; one taking ``**params`` names the objects it forwards them to.
_PARAM_SOURCES: dict[str, tuple[str, ...]] = {
    "gp": ("evroute.models.gp:GPConfig", "evroute.models.factory:KernelInitParams"),
    "gp-exact": ("evroute.models.gp_exact:ExactGPConfig", "evroute.models.factory:KernelInitParams"),
    "gp-tv": ("evroute.models.gp_tv:TVGPConfig", "evroute.models.factory:KernelInitParams"),
    "kr": ("evroute.models.kr:KernelRegressionEdgeModel",),
    "routeset": ("evroute.routeset:RouteSetBandit",),
}


def register_model(name: str, builder: str | ModelBuilder, params: tuple[str, ...] | None = None) -> None:
    """Register ``builder(env, **params) -> EdgeModel`` (or its ``"module:function"`` path) under ``name``.

    ``params``: ``"module:object"`` paths whose fields / keyword parameters are the model's parameters (default:
    the builder's keyword parameters).
    """
    _REGISTRY[name.lower()] = builder
    if params is not None:
        _PARAM_SOURCES[name.lower()] = tuple(params)


def _resolve(path: str | Callable[..., Any]) -> Any:
    if not isinstance(path, str):
        return path
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def model_param_sources(name: str) -> list[Any]:
    """The objects whose parameters make up model ``name``'s parameters (see :data:`_PARAM_SOURCES`)."""
    key = name.lower()
    check_model(key)
    if key in _PARAM_SOURCES:
        return [_resolve(p) for p in _PARAM_SOURCES[key]]
    return [_resolve(_LEARNERS[key][0]) if key in _LEARNERS else _builder(key)]


#: keywords evroute itself passes to builders and learners (not user parameters)
_RUNNER_KEYWORDS = ("env", "start", "goal", "policy", "seed", "regret_reference", "potential_wh")


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
        if is_dataclass(src):
            own = {f.name for f in fields(src)}
            call_checked(f"model parameters for {name!r}", src, **{k: v for k, v in params.items() if k in own})


def model_names() -> list[str]:
    return sorted([*_REGISTRY, *_LEARNERS])


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
    ``(E,)`` ``potential_wh`` have the same meaning).  ``params``: its model parameters.
    """
    key = name.lower()
    check_model(key, policy)
    module, func = _LEARNERS[key][0].split(":")
    builder = getattr(importlib.import_module(module), func)
    return builder(
        env,
        start,
        goal,
        policy=policy,
        seed=seed,
        regret_reference=regret_reference,
        potential_wh=potential_wh,
        **params,
    )


def _builder(name: str) -> ModelBuilder:
    key = name.lower()
    if key not in _REGISTRY:
        raise ParameterError(f"unknown model {name!r} (choose from {', '.join(model_names())})")
    b = _REGISTRY[key]
    if isinstance(b, str):
        module, func = b.split(":")
        b = getattr(importlib.import_module(module), func)
        _REGISTRY[key] = b
    return b


def make_model(name: str, env: EnergyEnvironment, *, seed: int | None = None, **params: Any) -> EdgeModel:
    """Build edge model ``name`` with the environment's prior mean, prior variance and noise variance.

    ``seed`` (the run's seed) is passed on to builders that take a ``seed`` keyword (models with their
    own randomness, e.g. the GP's minibatches) unless ``params`` sets one.
    """
    builder = _builder(name)
    if seed is not None and "seed" not in params and "seed" in inspect.signature(builder).parameters:
        params = {**params, "seed": int(seed)}
    try:
        return builder(env, **params)
    except TypeError as exc:
        raise ParameterError(f"invalid parameters for model {name!r}: {exc}") from None


def check_model(name: str, policy: str | None = None, params: dict[str, Any] | None = None) -> None:
    """Raise :class:`ParameterError` unless ``name`` is a registered model or learner (and suits ``policy``); a
    builder with a ``check_params(params)`` attribute also validates ``params`` (before anything is built)."""
    key = name.lower()
    if key in _LEARNERS:
        allowed = _LEARNERS[key][1]
        if policy is not None and policy.lower() not in allowed:
            raise ParameterError(f"model {name!r} supports the policies {', '.join(allowed)}, got {policy!r}")
        return
    check = getattr(_builder(name), "check_params", None)
    if check is not None and params is not None:
        check(dict(params))
