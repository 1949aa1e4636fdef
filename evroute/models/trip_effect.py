"""A trip-level random effect (the driver, the day) estimated from trip logs, for route intervals.

The edges of one trip share its driver and its traffic, so their errors do not cancel along a route as independent
edge noise would.  The model: a trip's reduced energy over the edge shares ``w`` it drove is

    Y_t = w_t^T f + beta_t mu_t + eps_t,     beta_t ~ N(0, tau^2),   mu_t = w_t^T f,   eps_t ~ N(0, r_t)

(``tau``: the relative spread of one trip's energy around the edges' expectation -- a driver 10 % more economical
than the average has ``beta = -0.1``; ``r_t = 1^T R_t 1`` the trip's reading noise summed, :mod:`evroute.models.
linear_obs`).  A route asked about gets the variance ``tau^2 mu(R)^2`` on top of its edges' posterior and noise
(:class:`evroute.driver.belief.RouteBelief`).

**Estimate** (:func:`fit_trip_effect`, method of moments on the per-trip residual sums): with the posterior of all
readings (mean ``m``, covariance ``Sigma``), ``d_t = Y_t - w_t^T m`` has, under the model without the effect,
``E[d_t^2] = v_t = r_t - w_t^T Sigma w_t`` (in-sample residuals of a linear Gaussian model: ``Cov r = R - A Sigma
A^T``); the effect adds ``tau^2 mu_t^2``.  So

    tau_hat^2 = max(0, sum_t (d_t^2 - v_t) / sum_t mu_t^2),

a ratio of sums (no distribution assumed beyond the first two moments) with the standard error of a ratio estimator
with trips as clusters, ``sqrt(sum_t (d_t^2 - v_t - tau_hat^2 mu_t^2)^2) / sum_t mu_t^2``.  The posterior also
absorbs part of the effect (it treats it as noise), so ``tau_hat`` is slightly low when few trips share the edges;
with many trips per edge that share vanishes.

:class:`TripSums` keeps what the estimate needs of each learned trace -- its edges, their shares ``w`` (summed over
its windows), ``Y`` and ``r`` -- compactly (a model file holds it, so a resumed run re-estimates from all logs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import ParameterError


class TripSums:
    """Per learned trace: edges ``(k_t,)``, driven shares ``w`` ``(k_t,)``, reading sum ``Y`` (Wh) and its noise
    variance ``r`` (Wh^2, at noise scale 1); stored flat (``ptr`` ``(T + 1,)`` offsets into ``edge`` and ``w``)."""

    def __init__(self) -> None:
        self._edge: list[np.ndarray] = []
        self._w: list[np.ndarray] = []
        self._y: list[float] = []
        self._r: list[float] = []

    def __len__(self) -> int:
        return len(self._y)

    def add(self, edges: np.ndarray, w: np.ndarray, y: float, r: float) -> None:
        """One trace: ``edges`` ``(k,)``, shares ``w`` ``(k,)`` (column sums of its ``A``), ``Y = sum y``,
        ``r = 1^T R 1``."""
        e, ww = np.asarray(edges, dtype=np.int64).reshape(-1), np.asarray(w, dtype=np.float64).reshape(-1)
        if e.shape != ww.shape or not (np.isfinite(ww).all() and np.isfinite(y) and r >= 0):
            raise ParameterError("trip sums: edges and shares of one shape, finite Y and r >= 0 needed")
        self._edge.append(e)
        self._w.append(ww)
        self._y.append(float(y))
        self._r.append(float(r))

    def trips(self) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
        """``(edges, w, Y, r)`` per trace."""
        return list(zip(self._edge, self._w, self._y, self._r, strict=True))

    def arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for a model file: ``trip_ptr``, ``trip_edge``, ``trip_w``, ``trip_yr`` ``(T, 2)``."""
        sizes = [len(e) for e in self._edge]
        return {
            "trip_ptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "trip_edge": np.concatenate(self._edge).astype(np.int64) if sizes else np.zeros(0, np.int64),
            "trip_w": np.concatenate(self._w) if sizes else np.zeros(0),
            "trip_yr": np.column_stack([self._y, self._r]) if sizes else np.zeros((0, 2)),
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TripSums:
        out = cls()
        if "trip_ptr" not in a:
            return out
        ptr = np.asarray(a["trip_ptr"], dtype=np.int64)
        for i in range(len(ptr) - 1):
            lo, hi = ptr[i], ptr[i + 1]
            out.add(a["trip_edge"][lo:hi], a["trip_w"][lo:hi], float(a["trip_yr"][i, 0]), float(a["trip_yr"][i, 1]))
        return out


@dataclass(frozen=True)
class TripEffect:
    """The fitted trip-level effect: ``rel_var`` = ``tau^2`` (relative variance of one trip's reduced energy),
    ``se`` its standard error, ``trips`` the traces it rests on (module doc)."""

    rel_var: float
    se: float
    trips: int

    def to_dict(self) -> dict[str, Any]:
        return {"rel_var": self.rel_var, "se": self.se, "trips": self.trips}


def _quad(cov_of: Any, e: np.ndarray, w: np.ndarray) -> float:
    """``w^T Sigma_ee w``: without the ``(k, k)`` matrix where ``cov_of`` is a posterior's bound ``covariance_of``
    (:meth:`evroute.kernels.posterior.GaussianPosterior.quad_of`) or has a ``quad`` method
    (:class:`evroute.models.linear_obs.SubsetCovariance`), else from ``cov_of(e)``."""
    quad = getattr(cov_of, "quad", None) or getattr(getattr(cov_of, "__self__", None), "quad_of", None)
    return float(quad(e, w)) if quad is not None else float(w @ (np.asarray(cov_of(e)) @ w))


def fit_trip_effect(
    mean: np.ndarray, cov_of: Any, sums: TripSums, noise_scale: float = 1.0, *, min_trips: int = 2
) -> TripEffect:
    """``tau^2`` by moments (module doc) from the posterior ``mean`` ``(E,)`` (Wh), ``cov_of(idx)`` (the ``(k, k)``
    posterior covariance of edges ``idx``, Wh^2) and the traces' sums; ``noise_scale`` multiplies each ``r``.  Fewer
    than ``min_trips`` traces: ``tau^2 = 0`` with an infinite standard error (nothing to estimate from)."""
    trips = sums.trips()
    if len(trips) < min_trips:
        return TripEffect(0.0, float("inf"), len(trips))
    num, den = np.zeros(len(trips)), np.zeros(len(trips))
    m = np.asarray(mean, dtype=np.float64)
    for i, (e, w, y, r) in enumerate(trips):
        mu = float(w @ m[e])
        v = noise_scale * r - _quad(cov_of, e, w)
        num[i] = (y - mu) ** 2 - v
        den[i] = mu * mu
    total = float(den.sum())
    if not total > 0:
        return TripEffect(0.0, float("inf"), len(trips))
    tau2 = float(num.sum() / total)
    se = float(np.sqrt(np.sum((num - tau2 * den) ** 2)) / total)
    return TripEffect(max(tau2, 0.0), se, len(trips))


@dataclass(frozen=True)
class RouteNoise:
    """The route-level noise fitted from whole trips (:func:`fit_route_noise`): one traversal's noise is
    ``noise_mult`` times the readings' (at their noise scale), plus the trip effect ``rel_var`` = ``tau^2``; ``trips``
    the traces it rests on; ``noise_mult_se``, ``rel_var_se`` their standard errors (sandwich, trips as clusters;
    infinite when not estimated)."""

    noise_mult: float
    rel_var: float
    trips: int
    noise_mult_se: float = float("inf")
    rel_var_se: float = float("inf")

    def to_dict(self) -> dict[str, Any]:
        """What a model file keeps (``meta.trip_effect``; JSON: an infinite s.e. is ``None``)."""

        def fin(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "rel_var": self.rel_var,
            "noise_mult": self.noise_mult,
            "trips": self.trips,
            "rel_var_se": fin(self.rel_var_se),
            "noise_mult_se": fin(self.noise_mult_se),
            "method": "whole-trip",
        }


def fit_route_noise(
    mean: np.ndarray, cov_of: Any, sums: TripSums, noise_scale: float = 1.0, *, min_trips: int = 2
) -> RouteNoise:
    """The noise of a whole trip, from its residual sums: ``E[d_t^2] + w_t^T Sigma w_t = k phi r_t + tau^2 mu_t^2``
    (module doc's moments with the traversal noise's multiplier ``k`` free), ``(k, tau^2) >= 0`` by non-negative
    least squares over the trips.

    Why: readings over short windows see how the energy is spread *along* an edge (accelerating at its start, braking
    at its end), which the noise model of :mod:`evroute.traces.observations` counts as noise proportional to the
    driven share; over a whole trip that spread cancels, so the readings' noise scale ``phi`` (ML-II over windows)
    can overstate one whole traversal's noise many times.  A route interval needs the whole-trip noise: ``k phi``
    times the nominal traversal noise per edge, plus ``tau^2 mu^2``.  Fewer than ``min_trips`` traces: ``k = 1``,
    ``tau^2 = 0`` (the readings' noise as it is).  Standard errors: the least-squares sandwich ``(X^T X)^-1 X^T
    diag(e^2) X (X^T X)^-1`` with the trips' residuals ``e`` (each trip one cluster; a coefficient held at 0 by the
    constraint gets the unconstrained formula's value, a rough guide there)."""
    from scipy.optimize import nnls

    trips = sums.trips()
    if len(trips) < min_trips:
        return RouteNoise(1.0, 0.0, len(trips))
    m = np.asarray(mean, dtype=np.float64)
    x, target = np.zeros((len(trips), 2)), np.zeros(len(trips))
    for i, (e, w, y, r) in enumerate(trips):
        mu = float(w @ m[e])
        x[i] = (noise_scale * r, mu * mu)
        target[i] = (y - mu) ** 2 + _quad(cov_of, e, w)
    good = np.isfinite(x).all(axis=1) & np.isfinite(target)
    if good.sum() < min_trips or not np.any(x[good] > 0):
        return RouteNoise(1.0, 0.0, len(trips))
    norm = np.maximum(np.abs(x[good]).max(axis=0), 1e-300)  # columns of very different size (Wh^2 vs Wh^2 of mu^2)
    xs = x[good] / norm
    coef, _ = nnls(xs, target[good])
    res = target[good] - xs @ coef
    se = np.full(2, np.inf)
    gram = xs.T @ xs
    if good.sum() > 2 and np.linalg.cond(gram) < 1e12:
        inv = np.linalg.inv(gram)
        se = np.sqrt(np.maximum(np.diag(inv @ (xs.T * res**2) @ xs @ inv), 0.0)) / norm
    coef = coef / norm
    return RouteNoise(float(coef[0]), float(coef[1]), len(trips), float(se[0]), float(se[1]))


__all__ = ["RouteNoise", "TripEffect", "TripSums", "fit_route_noise", "fit_trip_effect"]
