"""The trip-level random effect inside the linear-reading fit (:mod:`evroute.models.linear_obs`), not only in the
route intervals (:mod:`evroute.models.trip_effect`).

Each learned trace ``t`` (readings ``y_t = A_t f + eps_t``, ``eps_t ~ N(0, phi R_t)``, ``R_t`` tridiagonal or
block-tridiagonal) shares one relative effect ``beta_t ~ N(0, tau^2)`` of its energy, scaled by the trace's *prior*
mean readings ``m_t = A_t f_0`` (``f_0`` the prior mean, Wh; as :mod:`evroute.models.trip_effect` models it)::

    y_t = A_t f + beta_t m_t + eps_t,      Cov y_t = phi R_t + tau^2 m_t m_t^T = phi (R_t + kappa m_t m_t^T)

with ``kappa = tau^2 / phi``.  Rank one per trace, so Sherman-Morrison gives its share of the sufficient statistics
from the share without the effect (``G_t = A_t^T R_t^-1 A_t``, ``h_t = A_t^T R_t^-1 y_t``, at ``phi = 1``)::

    g_t = A_t^T R_t^-1 m_t = G_t f_0,    s_t = m_t^T R_t^-1 m_t = f_0^T g_t,    q_t = m_t^T R_t^-1 y_t = f_0^T h_t
    c_t = kappa / (1 + kappa s_t)
    Lambda(kappa) = Lambda_0 - sum_t c_t g_t g_t^T          h(kappa) = h_0 - sum_t c_t q_t g_t
    yry(kappa) = yry_0 - sum_t c_t q_t^2                  logdet(kappa) = logdet_0 + sum_t log(1 + kappa s_t)

No per-trace inverse beyond ``R_t``'s banded Cholesky (:func:`~evroute.models.linear_obs_stats.reading_batch`),
and for a fixed ``kappa`` the noise scale ``phi`` still scales these statistics exactly, so the noise-scale
machinery (:func:`~evroute.models.linear_obs.noise_log_ml`) fits ``phi`` (and the prior's factor ``c``) on them
unchanged.  :func:`~evroute.models.linear_obs_build.fit_with_trip_effect` maximises the marginal likelihood over
``(phi, c, kappa)`` (ML-II; ``kappa = 0`` kept when it is not beaten) without one eigendecomposition per ``kappa``:
:class:`TripLogML` takes the effect as a rank-``T`` downdate of the eigendecomposition without it (Woodbury and the
matrix determinant lemma).  Luxembourg's known-truth study at N = 1,000 (BI with offsets, 3,720 touched edges,
964 traces, ``c`` held): 47.7 CPU s for the fit and the posterior (one eigendecomposition 18 s of the decomposition's
24 s, the search 9 s, the posterior 13 s) against 1,036 s refitting at each ``kappa``, the same optimum (``tau``
0.1097, ``log ML`` -184,959.2).  ``kappa = 0`` returns the statistics without the effect unchanged (the same
object).

What it is computed from: the readings each trace kept (:meth:`~evroute.models.trip_effect.TripSums.readings`; a
trace learned in blocks is one trace with a block-diagonal ``R_t``).  Readings outside any kept trace (per-edge
data of the base model, traces of model files of format version 1) get no effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from evroute.errors import ParameterError
from evroute.models.linear_obs_stats import LinearStatistics, reading_batch
from evroute.models.trip_effect import TripSums

if TYPE_CHECKING:
    from evroute.models.linear_obs import NoiseEig

#: bounds of ``tau`` (relative s.d. of one trace's energy) searched by
#: :func:`~evroute.models.linear_obs_build.fit_with_trip_effect`
TAU_BOUNDS = (1e-3, 1.0)


class TripRank1:
    """Per trace, the rank-one terms of module doc: ``edges`` ``(k_t,)``, ``g_t`` ``(k_t,)`` (Wh^-1), ``s_t`` and
    ``q_t`` (dimensionless); :meth:`statistics` the readings' statistics with the effect for a given ``kappa``."""

    def __init__(self, sums: TripSums, prior_mean_wh: np.ndarray) -> None:
        f0 = np.asarray(prior_mean_wh, dtype=np.float64)
        self.edges: list[np.ndarray] = []
        self.g: list[np.ndarray] = []
        s, q = [], []
        for i in sums.with_readings():
            e, a, y, cov = sums.readings(int(i))
            if len(y) == 0:
                continue
            b = reading_batch(e, a, y, cov)
            fe = f0[b.edges]
            g = b.gram @ fe
            self.edges.append(b.edges)
            self.g.append(g)
            s.append(float(fe @ g))
            q.append(float(fe @ b.h))
        self.s, self.q = np.asarray(s, dtype=np.float64), np.asarray(q, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.s)

    def statistics(self, base: LinearStatistics, kappa: float) -> LinearStatistics:
        """``base`` (the statistics without the effect, at ``phi = 1``) with every trace's effect of relative
        variance ``kappa`` (= ``tau^2 / phi``) folded in (module doc); ``kappa = 0``: ``base`` itself."""
        if not (kappa >= 0 and np.isfinite(kappa)):
            raise ParameterError(f"trip effect: kappa = tau^2 / noise scale must be finite and >= 0, got {kappa}")
        if kappa == 0 or len(self) == 0:
            return base
        c = kappa / (1.0 + kappa * self.s)
        out = LinearStatistics(base.n_edges)
        rows = np.concatenate([np.repeat(e, len(e)) for e in self.edges])
        cols = np.concatenate([np.tile(e, len(e)) for e in self.edges])
        vals = np.concatenate([-ct * np.outer(g, g).ravel() for ct, g in zip(c, self.g, strict=True)])
        out.lam = (base.matrix() + sp.csr_matrix((vals, (rows, cols)), shape=base.lam.shape)).tocsr()
        out.h = base.h.copy()
        for e, g, ct, qt in zip(self.edges, self.g, c, self.q, strict=True):
            np.add.at(out.h, e, -ct * qt * g)
        out.readings = base.readings
        out.yry = base.yry - float(np.sum(c * self.q * self.q))
        out.logdet_r = base.logdet_r + float(np.log1p(kappa * self.s).sum())
        return out


