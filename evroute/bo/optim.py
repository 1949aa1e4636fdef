"""The shared acquisition optimiser for box domains: random raw candidates, then multi-start L-BFGS-B.

All policies optimise their acquisition in unit-cube coordinates ``u in [0, 1]^d``.  The optimiser

1. evaluates the acquisition on ``n_raw`` uniform random points plus any ``extra`` points supplied by the policy
   (e.g. small perturbations of the best observations),
2. starts L-BFGS-B (analytic gradients) from the ``n_restarts`` best of them,
3. returns the best point seen (a raw candidate when no local run improves on it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError

__all__ = ["AcquisitionOptimizer", "acquisition_value_and_grad"]

BatchFn = Callable[[FloatArray], FloatArray]
GradFn = Callable[[FloatArray], tuple[float, FloatArray]]


@dataclass(frozen=True)
class AcquisitionOptimizer:
    """Multi-start L-BFGS-B maximiser on ``[0, 1]^d``.

    Attributes:
        n_raw: number of uniform random raw candidates per call (default 512).
        n_restarts: number of L-BFGS-B runs, started from the best raw candidates (default 4).
        maxiter: iteration cap of each L-BFGS-B run (default 50).
    """

    n_raw: int = 512
    n_restarts: int = 4
    maxiter: int = 50

    def __post_init__(self) -> None:
        if self.n_raw < 1 or self.n_restarts < 0 or self.maxiter < 1:
            raise ParameterError(
                f"need n_raw >= 1, n_restarts >= 0, maxiter >= 1; got {self.n_raw}, {self.n_restarts}, {self.maxiter}"
            )

    def maximize(
        self,
        value: BatchFn,
        value_and_grad: GradFn,
        dim: int,
        rng: np.random.Generator,
        extra: FloatArray | None = None,
    ) -> FloatArray:
        """Return an (approximate) maximiser ``(d,)`` in ``[0, 1]^d``.

        Args:
            value: acquisition on a batch ``(m, d) -> (m,)``.
            value_and_grad: acquisition and its gradient at one point ``(d,) -> (float, (d,))``.
            dim: ``d``.
            rng: source of the random candidates.
            extra: optional ``(k, d)`` additional candidates.
        """
        cand = rng.random((self.n_raw, dim))
        if extra is not None and len(extra):
            cand = np.vstack([cand, np.clip(np.asarray(extra, dtype=float).reshape(-1, dim), 0.0, 1.0)])
        vals = value(cand)
        vals = np.where(np.isfinite(vals), vals, -np.inf)
        order = np.argsort(-vals)
        best_u, best_v = cand[order[0]].copy(), float(vals[order[0]])
        bounds = [(0.0, 1.0)] * dim

        def neg(u: FloatArray) -> tuple[float, FloatArray]:
            v, g = value_and_grad(u)
            if not np.isfinite(v):
                return 1e300, np.zeros(dim)
            return -v, -np.nan_to_num(g)

        for i in order[: self.n_restarts]:
            res = minimize(neg, cand[i], jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": self.maxiter})
            u = np.clip(res.x, 0.0, 1.0)
            v = float(value(u[None, :])[0])
            if v > best_v:
                best_u, best_v = u, v
        return best_u


def acquisition_value_and_grad(
    model: Any, z: FloatArray, terms: Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray, FloatArray]]
) -> tuple[float, FloatArray]:
    """An acquisition and its gradient ``(p,)`` at one model input ``z`` ``(p,)`` by the chain rule.

    ``terms(mean, std)`` is an acquisition in the form of :mod:`evroute.bo.acquisition` (values and partial
    derivatives with respect to the posterior mean and standard deviation); ``model.mean_var_grad(z)`` gives the
    posterior mean, variance and their input gradients, and ``d std = d var / (2 std)``.
    """
    mean, var, dmean, dvar = model.mean_var_grad(z)
    std = math.sqrt(max(var, 1e-300))
    val, da_dm, da_ds = terms(np.array([mean]), np.array([std]))
    return float(val[0]), float(da_dm[0]) * dmean + float(da_ds[0]) * dvar / (2 * std)
