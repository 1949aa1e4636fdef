"""Independent Bayesian inference per edge (Åkerblom et al. 2023): conjugate Gaussian-Gaussian model.

Edge ``e`` has unknown expected energy ``f_e ~ N(mu0_e, s0^2)`` and observations ``y ~ N(f_e, s_n^2)``
with known noise variance.  After ``n_e`` observations with sum ``S_e``:

    precision_e = 1 / s0^2 + n_e / s_n^2
    mean_e      = (mu0_e / s0^2 + S_e / s_n^2) / precision_e,      var_e = 1 / precision_e

**Empirical Bayes** (:meth:`BayesianEdgeModel.fit_variances`): one noise variance ``s_n^2`` and one prior variance
``s0^2`` for all edges, maximising the marginal likelihood of the observations (ML-II).  Per edge with ``n_e >= 1``
observations, mean ``ybar_e`` and scatter ``W_e = sum (y - ybar_e)^2`` it factorises exactly::

    log p_e = -(n_e - 1)/2 log(2 pi s_n^2) - W_e / (2 s_n^2) - 1/2 log n_e
              - 1/2 log(2 pi v_e) - (ybar_e - mu0_e)^2 / (2 v_e),          v_e = s0^2 + s_n^2 / n_e

so the within-edge scatter identifies the noise (``sum (n_e - 1)`` degrees of freedom) and the spread of the edge
means around the prior identifies ``s0^2``.  The statistics are ``count``, ``total`` and ``total_sq`` (sum of squares).

With ``refit_first > 0`` the model refits both variances this way by itself at rounds ``refit_first * 2^j`` (the
data doubled since the last fit, as ``gp-exact`` refits its hyper-parameters), once some edge was observed twice:
BI with its noise and prior variance LEARNT (issue 38), ``--model bi --model-param refit_first=16``.
"""

from __future__ import annotations

import math

import numpy as np

from evroute.errors import DataError, ParameterError
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.search import ConjugateNormalState


class BayesianEdgeModel(EdgeModel):
    """Independent conjugate Gaussian posterior per edge.

    Args:
        prior_mean_wh: ``(E,)`` prior mean (the physics energy ``E_det``), Wh.
        prior_var: scalar or ``(E,)`` prior variance, Wh^2 (> 0).
        noise_var: scalar or ``(E,)`` observation-noise variance, Wh^2 (> 0).
        refit_first: first round of the empirical-Bayes refits (then 2x, 4x, ...); 0: never (variances fixed).
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        prior_var: float | np.ndarray,
        noise_var: float | np.ndarray,
        refit_first: int = 0,
    ):
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean)
        self.prior_var = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), (self.n_edges,)).copy()
        self.noise_var = np.broadcast_to(np.asarray(noise_var, dtype=np.float64), (self.n_edges,)).copy()
        if np.any(self.prior_var <= 0) or np.any(self.noise_var <= 0):
            raise ParameterError("prior and noise variances must be > 0")
        self.count = np.zeros(self.n_edges)
        self.total = np.zeros(self.n_edges)
        self.total_sq = np.zeros(self.n_edges)
        if isinstance(refit_first, bool) or not isinstance(refit_first, int) or refit_first < 0:
            raise ParameterError(f"refit_first must be an integer >= 0, got {refit_first!r}")
        self.refit_first = int(refit_first)

    def advance(self, t: float) -> None:
        """Refit the variances by empirical Bayes at rounds ``refit_first * 2^j`` (module doc; no-op before an edge
        was observed twice, and when ``refit_first`` is 0)."""
        first = getattr(self, "refit_first", 0)  # models saved before refits existed lack it
        if first <= 0 or t < first:
            return
        ratio = t / first
        if float(ratio).is_integer() and math.log2(ratio).is_integer() and np.any(self.count >= 2):
            self.fit_variances()

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        np.add.at(self.count, e, 1.0)
        np.add.at(self.total, e, y)
        np.add.at(self.total_sq, e, y * y)

    def posterior(self) -> EdgePosterior:
        precision = 1.0 / self.prior_var + self.count / self.noise_var
        mean = (self.prior_mean / self.prior_var + self.total / self.noise_var) / precision
        return EdgePosterior(mean=mean, variance=1.0 / precision, noise_var=self.noise_var)

    def conjugate_state(self) -> ConjugateNormalState:
        """The posterior's statistics as arrays (views, not copies), for searches that compute the posterior of an
        edge only when they touch it (:class:`evroute.search.LazyThompsonEngine`; the same formulas as
        :meth:`posterior`)."""
        return ConjugateNormalState(self.prior_mean, self.prior_var, self.count, self.total, self.noise_var)

    def log_marginal_likelihood(self, noise_var: float, prior_var: float) -> float:
        """Log marginal likelihood of all observations for scalar variances (Wh^2; module doc)."""
        n = self.count
        seen = n > 0
        n, tot, sq, m0 = n[seen], self.total[seen], self.total_sq[seen], self.prior_mean[seen]
        ybar = tot / n
        scatter = np.maximum(sq - n * ybar * ybar, 0.0)
        v = prior_var + noise_var / n
        within = -0.5 * (n - 1) * np.log(2 * np.pi * noise_var) - scatter / (2 * noise_var) - 0.5 * np.log(n)
        between = -0.5 * np.log(2 * np.pi * v) - (ybar - m0) ** 2 / (2 * v)
        return float(within.sum() + between.sum())

    def fit_variances(self, *, learn_prior: bool = True) -> tuple[float, float]:
        """Set the noise variance (and, with ``learn_prior``, the prior variance) to their ML-II values (module doc);
        returns ``(noise_var, prior_var)`` in Wh^2.

        Raises:
            DataError: no edge observed twice (the noise is not identified: nothing to fit).
        """
        from scipy.optimize import minimize

        if not np.any(self.count >= 2):
            raise DataError("no edge was observed twice: the noise variance is not identified")
        x0 = np.log([float(np.mean(self.noise_var)), float(np.mean(self.prior_var))])

        def neg(z: np.ndarray) -> float:
            prior = float(np.exp(z[1])) if learn_prior else float(np.exp(x0[1]))
            return -self.log_marginal_likelihood(float(np.exp(z[0])), prior)

        res = minimize(neg, x0, method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
        noise = float(np.exp(res.x[0]))
        prior = float(np.exp(res.x[1])) if learn_prior else float(np.exp(x0[1]))
        self.noise_var[:] = noise
        self.prior_var[:] = prior
        return noise, prior
