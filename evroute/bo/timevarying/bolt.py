"""BOLT's two ingredients: the data-set cap ``n*`` (Recommendation 1) and the integrated-W2 relevance of each
observation (Recommendation 2), shared by :class:`~evroute.bo.timevarying.policies.BOLT` and W-DBO.

**Cap.**  With the response time ``R(n)`` (seconds between two iterations when the data set has ``n`` points) and the
temporal correlation ``k_T``, ``||u_n||^2 = sum_{i=1}^n k_T(i R(n))^2`` (paper Eq. 8) and
``n* = argmax_n ||u_n||^2`` (Eq. 9), found by hill climbing on ``Delta u(n) = ||u_{n+1}||^2 - ||u_n||^2``.
``R(n)`` is fitted online by :class:`ResponseTimeModel`, a cubic polynomial with non-negative coefficients.

**Relevance.**  Removing observation ``i`` changes the posterior by (rank-one downdate, ``Q = (lambda K + s^2 I)^-1``,
``a = Q y``, ``q_i`` the ``i``-th column of ``Q``) ``mu_D - mu_{D \\ i} = k(z)^T q_i a_i / Q_ii`` and
``sigma_{D \\ i}^2 - sigma_D^2 = (k(z)^T q_i)^2 / Q_ii``.  Integrated over ``S' x T' = R^d x [t_ref, inf)``, with
``M = int k(z) k(z)^T dz = lambda^2 C_S (.) C_T`` (closed-form spatial convolutions and future-time integrals of
:mod:`~evroute.bo.timevarying.kernels`), the criterion is

``W2_i^2 = (a_i^2 / Q_ii^2 + 1 / Q_ii) q_i^T M q_i``,

which bounds the integrated squared 2-Wasserstein distance ``int (d mu)^2 + (d sigma)^2`` from above (as in the W-DBO
code, the ``(d sigma)^2`` term is replaced by ``|d sigma^2| >= (d sigma)^2``); the mean part is exact.
:func:`exact_integrated_w2_removal` is Eq. 12 itself: the same closed-form mean part plus the exact
``int (sigma_{D \\ i} - sigma_D)^2`` by quasi-Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import nnls

from evroute.bo.base import FloatArray
from evroute.bo.gp import ExactGP
from evroute.bo.timevarying.kernels import (
    SpatioTemporalKernel,
    future_time_integral,
    pairwise_distances,
    spatial_convolution,
)
from evroute.errors import ParameterError

__all__ = [
    "ResponseTimeModel",
    "exact_integrated_w2_removal",
    "integrated_w2_removal",
    "integrated_w2_to_prior",
    "optimal_dataset_size",
    "squared_norm_u",
]


def squared_norm_u(n: int, response_time: float, k_t: Callable[[FloatArray], FloatArray]) -> float:
    """``||u_n||^2 = sum_{i=1}^n k_T(i R)^2`` for ``R = response_time`` (seconds) and the correlation ``k_t(tau)``."""
    if n < 1:
        return 0.0
    return float(np.sum(k_t(np.arange(1, n + 1, dtype=np.float64) * response_time) ** 2))


def optimal_dataset_size(
    k_t: Callable[[FloatArray], FloatArray],
    response_time: Callable[[int], float],
    *,
    n0: int = 1,
    n_max: int = 10_000,
) -> int:
    """``n* = argmax_n ||u_n||^2`` by hill climbing from ``n0`` (paper Sec. 3.3), capped at ``n_max``.

    The paper's hill climbing steps ``n <- n + sign(Delta u(n))`` until ``Delta u`` changes sign.  Because
    ``||u_n||^2`` is unimodal (its relaxation has a unique maximum), the climb ends at the first ``n`` with
    ``Delta u(n) <= 0``; we reach it with growing steps (1, 2, 4, ... in the climbing direction) and then bisect the
    last step, which visits ``O(log n)`` instead of ``O(n)`` values and returns the same ``n``.  Returns ``n_max`` when
    ``||u_n||^2`` still increases there (e.g. a constant response time, for which ``n* = inf``).

    Args:
        k_t: temporal correlation, ``(m,)`` lags (seconds) -> ``(m,)``.
        response_time: ``R(n)`` in seconds, positive.
        n0: initial guess (e.g. the previous ``n*``).
        n_max: upper limit of the search.
    """
    if int(n_max) < 1:
        raise ParameterError(f"n_max must be >= 1, got {n_max!r}")
    n_max = int(n_max)
    n = min(max(int(n0), 1), n_max)

    def stop(m: int) -> bool:  # Delta u(m) <= 0, i.e. m is at or beyond the maximum
        if m >= n_max:
            return True
        return squared_norm_u(m + 1, response_time(m + 1), k_t) <= squared_norm_u(m, response_time(m), k_t)

    if not stop(n):  # climb up: find lo < n* <= hi with stop(hi)
        lo, step = n, 1
        while not stop(min(lo + step, n_max)):
            lo, step = min(lo + step, n_max), 2 * step
        hi = min(lo + step, n_max)
    else:  # climb down: find lo < n* <= hi, stop(hi), not stop(lo) (lo = 0 stands for "n* = 1")
        hi, step = n, 1
        while hi > 1 and stop(max(hi - step, 1)):
            hi, step = max(hi - step, 1), 2 * step
        if hi == 1:
            return 1
        lo = max(hi - step, 1)
        if stop(lo):
            return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if stop(mid):
            hi = mid
        else:
            lo = mid
    return hi


class ResponseTimeModel:
    """Online estimate of the response time ``R(n)`` (seconds) from records ``(n, measured seconds)``.

    Fits ``R(n) = a0 + a1 n + a2 n^2 + a3 n^3`` by non-negative least squares (so that ``R`` is non-decreasing and
    ``R(0) >= 0``, as Definition 3.5 requires), refitted lazily after new records.

    Args:
        min_records: records needed before :attr:`ready` (the fit is meaningless before).
        min_distinct: distinct values of ``n`` needed before :attr:`ready`.
    """

    def __init__(self, min_records: int = 10, min_distinct: int = 4) -> None:
        if int(min_records) < 1 or int(min_distinct) < 1:
            raise ParameterError(f"min_records and min_distinct must be >= 1, got {min_records}, {min_distinct}")
        self.min_records, self.min_distinct = int(min_records), int(min_distinct)
        self._n: list[float] = []
        self._r: list[float] = []
        self._coef: FloatArray | None = None
        self._scale = 1.0

    def add(self, n: int, seconds: float) -> None:
        """Record that an iteration with a data set of ``n`` points took ``seconds``."""
        if int(n) < 0 or not np.isfinite(seconds) or seconds < 0:
            raise ParameterError(f"response-time record needs n >= 0 and finite seconds >= 0, got {n}, {seconds}")
        self._n.append(float(n))
        self._r.append(float(seconds))
        self._coef = None

    @property
    def ready(self) -> bool:
        """Whether enough records exist for a fit."""
        return len(self._n) >= self.min_records and len(set(self._n)) >= self.min_distinct

    @property
    def coefficients(self) -> FloatArray:
        """``(4,)`` fitted ``a0..a3`` (per ``n^k``)."""
        self._fit()
        assert self._coef is not None
        return self._coef / self._scale ** np.arange(4)

    def _fit(self) -> None:
        if self._coef is not None:
            return
        if not self.ready:
            raise ParameterError("ResponseTimeModel needs more records before it can predict")
        n = np.asarray(self._n)
        self._scale = max(float(n.max()), 1.0)
        u = n / self._scale
        self._coef, _ = nnls(np.vander(u, 4, increasing=True), np.asarray(self._r))

    def __call__(self, n: int | float) -> float:
        """Predicted ``R(n)`` in seconds (floored at 1e-9)."""
        self._fit()
        assert self._coef is not None
        u = float(n) / self._scale
        return max(float(np.polyval(self._coef[::-1], u)), 1e-9)

    @property
    def is_constant(self) -> bool:
        """Whether the fit has no growing term (then ``n* = inf``)."""
        return bool(np.all(self.coefficients[1:] <= 0.0))


def _space_time(gp: ExactGP) -> tuple[SpatioTemporalKernel, float, FloatArray, FloatArray]:
    """The kernel, its temporal smoothness ``nu_t``, training points ``(n, d)`` and times ``(n,)`` of a
    spatio-temporal ``gp``."""
    kern = gp.kernel
    if not isinstance(kern, SpatioTemporalKernel) or kern.nu_t is None:
        raise ParameterError("the integrated-W2 criterion needs a GP with a temporal kernel")
    z = gp.train_inputs
    return kern, kern.nu_t, z[:, :-1], z[:, -1]


def _integral_matrix(gp: ExactGP, t_ref: float) -> FloatArray:
    """``M = int_{R^d x [t_ref, inf)} k(z) k(z)^T dz`` over the training inputs of ``gp`` -> ``(n, n)``."""
    h, nu_t, x, t = _space_time(gp)
    cs = spatial_convolution(pairwise_distances(x, x), h.length_s, h.nu_s, x.shape[1])
    ct = future_time_integral(t, t, t_ref, h.length_t, nu_t)
    return h.signal**2 * cs * ct


def integrated_w2_removal(gp: ExactGP, t_now: float) -> FloatArray:
    """Integrated W2 distance (upper bound, see module doc) between ``GP_D`` and ``GP_{D \\ o_i}`` -> ``(n,)``.

    Integrated over ``R^d x [t_ref, inf)`` with ``t_ref = max(t_now, max_i t_i)``; standardised output units.
    """
    if gp.n == 0:
        return np.zeros(0)
    t_ref = max(float(t_now), float(np.max(gp.train_inputs[:, -1])))
    m = _integral_matrix(gp, t_ref)
    q = gp.Kinv
    qdiag = np.diag(q)
    v = np.einsum("ij,jk,ki->i", q, m, q)  # q_i^T M q_i
    w2sq = (gp.alpha**2 / qdiag**2 + 1.0 / qdiag) * v
    return np.sqrt(np.maximum(w2sq, 0.0))


def integrated_w2_to_prior(gp: ExactGP, t_now: float) -> float:
    """Integrated W2 distance (upper bound) between ``GP_D`` and the prior ``GP_{{}}``: ``sqrt(a^T M a + tr(Q M))``."""
    if gp.n == 0:
        return 0.0
    t_ref = max(float(t_now), float(np.max(gp.train_inputs[:, -1])))
    m = _integral_matrix(gp, t_ref)
    return float(np.sqrt(max(float(gp.alpha @ m @ gp.alpha + np.sum(gp.Kinv * m)), 0.0)))


def exact_integrated_w2_removal(gp: ExactGP, t_now: float, *, n_points: int = 2048) -> FloatArray:
    """Eq. 12 exactly: ``sqrt(int (mu_D - mu_{D \\ i})^2 + (sigma_D - sigma_{D \\ i})^2)`` over ``R^d x [t_ref, inf)``.

    The mean part is the closed form of :func:`integrated_w2_removal`; the standard-deviation part
    ``int (sqrt(sigma_D^2 + c_i^2 / Q_ii) - sigma_D)^2`` (``c_i(z) = k(z)^T q_i``) has no closed form and is integrated
    by scrambled-Sobol quasi-Monte Carlo (fixed seed, ``n_points`` points) over the box spanned by the data widened by
    ``4 l_S`` in space and ``[t_ref, t_ref + 6 l_T]`` in time, outside which the Matérn correlations (``< 5e-3``) make
    the integrand negligible.  Standardised output units; ``(n,)``.
    """
    from scipy.stats import qmc

    if gp.n == 0:
        return np.zeros(0)
    h, _, x, t = _space_time(gp)
    t_ref = max(float(t_now), float(np.max(t)))
    m = _integral_matrix(gp, t_ref)
    q = gp.Kinv
    qdiag = np.diag(q)
    mean_part = (gp.alpha**2 / qdiag**2) * np.einsum("ij,jk,ki->i", q, m, q)
    d = x.shape[1]
    lo, hi = x.min(axis=0) - 4.0 * h.length_s, x.max(axis=0) + 4.0 * h.length_s
    span_t = 6.0 * h.length_t
    u = qmc.Sobol(d + 1, scramble=True, seed=0).random(int(n_points))
    zx, zt = lo + u[:, :d] * (hi - lo), t_ref + u[:, d] * span_t
    kz = h(SpatioTemporalKernel.inputs(zx, zt), gp.train_inputs)  # (m, n)
    v = solve_triangular(gp.chol, kz.T, lower=True)
    var_d = np.maximum(h.signal - np.sum(v * v, axis=0), 0.0)  # (m,)
    c = kz @ q  # (m, n): c_i(z) = k(z)^T q_i
    dsd = np.sqrt(var_d[:, None] + c**2 / qdiag[None, :]) - np.sqrt(var_d)[:, None]
    volume = float(np.prod(hi - lo)) * span_t
    sd_part = volume * np.mean(dsd**2, axis=0)
    return np.sqrt(np.maximum(mean_part + sd_part, 0.0))
