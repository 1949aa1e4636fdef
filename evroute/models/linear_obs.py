"""Linear (sum) observations of the edge energies: the exact Gaussian posterior, for the exact GP and for BI.

A battery reading that spans several road segments observes a weighted sum of their expected energies::

    y = a^T f + eps,      a_e = share of edge e driven in the window (1 for a whole edge),

and the readings of one trip have a joint noise covariance ``R`` (the charge quantisation of the readings that bound
the windows, shared by consecutive windows, plus the driving noise of each partly driven edge; see
:mod:`evroute.traces.observations`).  With a Gaussian prior ``f ~ N(m, K)`` every such batch is conjugate, and all
the data enter the posterior through two sufficient statistics over the touched edges ``U``::

    Lambda = sum_trips A^T R^-1 A        (|U| x |U|, sparse: only pairs of edges in one trip)
    h      = sum_trips A^T R^-1 y        (|U|,)

Posterior (edge space; ``K_UU = L L^T`` jittered Cholesky, ``B = K_.U L^-T`` ``(E, |U|)``,
``M = I + L^T Lambda L``, ``b = h - Lambda m_U``)::

    mu    = m + B M^-1 L^T b
    Sigma = K - B (I - M^-1) B^T,       var = diag(K) - rowsum(B o B) + rowsum((B L_M^-T) o (B L_M^-T))

which equals the observation-space solve ``mu = m + K A^T (A K A^T + R)^-1 (y - A m)`` (tests) but costs
``O(E |U|^2 + |U|^3)`` whatever the number of readings.  ``K`` is any
:class:`~evroute.models.exact_posterior.KernelSource` (model units) times ``scale2`` (Wh^2):

* the **exact GP**: the kernel source of an :class:`~evroute.models.gp_exact.ExactGPEdgeModel`;
* **BI**: :class:`DiagonalKernel` (independent edges).  A reading over several edges then couples them: the posterior
  is the exact joint Gaussian over the touched edges (precision ``K^-1 + Lambda``, sparse; no longer one conjugate
  update per edge), which is what this module computes with ``K`` diagonal.  The model carries the sparse ``Lambda``
  (memory: the touched edge pairs) and forms ``|U| x |U|`` and ``E x |U|`` matrices only while computing a posterior.

The readings and their statistics (:class:`ReadingBatch`, :func:`reading_batch`, :class:`LinearStatistics`) live in
:mod:`evroute.models.linear_obs_stats` (re-exported here).

**Noise from data.**  The readings' noise covariances are known up to one scale ``phi`` (``R = phi R_0``; ``R_0``
the quantisation and driving noise of :mod:`evroute.traces.observations` at the nominal traversal noise): the
statistics scale exactly (``Lambda_0 / phi``, ``h_0 / phi``, ``y^T R_0^-1 y / phi``, ``log det R_0 + m log phi``), so
the marginal likelihood is a function of ``phi`` on the saved statistics alone and :meth:`LinearObsEdgeModel.
fit_noise_scale` maximises it (ML-II; ``noise_scale``, default 1).  It also absorbs what the nominal noise leaves
out (map-matching errors, a crossing's position), so ``phi > 1`` is the usual outcome of real logs.

**Trip effect in the fit** (:attr:`LinearObsEdgeModel.trip_effect_fit`, off for a model built in code; ``evroute
learn`` turns it on for a new model, ``--trip-effect-fit on|off``): each learned trace's readings share ``beta_t A_t
f_0``, ``beta_t ~ N(0, tau^2)``; the statistics with it come per trace by Sherman-Morrison
(:mod:`evroute.models.linear_obs_trip`, :meth:`LinearObsEdgeModel.effective_stats`) and ``tau`` by ML-II with ``phi``
(:func:`~evroute.models.linear_obs_build.fit_with_trip_effect`); ``tau = 0`` is the fit without it, bit for bit.

A single-edge observation ``y`` with noise ``s^2`` is the special case ``a = e_u``, ``R = s^2`` (:meth:`update`), so the
model reproduces :class:`~evroute.models.bi.BayesianEdgeModel` and the exact GP on per-edge data (tests).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from evroute.errors import ParameterError
from evroute.kernels.linalg import jittered_cholesky, solve_lower
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.exact_posterior import KernelSource
from evroute.models.linear_obs_stats import LinearStatistics, ReadingBatch, reading_batch
from evroute.models.linear_obs_trip import TripRank1
from evroute.models.trip_effect import TripSums

#: :func:`noise_log_ml`, independent edges: from this fill of ``Lambda_UU``, one eigendecomposition, not an LU each
DENSE_FILL = 0.01
#: :func:`traversal_noise_weights`: an edge's prior energy counts as at least this share of the mean over edges
NOISE_FLOOR_FRAC = 0.1


def traversal_noise_weights(prior_mean_wh: np.ndarray, exponent: float) -> np.ndarray:
    """``(E,)`` relative noise variance of one traversal of each edge, mean 1 over the edges: ``max(|m_e|, floor)^p``
    normalised (``m`` the prior mean, Wh; ``floor`` = :data:`NOISE_FLOOR_FRAC` times the mean ``|m|``; ``p`` =
    ``exponent``).  ``p = 0``: every edge alike (the readings' noise of :mod:`evroute.traces.observations` before the
    option); ``p = 1``: variance proportional to the edge's energy, the variance of a sum of independent pieces
    along it; ``p = 2``: a relative (multiplicative) noise (``evroute learn --noise-exponent``; over the
    Luxembourg study's 1,298 edges driven 5 times or more, the traversals' variance grows as the mean energy^1.5).
    Why: one noise for every edge, fitted by ML-II to the bulk of short edges, believes a traversal of a long fast
    edge to within a few Wh, so two traversals of such an edge in trips that met traffic fix its learned energy far
    from its mean (``docs/results/trip_logs_known_truth.md``)."""
    m = np.abs(np.asarray(prior_mean_wh, dtype=np.float64))
    if not (exponent >= 0 and np.isfinite(exponent)):
        raise ParameterError(f"noise exponent must be finite and >= 0, got {exponent}")
    scale = float(m.mean()) if m.size else 0.0
    if exponent == 0 or not scale > 0 or not np.isfinite(scale):
        return np.ones(m.shape)
    w = np.maximum(m / scale, NOISE_FLOOR_FRAC) ** exponent
    return np.asarray(w / w.mean())


class DiagonalKernel:
    """A :class:`~evroute.models.exact_posterior.KernelSource` of independent edges: ``K = diag(variances)``."""

    def __init__(self, variances: np.ndarray) -> None:
        self.v = np.asarray(variances, dtype=np.float64)
        self.n = int(self.v.shape[0])

    def diag(self) -> np.ndarray:
        return self.v.copy()

    def columns(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros((self.n, len(idx)), order="F")
        out[idx, np.arange(len(idx))] = self.v[idx]
        return out

    def dense(self) -> np.ndarray:
        return np.asfortranarray(np.diag(self.v))


class BasisKernel:
    """``K + B diag(v) B^T``: a kernel source with explicit basis functions marginalised into it (Rasmussen &
    Williams 2006, Sec. 2.7): ``f = m + B beta + g``, ``beta ~ N(0, diag(v))``, ``g ~ GP(0, K)``.

    E.g. ``B = [length_m, 1]`` learns a per-metre and a per-edge energy offset of the physics prior that every edge
    shares (:func:`offset_basis`): a reading on some edges moves the prediction of all of them.
    """

    def __init__(self, base: KernelSource, basis: np.ndarray, variances: np.ndarray) -> None:
        self.base, self.b = base, np.asarray(basis, dtype=np.float64).reshape(base.n, -1)
        self.v = np.asarray(variances, dtype=np.float64).reshape(-1)
        self.n = base.n

    def diag(self) -> np.ndarray:
        return np.asarray(self.base.diag() + (self.b**2) @ self.v)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        return np.asfortranarray(self.base.columns(idx) + self.b @ (self.v[:, None] * self.b[idx].T))

    def dense(self) -> np.ndarray:
        return np.asfortranarray(self.base.dense() + (self.b * self.v) @ self.b.T)


def kernel_factor(kernel: KernelSource, scale2: float, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L (|U|, |U|), B^T (|U|, E))`` for the touched edges ``u``: ``K_UU = L L^T`` (jittered Cholesky, Wh^2) and
    ``B^T = L^-1 K_U.``: the part of :func:`linear_posterior` that depends on the kernel and ``u`` alone, so that
    posteriors of several readings' statistics over the same edges (e.g. several noise levels) can share it."""
    kxu = scale2 * kernel.columns(np.asarray(u, dtype=np.int64))  # (E, |U|)
    l_k = jittered_cholesky(0.5 * (kxu[u] + kxu[u].T))
    return l_k, solve_lower(l_k, kxu.T)


