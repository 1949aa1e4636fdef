"""Independent Bayesian inference per edge (Åkerblom et al. 2023): conjugate Gaussian-Gaussian model.

Edge ``e`` has unknown expected energy ``f_e ~ N(mu0_e, s0^2)`` and observations ``y ~ N(f_e, s_n^2)``
with known noise variance.  After ``n_e`` observations with sum ``S_e``:

    precision_e = 1 / s0^2 + n_e / s_n^2
    mean_e      = (mu0_e / s0^2 + S_e / s_n^2) / precision_e,      var_e = 1 / precision_e
"""

from __future__ import annotations

import numpy as np

from evroute.errors import ParameterError
from evroute.models.base import EdgeModel, EdgePosterior


class BayesianEdgeModel(EdgeModel):
    """Independent conjugate Gaussian posterior per edge.

    Args:
        prior_mean_wh: ``(E,)`` prior mean (the physics energy ``E_det``), Wh.
        prior_var: scalar or ``(E,)`` prior variance, Wh^2 (> 0).
        noise_var: scalar or ``(E,)`` observation-noise variance, Wh^2 (> 0).
    """

    def __init__(self, prior_mean_wh: np.ndarray, prior_var: float | np.ndarray, noise_var: float | np.ndarray):
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean)
        self.prior_var = np.broadcast_to(np.asarray(prior_var, dtype=np.float64), (self.n_edges,)).copy()
        self.noise_var = np.broadcast_to(np.asarray(noise_var, dtype=np.float64), (self.n_edges,)).copy()
        if np.any(self.prior_var <= 0) or np.any(self.noise_var <= 0):
            raise ParameterError("prior and noise variances must be > 0")
        self.count = np.zeros(self.n_edges)
        self.total = np.zeros(self.n_edges)

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        np.add.at(self.count, e, 1.0)
        np.add.at(self.total, e, y)

    def posterior(self) -> EdgePosterior:
        precision = 1.0 / self.prior_var + self.count / self.noise_var
        mean = (self.prior_mean / self.prior_var + self.total / self.noise_var) / precision
        return EdgePosterior(mean=mean, variance=1.0 / precision, noise_var=self.noise_var)
