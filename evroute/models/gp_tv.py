"""Time-aware GP edge model with BOLT's data cap and integrated-W2 pruning (issue 5, item 5; model ``gp-tv``).

    f(e, t) ~ GP(E_det, lambda k_S((e, x), (e', x')) k_T(|t - t'|)),   y = f(e, t) + eps,  eps ~ N(0, varsigma^2)

* ``k_S`` is the edge kernel of the static GP model, ``s_1 k_G k_f + s_2 k_f'``
  (:class:`~evroute.models.gp_kernels.EdgeContextKernel`, initialised from the model prior like ``gp``);
  ``k_T`` a Matérn (``nu`` 1/2, 3/2 or 5/2, :func:`evroute.bo.timevarying.kernels.matern`) over time in **rounds**;
  ``lambda = signal_var`` in units of ``sigma0^2``.  Hyperparameters are fixed (not learnt).
* Inference is **exact** on the kept history ``D`` (``|D| <= n* <= n_max``): because BOLT caps the data set, an
  exact GP costs ``O(n*^3 + E n*^2)`` per round whatever the horizon, and the W2 criterion applies without the
  inducing-point approximation of the static SVGP.
* **Cap** (BOLT Recommendation 1, :func:`evroute.bo.timevarying.bolt.optimal_dataset_size`):
  ``n* = argmax_n sum_{i<=n} k_T(i R(n))^2``.  In routing one round brings ``m`` observations (the route's edges),
  so the ``i``-th newest observation is about ``i R(n)`` rounds old with ``R(n) = (1 + c * seconds(n)) / m``:
  one round of driving plus the model's measured CPU time (update + posterior) converted to rounds by
  ``compute_scale = c`` (rounds per CPU second: how much the world moves while the model computes, the routing
  analogue of the TVBO simulated clock's ``compute_scale``).  ``R(n)`` is fitted online by BOLT's
  :class:`~evroute.bo.timevarying.bolt.ResponseTimeModel`; ``n* = n_max`` until it is ready or when ``c = 0``.
* **Pruning** (Recommendation 2): while ``|D| > n*``, remove observations with the smallest integrated W2 distance
  ``W2_i^2 = (a_i^2 / Q_ii^2 + 1 / Q_ii) q_i^T M q_i`` between ``GP_D`` and ``GP_{D \\ i}`` (the closed form of
  :mod:`evroute.bo.timevarying.bolt`, ``Q = (K + s^2 I)^-1``, ``a = Q (y - mu)``).  The domain is the discrete edge
  set (counting measure) times the future ``[t_now, inf)``, so ``M = (K_S[E, D]^T K_S[E, D]) o C_T`` with the
  future-time integrals ``C_T`` of :func:`~evroute.bo.timevarying.kernels.future_time_integral` (the spatial
  convolution over ``R^d`` of the generic policies becomes a sum over edges).  A round adds ``m`` observations, so
  the ``|D| - n*`` lowest scores of one evaluation are removed together (BOLT removes one per iteration; for one
  removal both coincide).  ``prune="oldest"`` (sliding window) is offered for comparison.

Units: model units are Wh / sigma0; :meth:`TimeVaryingGPEdgeModel.posterior` returns Wh.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import torch

from evroute.bo.timevarying.bolt import ResponseTimeModel, optimal_dataset_size
from evroute.bo.timevarying.kernels import check_nu, future_time_integral, matern
from evroute.errors import ParameterError
from evroute.kernels.linalg import jittered_cholesky
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.gp_kernels import EdgeContextKernel, GraphMaternIndexKernel

__all__ = ["TVGPConfig", "TimeVaryingGPEdgeModel", "w2_removal_scores"]


@dataclass(frozen=True)
class TVGPConfig:
    """Settings of :class:`TimeVaryingGPEdgeModel` (times in rounds, variances in ``sigma0^2``)."""

    time_lengthscale: float = 40.0
    time_nu: float = 1.5
    signal_var: float = 2.0  # lambda: prior variance of f(e, t) - E_det (static part plus drift)
    n_max: int = 600  # upper limit of n* (and the cap while R(n) is not fitted)
    compute_scale: float = 20.0  # c: rounds per CPU second of the model
    prune: str = "w2"  # w2 | oldest

    def __post_init__(self) -> None:
        check_nu(self.time_nu)
        if not self.time_lengthscale > 0 or not self.signal_var > 0 or self.compute_scale < 0:
            raise ParameterError("time_lengthscale and signal_var must be > 0 and compute_scale >= 0")
        if int(self.n_max) < 1:
            raise ParameterError(f"n_max must be >= 1, got {self.n_max}")
        if self.prune not in ("w2", "oldest"):
            raise ParameterError(f"prune must be w2 or oldest, got {self.prune!r}")


def w2_removal_scores(kinv: np.ndarray, alpha: np.ndarray, m: np.ndarray) -> np.ndarray:
    """BOLT's integrated-W2 relevance of every observation -> ``(n,)`` (see :mod:`evroute.bo.timevarying.bolt`).

    Args:
        kinv: ``(n, n)`` ``Q = (K + s^2 I)^-1``.
        alpha: ``(n,)`` ``a = Q (y - mu)``.
        m: ``(n, n)`` ``M = int k(z) k(z)^T dz`` over the domain of interest.
    """
    qdiag = np.diag(kinv)
    v = np.sum(kinv * (m @ kinv), axis=0)  # q_i^T M q_i (Q symmetric)
    return np.sqrt(np.maximum((alpha**2 / qdiag**2 + 1.0 / qdiag) * v, 0.0))


class TimeVaryingGPEdgeModel(EdgeModel):
    """Exact spatio-temporal GP over the edges on a BOLT-capped history (see the module doc).

    Args:
        prior_mean_wh: ``(E,)`` physics energies ``E_det`` (Wh), the prior mean.
        prior_var: ``sigma0^2`` (Wh^2); noise_var: observation-noise variance (Wh^2).
        laplacian: ``(E, E)`` line-graph Laplacian; contexts: ``(E, d)`` standardised edge contexts.
        graph_nu, graph_kappa, lengthscale, product_weight: the spatial kernel (as :class:`GPEdgeModel`).
        config: :class:`TVGPConfig`.
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        laplacian: Any,
        contexts: np.ndarray,
        *,
        graph_nu: float = 2.0,
        graph_kappa: float = 1.0,
        lengthscale: float = 1.0,
        product_weight: float = 0.5,
        config: TVGPConfig | None = None,
    ) -> None:
        self.config = config or TVGPConfig()
        if prior_var <= 0 or noise_var <= 0:
            raise ParameterError("prior and noise variances must be > 0")
        self.scale = math.sqrt(float(prior_var))
        self.mu0 = np.asarray(prior_mean_wh, dtype=np.float64) / self.scale
        self.n_edges = len(self.mu0)
        self.noise = float(noise_var) / float(prior_var)
        ctx = np.asarray(contexts, dtype=np.float64)
        if ctx.shape[0] != self.n_edges:
            raise ParameterError("contexts and prior mean disagree on the number of edges")
        self._x = torch.as_tensor(np.concatenate([np.arange(self.n_edges)[:, None], ctx], axis=1))
        graph = GraphMaternIndexKernel(laplacian, graph_nu, graph_kappa)
        self.kernel = EdgeContextKernel(
            graph,
            ctx.shape[1],
            lengthscale=lengthscale,
            outputscales=(product_weight, 1.0 - product_weight if product_weight < 1 else 1e-6),
        ).to(torch.float64)
        with torch.no_grad():
            self._kdiag = self.config.signal_var * self.kernel.forward(self._x, self._x, diag=True).numpy()
        self.edges = np.zeros(0, dtype=np.int64)  # kept history D: edge, time (rounds), residual (model units)
        self.times = np.zeros(0)
        self.resid = np.zeros(0)
        self.time = 0.0
        self.n_obs = 0  # observations ever received
        self.n_star = int(self.config.n_max)
        self.response = ResponseTimeModel()
        self.size_history: list[int] = []  # |D| after every update
        self._kinv = np.zeros((0, 0))
        self._alpha = np.zeros(0)
        self._post: EdgePosterior | None = None
        self._post_seconds = 0.0
        self._cols: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ kernel
    def _k_t(self, lag: np.ndarray) -> np.ndarray:
        return matern(lag, self.config.time_lengthscale, self.config.time_nu)

    @torch.no_grad()
    def _k_s_columns(self, edges: np.ndarray) -> np.ndarray:
        """``(E, n)`` ``lambda k_S(e, edges_j)`` for every edge ``e`` (columns cached per visited edge)."""
        uniq, inv = np.unique(edges, return_inverse=True)
        new = [int(u) for u in uniq if int(u) not in self._cols]
        if new:
            block = self.config.signal_var * self.kernel.forward(self._x, self._x[torch.as_tensor(new)]).numpy()
            self._cols.update({u: block[:, j].copy() for j, u in enumerate(new)})
        return np.stack([self._cols[int(u)] for u in uniq], axis=1)[:, inv]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cols"] = {}  # kernel-column cache: rebuilt on demand
        return state

    def _refit(self) -> None:
        """``Q`` and ``a`` of the kept history."""
        if len(self.edges) == 0:
            self._kinv, self._alpha = np.zeros((0, 0)), np.zeros(0)
            return
        k = self._k_s_columns(self.edges)[self.edges] * self._k_t(self.times[:, None] - self.times[None, :])
        k[np.diag_indices_from(k)] += self.noise
        cho = (jittered_cholesky(k), True)  # plain, then 1e-12 .. 1e-6 times the mean diagonal
        self._kinv = scipy.linalg.cho_solve(cho, np.eye(len(k)))
        self._alpha = self._kinv @ self.resid

    # ----------------------------------------------------------------- interface
    def advance(self, t: float) -> None:
        if float(t) != self.time:
            self.time = float(t)
            self._post = None

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        if len(e) == 0:
            return
        c0 = time.process_time()
        self.edges = np.concatenate([self.edges, e])
        self.times = np.concatenate([self.times, np.full(len(e), self.time)])
        self.resid = np.concatenate([self.resid, y / self.scale - self.mu0[e]])
        self.n_obs += len(e)
        n_round = len(self.edges)
        self._update_cap()
        self._refit()
        if len(self.edges) > self.n_star:
            self._prune(len(self.edges) - self.n_star)
        self._post = None
        seconds = time.process_time() - c0 + self._post_seconds
        self.response.add(n_round, (1.0 + self.config.compute_scale * seconds) / len(e))
        self.size_history.append(len(self.edges))

    def _update_cap(self) -> None:
        cfg = self.config
        if cfg.compute_scale == 0 or not self.response.ready or self.response.is_constant:
            self.n_star = int(cfg.n_max)
            return
        self.n_star = optimal_dataset_size(self._k_t, self.response, n0=self.n_star, n_max=int(cfg.n_max))

    def removal_scores(self) -> np.ndarray:
        """``(|D|,)`` integrated W2 relevance of the kept observations at the current time (model units)."""
        if len(self.edges) == 0:
            return np.zeros(0)
        ks = self._k_s_columns(self.edges)
        t_ref = max(self.time, float(self.times.max()))
        m = (ks.T @ ks) * future_time_integral(
            self.times, self.times, t_ref, self.config.time_lengthscale, self.config.time_nu
        )
        return w2_removal_scores(self._kinv, self._alpha, m)

    def _prune(self, k: int) -> None:
        if self.config.prune == "oldest":
            drop = np.argsort(self.times, kind="stable")[:k]
        else:
            drop = np.argsort(self.removal_scores(), kind="stable")[:k]
        keep = np.setdiff1d(np.arange(len(self.edges)), drop)
        self.edges, self.times, self.resid = self.edges[keep], self.times[keep], self.resid[keep]
        self._refit()

    def posterior(self) -> EdgePosterior:
        if self._post is None:
            c0 = time.process_time()
            mean, var = self.mu0.copy(), self._kdiag.copy()
            if len(self.edges):
                kx = self._k_s_columns(self.edges) * self._k_t(self.time - self.times)[None, :]
                mean += kx @ self._alpha
                var -= np.sum((kx @ self._kinv) * kx, axis=1)
            s2 = self.scale**2
            self._post = EdgePosterior(
                mean=mean * self.scale,
                variance=np.maximum(var, 0.0) * s2,
                noise_var=np.full(self.n_edges, self.noise * s2),
            )
            self._post_seconds = time.process_time() - c0
        return self._post