def noise_log_ml(
    kernel: KernelSource, scale2: float, prior_mean: np.ndarray, stats: LinearStatistics, *, dense: bool | None = None
) -> Any:
    """``log_ml(phi)``: the log marginal likelihood of all readings as a function of the noise scale ``phi`` (the
    value :func:`linear_posterior` returns with ``noise_scale=phi``), from one symmetric eigendecomposition.

    With ``R = phi R_0`` the statistics scale as ``Lambda_0 / phi``, ``h_0 / phi``, ``yry_0 / phi`` (module doc), so
    ``M = I + G / phi`` with ``G = L^T Lambda_0 L = Q diag(g) Q^T`` and ``b = b_0 / phi``; then ``log det M = sum
    log(1 + g_i / phi)`` and ``b^T L M^-1 L^T b = sum d_i^2 / (phi (phi + g_i))`` with ``d = Q^T L^T b_0``: each
    evaluation is ``O(|U|)`` after the ``O(|U|^3)`` decomposition (the bounded search of :meth:`LinearObsEdgeModel.
    fit_noise_scale` takes 20-30 evaluations).  Independent edges (``L`` diagonal) take a sparse LU per evaluation
    instead while ``Lambda_UU`` is sparse (``dense`` None: under :data:`DENSE_FILL` of it non-zero; Monaco's logs fill
    10 % of |U| = 2,093: 0.46 CPU s an LU, 45 in a fit, against 2.6 s for one eigendecomposition)."""
    m = np.asarray(prior_mean, dtype=np.float64)
    if isinstance(kernel, DiagonalKernel) and dense is not True:  # independent edges: M = I + D Lambda_0 D / phi
        u = stats.touched()
        lam = stats.matrix()[u][:, u]
        if not (lam.nnz >= DENSE_FILL * len(u) ** 2 if dense is None else dense):
            lam_full = stats.matrix()
            rr0 = stats.yry - 2.0 * float(stats.h @ m) + float(m @ (lam_full @ m))
            b0 = stats.h[u] - lam @ m[u]
            d = np.sqrt(scale2 * kernel.v[u])
            return _sparse_noise_log_ml(d, lam, b0, rr0, stats.readings, stats.logdet_r)
    return NoiseEig(kernel, scale2, m, stats).log_ml


