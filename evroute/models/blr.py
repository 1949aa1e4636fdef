"""BI with learned shared structure: Bayesian linear regression on edge features plus independent per-edge residuals
(a hierarchical model; issue 38's strong baseline ``--model blr``).

Edge ``e``'s expected energy is ``f_e = mu0_e + x_e beta + r_e`` with ``mu0`` the physics energies ``E_det`` (Wh),
``x_e`` the ``(p,)`` features of :func:`edge_features` (road class, length, speed, grade; columns scaled to unit root
mean square), shared coefficients ``beta ~ N(0, s_b^2 I)`` and residuals ``r_e ~ N(0, s_r^2)`` i.i.d.; observations
``y ~ N(f_e, s_n^2)``.  With ``n_e`` observations of mean ``ybar_e`` per edge, ``k_e = s_r^2 / (s_r^2 + s_n^2 / n_e)``
(0 unobserved) and ``d_e = s_r^2 + s_n^2 / n_e``, exactly:

    Sigma_b = (I / s_b^2 + sum_e x_e x_e^T / d_e)^-1,    mu_b = Sigma_b sum_e x_e (ybar_e - mu0_e) / d_e,
    E[f_e]  = mu0_e + k_e (ybar_e - mu0_e) + (1 - k_e) x_e mu_b,
    Var f_e = (1 - k_e)^2 x_e Sigma_b x_e^T + (1 - k_e) s_r^2

(given ``beta`` the residual's posterior is conjugate with gain ``k_e``; ``beta`` then integrates out).  Thompson
sampling gets the JOINT draw ``beta ~ N(mu_b, Sigma_b)``, then every ``f_e`` given it (``posterior().sampler``):
one observation moves the whole road class.  ``O(E p^2)`` per posterior.

**Learnt variances.** At rounds ``refit_first * 2^j`` the noise ``s_n^2`` and residual ``s_r^2`` (and the coefficient
scale ``s_b^2``) maximise the exact marginal likelihood (ML-II): the within-edge scatter term of BI
(:mod:`evroute.models.bi`) plus ``log N(ybar - mu0 | 0, X s_b^2 X^T + diag(d))``, by the Woodbury identity in
``O(U p^2)`` for ``U`` observed edges.  The start: the model prior's variances, ``s_b^2 = s_r^2 = sigma0^2``.
"""

from __future__ import annotations

import math

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.builders import ModelPrior

__all__ = ["FEATURE_NAMES", "HierarchicalEdgeModel", "build_blr", "edge_features"]

#: the feature columns of :func:`edge_features` (road classes add one column each, ``class:<km/h>``)
FEATURE_NAMES: tuple[str, ...] = ("intercept", "length", "length*speed", "length*grade")


def edge_features(linegraph: LineGraph) -> tuple[np.ndarray, list[str]]:
    """``(E, p)`` edge features and their names: an intercept (a per-edge constant, e.g. a junction), the length
    (km), length times speed limit (km x m/s), length times grade, and per road class (speed limit rounded to 10 km/h)
    the length on that class; every column scaled to unit root mean square over the edges."""
    net = linegraph.network
    km = np.asarray(net.length_m, dtype=np.float64) / 1000.0
    speed = np.asarray(net.speed_mps, dtype=np.float64)
    grade = np.asarray(net.incline, dtype=np.float64)
    kmh10 = np.round(speed * 3.6 / 10.0)
    levels = np.unique(kmh10)
    cols = [np.ones_like(km), km, km * speed, km * grade, *[km * (kmh10 == v) for v in levels]]
    names = [*FEATURE_NAMES, *[f"class:{10 * int(v)}" for v in levels]]
    x = np.stack(cols, axis=1)
    rms = np.sqrt(np.mean(x * x, axis=0))
    keep = rms > 0
    return x[:, keep] / rms[keep], [n for n, k in zip(names, keep, strict=True) if k]


