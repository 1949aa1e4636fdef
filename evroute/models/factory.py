"""Edge-model registry: build a model by name for an environment (``--model bi``, ``--model gp``, ...).

Builders are looked up lazily by dotted path so that heavy dependencies (torch for the GP model) are
imported only when that model is used.  Third-party models can be added with :func:`register_model`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from evroute.environment import EnergyEnvironment
from evroute.errors import ParameterError
from evroute.models.base import EdgeModel

ModelBuilder = Callable[..., EdgeModel]

_REGISTRY: dict[str, str | ModelBuilder] = {
    "bi": "evroute.models.bi:build_bi_model",
    "gp": "evroute.models.gp:build_gp_model",
}


def register_model(name: str, builder: str | ModelBuilder) -> None:
    """Register ``builder(env, **params) -> EdgeModel`` (or its ``"module:function"`` path) under ``name``."""
    _REGISTRY[name.lower()] = builder


def model_names() -> list[str]:
    return sorted(_REGISTRY)


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


def check_model(name: str) -> None:
    """Raise :class:`ParameterError` if ``name`` is not a registered model."""
    _builder(name)