class NoiseEig:
    """The one eigendecomposition behind :func:`noise_log_ml` (its doc), kept for callers that update it:
    ``u`` ``(|U|,)`` the touched edges, ``l_k`` ``L`` (``(|U|, |U|)`` lower triangular, or ``(|U|,)`` its diagonal for
    independent edges; ``K_UU = L L^T``, Wh^2), ``g`` ``(|U|,)`` and ``q`` ``(|U|, |U|)`` the eigenvalues and vectors of
    ``G = L^T Lambda_0 L``, ``d = Q^T L^T b_0`` (Wh^0), ``rr0`` ``r^T R_0^-1 r``, ``n`` readings, ``logdet_r``."""

    def __init__(self, kernel: KernelSource, scale2: float, prior_mean: np.ndarray, stats: LinearStatistics) -> None:
        m = np.asarray(prior_mean, dtype=np.float64)
        u = stats.touched()
        lam_full = stats.matrix()
        lam = lam_full[u][:, u]
        self.u, self.n, self.logdet_r = u, stats.readings, stats.logdet_r
        self.rr0 = stats.yry - 2.0 * float(stats.h @ m) + float(m @ (lam_full @ m))
        b0 = stats.h[u] - lam @ m[u]
        self.l_k: np.ndarray
        if isinstance(kernel, DiagonalKernel):
            self.l_k = np.sqrt(scale2 * kernel.v[u])
            gm, ltb = lam.toarray() * self.l_k[:, None], self.l_k * b0  # D Lambda D, the second product in place
            gm *= self.l_k[None, :]
        else:
            kuu = scale2 * np.asarray(kernel.columns(u))[u]
            self.l_k = jittered_cholesky(0.5 * (kuu + kuu.T))
            gm = sla.blas.dtrmm(1.0, self.l_k, np.asarray(lam @ self.l_k), lower=1, trans_a=1)  # L^T (Lambda L)
            ltb = self.l_k.T @ b0
        gm += gm.T
        gm *= 0.5
        g, self.q = np.linalg.eigh(gm)
        self.g = np.maximum(g, 0.0)  # Lambda_0 is positive semi-definite: negative eigenvalues are rounding
        self.d = self.q.T @ ltb
        self._d2 = self.d**2

    def log_ml(self, phi: float, c: float = 1.0) -> float:
        """The log marginal likelihood at noise scale ``phi`` and prior factor ``c`` (``O(|U|)``)."""
        quad = float(np.sum(c * self._d2 / (phi * (phi + c * self.g))))
        logdet = float(np.log1p(c * self.g / phi).sum())
        return -0.5 * (self.rr0 / phi - quad + logdet + self.logdet_r + self.n * np.log(2 * np.pi * phi))