class HierarchicalEdgeModel(EdgeModel):
    """Bayesian linear regression on edge features with per-edge residuals (module docstring).

    Args:
        prior_mean_wh: ``(E,)`` prior mean ``E_det`` (Wh).
        features: ``(E, p)`` edge features (:func:`edge_features`).
        prior_var: ``sigma0^2`` (Wh^2): initial residual variance and coefficient variance.
        noise_var: initial observation-noise variance (Wh^2).
        refit_first: first ML-II refit (round), then 2x, 4x, ...; 0: never.
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        features: np.ndarray,
        prior_var: float,
        noise_var: float,
        refit_first: int = 16,
    ) -> None:
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.features = np.asarray(features, dtype=np.float64)
        self.n_edges = len(self.prior_mean)
        if self.features.ndim != 2 or self.features.shape[0] != self.n_edges:
            raise ParameterError(f"features must be ({self.n_edges}, p), got {self.features.shape}")
        if not (prior_var > 0 and noise_var > 0):
            raise ParameterError("prior and noise variances must be > 0")
        if isinstance(refit_first, bool) or not isinstance(refit_first, int) or refit_first < 0:
            raise ParameterError(f"refit_first must be an integer >= 0, got {refit_first!r}")
        self.coef_var = float(prior_var)
        self.resid_var = float(prior_var)
        self.noise_var = float(noise_var)
        self.refit_first = int(refit_first)
        self.count = np.zeros(self.n_edges)
        self.total = np.zeros(self.n_edges)
        self.total_sq = np.zeros(self.n_edges)

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        np.add.at(self.count, e, 1.0)
        np.add.at(self.total, e, y)
        np.add.at(self.total_sq, e, y * y)

    def advance(self, t: float) -> None:
        """Refit the variances (ML-II) at rounds ``refit_first * 2^j`` once some edge was observed twice."""
        if self.refit_first <= 0 or t < self.refit_first:
            return
        ratio = t / self.refit_first
        if float(ratio).is_integer() and math.log2(ratio).is_integer() and np.any(self.count >= 2):
            self.fit_variances()

    # ------------------------------------------------------------------------------------------- posterior
    def _coefficients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(gain k (E,), mu_b (p,), Sigma_b (p, p))`` of the module docstring."""
        n = self.count
        seen = n > 0
        k = np.zeros(self.n_edges)
        d = self.resid_var + self.noise_var / n[seen]
        k[seen] = self.resid_var / d
        x = self.features[seen]
        resid = self.total[seen] / n[seen] - self.prior_mean[seen]
        p = self.features.shape[1]
        prec = np.eye(p) / self.coef_var + (x / d[:, None]).T @ x
        cov = np.linalg.inv(prec)
        cov = 0.5 * (cov + cov.T)
        mu = cov @ (x.T @ (resid / d))
        return k, mu, cov

    def posterior(self) -> EdgePosterior:
        k, mu, cov = self._coefficients()
        n = self.count
        seen = n > 0
        ybar = np.where(seen, self.total / np.maximum(n, 1.0), self.prior_mean)
        base = self.prior_mean + k * (ybar - self.prior_mean)
        shrink = 1.0 - k
        xs = self.features
        mean = base + shrink * (xs @ mu)
        var = shrink**2 * np.einsum("ij,jk,ik->i", xs, cov, xs) + shrink * self.resid_var
        chol = np.linalg.cholesky(cov + 1e-12 * np.trace(cov) / len(cov) * np.eye(len(cov)))
        resid_sd = np.sqrt(shrink * self.resid_var)

        def sampler(rng: np.random.Generator) -> np.ndarray:
            beta = mu + chol @ rng.standard_normal(len(mu))
            return np.asarray(base + shrink * (xs @ beta) + resid_sd * rng.standard_normal(self.n_edges))

        return EdgePosterior(mean=mean, variance=var, noise_var=np.full(self.n_edges, self.noise_var), sampler=sampler)

    # ------------------------------------------------------------------------------------------- ML-II
    def log_marginal_likelihood(self, noise_var: float, resid_var: float, coef_var: float) -> float:
        """Exact log marginal likelihood of all observations (Wh^2 arguments; module doc)."""
        n = self.count
        seen = n > 0
        n, tot, sq, m0 = n[seen], self.total[seen], self.total_sq[seen], self.prior_mean[seen]
        x = self.features[seen]
        ybar = tot / n
        scatter = np.maximum(sq - n * ybar * ybar, 0.0)
        within = -0.5 * (n - 1) * np.log(2 * np.pi * noise_var) - scatter / (2 * noise_var) - 0.5 * np.log(n)
        d = resid_var + noise_var / n
        r = ybar - m0
        p = x.shape[1]
        m = np.eye(p) / coef_var + (x / d[:, None]).T @ x
        b = x.T @ (r / d)
        chol = np.linalg.cholesky(m)
        sol = np.linalg.solve(chol, b)
        logdet = float(np.sum(np.log(d))) + 2.0 * float(np.sum(np.log(np.diag(chol)))) + p * math.log(coef_var)
        quad = float(np.sum(r * r / d)) - float(sol @ sol)
        between = -0.5 * (len(r) * math.log(2 * np.pi) + logdet + quad)
        return float(within.sum()) + between

    def fit_variances(self) -> tuple[float, float, float]:
        """Set ``(noise_var, resid_var, coef_var)`` to their ML-II values (Nelder-Mead in the logs) and return them."""
        from scipy.optimize import minimize

        x0 = np.log([self.noise_var, self.resid_var, self.coef_var])

        def neg(z: np.ndarray) -> float:
            z = np.clip(z, x0 - 20.0, x0 + 20.0)
            return -self.log_marginal_likelihood(*(float(v) for v in np.exp(z)))

        res = minimize(neg, x0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 2000})
        z = np.clip(res.x, x0 - 20.0, x0 + 20.0)
        self.noise_var, self.resid_var, self.coef_var = (float(v) for v in np.exp(z))
        return self.noise_var, self.resid_var, self.coef_var


def build_blr(linegraph: LineGraph, prior: ModelPrior, *, refit_first: int = 16) -> EdgeModel:
    """The ``blr`` model of ``linegraph`` from a :class:`~evroute.models.builders.ModelPrior` (its mean, ``sigma0^2``
    and noise variance as starting values) with ML-II refits from round ``refit_first``."""
    if prior.prior_var_edges is not None:
        raise ParameterError("the blr model cannot take per-edge prior variances (init=oracle on this environment)")
    x, _ = edge_features(linegraph)
    return HierarchicalEdgeModel(prior.prior_mean_wh, x, prior.prior_var, prior.noise_var, refit_first=refit_first)
