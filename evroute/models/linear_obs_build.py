"""Building linear-reading models and fitting their hyper-parameters (:mod:`evroute.models.linear_obs`).

:func:`linear_model_from` turns a BI or exact-GP edge model into a :class:`~evroute.models.linear_obs.
LinearObsEdgeModel` with the same prior and data (optionally with shared offsets of the prior mean,
:func:`offset_basis`); :func:`fit_hyperparameters` learns its noise scale and prior-covariance factor by ML-II,
:func:`fit_with_trip_effect` those and the trip effect in the readings' noise (:mod:`evroute.models.linear_obs_trip`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from evroute.errors import ParameterError
from evroute.models.base import EdgeModel
from evroute.models.linear_obs import BasisKernel, DiagonalKernel, LinearObsEdgeModel, NoiseEig, noise_log_ml
from evroute.models.linear_obs_stats import LinearStatistics
from evroute.models.linear_obs_trip import TAU_BOUNDS, TripLogML
from evroute.models.state import prior_state


def fit_hyperparameters(
    model: LinearObsEdgeModel,
    phi_bounds: tuple[float, float] = (1e-3, 1e3),
    c_bounds: tuple[float, float] = (1e-3, 1e2),
) -> tuple[float, float]:
    """ML-II of the noise scale ``phi`` and the prior covariance's factor ``c`` together (:func:`noise_log_ml`;
    bounded quasi-Newton in ``(log phi, log c)`` from the model's values), set on ``model``
    (:attr:`~LinearObsEdgeModel.noise_scale`, :attr:`~LinearObsEdgeModel.prior_scale`) and returned.  The physics
    prior's variance ``(0.25 sigma_det)^2`` is a guess; how far learned edges move from their prior mean says how
    uncertain the unseen ones are.  Without readings both stay."""
    u = model.stats.touched()
    if model.stats.readings == 0 or len(u) == 0:
        return model.noise_scale, model.prior_scale
    log_ml = noise_log_ml(model.kernel, model.scale2, model.prior_mean, model.stats)
    model.noise_scale, model.prior_scale = _fit_phi_c(
        log_ml, (model.noise_scale, model.prior_scale), phi_bounds, c_bounds
    )
    model._post = None
    return model.noise_scale, model.prior_scale


def _fit_phi_c(
    log_ml: Callable[[float, float], float],
    start: tuple[float, float],
    phi_bounds: tuple[float, float],
    c_bounds: tuple[float, float],
) -> tuple[float, float]:
    """``(phi, c)`` maximising ``log_ml(phi, c)``: L-BFGS-B in ``(log phi, log c)`` within the bounds from ``start``
    (in ``log phi`` alone where the bounds hold ``c``: a held variable's finite difference would be 0 / 0)."""
    from scipy.optimize import minimize

    free_c = c_bounds[0] < c_bounds[1]

    def neg(z: np.ndarray) -> float:
        return -log_ml(float(np.exp(z[0])), float(np.exp(z[1])) if free_c else c_bounds[0])

    bounds = [(np.log(phi_bounds[0]), np.log(phi_bounds[1])), (np.log(c_bounds[0]), np.log(c_bounds[1]))]
    bounds = bounds if free_c else bounds[:1]
    z0 = np.clip(np.log(start[: len(bounds)]), [b[0] for b in bounds], [b[1] for b in bounds])
    res = minimize(neg, z0, method="L-BFGS-B", bounds=bounds, options={"ftol": 1e-10})
    return float(np.exp(res.x[0])), float(np.exp(res.x[1])) if free_c else float(c_bounds[0])


def offset_basis(
    length_m: np.ndarray, per_metre_sd: float = 0.05, per_edge_sd: float = 10.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(B (E, 2), sd (2,))``: a shared per-metre offset (prior s.d. ``per_metre_sd`` Wh/m) and a shared per-edge
    offset (``per_edge_sd`` Wh, e.g. the junction at its end) of the physics energies, for :func:`linear_model_from`."""
    length = np.asarray(length_m, dtype=np.float64)
    return np.column_stack([length, np.ones_like(length)]), np.array([per_metre_sd, per_edge_sd], dtype=np.float64)


def linear_model_from(
    model: EdgeModel, *, basis: np.ndarray | None = None, basis_sd: np.ndarray | None = None
) -> LinearObsEdgeModel:
    """The linear-reading model with ``model``'s prior and its per-edge data as single-edge readings.

    ``basis`` ``(E, p)`` (Wh per unit coefficient) with prior s.d. ``basis_sd`` ``(p,)``: shared corrections of the
    prior mean learned with the edges (:class:`BasisKernel`, e.g. :func:`offset_basis`).

    ``model``: a :class:`~evroute.models.bi.BayesianEdgeModel` (independent edges; per-edge noise variances) or an
    :class:`~evroute.models.gp_exact.ExactGPEdgeModel` (its kernel source and hyperparameters, as they are now).
    """
    if isinstance(model, LinearObsEdgeModel):
        return model
    out = _linear_of(model)
    out.base_state = prior_state(model)
    if basis is not None:
        b = np.asarray(basis, dtype=np.float64).reshape(out.n_edges, -1)
        sd = np.asarray(basis_sd, dtype=np.float64).reshape(-1)
        if sd.shape != (b.shape[1],) or not (np.isfinite(b).all() and np.all(sd > 0) and np.isfinite(sd).all()):
            raise ParameterError(f"basis {b.shape} needs {b.shape[1]} finite prior s.d. > 0, got {sd}")
        out.kernel = BasisKernel(out.kernel, b / np.sqrt(out.scale2), sd**2)  # model units: K_Wh / scale2
        out.basis = (b, sd)
    return out


def _linear_of(model: EdgeModel) -> LinearObsEdgeModel:
    from evroute.models.bi import BayesianEdgeModel
    from evroute.models.gp_exact import ExactGPEdgeModel

    if isinstance(model, BayesianEdgeModel):
        if np.ptp(model.noise_var) > 0:
            raise ParameterError("a BI model with per-edge noise variances cannot take linear readings")
        out = LinearObsEdgeModel(
            model.prior_mean, DiagonalKernel(model.prior_var), 1.0, float(model.noise_var[0]), "bi"
        )
        seen = np.flatnonzero(model.count)
        out.stats.lam = sp.csr_matrix(
            (model.count[seen] / model.noise_var[seen], (seen, seen)), shape=(model.n_edges, model.n_edges)
        )
        out.stats.h[seen] = model.total[seen] / model.noise_var[seen]
        out.stats.readings = int(model.count.sum())
        return out
    if isinstance(model, ExactGPEdgeModel):
        s2 = float(model.scale) ** 2
        out = LinearObsEdgeModel(model.prior_mean_wh, model.kernel(), s2, float(model.noise_var), "gp-exact")
        e, n, ybar, _ = model.statistics()
        if len(e):
            w = n / out.noise_var
            out.stats.lam = sp.csr_matrix((w, (e, e)), shape=(model.n_edges, model.n_edges))
            out.stats.h[e] = w * ybar * model.scale
            out.stats.readings = int(n.sum())
        return out
    raise ParameterError(f"a {type(model).__name__} cannot take linear readings (use bi or gp-exact)")


#: :func:`fit_with_trip_effect`: points of the starting grid in ``log kappa`` at the fit without the effect
KAPPA_GRID = 25
#: :func:`fit_with_trip_effect`: step of the central differences in ``log phi``, ``log c``, ``log kappa``
FD_STEP = 1e-4
#: bounds of the noise scale ``phi`` (as :func:`fit_hyperparameters` takes them by default)
PHI_BOUNDS = (1e-3, 1e3)


def fit_with_trip_effect(
    model: LinearObsEdgeModel,
    tau_bounds: tuple[float, float] = TAU_BOUNDS,
    c_bounds: tuple[float, float] = (1e-3, 1e2),
    method: str = "auto",
) -> tuple[float, float, float]:
    """ML-II of ``(phi, c, tau)`` for a :class:`~evroute.models.linear_obs.LinearObsEdgeModel` (the trip effect in
    the readings' noise, :mod:`evroute.models.linear_obs_trip`).  Sets ``noise_scale``, ``prior_scale`` and
    ``trip_tau`` on ``model`` and returns them.  ``c_bounds``: as :func:`fit_hyperparameters` takes them (equal
    bounds hold ``c``); ``kappa = tau^2 / phi`` is searched in ``[tau_lo^2 / phi_0, tau_hi^2 / phi_0]`` (``phi_0``
    the fit without the effect), and ``tau = 0`` is kept when the best ``kappa`` does not raise the marginal
    likelihood.

    ``method``: ``"woodbury"``: one eigendecomposition without the effect, every ``(phi, c, kappa)`` from
    it (:class:`~evroute.models.linear_obs_trip.TripLogML`): the best of :data:`KAPPA_GRID` points in ``log kappa``
    at ``(phi_0, c_0)``, then L-BFGS-B in ``(log phi, [log c,] log kappa)`` together on central differences
    (:data:`FD_STEP`).  ``"refit"``: a bounded 1-D search in ``log kappa`` refitting ``(phi, c)`` by
    :func:`fit_hyperparameters` on :meth:`~evroute.models.linear_obs_trip.TripRank1.statistics` at each ``kappa``
    (one eigendecomposition per ``kappa``: ~60 times dearer at Luxembourg's 3,720 touched edges; the reference the
    tests compare with); ``"auto"`` (default): ``"woodbury"`` while the traces are fewer than the touched edges
    (``T < |U|``), else ``"refit"`` (the ``T x T`` Woodbury matrices would cost more than the ``|U| x |U|``
    eigendecompositions)."""
    lo, hi = tau_bounds
    if not (0 < lo < hi and np.isfinite(hi)):
        raise ParameterError(f"trip effect: tau bounds must satisfy 0 < low < high, got {tau_bounds}")
    if method not in ("auto", "woodbury", "refit"):
        raise ParameterError(f"trip effect: method must be auto, woodbury or refit, got {method!r}")
    model.trip_tau = 0.0
    n_u = len(model.stats.touched())
    if method == "auto":
        method = "woodbury" if len(model.trip_rank1()) < n_u else "refit"
    if method == "refit" or model.stats.readings == 0 or n_u == 0:
        return _fit_refit(model, tau_bounds, c_bounds)
    eig = NoiseEig(model.kernel, model.scale2, model.prior_mean, model.stats)
    phi0, c0 = _fit_phi_c(eig.log_ml, (model.noise_scale, model.prior_scale), PHI_BOUNDS, c_bounds)
    model.noise_scale, model.prior_scale, model._post = phi0, c0, None
    rank1 = model.trip_rank1()
    if len(rank1) < 2:
        return phi0, c0, 0.0
    log_ml = TripLogML(eig, rank1, model.prior_mean)
    kb = (np.log(lo * lo / phi0), np.log(hi * hi / phi0))
    grid = np.linspace(kb[0], kb[1], KAPPA_GRID)
    z_k = float(grid[int(np.argmax([log_ml(phi0, c0, float(np.exp(z))) for z in grid]))])
    free_c = c_bounds[0] < c_bounds[1]

    def at(x: np.ndarray) -> tuple[float, float, float]:
        return float(np.exp(x[0])), float(np.exp(x[1])) if free_c else c0, float(np.exp(x[-1]))

    def neg_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        # grouped by (phi, c): TripLogML keeps one (phi, c)'s O(|U| T^2) product, each kappa is O(T^3)
        grad = np.zeros(len(x))
        phi, c, kappa = at(x)
        value = log_ml(phi, c, kappa)
        grad[-1] = log_ml(phi, c, kappa * np.exp(FD_STEP)) - log_ml(phi, c, kappa * np.exp(-FD_STEP))
        for i in range(len(x) - 1):
            step = np.zeros(len(x))
            step[i] = FD_STEP
            grad[i] = log_ml(*at(x + step)) - log_ml(*at(x - step))
        return -value, -grad / (2 * FD_STEP)

    from scipy.optimize import minimize

    bounds = [(np.log(PHI_BOUNDS[0]), np.log(PHI_BOUNDS[1]))]
    x0 = [np.log(phi0)]
    if free_c:
        bounds.append((np.log(c_bounds[0]), np.log(c_bounds[1])))
        x0.append(np.log(c0))
    bounds.append(kb)
    x0.append(z_k)
    res = minimize(neg_and_grad, np.array(x0), jac=True, method="L-BFGS-B", bounds=bounds, options={"ftol": 1e-14})
    phi, c, kappa = at(res.x)
    if -float(res.fun) > eig.log_ml(phi0, c0):
        model.noise_scale, model.prior_scale = phi, c
        model.trip_tau = float(np.sqrt(kappa * phi))
    model._post = None
    return model.noise_scale, model.prior_scale, model.trip_tau


def _fit_refit(
    model: LinearObsEdgeModel, tau_bounds: tuple[float, float], c_bounds: tuple[float, float]
) -> tuple[float, float, float]:
    """:func:`fit_with_trip_effect`'s ``method="refit"``."""
    from scipy.optimize import minimize_scalar

    lo, hi = tau_bounds
    phi0, c0 = fit_hyperparameters(model, c_bounds=c_bounds)
    rank1 = model.trip_rank1()
    if len(rank1) < 2:
        return phi0, c0, 0.0

    def fit_at(log_kappa: float) -> tuple[float, float, float]:
        stats = rank1.statistics(model.stats, float(np.exp(log_kappa)))
        phi, c = _fit_on(model, stats, phi0, c0, c_bounds)
        ml = noise_log_ml(model.kernel, model.scale2, model.prior_mean, stats)(phi, c)
        return phi, c, float(ml)

    ml0 = noise_log_ml(model.kernel, model.scale2, model.prior_mean, model.stats)(phi0, c0)
    bounds = (np.log(lo * lo / phi0), np.log(hi * hi / phi0))
    res = minimize_scalar(lambda z: -fit_at(z)[2], bounds=bounds, method="bounded", options={"xatol": 1e-3})
    phi, c, ml = fit_at(float(res.x))
    if ml > ml0:
        model.noise_scale, model.prior_scale = phi, c
        model.trip_tau = float(np.sqrt(np.exp(res.x) * phi))
    else:
        model.noise_scale, model.prior_scale = phi0, c0
    model._post = None
    return model.noise_scale, model.prior_scale, model.trip_tau


def _fit_on(
    model: LinearObsEdgeModel, stats: LinearStatistics, phi0: float, c0: float, c_bounds: tuple[float, float]
) -> tuple[float, float]:
    """``fit_hyperparameters`` of ``model`` with its statistics replaced by ``stats`` (restored after)."""
    saved = model.stats, model.noise_scale, model.prior_scale
    try:
        model.stats, model.noise_scale, model.prior_scale = stats, phi0, c0
        return fit_hyperparameters(model, c_bounds=c_bounds)
    finally:
        model.stats, model.noise_scale, model.prior_scale = saved
        model._post = None


__all__ = ["fit_hyperparameters", "fit_with_trip_effect", "linear_model_from", "offset_basis"]