def _sparse_noise_log_ml(d: np.ndarray, lam: sp.csr_matrix, b0: np.ndarray, rr0: float, n: int, logdet_r: float) -> Any:
    """:func:`noise_log_ml` for independent edges (``L = diag(d)``): ``M = I + c D Lambda_0 D / phi`` stays sparse, so
    each evaluation is one sparse LU (``log det M`` from its diagonal, ``b^T L M^-1 L^T b`` by its solve)."""
    from scipy.sparse.linalg import splu

    g = sp.csc_matrix(sp.diags(d) @ lam @ sp.diags(d))
    c0 = d * b0
    eye = sp.identity(len(d), format="csc")

    def log_ml(phi: float, c: float = 1.0) -> float:
        lu = splu((eye + (c / phi) * g).tocsc(), permc_spec="MMD_AT_PLUS_A", options={"SymmetricMode": True})
        logdet = float(np.log(np.abs(lu.U.diagonal())).sum())
        quad = c * float(c0 @ lu.solve(c0)) / (phi * phi)
        return -0.5 * (rr0 / phi - quad + logdet + logdet_r + n * np.log(2 * np.pi * phi))

    return log_ml


def linear_posterior(
    kernel: KernelSource,
    scale2: float,
    prior_mean: np.ndarray,
    stats: LinearStatistics,
    *,
    factor: tuple[np.ndarray, np.ndarray] | None = None,
    with_variance: bool = True,
    noise_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray | None, Any, float]:
    """``(mu (E,), var (E,), cov_of, log_ml)``: the exact posterior given ``stats`` (module doc), in Wh and Wh^2.

    ``cov_of(idx)`` gives the ``(k, k)`` joint posterior covariance of edges ``idx``; ``log_ml`` is the log marginal
    likelihood of all readings, ``log N(y; A m, A K A^T + R)`` = ``-1/2 [r^T R^-1 r - b^T L M^-1 L^T b + log det M +
    sum log det R + n log 2 pi]`` with ``r = y - A m`` (``r^T R^-1 r = sum y^T R^-1 y - 2 h^T m + m^T Lambda m``).

    ``factor``: :func:`kernel_factor` of ``stats.touched()`` (computed here if None).  ``with_variance=False`` skips
    the variances and covariances (``var`` and ``cov_of`` are None; saves an ``O(E |U|^2)`` solve) for callers that
    need the mean and the marginal likelihood only.  ``noise_scale``: ``phi``, every reading's noise covariance
    multiplied by it (module doc).
    """
    m = np.asarray(prior_mean, dtype=np.float64)
    u = stats.touched()
    kdiag = scale2 * kernel.diag()
    if len(u) == 0:
        cov0 = lambda idx: scale2 * kernel.columns(np.asarray(idx))[np.asarray(idx)]  # noqa: E731
        return m.copy(), kdiag, cov0, 0.0
    if not (noise_scale > 0 and np.isfinite(noise_scale)):
        raise ParameterError(f"noise_scale must be > 0, got {noise_scale}")
    lam_full = stats.matrix() / noise_scale
    lam = lam_full[u][:, u]  # sparse (|U|, |U|): only pairs of edges read together
    l_k, bt = kernel_factor(kernel, scale2, u) if factor is None else factor
    if l_k.shape != (len(u), len(u)) or bt.shape != (len(u), len(m)):
        raise ParameterError(f"kernel factor of shape {l_k.shape}, {bt.shape} does not fit {len(u)} touched edges")
    mm = np.eye(len(u)) + l_k.T @ np.asarray(lam @ l_k)
    l_m = jittered_cholesky(0.5 * (mm + mm.T))
    h = stats.h / noise_scale
    b = h[u] - lam @ m[u]
    w = solve_lower(l_m, l_k.T @ b)
    z = solve_lower(l_m, w, trans=1)  # M^-1 L^T b
    mu = m + bt.T @ z
    rr = stats.yry / noise_scale - 2.0 * float(h @ m) + float(m @ (lam_full @ m))
    log_ml = -0.5 * (
        rr
        - float(w @ w)
        + 2.0 * float(np.log(np.diag(l_m)).sum())
        + stats.logdet_r
        + stats.readings * np.log(2 * np.pi * noise_scale)
    )
    if not with_variance:
        return mu, None, None, log_ml
    c = solve_lower(l_m, bt)  # L_M^-1 B^T
    var = np.maximum(kdiag - np.einsum("ij,ij->j", bt, bt) + np.einsum("ij,ij->j", c, c), 0.0)
    return mu, var, SubsetCovariance(kernel, scale2, bt, c), log_ml


