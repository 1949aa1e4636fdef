"""The state of a BI or exact-GP edge model as a model file holds it (:mod:`evroute.models.store`, file format there),
and its prior alone, which a linear-reading model keeps of its base model (:mod:`evroute.models.linear_obs`).

Below both of those modules, so that neither imports the other for it (no import circle).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.models.base import EdgeModel
from evroute.models.bi import BayesianEdgeModel
from evroute.models.gp_exact import ExactGPEdgeModel

__all__ = ["base_kind", "base_state", "prior_state"]


def base_kind(model: EdgeModel) -> str | None:
    """``"bi"`` or ``"gp-exact"``, or None for any other model."""
    if isinstance(model, BayesianEdgeModel):
        return "bi"
    if isinstance(model, ExactGPEdgeModel):
        return "gp-exact"
    return None


def base_state(model: EdgeModel, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray], int]:
    """``(hyperparameters, arrays, number of observations)`` of a model of ``kind`` ``"bi"`` or ``"gp-exact"``
    (arrays in Wh units, shapes in :mod:`evroute.models.store`)."""
    if kind == "bi":
        arrays: dict[str, np.ndarray] = {
            k: np.asarray(getattr(model, k), dtype=np.float64) for k in ("prior_var", "noise_var", "total", "total_sq")
        }
        arrays["prior_mean_wh"] = np.asarray(model.prior_mean, dtype=np.float64)  # type: ignore[attr-defined]
        arrays["count"] = np.asarray(model.count, dtype=np.int64)  # type: ignore[attr-defined]
        return {}, arrays, int(arrays["count"].sum())
    m: Any = model
    s = float(m.scale)
    e = np.asarray(m.order, dtype=np.int64)
    arrays = {
        "prior_mean_wh": np.asarray(m.prior_mean_wh, dtype=np.float64),
        "edges": e,
        "counts": np.asarray(m.counts[e], dtype=np.int64),
        "sum_y": np.asarray(m.sum_y[e], dtype=np.float64) * s,
        "sum_y2": np.asarray(m.sum_y2[e], dtype=np.float64) * s * s,
        "lengthscale_f": np.asarray(m.hyper.ls1, dtype=np.float64),
        "lengthscale_f2": np.asarray(m.hyper.ls2, dtype=np.float64),
    }
    hyper = {
        "prior_var": s * s,
        "noise_var": float(m.hyper.noise) * s * s,
        "outputscale_prod": float(m.hyper.s1),
        "outputscale_add": float(m.hyper.s2),
        "graph_nu": float(m.graph_nu),
        "graph_kappa": float(m.graph_kappa),
        "config": asdict(m.config),
    }
    return hyper, arrays, int(arrays["counts"].sum())


def prior_state(model: EdgeModel) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    """``(kind, hyperparameters, arrays)`` of ``model``'s prior alone (its saved state with the observations removed):
    what a ``"linear"`` model file keeps of its base model."""
    kind = base_kind(model)
    if kind is None:
        raise ParameterError(
            f"a linear-reading model is built on a bi or gp-exact model, not on a {type(model).__name__}"
        )
    hyper, arrays, _ = base_state(model, kind)
    if kind == "bi":
        arrays = {**arrays, **{k: np.zeros_like(arrays[k]) for k in ("count", "total", "total_sq")}}
    else:
        empty = {"edges": np.zeros(0, np.int64), "counts": np.zeros(0, np.int64)}
        arrays = {**arrays, **empty, "sum_y": np.zeros(0), "sum_y2": np.zeros(0)}
    return kind, hyper, arrays
