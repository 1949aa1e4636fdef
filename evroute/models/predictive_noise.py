"""The predictive noise of a route interval: the posterior of the whole-trip noise multiplier ``k`` and the trip
effect ``tau^2`` (:mod:`evroute.models.trip_effect`) given out-of-fold trip residuals, on a grid, and its
predictive -- a mixture of normals -- whose central interval every route served from a learned model uses.

Split from :mod:`evroute.models.trip_effect` (which re-exports these names): this module imports no other model
module, so the model store's schema check and the driver's belief can read a stored mixture without the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import ParameterError


@dataclass(frozen=True)
class TripResiduals:
    """Out-of-fold residuals of whole trips (:func:`~evroute.models.trip_effect.fold_residuals`), ``(T,)`` each:
    ``d = Y_t - w_t^T m^(-F)`` (Wh) against the posterior of the *other* folds' trips, ``s = w_t^T Sigma^(-F) w_t``
    that posterior's variance of the trip's sum (Wh^2), ``r`` the trip's reading noise summed at noise scale 1 (Wh^2)
    and ``mu = w_t^T m^(-F)`` (Wh)."""

    d: np.ndarray
    s: np.ndarray
    r: np.ndarray
    mu: np.ndarray


def _half_cauchy_grid(scale: float, n: int) -> np.ndarray:
    """``n`` points of a half-Cauchy(0, ``scale``) at its quantiles ``(i + 1/2) / n``: cells of equal prior mass."""
    q = (np.arange(n) + 0.5) / n
    return scale * np.tan(0.5 * np.pi * q)


@dataclass(frozen=True)
class PredictiveNoise:
    """The posterior of the whole-trip noise multiplier ``k`` and the trip effect ``tau^2`` on a grid
    (:func:`fit_predictive_noise`): ``k``, ``tau2``, ``weight`` ``(G,)`` (weights sum to 1), ``trips`` the trips it
    rests on.  A route's predictive error is the mixture over the grid of ``N(0, base + k a + tau^2 b)`` (``base``:
    its posterior variance, ``a`` its nominal traversal noise at the readings' scale, ``b = mu^2``; Wh^2): it carries
    the uncertainty of ``(k, tau^2)`` estimated from few trips, which a plug-in normal does not."""

    k: np.ndarray
    tau2: np.ndarray
    weight: np.ndarray
    trips: int

    @property
    def k_mean(self) -> float:
        return float(self.weight @ self.k)

    @property
    def tau2_mean(self) -> float:
        return float(self.weight @ self.tau2)

    def _sd(self, base: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(n, G)`` s.d. of each route under each grid point."""
        v = (
            np.asarray(base, dtype=np.float64)[:, None]
            + np.asarray(a, dtype=np.float64)[:, None] * self.k[None, :]
            + np.asarray(b, dtype=np.float64)[:, None] * self.tau2[None, :]
        )
        return np.sqrt(np.maximum(v, 1e-300))

    def variance(self, base: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(n,)`` the predictive variance (Wh^2) of routes with ``base``, ``a``, ``b`` ``(n,)`` (class doc)."""
        return np.asarray(base, dtype=np.float64) + self.k_mean * np.asarray(a) + self.tau2_mean * np.asarray(b)

    def central_prob(self, x: np.ndarray, base: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(n,)`` the predictive probability of an error smaller in size than ``|x|`` (Wh): ``x`` lies inside the
        central interval of level ``L`` exactly when this is ``<= L``."""
        from scipy.special import erf

        z = np.abs(np.asarray(x, dtype=np.float64))[:, None] / self._sd(base, a, b)
        return np.asarray(erf(z / np.sqrt(2.0)) @ self.weight)

    def covers(self, x: np.ndarray, base: np.ndarray, a: np.ndarray, b: np.ndarray, level: float = 0.9) -> np.ndarray:
        """``(n,)`` whether each error ``x`` lies inside its central ``level`` predictive interval."""
        return self.central_prob(x, base, a, b) <= level

    def half_width(self, base: np.ndarray, a: np.ndarray, b: np.ndarray, level: float = 0.9) -> np.ndarray:
        """``(n,)`` half-widths (Wh) of the central ``level`` predictive intervals (bisection on the mixture, to
        1e-6 relative)."""
        if not 0 < level < 1:
            raise ParameterError(f"level must be in (0, 1), got {level}")
        sd = self._sd(base, a, b)
        lo, hi = np.zeros(len(sd)), 10.0 * sd.max(axis=1)  # P(|X| < 10 sd_max) > 1 - 1e-20
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            inside = self.central_prob(mid, base, a, b) < level
            lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        return 0.5 * (lo + hi)

    def cdf(self, x: np.ndarray, base: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``(n,)`` the predictive probability that a route's error (energy minus its predicted mean, Wh) is at most
        ``x`` ``(n,)``: ``sum_g w_g Phi(x / sd_g)``."""
        from scipy.special import ndtr

        z = np.asarray(x, dtype=np.float64)[:, None] / self._sd(base, a, b)
        return np.asarray(ndtr(z) @ self.weight)

    def pruned(self, rel: float = 1e-12) -> PredictiveNoise:
        """The mixture without the grid points of weight below ``rel`` times the largest, renormalised (what a model
        file keeps: of a 40 x 40 grid a few hundred points; the mass dropped is below ``G rel``)."""
        keep = self.weight >= rel * float(self.weight.max())
        w = self.weight[keep]
        return PredictiveNoise(self.k[keep], self.tau2[keep], w / w.sum(), self.trips)

    def to_dict(self) -> dict[str, Any]:
        """What a model file keeps (``meta.trip_effect``, JSON): ``method`` ``"out-of-fold"``, the mixture's grid and
        weights (``mixture``: ``k``, ``tau2``, ``weight`` lists), ``trips``, the posterior s.d. ``noise_mult_sd`` and
        ``rel_var_sd``, and the posterior means as ``noise_mult`` (``k``) and ``rel_var`` (``tau^2``): the moments
        every Gaussian user of a route's variance takes (the mixture's variance is exactly ``base + E[k] a + E[tau^2]
        b``)."""
        return {
            "method": "out-of-fold",
            "noise_mult": self.k_mean,
            "rel_var": self.tau2_mean,
            "trips": self.trips,
            "noise_mult_sd": float(np.sqrt(self.weight @ (self.k - self.k_mean) ** 2)),
            "rel_var_sd": float(np.sqrt(self.weight @ (self.tau2 - self.tau2_mean) ** 2)),
            "mixture": {"k": self.k.tolist(), "tau2": self.tau2.tolist(), "weight": self.weight.tolist()},
        }

    @classmethod
    def from_dict(cls, effect: dict[str, Any]) -> PredictiveNoise | None:
        """The mixture of a model file's ``meta.trip_effect`` (:meth:`to_dict`), or None when it has none (a file
        written before the out-of-fold fit: a point ``(k, tau^2)`` fitted in-sample).  A mixture that is not three
        lists of one length >= 1 of finite numbers >= 0 with weights summing to 1 (to 1e-6) is a
        :class:`ParameterError` (the model store's schema check reports it)."""
        mix = effect.get("mixture")
        if mix is None:
            return None
        if not isinstance(mix, dict) or not all(isinstance(mix.get(f), list) for f in ("k", "tau2", "weight")):
            raise ParameterError("trip_effect.mixture must be an object of lists 'k', 'tau2' and 'weight'")
        try:
            k, t, w = (np.asarray(mix[f], dtype=np.float64) for f in ("k", "tau2", "weight"))
        except (TypeError, ValueError):
            raise ParameterError("trip_effect.mixture: 'k', 'tau2' and 'weight' must hold numbers") from None
        if not (k.ndim == 1 and len(k) >= 1 and k.shape == t.shape == w.shape):
            raise ParameterError("trip_effect.mixture: 'k', 'tau2' and 'weight' must be lists of one length >= 1")
        if not (np.isfinite(np.r_[k, t, w]).all() and (np.r_[k, t, w] >= 0).all()):
            raise ParameterError("trip_effect.mixture: 'k', 'tau2' and 'weight' must be finite numbers >= 0")
        if abs(float(w.sum()) - 1.0) > 1e-6:
            raise ParameterError(f"trip_effect.mixture: the weights sum to {float(w.sum()):.9g}, not 1")
        trips = effect.get("trips", 0)
        return cls(k, t, w / w.sum(), int(trips) if isinstance(trips, int) else 0)


def fit_predictive_noise(
    res: TripResiduals,
    noise_scale: float = 1.0,
    *,
    tau_scale: float = 0.1,
    k_scale: float = 1.0,
    grid: int = 40,
) -> PredictiveNoise:
    """The posterior of ``(k, tau^2)`` from out-of-fold trip residuals
    (:func:`~evroute.models.trip_effect.fold_residuals`): each ``d_t ~ N(0,
    s_t + k phi r_t + tau^2 mu_t^2)`` independently (``phi`` = ``noise_scale``, the readings' ML-II scale), the
    weakly-informative priors ``tau ~`` half-Cauchy(0, ``tau_scale``) (a trip 10 % off the edges' expectation is
    typical, ten times that possible) and ``sqrt(k) ~`` half-Cauchy(0, ``k_scale``) (the readings' noise as it is,
    ``k = 1``, typical), independent; evaluated on ``grid`` x ``grid`` points at the priors' quantiles (cells of
    equal prior mass, so the weights are the normalised likelihood).  Half-Cauchy priors on the s.d. of a variance
    component (Gelman 2006) leave the posterior proper when the data cannot tell ``tau`` from 0, unlike a flat prior
    on ``log tau``.  Tuned on nothing but these residuals.  The predictive (:class:`PredictiveNoise`) integrates over
    the posterior: with few trips it is heavier-tailed than a normal at the best fit, as a Student t is."""
    d, s = np.asarray(res.d, dtype=np.float64), np.asarray(res.s, dtype=np.float64)
    a = noise_scale * np.asarray(res.r, dtype=np.float64)
    b = np.maximum(np.asarray(res.mu, dtype=np.float64), 0.0) ** 2
    if not (np.isfinite(d).all() and np.isfinite(s).all() and np.isfinite(a).all() and (a >= 0).all()):
        raise ParameterError("predictive noise: residuals, variances and noise sums must be finite, noise >= 0")
    if not (tau_scale > 0 and k_scale > 0 and grid >= 2 and noise_scale >= 0):
        raise ParameterError("predictive noise: prior scales > 0, grid >= 2 and noise scale >= 0 needed")
    kk, tt = np.meshgrid(_half_cauchy_grid(k_scale, grid) ** 2, _half_cauchy_grid(tau_scale, grid) ** 2)
    k, t2 = kk.ravel(), tt.ravel()
    ll = np.zeros(len(k))
    for dt, st, at, bt in zip(d, np.maximum(s, 0.0), a, b, strict=True):  # T x G, one trip at a time
        v = np.maximum(st + k * at + t2 * bt, 1e-300)
        ll -= 0.5 * (np.log(v) + dt * dt / v)
    w = np.exp(ll - ll.max())
    return PredictiveNoise(k, t2, w / w.sum(), len(d))


__all__ = ["PredictiveNoise", "TripResiduals", "fit_predictive_noise"]
