"""The spatio-temporal product kernel, half-integer Matérn correlations and the integrated-W2 closed forms.

The correlations themselves (:func:`matern` and its derivatives) are those of :mod:`evroute.kernels.matern`, the
project's one Matérn implementation, re-exported here.  :class:`SpatioTemporalKernel` is the kernel object of the
time-varying policies' :class:`~evroute.bo.gp.ExactGP`: a :class:`~evroute.kernels.base.Kernel` (the project's one
kernel interface) on ``[x, t]`` rows, with the fit interface of :mod:`evroute.kernels.stationary`.

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
from evroute.kernels.base import Kernel
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
    "SpatioTemporalKernel",
    "pairwise_distances",
    "check_nu",
    "future_time_integral",
    "matern",
    "matern_dlog_lengthscale",
    "matern_grad_factor",
    "matern_general",
    "spatial_convolution",
]


def pairwise_distances(a: FloatArray, b: FloatArray) -> FloatArray:
    """Euclidean distances between the rows of ``(n, d)`` and ``(m, d)`` -> ``(n, m)``."""
    sq = np.sum(a * a, 1)[:, None] + np.sum(b * b, 1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


class SpatioTemporalKernel(Kernel):
    """``k((x, t), (x', t')) = signal k_S(||x - x'||) k_T(|t - t'|)``, Matérn ``k_S`` and ``k_T``, on rows ``[x, t]``.

    Inputs ``Z`` are ``(n, d + 1)``: ``d`` spatial coordinates (the policies pass unit-cube coordinates) and the time
    (seconds, or an iteration index for TV-GP-UCB) in the last column.  With ``nu_t=None`` the kernel is static
    (``k_T = 1``, the time column is ignored).

    Args:
        nu_s: smoothness of ``k_S`` (0.5, 1.5 or 2.5).
        nu_t: smoothness of ``k_T``, or None (static).
        signal, length_s, length_t: ``lambda``, ``l_S``, ``l_T``.
        bounds: ``(low, high)`` of each fitted parameter (keys ``signal``, ``length_s``, ``length_t``).
    """

    def __init__(
        self,
        nu_s: float = 2.5,
        nu_t: float | None = 1.5,
        *,
        signal: float = 1.0,
        length_s: float = 0.3,
        length_t: float = 100.0,
        bounds: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.nu_s = check_nu(nu_s)
        self.nu_t = None if nu_t is None else check_nu(nu_t)
        for name, value in (("signal", signal), ("length_s", length_s), ("length_t", length_t)):
            if not value > 0:
                raise ParameterError(f"{name} must be > 0, got {value!r}")
        self.signal, self.length_s, self.length_t = float(signal), float(length_s), float(length_t)
        self.bounds = {"signal": (0.05, 20.0), "length_s": (0.01, 5.0), "length_t": (1.0, 1e4)} | dict(bounds or {})
        self.fit_layout = ("signal", "length_s", "noise") + (("length_t",) if self.temporal else ())
        self.lengthscale_names = ("length_s",) + (("length_t",) if self.temporal else ())

    @property
    def temporal(self) -> bool:
        """Whether the kernel has a temporal factor."""
        return self.nu_t is not None

    @property
    def variance(self) -> float:
        """``k(z, z) = signal``."""
        return self.signal

    def get(self, name: str) -> float:
        """Current value of ``signal``, ``length_s`` or ``length_t``."""
        return float(getattr(self, name))

    def set(self, name: str, value: float) -> None:
        """Set ``signal``, ``length_s`` or ``length_t``."""
        if name not in ("signal", "length_s", "length_t"):
            raise ParameterError(f"unknown kernel parameter {name!r}")
        setattr(self, name, float(value))

    @staticmethod
    def inputs(x: ArrayLike, t: ArrayLike | float) -> FloatArray:
        """Rows ``[x, t]`` ``(n, d + 1)`` from points ``(n, d)`` and times ``(n,)`` (or one time)."""
        x2 = np.atleast_2d(np.asarray(x, dtype=float))
        return np.column_stack([x2, np.broadcast_to(np.asarray(t, dtype=float), (x2.shape[0],))])

    def correlations(self, a: FloatArray, b: FloatArray) -> FloatArray:
        """``k_S k_T`` between the rows of ``a`` ``(n, d + 1)`` and ``b`` ``(m, d + 1)`` -> ``(n, m)``."""
        ks = matern(pairwise_distances(a[:, :-1], b[:, :-1]), self.length_s, self.nu_s)
        if self.nu_t is None:
            return ks
        return ks * matern(np.abs(a[:, -1][:, None] - b[:, -1][None, :]), self.length_t, self.nu_t)

    def __call__(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """Covariance ``(n, m)`` between ``a`` ``(n, d + 1)`` and ``b`` ``(m, d + 1)``."""
        a2, b2 = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
        return self.signal * self.correlations(a2, b2)

    def diag(self, a: ArrayLike) -> FloatArray:
        """``(n,)`` prior variances (``signal``)."""
        return np.full(np.atleast_2d(np.asarray(a)).shape[0], self.signal)

    def pairs(self, a: ArrayLike, b: ArrayLike) -> FloatArray:
        """``(k,)`` covariances of the paired rows of ``a``, ``b`` ``(k, d + 1)``."""
        a2, b2 = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
        ks = matern(np.sqrt(np.sum((a2[:, :-1] - b2[:, :-1]) ** 2, axis=1)), self.length_s, self.nu_s)
        if self.nu_t is not None:
            ks = ks * matern(np.abs(a2[:, -1] - b2[:, -1]), self.length_t, self.nu_t)
        return self.signal * ks

    def grad_x(self, z: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``k(z, b_j)`` ``(m,)`` and ``d k(z, b_j) / d z`` ``(m, d + 1)`` (time derivative last) at one ``z``."""
        dx = z[None, :-1] - b[:, :-1]
        rs = np.sqrt(np.sum(dx * dx, axis=1))
        ks = matern(rs, self.length_s, self.nu_s)
        gs = matern_grad_factor(rs, self.length_s, self.nu_s)[:, None] * dx
        if self.nu_t is not None:
            dt = z[-1] - b[:, -1]
            kt = matern(np.abs(dt), self.length_t, self.nu_t)
            gt = matern_grad_factor(np.abs(dt), self.length_t, self.nu_t) * dt
        else:
            kt, gt = np.ones_like(ks), np.zeros_like(ks)
        k = self.signal * ks * kt
        return k, np.column_stack([self.signal * gs * kt[:, None], self.signal * ks * gt])

    @staticmethod
    def input_blocks(p: int) -> list[slice]:
        """The column groups of an input ``(p,)``: space ``[0, p - 1)`` and time ``[p - 1, p)``."""
        return [slice(0, p - 1), slice(p - 1, p)]

    def fit_cache(self, z: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Spatial and temporal distance matrices of the training inputs."""
        return pairwise_distances(z[:, :-1], z[:, :-1]), np.abs(z[:, -1][:, None] - z[:, -1][None, :])

    def gram_and_grads(
        self, cache: tuple[FloatArray, FloatArray], params: dict[str, float]
    ) -> tuple[FloatArray, dict[str, FloatArray]]:
        """Gram matrix at ``params`` and its derivatives with respect to the log-parameters."""
        rs, rt = cache
        lam, ls = params["signal"], params["length_s"]
        ks = matern(rs, ls, self.nu_s)
        nu_t = self.nu_t  # None: static (``temporal`` is False)
        kt = matern(rt, params["length_t"], nu_t) if nu_t is not None else np.ones_like(ks)
        kern = lam * ks * kt
        grads = {"signal": kern, "length_s": lam * matern_dlog_lengthscale(rs, ls, self.nu_s) * kt}
        if nu_t is not None:
            grads["length_t"] = lam * ks * matern_dlog_lengthscale(rt, params["length_t"], nu_t)
        return kern, grads

    def __repr__(self) -> str:
        return (
            f"SpatioTemporalKernel(nu_s={self.nu_s}, nu_t={self.nu_t}, signal={self.signal}, "
            f"length_s={self.length_s}, length_t={self.length_t})"
        )


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
