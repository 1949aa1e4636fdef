"""The known-truth study's per-cell fits (:mod:`studies.trip_logs.known_truth`): the readings' noise scale by ML-II,
and the trip effect fitted into the readings' covariance as ``evroute learn --trip-effect-fit on`` fits it."""

from __future__ import annotations

from typing import Any

import numpy as np


def ml2_noise_scale(model: Any, stats: Any) -> tuple[float, float]:
    """``(phi, log ML)``: the readings' noise scale by ML-II (bounded search in ``log phi`` over ``[1e-3, 1e3]``) for
    ``model``'s prior and ``stats``, and the log marginal likelihood there; each evaluation from one decomposition
    (``evroute.models.linear_obs.noise_log_ml``: the value ``linear_posterior`` gives, without a Cholesky per
    evaluation)."""
    from scipy.optimize import minimize_scalar

    from evroute.models.linear_obs import noise_log_ml

    if stats.readings == 0 or len(stats.touched()) == 0:
        return 1.0, 0.0
    log_ml = noise_log_ml(model.kernel, model.scale2 * model.prior_scale, model.prior_mean, stats)
    res = minimize_scalar(
        lambda z: -log_ml(float(np.exp(z))),
        bounds=(np.log(1e-3), np.log(1e3)),
        method="bounded",
        options={"xatol": 1e-3},
    )
    return float(np.exp(res.x)), float(-res.fun)


def fit_trip_effect(model: Any) -> float:
    """``phi``: the trip effect ``tau`` in the readings' noise by ML-II with ``phi`` at the selected prior (``c`` held
    at 1; ``linear_obs_build.fit_with_trip_effect``), and ``model`` marked as fitted with it, as ``evroute learn
    --trip-effect-fit on`` marks it: ``trip_learning.route_noise`` then uses that ``tau`` as it is and takes each fold
    out with the covariance it was learned with."""
    from evroute.models.linear_obs_build import fit_with_trip_effect

    phi = fit_with_trip_effect(model, c_bounds=(1.0, 1.0))[0]
    model.trip_effect_fit = True
    return phi


__all__ = ["fit_trip_effect", "ml2_noise_scale"]
