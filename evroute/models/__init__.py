"""Edge models: posteriors over expected edge energies (Bayesian inference, Gaussian processes).

A model is built from a prior, never from an environment::

    prior = evroute.models.default_prior(linegraph, e_det_wh)   # or ModelPrior(...)
    model = evroute.models.build("gp-exact", prior, seed=0)

:func:`build` and the kinds it knows live in :mod:`evroute.models.registry`; the priors and builders in
:mod:`evroute.models.builders`.  Names are imported on first use, so ``import evroute.models`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from evroute.models.base import EdgeModel, EdgePosterior
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.builders import KernelInit, ModelPrior, default_prior
    from evroute.models.registry import build, model_kinds, register_model

__all__ = [
    "BayesianEdgeModel",
    "EdgeModel",
    "EdgePosterior",
    "KernelInit",
    "ModelPrior",
    "build",
    "default_prior",
    "model_kinds",
    "register_model",
]

_WHERE = {
    "EdgeModel": "evroute.models.base",
    "EdgePosterior": "evroute.models.base",
    "BayesianEdgeModel": "evroute.models.bi",
    "KernelInit": "evroute.models.builders",
    "ModelPrior": "evroute.models.builders",
    "default_prior": "evroute.models.builders",
    "build": "evroute.models.registry",
    "model_kinds": "evroute.models.registry",
    "register_model": "evroute.models.registry",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'evroute.models' has no attribute {name!r}")