class SubsetCovariance:
    """The posterior covariance of any subset of edges, ``K_II - B_I^T B_I + C_I^T C_I`` (``B^T = L^-1 K_U.``,
    ``C = L_M^-1 B^T``, both ``(|U|, E)``; :func:`linear_posterior`): ``self(idx)`` the ``(k, k)`` matrix (Wh^2),
    :meth:`quad` one quadratic form ``w^T Sigma_II w`` in ``O(|U| k)`` without forming it."""

    def __init__(self, kernel: KernelSource, scale2: float, bt: np.ndarray, c: np.ndarray) -> None:
        self.kernel, self.scale2, self.bt, self.c = kernel, scale2, bt, c

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        kii = self.scale2 * self.kernel.columns(idx)[idx]
        bi, ci = self.bt[:, idx], self.c[:, idx]
        return np.asarray(kii - bi.T @ bi + ci.T @ ci)

    def quad(self, idx: np.ndarray, w: np.ndarray) -> float:
        """``w^T Sigma_II w`` (Wh^2) for edges ``idx`` ``(k,)`` and weights ``w`` ``(k,)``."""
        idx = np.asarray(idx, dtype=np.int64)
        kw = self.scale2 * float(w @ (self.kernel.columns(idx)[idx] @ w))
        bw, cw = self.bt[:, idx] @ w, self.c[:, idx] @ w
        return kw - float(bw @ bw) + float(cw @ cw)


