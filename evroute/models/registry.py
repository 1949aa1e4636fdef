"""The registry of model kinds: ``evroute.models.build(kind, prior, **hyper)`` builds any of them from a prior.

A model is built from a :class:`~evroute.models.builders.ModelPrior` (physics mean per arm, network, arms, variances,
initial kernel), never from an environment.  Each kind is ONE entry of :data:`_KINDS` (a :class:`ModelKind`: its
builder, a one-line description that the command line's help is generated from, the objects whose fields are its
hyper-parameters, and its builder on turn arms if it can learn them); adding a model is adding an entry, here or
with :func:`register_model`.

Builders are named by ``"module:function"`` paths and imported on first use, so importing this module imports
nothing heavy (torch is imported only when a GP is built); ``evroute --help`` lists the kinds at once.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evroute.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from evroute.models.base import EdgeModel
    from evroute.models.builders import ModelPrior

__all__ = [
    "TURN_PARAMS",
    "ModelKind",
    "build",
    "check_arms",
    "kind_descriptions",
    "model_kinds",
    "param_sources",
    "register_model",
    "resolve",
]

#: ``builder(linegraph, prior, **hyper) -> EdgeModel``; ``seed`` is passed when the builder takes it
ModelBuilder = Callable[..., "EdgeModel"]

_B = "evroute.models.builders"
_KERNEL = f"{_B}:KernelInitParams"


@dataclass(frozen=True)
class ModelKind:
    """One registered model kind.

    Attributes:
        builder: ``builder(linegraph, prior, **hyper) -> EdgeModel`` or its ``"module:function"`` path.
        description: one line for the command line's help.
        params: ``"module:object"`` paths (or objects) whose dataclass fields or keyword parameters with defaults are
            the kind's hyper-parameters (``--model-param``); empty: the builder's own keyword parameters.
        arms_builder: the builder on turn arms (``prior.arms`` of another kind than ``edge``), or ``None`` when the
            kind learns edges only.
    """

    builder: str | ModelBuilder
    description: str
    params: tuple[str | Any, ...] = ()
    arms_builder: str | ModelBuilder | None = None


_KINDS: dict[str, ModelKind] = {
    "bi": ModelKind(f"{_B}:build_bi", "independent conjugate Gaussian per edge", arms_builder=f"{_B}:build_bi_arms"),
    "gp": ModelKind(f"{_B}:build_gp", "sparse variational GP, the paper's", ("evroute.models.gp:GPConfig", _KERNEL)),
    "gp-exact": ModelKind(
        f"{_B}:build_gp_exact",
        "exact GP posterior",
        ("evroute.models.gp_exact:ExactGPConfig", _KERNEL, f"{_B}:TurnKernelParams"),
        arms_builder=f"{_B}:build_arc_gp",
    ),
    "gp-tv": ModelKind(
        f"{_B}:build_gp_tv",
        "time-varying exact GP with a data cap, for drifting energies",
        ("evroute.models.gp_tv:TVGPConfig", _KERNEL),
    ),
    "kr": ModelKind(f"{_B}:build_kr", "kernel regression", ("evroute.models.kr:KernelRegressionEdgeModel",)),
    "blr": ModelKind(
        "evroute.models.blr:build_blr", "Bayesian linear regression on edge features with per-edge residuals"
    ),
}

#: hyper-parameters only turn arms take
TURN_PARAMS: tuple[str, ...] = ("turn_outputscale", "turn_lengthscale")


def register_model(
    name: str,
    builder: str | ModelBuilder,
    params: tuple[str | Any, ...] | None = None,
    *,
    description: str = "",
    arms_builder: str | ModelBuilder | None = None,
) -> None:
    """Register ``builder(linegraph, prior, **hyper) -> EdgeModel`` (or its ``"module:function"`` path) as kind
    ``name`` (see :class:`ModelKind`); ``params`` default: the builder's keyword parameters."""
    _KINDS[name.lower()] = ModelKind(builder, description or name, tuple(params or ()), arms_builder)


def model_kinds() -> list[str]:
    """The registered kinds, sorted."""
    return sorted(_KINDS)


def kind_descriptions() -> dict[str, str]:
    """Kind -> one-line description, sorted by kind."""
    return {k: _KINDS[k].description for k in model_kinds()}


def resolve(path: str | Callable[..., Any]) -> Any:
    """The object a ``"module:name"`` path names (imported now); an object is returned as it is."""
    if not isinstance(path, str):
        return path
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def _kind(name: str) -> ModelKind:
    try:
        return _KINDS[name.lower()]
    except KeyError:
        raise ParameterError(f"unknown model {name!r} (choose from {', '.join(model_kinds())})") from None


def param_sources(name: str) -> list[Any]:
    """The objects whose fields / keyword parameters are kind ``name``'s hyper-parameters."""
    kind = _kind(name)
    return [resolve(p) for p in (kind.params or (kind.builder,))]


def check_arms(name: str, arms: str, params: Mapping[str, Any] | None = None) -> None:
    """:class:`ParameterError` unless kind ``name`` can learn ``arms`` (``edge``: every kind; ``turn``: the kinds
    with an arms builder) and its ``params`` suit them (the turn term's parameters need turn arms)."""
    from evroute.arms import ARM_KINDS

    if arms not in ARM_KINDS:
        raise ParameterError(f"arms must be one of {', '.join(ARM_KINDS)}, got {arms!r}")
    if arms == "turn" and _kind(name).arms_builder is None:
        able = [k for k in model_kinds() if _KINDS[k].arms_builder is not None]
        raise ParameterError(f"model {name!r} cannot learn turn arms (--arms turn works with {', '.join(able)})")
    turn_only = sorted(set(params or {}) & set(TURN_PARAMS))
    if arms == "edge" and turn_only:
        raise ParameterError(f"model parameter {turn_only[0]!r} needs --arms turn")


def build(kind: str, prior: ModelPrior, *, seed: int | None = None, **hyper: Any) -> EdgeModel:
    """Build a model of ``kind`` from ``prior`` alone (no environment).

    Args:
        kind: a registered kind (:func:`model_kinds`: ``bi``, ``gp``, ``gp-exact``, ``gp-tv``, ``kr``, ...).
        prior: the prior; ``prior.linegraph`` is required; ``prior.arms`` with turn arms builds the kind on them.
        seed: passed to builders with a ``seed`` keyword (their own randomness, e.g. the SVGP's minibatches) unless
            ``hyper`` sets one.
        hyper: the kind's hyper-parameters (:func:`param_sources`).

    Returns:
        the edge model, a posterior over the ``(E,)`` (or ``(A,)`` on arms) expected energies in Wh.
    """
    entry = _kind(kind)
    if prior.linegraph is None:
        raise ParameterError("the model prior has no network (ModelPrior.linegraph is None)")
    params = dict(hyper)
    on_arms = prior.arms is not None and prior.arms.kind != "edge"
    check_arms(kind, prior.arms.kind if prior.arms is not None else "edge", params)
    path = entry.arms_builder if on_arms else entry.builder
    if path is None:  # pragma: no cover - check_arms refused a kind without an arms builder
        raise ParameterError(f"model {kind!r} cannot learn turn arms")
    builder = resolve(path)
    if seed is not None and "seed" not in params and "seed" in inspect.signature(builder).parameters:
        params["seed"] = int(seed)
    try:
        return builder(prior.linegraph, prior, **params)
    except TypeError as exc:
        raise ParameterError(f"invalid parameters for model {kind!r}: {exc}") from None
