"""Half-integer Matérn correlations and the closed-form integrals behind the integrated-W2 criterion.

All correlations are stationary and isotropic, ``k(0) = 1``, written in the scaled distance ``s = sqrt(2 nu) r / l``:

* ``nu = 1/2``: ``k = exp(-s)``
* ``nu = 3/2``: ``k = (1 + s) exp(-s)``
* ``nu = 5/2``: ``k = (1 + s + s^2 / 3) exp(-s)``

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
from scipy.special import comb, kv

from evroute.bo.base import FloatArray
from evroute.errors import ParameterError

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

NU_VALUES: tuple[float, ...] = (0.5, 1.5, 2.5)


def check_nu(nu: float) -> float:
    """Return ``nu`` as float if it is one of :data:`NU_VALUES`, else raise :class:`ParameterError`."""
    v = float(nu)
    if v not in NU_VALUES:
        raise ParameterError(f"Matérn smoothness nu must be one of {NU_VALUES}, got {nu!r}")
    return v


def _scaled(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    if not lengthscale > 0:
        raise ParameterError(f"lengthscale must be > 0, got {lengthscale!r}")
    return np.sqrt(2.0 * nu) * np.abs(np.asarray(r, dtype=float)) / float(lengthscale)


def matern(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """Matérn correlation ``k(r)`` for distances ``r`` (any shape, same units as ``lengthscale``)."""
    nu = check_nu(nu)
    s = _scaled(r, lengthscale, nu)
    e = np.exp(-s)
    if nu == 0.5:
        return e
    if nu == 1.5:
        return (1.0 + s) * e
    return (1.0 + s + s * s / 3.0) * e


def _dk_ds(s: FloatArray, nu: float) -> FloatArray:
    e = np.exp(-s)
    if nu == 0.5:
        return -e
    if nu == 1.5:
        return -s * e
    return -(s / 3.0) * (1.0 + s) * e


def matern_dlog_lengthscale(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """``d k(r) / d log(lengthscale)`` (same shape as ``r``); used by the marginal-likelihood gradient."""
    nu = check_nu(nu)
    s = _scaled(r, lengthscale, nu)
    return -s * _dk_ds(s, nu)


def matern_grad_factor(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """``h(r)`` such that ``d k(||u - v||) / d u = h(r) (u - v)``; zero at ``r = 0`` for ``nu = 1/2`` (subgradient)."""
    nu = check_nu(nu)
    r = np.abs(np.asarray(r, dtype=float))
    s = _scaled(r, lengthscale, nu)
    e = np.exp(-s)
    if nu == 1.5:
        return -(3.0 / lengthscale**2) * e
    if nu == 2.5:
        return -(5.0 / (3.0 * lengthscale**2)) * (1.0 + s) * e
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -e / (lengthscale * r)
    return np.where(r > 0, out, 0.0)


def matern_general(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """Matérn correlation for any ``nu > 0`` through the modified Bessel function ``K_nu`` (``k(0) = 1``)."""
    if not nu > 0:
        raise ParameterError(f"nu must be > 0, got {nu!r}")
    z = _scaled(r, lengthscale, nu)
    safe = np.where(z > 0, z, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        val = np.exp((1.0 - nu) * log(2.0) - lgamma(nu) + nu * np.log(safe)) * kv(nu, safe)
    val = np.where(np.isfinite(val), val, 0.0)
    return np.where(z > 0, val, 1.0)


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