class LinearObsEdgeModel(EdgeModel):
    """An edge model that learns from linear (sum) readings (module doc) on top of a prior model's kernel.

    Args:
        prior_mean_wh: ``(E,)`` prior mean, Wh.
        kernel: the prior covariance in model units (a ``KernelSource``); ``K_Wh = scale2 * K``.
        scale2: Wh^2 per model unit of ``kernel``.
        noise_var: the driving noise of one whole-edge traversal, Wh^2 (used by :meth:`update` and reported as the
            posterior's ``noise_var``), on average over the edges: edge ``e``'s is ``noise_var`` times its
            :func:`traversal_noise_weights` of the prior mean and :attr:`noise_exponent` (0 by default: all alike).
        base: ``"bi"`` or ``"gp-exact"``: which prior family ``kernel`` is (recorded in model files).
    """

    def __init__(
        self, prior_mean_wh: np.ndarray, kernel: KernelSource, scale2: float, noise_var: float, base: str
    ) -> None:
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean)
        if kernel.n != self.n_edges:
            raise ParameterError(f"kernel over {kernel.n} edges, prior mean over {self.n_edges}")
        if not (scale2 > 0 and noise_var > 0):
            raise ParameterError("scale2 and noise_var must be > 0")
        self.kernel, self.scale2, self.noise_var, self.base = kernel, float(scale2), float(noise_var), base
        self.stats = LinearStatistics(self.n_edges)
        self._post: EdgePosterior | None = None
        #: log marginal likelihood of the readings, set with each posterior (:func:`linear_posterior`)
        self.log_ml = 0.0
        #: ``phi``: every reading's noise covariance (and one traversal's noise) times this (module doc)
        self.noise_scale = 1.0
        #: ``c``: the prior covariance is ``c scale2 K`` (learned with ``phi`` by :meth:`fit_hyperparameters`)
        self.prior_scale = 1.0
        #: per learned trace, what the trip-level effect is estimated from (:mod:`evroute.models.trip_effect`)
        self.trips = TripSums()
        #: ``(basis (E, p) Wh, prior s.d. (p,))`` of the shared mean corrections (:class:`BasisKernel`), or None
        self.basis: tuple[np.ndarray, np.ndarray] | None = None
        #: ``(kind, hyperparameters, arrays)`` of the base model's prior (:func:`evroute.models.store.prior_state`),
        #: what a model file keeps to rebuild the kernel; set by :func:`linear_model_from`
        self.base_state: tuple[str, dict[str, Any], dict[str, np.ndarray]] | None = None
        #: ``p`` of :func:`traversal_noise_weights`: one traversal's noise variance grows as the prior energy^p
        self.noise_exponent = 0.0
        #: whether :func:`~evroute.experiments.trip_learning.fit_noise` fits the trip effect into the readings' noise
        #: (:mod:`evroute.models.linear_obs_trip`; off here, on for a new model of ``evroute learn``)
        self.trip_effect_fit = False
        #: ``tau``: each learned trace's readings share ``beta_t A_t f_0``, ``beta_t ~ N(0, tau^2)`` (0: none)
        self.trip_tau = 0.0
        #: the largest ``tau`` the fit searches (``evroute learn --trip-tau-max``; not saved)
        self.trip_tau_max = 1.0
        self._rank1: tuple[tuple[int, int], TripRank1] | None = None

    def trip_rank1(self) -> TripRank1:
        """The :class:`~evroute.models.linear_obs_trip.TripRank1` terms of the learned traces (cached while no
        trace is added)."""
        key = (id(self.trips), len(self.trips))
        if self._rank1 is None or self._rank1[0] != key:
            self._rank1 = (key, TripRank1(self.trips, self.prior_mean))
        return self._rank1[1]

    def effective_stats(self) -> LinearStatistics:
        """The readings' statistics the posterior uses: :attr:`stats` (``trip_tau = 0``) or with the trip effect
        folded in at ``kappa = tau^2 / phi`` (:meth:`~evroute.models.linear_obs_trip.TripRank1.statistics`)."""
        if self.trip_tau == 0:
            return self.stats
        return self.trip_rank1().statistics(self.stats, self.trip_tau**2 / self.noise_scale)

    def traversal_noise_var(self) -> np.ndarray:
        """``(E,)`` the nominal noise variance of one whole traversal of each edge, Wh^2 (before :attr:`noise_scale`):
        ``noise_var`` times :func:`traversal_noise_weights` (what :mod:`evroute.traces.observations` takes)."""
        return self.noise_var * traversal_noise_weights(self.prior_mean, self.noise_exponent)

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        """Whole-edge readings with the noise of one traversal (:meth:`traversal_noise_var`) each."""
        e, y = self._check_batch(edges, energies_wh)
        self.stats.add_direct(e, y, self.traversal_noise_var()[e] if self.noise_exponent else self.noise_var)
        self._post = None

    def observe(self, edges: np.ndarray, a: np.ndarray, y: np.ndarray, noise_cov: np.ndarray) -> None:
        """Linear readings ``y = A f_edges + eps`` (see :meth:`LinearStatistics.add`)."""
        self.observe_batch(reading_batch(edges, a, y, noise_cov))

    def observe_batch(self, batch: ReadingBatch) -> None:
        """Readings already reduced by :func:`reading_batch` (possibly in another process)."""
        self.stats.add_batch(batch)
        self._post = None

    def posterior(self) -> EdgePosterior:
        if self._post is None:
            mu, var, cov_of, self.log_ml = linear_posterior(
                self.kernel,
                self.scale2 * self.prior_scale,
                self.prior_mean,
                self.effective_stats(),
                noise_scale=self.noise_scale,
            )
            assert var is not None
            noise = self.traversal_noise_var() * self.noise_scale
            self._post = EdgePosterior(mean=mu, variance=var, noise_var=noise, subset_covariance=cov_of)
        return self._post

    def fit_noise_scale(self, bounds: tuple[float, float] = (1e-3, 1e3)) -> float:
        """Set :attr:`noise_scale` to its ML-II value within ``bounds`` (module doc; bounded scalar search in
        ``log phi`` on :func:`noise_log_ml`: one eigendecomposition, then ``O(|U|)`` per evaluation) and return it.
        Without readings it stays as it is."""
        from scipy.optimize import minimize_scalar

        u = self.stats.touched()
        if self.stats.readings == 0 or len(u) == 0:
            return self.noise_scale
        log_ml = noise_log_ml(self.kernel, self.scale2 * self.prior_scale, self.prior_mean, self.stats)

        def neg(z: float) -> float:
            return -log_ml(float(np.exp(z)))

        lo, hi = np.log(bounds[0]), np.log(bounds[1])
        res = minimize_scalar(neg, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
        self.noise_scale = float(np.exp(res.x))
        self._post = None
        return self.noise_scale


__all__ = [
    "BasisKernel",
    "DiagonalKernel",
    "LinearObsEdgeModel",
    "LinearStatistics",
    "ReadingBatch",
    "SubsetCovariance",
    "NoiseEig",
    "noise_log_ml",
    "linear_posterior",
    "traversal_noise_weights",
    "reading_batch",
    "kernel_factor",
]
