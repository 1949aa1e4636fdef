"""Half-integer Matérn correlations and the closed-form integrals behind the integrated-W2 criterion.

The correlations themselves (:func:`matern` and its derivatives) are those of :mod:`evroute.kernels.matern`, the
project's one Matérn implementation, re-exported here.

The product kernel of :mod:`evroute.bo.timevarying.gp` is ``lambda * k_S(||x - x'||) * k_T(|t - t'|)``.  The integrals
used by the removal criterion of W-DBO / BOLT are

* :func:`spatial_convolution`: ``int_{R^d} k_S(||z - a||) k_S(||z - b||) dz``, closed form through the spectral
  density (the convolution of two Matérn-``nu`` kernels in ``d`` dimensions is a scaled Matérn-``(2 nu + d/2)``);
* :func:`future_time_integral`: ``int_{t0}^{inf} k_T(t - t_i) k_T(t - t_j) dt`` for past times ``t_i, t_j <= t0``,
  closed form because each half-integer Matérn is ``exp(-a tau)`` times a polynomial in ``tau``.
"""

from __future__ import annotations

from math import factorial, lgamma, log, pi, sqrt

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import comb

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError
from evroute.kernels.matern import (  # the project's one Matérn implementation, re-exported
    NU_VALUES,
    check_nu,
    matern,
    matern_dlog_lengthscale,
    matern_general,
    matern_grad_factor,
)

__all__ = [
    "NU_VALUES",
    "check_nu",
    "future_time_integral",
    "matern",
    "matern_dlog_lengthscale",
    "matern_grad_factor",
    "matern_general",
    "spatial_convolution",
]


def _log_spectral_constant(nu: float, lengthscale: float, dim: int) -> float:
    """log of ``C`` in the Matérn spectral density ``S(w) = C (2 nu / l^2 + 4 pi^2 |w|^2)^-(nu + d/2)``."""
    return (
        dim * log(2.0)
        + 0.5 * dim * log(pi)
        + lgamma(nu + 0.5 * dim)
        + nu * log(2.0 * nu)
        - lgamma(nu)
        - 2.0 * nu * log(lengthscale)
    )


def spatial_convolution(r: ArrayLike, lengthscale: float, nu: float, dim: int) -> FloatArray:
    """``int_{R^dim} k(||z - a||) k(||z - b||) dz`` as a function of ``r = ||a - b||`` (units: length^dim).

    Squaring the spectral density gives ``C_nu^2 / C_nu' * S_{nu', l'}`` with ``nu' = 2 nu + dim/2`` and
    ``l' = l sqrt(nu' / nu)``: a scaled Matérn-``nu'`` correlation in the same scaled distance ``sqrt(2 nu) r / l``.
    """
    nu = check_nu(nu)
    if int(dim) < 1:
        raise ParameterError(f"dim must be >= 1, got {dim!r}")
    nu2 = 2.0 * nu + 0.5 * dim
    l2 = lengthscale * sqrt(nu2 / nu)
    log_scale = 2.0 * _log_spectral_constant(nu, lengthscale, dim) - _log_spectral_constant(nu2, l2, dim)
    return np.exp(log_scale) * matern_general(r, l2, nu2)


def _poly_coefficients(nu: float, a: float) -> FloatArray:
    """Coefficients ``c_m`` of ``k(tau) = exp(-a tau) sum_m c_m tau^m`` for ``tau >= 0``, ``a = sqrt(2 nu) / l``."""
    if nu == 0.5:
        return np.array([1.0])
    if nu == 1.5:
        return np.array([1.0, a])
    return np.array([1.0, a, a * a / 3.0])


def future_time_integral(ti: ArrayLike, tj: ArrayLike, t0: float, lengthscale: float, nu: float) -> FloatArray:
    """``int_{t0}^{inf} k(t - ti) k(t - tj) dt`` for every pair; ``ti`` ``(n,)``, ``tj`` ``(m,)`` -> ``(n, m)``.

    Times are in the units of ``lengthscale`` and must satisfy ``ti, tj <= t0`` (observations lie in the past).  With
    ``u = t - t0`` and ``delta_i = t0 - t_i``, ``k(u + delta_i) = exp(-a (u + delta_i)) P_i(u)``; expanding ``P_i`` in
    powers of ``u`` gives ``exp(-a (delta_i + delta_j)) A_i^T G A_j`` with ``G_kl = (k + l)! / (2a)^(k + l + 1)``.
    """
    nu = check_nu(nu)
    ti = np.asarray(ti, dtype=float).reshape(-1)
    tj = np.asarray(tj, dtype=float).reshape(-1)
    if (ti.size and ti.max() > t0 + 1e-9 * max(1.0, abs(t0))) or (tj.size and tj.max() > t0 + 1e-9 * max(1.0, abs(t0))):
        raise ParameterError("future_time_integral needs every observation time <= t0")
    if not lengthscale > 0:
        raise ParameterError(f"lengthscale must be > 0, got {lengthscale!r}")
    a = sqrt(2.0 * nu) / lengthscale
    c = _poly_coefficients(nu, a)
    deg = c.size - 1

    def expand(delta: FloatArray) -> FloatArray:  # (n, deg + 1): coefficient of u^k in sum_m c_m (u + delta)^m
        out = np.zeros((delta.size, deg + 1))
        for m in range(deg + 1):
            for k in range(m + 1):
                out[:, k] += c[m] * comb(m, k) * delta ** (m - k)
        return out

    di = np.maximum(t0 - ti, 0.0)
    dj = np.maximum(t0 - tj, 0.0)
    g = np.array([[factorial(k + q) / (2.0 * a) ** (k + q + 1) for q in range(deg + 1)] for k in range(deg + 1)])
    poly = expand(di) @ g @ expand(dj).T
    return poly * np.exp(-a * (di[:, None] + dj[None, :]))
