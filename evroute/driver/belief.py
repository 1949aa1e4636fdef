"""The joint posterior of a route's edge energies, served from an edge model.

A route's energy is the sum of its edges' energies.  Its posterior mean is the sum of the posterior means; its
variance is NOT the sum of the marginal variances when the posterior is correlated:

    Var f(R) = 1^T Sigma_RR 1,           Sigma_RR = K_RR - K_RU A^-1 K_UR,   A = K_UU + diag(s^2 / n_U)

for the exact GP (``K`` the prior kernel, ``U`` the observed edges with ``n_u`` observations each, ``s^2`` the noise
variance; the same formula as :mod:`evroute.models.exact_posterior`), and ``sum_e var_e`` for independent BI.  A
driven trip adds the observation noise of every edge (independent): ``Var E_trip = Var f(R) + sum_{e in R} s_e^2``.

:class:`RouteBelief` precomputes what every route query shares (the Cholesky factor of ``A`` and the kernel columns
of the observed edges, ``E x |U|``), so a route of ``k`` edges costs ``k |U|^2`` plus the kernel columns of its
edges not seen in earlier queries (kept, up to :attr:`RouteBelief.max_cached_columns`).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import scipy.linalg

from evroute.errors import ParameterError
from evroute.kernels.linalg import jittered_cholesky
from evroute.models.base import EdgeModel
from evroute.models.predictive_noise import PredictiveNoise


class RouteBelief:
    """Posterior means, marginal and joint variances of edge energies, from a BI or exact GP model.

    Args:
        model: the edge model.
        potential_wh: ``(E,)`` elevation potential ``p`` (:func:`evroute.energy.elevation_potential_wh`); when given,
            posterior means below it are raised to it: a physical edge energy never is (its reduced cost, the
            dissipated energy, is ``>= 0``), but a Gaussian posterior fed noisy data on flat roads can put it there,
            and reduced costs ``>= 0`` keep route searches exact (:mod:`evroute.driver.paths`).  Variances unchanged.
        trip_rel_var: ``tau^2`` of the trip-level effect (:mod:`evroute.models.trip_effect`), >= 0.
        noise_mult: the whole-trip multiplier of the model's traversal noise (``k`` of
            :func:`~evroute.models.trip_effect.fit_route_noise`), >= 0; :attr:`noise_var` is the model's times it.
        predictive: the posterior of ``(k, tau^2)`` fitted to out-of-fold trip residuals
            (:class:`~evroute.models.predictive_noise.PredictiveNoise`, what ``evroute learn`` stores): one drive's
            error is then the mixture over it, and :meth:`trip_half_width` / :meth:`trip_cdf` give its central interval
            and distribution; ``trip_rel_var`` and ``noise_mult`` should be its posterior means (the moments
            :meth:`route_moments` gives are then the mixture's exactly).  None: a normal with ``trip_rel_var`` and
            ``noise_mult``.

    Attributes:
        mean: ``(E,)`` posterior mean of each edge's expected energy, Wh.
        var: ``(E,)`` posterior variance, Wh^2.
        noise_var: ``(E,)`` observation-noise variance of one traversal, Wh^2.
        joint: whether :meth:`cov` has off-diagonal terms (exact GP) or is diagonal (BI and other models).
    """

    #: kernel columns kept between route queries (``E`` floats each; 2000 columns = 90 MB on Luxembourg)
    max_cached_columns = 2000

    def __init__(
        self,
        model: EdgeModel,
        potential_wh: np.ndarray | None = None,
        trip_rel_var: float = 0.0,
        noise_mult: float = 1.0,
        predictive: PredictiveNoise | None = None,
    ) -> None:
        post = model.posterior()
        self.model = model
        self.mean = np.asarray(post.mean, dtype=np.float64)
        if potential_wh is not None:
            self.mean = np.maximum(self.mean, np.asarray(potential_wh, dtype=np.float64))
        if not (trip_rel_var >= 0 and np.isfinite(trip_rel_var)):
            raise ParameterError(f"trip_rel_var must be >= 0, got {trip_rel_var}")
        #: ``tau^2`` of the trip-level effect (:mod:`evroute.models.trip_effect`) and the ``(E,)`` means it scales
        #: (the model's own, before a potential is added back: reduced energies)
        self.trip_rel_var = float(trip_rel_var)
        self.effect_mean = np.maximum(self.mean.copy(), 0.0)
        self.var = np.maximum(np.asarray(post.var, dtype=np.float64), 0.0)
        if not (noise_mult >= 0 and np.isfinite(noise_mult)):
            raise ParameterError(f"noise_mult must be >= 0, got {noise_mult}")
        #: one traversal's noise within a whole trip = ``noise_mult`` x the model's (learned from whole trips,
        #: :func:`evroute.models.trip_effect.fit_route_noise`; 1 for a model without)
        noise = np.broadcast_to(np.asarray(post.noise_var, dtype=np.float64), self.mean.shape)
        self.noise_var = noise_mult * noise
        self.noise_var_mult = float(noise_mult)
        #: ``(E,)`` the model's own traversal noise (Wh^2), which the predictive's ``k`` multiplies
        self.model_noise_var = noise
        #: the mixture of one drive's error (None: a normal), see the class doc
        self.predictive = predictive
        self.n_edges = len(self.mean)
        self._gp: dict[str, Any] | None = None
        self._lock = threading.Lock()  # the kernel-column cache is shared by concurrent queries (evroute serve)
        from evroute.models.gp_exact import ExactGPEdgeModel

        self.joint = isinstance(model, ExactGPEdgeModel)
        if self.joint:
            self._gp = self._prepare_gp(model)
        from evroute.models.linear_obs import LinearObsEdgeModel

        #: the posterior's own joint covariance of a subset of edges (linear readings: a reading over several edges
        #: correlates them)
        self._subset_cov = post.covariance_of if isinstance(model, LinearObsEdgeModel) else None
        if self._subset_cov is not None:
            self.joint = True

    @staticmethod
    def _prepare_gp(model: Any) -> dict[str, Any]:
        kernel = model.kernel()
        u, n, _, _ = model.statistics()
        out: dict[str, Any] = {"kernel": kernel, "s2": float(model.scale) ** 2, "u": u}
        if len(u):
            kxu = np.asarray(kernel.columns(u))
            a = kxu[u] + np.diag(model.hyper.noise / n)
            out["kxu"] = kxu
            out["chol"] = jittered_cholesky(a)
        return out

    def cov(self, edges: np.ndarray) -> np.ndarray:
        """``(k, k)`` posterior covariance (Wh^2) of the expected energies of ``edges`` (indices, ``(k,)``)."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        if self._subset_cov is not None:
            c = np.asarray(self._subset_cov(e), dtype=np.float64)
            return 0.5 * (c + c.T)
        if self._gp is None:
            return np.diag(self.var[e])
        g = self._gp
        with self._lock:
            cache: dict[int, np.ndarray] = g.setdefault("columns", {})  # kernel column per edge: routes share edges
            missing = np.asarray(sorted({int(x) for x in e} - cache.keys()), dtype=np.int64)
            if len(missing):
                if len(cache) + len(missing) > self.max_cached_columns:
                    cache.clear()
                cols = np.asarray(g["kernel"].columns(missing))
                for j, x in enumerate(missing.tolist()):
                    cache[x] = cols[:, j].copy()
            k_rr = np.stack([cache[int(x)][e] for x in e], axis=1)
        if "chol" in g:
            w = scipy.linalg.solve_triangular(g["chol"], g["kxu"][e].T, lower=True, check_finite=False)
            k_rr = k_rr - w.T @ w
        k_rr = 0.5 * (k_rr + k_rr.T)
        return k_rr * g["s2"]

    def route_moments(self, edges: np.ndarray, *, trip: bool = True) -> tuple[float, float]:
        """``(mean, variance)`` of a route's energy (Wh, Wh^2): of its expected energy ``f(R)``, plus the
        observation noise of one drive when ``trip`` (module doc)."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        mean = float(self.mean[e].sum())
        var = float(self.var[e].sum()) if not self.joint else float(self.cov(e).sum())
        if trip:
            var += self.trip_var(e)
        return mean, max(var, 0.0)

    def trip_var(self, edges: np.ndarray) -> float:
        """What one drive of route ``edges`` adds to the variance of its expected energy (Wh^2): each traversal's
        noise plus the trip-level effect ``tau^2 (sum of the route's reduced means)^2``."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        return float(self.noise_var[e].sum()) + self.trip_rel_var * float(self.effect_mean[e].sum()) ** 2

    def trip_parts(self, edges: np.ndarray, shares: np.ndarray | None = None) -> tuple[float, float, float]:
        """``(base, a, b)`` of one drive of route ``edges`` ``(k,)``, each edge driven to its share ``shares`` ``(k,)``
        (default 1; a trip that starts or ends inside an edge drives part of it): ``base = w^T Sigma w`` the
        posterior variance of its expected energy, ``a = sum_e w_e s_e^2`` the model's traversal noise (Wh^2) and ``b
        = (w^T m)^2`` (reduced means, Wh^2): its variance under ``(k, tau^2)`` is ``base + k a + tau^2 b``."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        w = np.ones(len(e)) if shares is None else np.asarray(shares, dtype=np.float64).reshape(-1)
        if w.shape != e.shape:
            raise ParameterError(f"{len(w)} shares for {len(e)} edges")
        base = float(w @ self.cov(e) @ w) if self.joint else float(w**2 @ self.var[e])
        return max(base, 0.0), float(w @ self.model_noise_var[e]), float(w @ self.effect_mean[e]) ** 2

    def trip_half_width(self, edges: np.ndarray, level: float = 0.9, shares: np.ndarray | None = None) -> float:
        """Half-width (Wh) of the central ``level`` predictive interval of one drive of route ``edges`` around its
        mean: the mixture's (:meth:`PredictiveNoise.half_width`) with a :attr:`predictive`, else the normal's ``z
        sd`` (:meth:`trip_parts` for ``shares``)."""
        from scipy.special import ndtri

        if not 0 < level < 1:
            raise ParameterError(f"level must be in (0, 1), got {level}")
        base, a, b = self.trip_parts(edges, shares)
        if self.predictive is not None:
            return float(self.predictive.half_width(np.array([base]), np.array([a]), np.array([b]), level)[0])
        sd = np.sqrt(base + self.noise_var_mult * a + self.trip_rel_var * b)
        return float(ndtri(0.5 + 0.5 * level) * sd)

    def trip_cdf(self, edges: np.ndarray, x: float, shares: np.ndarray | None = None) -> float:
        """``P(E - mean <= x)`` for one drive's energy ``E`` of route ``edges`` (``x`` in Wh): the mixture's with a
        :attr:`predictive`, else the normal's."""
        from scipy.special import ndtr

        base, a, b = self.trip_parts(edges, shares)
        if self.predictive is not None:
            return float(self.predictive.cdf(np.array([x]), np.array([base]), np.array([a]), np.array([b]))[0])
        sd = np.sqrt(base + self.noise_var_mult * a + self.trip_rel_var * b)
        return float(ndtr(x / sd)) if sd > 0 else float(x >= 0)

    def edge_sd(self, *, trip: bool = True) -> np.ndarray:
        """``(E,)`` per-edge standard deviation (Wh): posterior, plus one traversal's noise and the edge's share of
        the trip effect (``tau m_e``: the per-edge sds still bound any route's, Cauchy-Schwarz) when ``trip``."""
        extra = self.noise_var + self.trip_rel_var * self.effect_mean**2 if trip else 0.0
        return np.sqrt(self.var + extra)


__all__ = ["RouteBelief"]
