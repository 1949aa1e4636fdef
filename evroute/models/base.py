"""Edge-model interface: a posterior over the expected energy of every edge, updated in batches.

Any model with a per-edge posterior mean and variance and a batch update plugs into the index
policies and the bandit loop: independent Bayesian inference (:class:`~evroute.models.bi.BayesianEdgeModel`)
and the sparse variational GP share this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from evroute.errors import DataError, ParameterError
from evroute.kernels.posterior import GaussianPosterior

__all__ = ["EdgeModel", "EdgePosterior", "GaussianPosterior"]


#: The marginal posterior of the expected edge energies, the one posterior type of the project
#: (:class:`evroute.kernels.posterior.GaussianPosterior`): ``mean`` ``(E,)`` Wh, ``variance`` (alias ``var``) ``(E,)``
#: Wh^2, ``noise_var`` ``(E,)`` observation-noise variance ``varsigma^2`` Wh^2 (used for rectification), and optionally
#: ``sampler``, a ``rng -> (E,)`` joint draw of all edges (Wh) that Thompson sampling uses instead of independent
#: per-edge draws (``gp-exact`` with ``ts_joint``).
EdgePosterior = GaussianPosterior


class EdgeModel(ABC):
    """Probabilistic model of the expected energy ``f_e`` (Wh) of every edge ``e = 0 .. E-1``."""

    n_edges: int

    @abstractmethod
    def posterior(self) -> EdgePosterior:
        """Current marginal posterior of every edge."""

    @abstractmethod
    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        """Condition on observed energies ``energies_wh`` (Wh) of driven ``edges`` (indices), both ``(k,)``."""

    def advance(self, t: float) -> None:  # noqa: B027 -- optional hook, no-op for static models
        """Tell the model that round ``t`` (time, in rounds) starts; time-aware models predict at ``t``."""

    def _check_batch(self, edges: np.ndarray, energies_wh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        y = np.asarray(energies_wh, dtype=np.float64).reshape(-1)
        if e.shape != y.shape:
            raise ParameterError(f"{len(e)} edges but {len(y)} energies")
        if len(e) and (e.min() < 0 or e.max() >= self.n_edges):
            raise ParameterError(f"edge index outside 0..{self.n_edges - 1}")
        if not np.all(np.isfinite(y)):
            raise DataError("observed energies contain NaN or inf")
        return e, y
