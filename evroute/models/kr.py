"""Kernel-regression edge model in the BOKE style (``--model kr``): Nadaraya-Watson over contexts and the graph.

The model estimates the **residual** ``r_e = f_e - E_det(e)`` of every edge (the expected energy minus the physics
prior mean) by Nadaraya-Watson regression (BOKE paper, Eq. 3.1) over all observed edge traversals, with a product
kernel between edges

    K(e, e') = k_G(e, e') * exp(-||x_e - x_e'||^2 / (2 h_t^2)),      k_G(e, e') = rho^hop(e, e')  if hop <= H, else 0

``x_e`` the standardised contexts (length, speed limit, incline: :meth:`LineGraph.contexts`), ``hop`` the number of
steps between the two edges in the *undirected* line graph (a turn in either direction), ``H = hops`` (default 2)
and ``rho = graph_decay`` (default 0.5).  The graph factor restricts the regression to a graph neighbourhood, so
``K`` is sparse (tens of non-zeros per row); the context factor is the Gaussian kernel of ``evroute.bo.kr`` with the
bandwidth rules of ``evroute.bo`` (:func:`~evroute.bo.kr.scott_bandwidth` by default, with ``t`` the number of edge
observations and ``d = 3``; ``bandwidth_scale = 1`` because the contexts have unit variance, the analogue of the
``1/sqrt(12)`` default for the unit cube).  A k-hop decay was chosen over a diffusion kernel ``exp(-s Delta)``
because it is exactly sparse, needs no matrix exponential and its reach ``H`` is explicit.

With ``n_j`` the number of observations of edge ``j`` and ``S_j`` the sum of their residuals, and ``W0`` a prior
pseudo-weight at the prior mean (residual 0):

    W(e) = sum_j K(e, j) n_j                   (BOKE's unnormalised kernel density W_t, Eq. 3.9)
    mean_e = E_det(e) + sum_j K(e, j) S_j / (W(e) + W0)
    var_e  = noise_var / (W(e) + W0)           (the exploration term, see below)

**Exploration bonus -> variance.**  BOKE explores with ``sqrt(beta_t / W_t(x))`` (Eq. 3.13: ``sigma_hat = W^-1/2``).
The model reports ``var = varsigma^2 / (W + W0)`` with ``varsigma^2`` the observation-noise variance, so an index
policy's ``mu - sqrt(beta_t) sigma`` is BOKE's ``m_t - sqrt(beta_t varsigma^2 / W_t)`` with the routing
``beta_t``, and Thompson sampling draws ``N(m_t, varsigma^2 / W_t)``: UCB, BUCB and TS apply unchanged.  The default
``W0 = noise_var / prior_var`` makes an unobserved neighbourhood report the prior ``(E_det, sigma0^2)`` and makes the
model **exactly the BI model** when ``hops = 0`` (``K = I``: ``mean = E_det + S / (n + W0)``,
``var = noise_var / (n + W0)`` are BI's conjugate posterior).  ``W0 > 0`` also keeps ``mean`` defined where ``W``
underflows, which is why the log-space evaluation of :class:`evroute.bo.NadarayaWatson` is not needed here: with
``W0 = 0`` and a graph factor of 1 everywhere the model reduces to that estimator (tested).

**Neighbour cap (optional).**  Plain NW keeps a fixed share of a driven edge's route neighbours' residuals in its
estimate, because they are observed as often as the edge itself (a bias that does not vanish with data).
``neighbour_cap = c`` scales the off-diagonal sums ``W - n`` and ``K S - S`` by ``min(1, c / (W - n))``: the
neighbours then act as a prior worth at most ``c`` observations and each estimate converges to its edge's own mean.

**Cost.**  The sufficient statistics ``n``, ``S``, ``W = K n`` and ``K S`` are updated incrementally: a batch of
``k`` driven edges touches only their ``k`` rows of the symmetric ``K`` (``O(k * nnz per row)``); ``posterior()`` is
``O(E)``.  When Scott's bandwidth has shrunk by more than ``rebuild_ratio`` (10 %) since the last build, the context
factor is re-evaluated on the fixed sparsity pattern and ``W``, ``K S`` recomputed (``O(nnz)``; Scott's
``h ~ n^(-1/7)`` makes that ``ln(n_T) / (7 ln(1/0.9))`` rebuilds, 14 for 25,000 observations).  Luxembourg (5.6k
edges, ``H = 2``) has about 100k non-zeros.  The model pickles (numpy arrays and a scipy CSR matrix).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from evroute.bo.kr import scott_bandwidth, silverman_bandwidth
from evroute.errors import ParameterError, check_positive
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel, EdgePosterior

__all__ = ["KernelRegressionEdgeModel", "hop_distances"]

_BANDWIDTH_RULES: dict[str, Callable[..., float]] = {"scott": scott_bandwidth, "silverman": silverman_bandwidth}


def hop_distances(adjacency: sp.spmatrix, hops: int) -> sp.csr_matrix:
    """Hop distances up to ``hops`` in the undirected version of a directed graph.

    Args:
        adjacency: ``(E, E)`` sparse adjacency (any non-zero is an arc, direction ignored).
        hops: radius ``H >= 0``.

    Returns:
        ``(E, E)`` symmetric CSR matrix whose stored entries are ``1 + hop(e, e')`` for every pair within ``H`` hops
        (``1`` on the diagonal; the offset keeps the diagonal a stored entry).
    """
    n = adjacency.shape[0]
    a = adjacency.tocsr().astype(bool)
    a = ((a + a.T) > 0).astype(np.int8).tocsr()
    dist = sp.identity(n, dtype=np.int32, format="csr")
    reach = sp.identity(n, dtype=np.int8, format="csr")
    for k in range(1, int(hops) + 1):
        new_reach = ((reach @ a + reach) > 0).astype(np.int8).tocsr()
        frontier = (new_reach - reach).tocsr()
        frontier.eliminate_zeros()
        if frontier.nnz == 0:
            break
        dist = (dist + frontier.astype(np.int32) * (k + 1)).tocsr()
        reach = new_reach
    dist.sort_indices()
    return dist


class KernelRegressionEdgeModel(EdgeModel):
    """Nadaraya-Watson residual regression over edge contexts and graph neighbourhoods (see module docstring).

    Args:
        linegraph: the line graph (contexts and adjacency).
        prior_mean_wh: ``(E,)`` physics energy ``E_det`` (Wh).
        prior_var: prior variance ``sigma0^2`` (Wh^2) reported where there is no data.
        noise_var: observation-noise variance ``varsigma^2`` (Wh^2).
        hops: graph neighbourhood radius ``H`` (0: each edge only learns from itself).
        graph_decay: ``rho`` in ``(0, 1]``, the graph-kernel factor per hop.
        bandwidth: ``"scott"`` (default) or ``"silverman"`` (rules of :mod:`evroute.bo.kr`), or a fixed number.
        bandwidth_scale: constant of the bandwidth rule (standardised contexts: 1).
        prior_weight: pseudo-weight ``W0 >= 0`` of the prior mean (default ``noise_var / prior_var``, BI-equivalent).
        neighbour_cap: optional cap ``c > 0`` on the total weight of the *other* edges' data in an edge's estimate:
            the off-diagonal sums ``W - n`` and ``K S - S`` are scaled by ``min(1, c / (W - n))``, so the neighbours
            act as a prior worth at most ``c`` observations and the estimate converges to the edge's own mean as it
            is driven (plain NW keeps a fixed share of its route neighbours' residuals).  ``None``: plain NW.
        rebuild_ratio: rebuild the context factor when the rule's bandwidth falls below this fraction of the one in
            use (in ``(0, 1)``; 0.9 by default).
    """

    def __init__(
        self,
        linegraph: LineGraph,
        prior_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        *,
        hops: int = 2,
        graph_decay: float = 0.5,
        bandwidth: str | float = "scott",
        bandwidth_scale: float = 1.0,
        prior_weight: float | None = None,
        neighbour_cap: float | None = None,
        rebuild_ratio: float = 0.9,
    ) -> None:
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = int(linegraph.n_nodes)
        if self.prior_mean.shape != (self.n_edges,):
            raise ParameterError(f"prior mean must have shape ({self.n_edges},), got {self.prior_mean.shape}")
        self.prior_var = check_positive("prior_var", prior_var)
        self.noise_var = check_positive("noise_var", noise_var)
        if isinstance(hops, bool) or not isinstance(hops, int | np.integer) or hops < 0:
            raise ParameterError(f"hops must be a non-negative integer, got {hops!r}")
        self.hops = int(hops)
        self.graph_decay = check_positive("graph_decay", graph_decay)
        if self.graph_decay > 1:
            raise ParameterError(f"graph_decay must be in (0, 1], got {graph_decay!r}")
        if isinstance(bandwidth, str):
            if bandwidth not in _BANDWIDTH_RULES:
                raise ParameterError(f"bandwidth must be 'scott', 'silverman' or a number, got {bandwidth!r}")
            self.bandwidth: str | float = bandwidth
        else:
            self.bandwidth = check_positive("bandwidth", bandwidth)
        self.bandwidth_scale = check_positive("bandwidth_scale", bandwidth_scale)
        self.prior_weight = (
            self.noise_var / self.prior_var
            if prior_weight is None
            else check_positive("prior_weight", prior_weight, allow_zero=True)
        )
        self.neighbour_cap = None if neighbour_cap is None else check_positive("neighbour_cap", neighbour_cap)
        self.rebuild_ratio = check_positive("rebuild_ratio", rebuild_ratio)
        if not self.rebuild_ratio < 1:
            raise ParameterError(f"rebuild_ratio must be in (0, 1), got {rebuild_ratio!r}")

        x = linegraph.contexts()
        self.dim = int(x.shape[1])
        hop = hop_distances(linegraph.adjacency, self.hops)
        rows = np.repeat(np.arange(self.n_edges), np.diff(hop.indptr))
        # fixed sparsity pattern: graph factor and squared context distances of every stored pair
        self._graph_w = self.graph_decay ** (hop.data.astype(np.float64) - 1.0)
        self._sqdist = np.sum((x[rows] - x[hop.indices]) ** 2, axis=1)
        self.kernel = sp.csr_matrix((self._graph_w.copy(), hop.indices, hop.indptr), shape=hop.shape)
        self.count = np.zeros(self.n_edges)  # n_j
        self.total = np.zeros(self.n_edges)  # S_j, residual sums (Wh)
        self.density = np.zeros(self.n_edges)  # W = K n
        self.numerator = np.zeros(self.n_edges)  # K S (Wh)
        self.n_obs = 0
        self.h = math.inf
        self.n_rebuilds = 0
        self._set_bandwidth(self._rule_bandwidth(1))

    # ----------------------------------------------------------------- bandwidth
    def _rule_bandwidth(self, t: int) -> float:
        if isinstance(self.bandwidth, float):
            return self.bandwidth
        return _BANDWIDTH_RULES[self.bandwidth](max(t, 1), self.dim, self.bandwidth_scale)

    def _set_bandwidth(self, h: float) -> None:
        """Re-evaluate ``K`` for bandwidth ``h`` on the fixed pattern and recompute ``W`` and ``K S`` (``O(nnz)``)."""
        self.h = float(h)
        self.kernel.data = self._graph_w * np.exp(-self._sqdist / (2.0 * self.h**2))
        self.density = self.kernel @ self.count
        self.numerator = self.kernel @ self.total
        self.n_rebuilds += 1

    # ----------------------------------------------------------------- EdgeModel
    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        """Add one batch of observed energies (Wh) of ``edges``; ``O(k * nnz per row)`` for ``k`` distinct edges."""
        e, y = self._check_batch(edges, energies_wh)
        if len(e) == 0:
            return
        uniq, inv = np.unique(e, return_inverse=True)
        dn = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
        ds = np.bincount(inv, weights=y - self.prior_mean[e], minlength=len(uniq))
        self.count[uniq] += dn
        self.total[uniq] += ds
        self.n_obs += len(e)
        h_rule = self._rule_bandwidth(self.n_obs)
        if h_rule < self.rebuild_ratio * self.h:
            self._set_bandwidth(h_rule)
            return
        rows = self.kernel[uniq]  # K symmetric: row j = column j
        self.density += rows.T @ dn
        self.numerator += rows.T @ ds

    def posterior(self) -> EdgePosterior:
        """Mean ``E_det + K S / (W + W0)`` and variance ``noise_var / (W + W0)`` of every edge (Wh, Wh^2)."""
        density, numerator = self.density, self.numerator
        if self.neighbour_cap is not None:
            w_off = np.maximum(density - self.count, 0.0)  # K has a unit diagonal
            scale = np.minimum(1.0, self.neighbour_cap / np.maximum(w_off, 1e-300))
            density = self.count + scale * w_off
            numerator = self.total + scale * (numerator - self.total)
        denom = density + self.prior_weight
        with np.errstate(divide="ignore", invalid="ignore"):
            resid = np.where(denom > 0, numerator / np.where(denom > 0, denom, 1.0), 0.0)
            var = np.where(denom > 0, self.noise_var / np.where(denom > 0, denom, 1.0), self.prior_var)
        return EdgePosterior(
            mean=self.prior_mean + resid,
            variance=np.minimum(var, self.prior_var),
            noise_var=np.full(self.n_edges, self.noise_var),
        )