class TripLogML:
    """``log ML(phi, c, kappa)`` with the trip effect, from the eigendecomposition without it (no ``O(|U|^3)`` work
    per ``kappa``): what :func:`~evroute.models.linear_obs.noise_log_ml` of :meth:`TripRank1.statistics` gives.

    In the eigenbasis of ``G_0 = L^T Lambda_0 L = Q diag(g) Q^T`` (:class:`~evroute.models.linear_obs.NoiseEig`) the
    effect is the rank-``T`` downdate ``G(kappa) = G_0 - P C P^T`` (``P = Q^T L^T [g_1 .. g_T]`` ``(|U|, T)``,
    ``C = diag(c_t)``, ``c_t = kappa / (1 + kappa s_t)``) and ``b_0(kappa) = b_0 - [g_t] C rho``
    (``rho_t = q_t - g_t^T m``, so ``r^T R^-1 r`` loses ``sum c_t rho_t^2``).  With ``X = diag(phi + c g)`` and
    ``S = I_T - c C^1/2 P^T X^-1 P C^1/2`` the matrix determinant lemma and Woodbury give::

        log det M = sum log(1 + c g_i / phi) + log det S
        b^T L M^-1 L^T b = (c / phi) [e^T X^-1 e + c v^T S^-1 v],  e = d - P C rho,  v = C^1/2 P^T X^-1 e

    Cost: ``P`` once (``O(|U|^2 T)``), ``Z = P^T X^-1 P`` once per ``(phi, c)`` (``O(|U| T^2)``, the last one kept),
    then one ``T x T`` Cholesky per ``kappa``.  ``kappa = 0`` is :meth:`NoiseEig.log_ml` itself.
    """

    def __init__(self, eig: NoiseEig, rank1: TripRank1, prior_mean_wh: np.ndarray) -> None:
        m = np.asarray(prior_mean_wh, dtype=np.float64)
        u, t = eig.u, len(rank1)
        self.eig, self.s = eig, rank1.s
        self.rho = rank1.q - np.array([float(g @ m[e]) for e, g in zip(rank1.edges, rank1.g, strict=True)])
        cols = np.concatenate([np.full(len(e), i) for i, e in enumerate(rank1.edges)]) if t else np.zeros(0, int)
        edges = np.concatenate(rank1.edges) if t else np.zeros(0, int)
        vals = np.concatenate(rank1.g) if t else np.zeros(0)
        pos = np.minimum(np.searchsorted(u, edges), max(len(u) - 1, 0))
        inside = (u[pos] == edges) if len(u) else np.zeros(len(edges), bool)
        if np.any(vals[~inside] != 0):
            raise ParameterError("trip effect: a trace's readings involve edges outside the statistics' edges")
        gr = sp.csr_matrix((vals[inside], (cols[inside], pos[inside])), shape=(t, len(u)))  # [g_t]^T over U
        lt_g = (gr.multiply(eig.l_k[None, :]) if eig.l_k.ndim == 1 else gr @ eig.l_k).T  # L^T [g_t], (|U|, T)
        self.p = eig.q.T @ np.asarray(lt_g.toarray() if sp.issparse(lt_g) else lt_g)
        self._z: tuple[tuple[float, float], np.ndarray, np.ndarray, float] | None = None

    def _at(self, phi: float, c: float) -> tuple[np.ndarray, np.ndarray, float]:
        """``(Z = P^T X^-1 P (T, T), P^T X^-1 d (T,), d^T X^-1 d)`` at ``(phi, c)`` (the last one cached)."""
        if self._z is None or self._z[0] != (phi, c):
            xinv = 1.0 / (phi + c * self.eig.g)
            z = sla.blas.dsyrk(1.0, self.p * np.sqrt(xinv)[:, None], trans=1, lower=1)  # its lower triangle
            z += np.tril(z, -1).T
            pxd = self.p.T @ (xinv * self.eig.d)
            self._z = ((phi, c), z, pxd, float(self.eig.d @ (xinv * self.eig.d)))
        return self._z[1], self._z[2], self._z[3]

    def __call__(self, phi: float, c: float, kappa: float) -> float:
        """The log marginal likelihood of the readings at noise scale ``phi``, prior factor ``c`` and ``kappa =
        tau^2 / phi`` (class doc); ``-inf`` where ``S`` is not numerically positive definite."""
        eig = self.eig
        if kappa == 0 or len(self.s) == 0:
            return eig.log_ml(phi, c)
        z, pxd, dxd = self._at(phi, c)
        ct = kappa / (1.0 + kappa * self.s)
        sq = np.sqrt(ct)
        smat = -c * (sq[:, None] * z * sq[None, :])
        smat[np.diag_indices_from(smat)] += 1.0
        try:
            fac = sla.cho_factor(smat, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return -np.inf
        cr = ct * self.rho
        zcr = z @ cr
        exe = dxd - 2.0 * float(cr @ pxd) + float(cr @ zcr)
        v = sq * (pxd - zcr)
        quad = (c / phi) * (exe + c * float(v @ sla.cho_solve(fac, v, check_finite=False)))
        logdet = float(np.log1p(c * eig.g / phi).sum()) + 2.0 * float(np.log(np.diag(fac[0])).sum())
        rr = eig.rr0 - float(np.sum(ct * self.rho**2))
        logdet_r = eig.logdet_r + float(np.log1p(kappa * self.s).sum())
        return -0.5 * (rr / phi - quad + logdet + logdet_r + eig.n * np.log(2 * np.pi * phi))


__all__ = ["TAU_BOUNDS", "TripLogML", "TripRank1"]
