"""Nadaraya-Watson kernel regression and unnormalised kernel density in log space (BOKE paper, Sec. 3).

With the Gaussian kernel ``k(x, x'; h) = exp(-||x - x'||^2 / (2 h^2))`` and data ``(x_i, y_i)_{i <= t}``:

* kernel regression (Eq. 3.1): ``m_t(x) = sum_i k(x, x_i) y_i / sum_i k(x, x_i)``;
* kernel density (Eq. 3.9): ``W_t(x) = sum_i k(x, x_i)`` (unnormalised, grows with ``t``);
* exploration term (Eq. 3.13): ``sigma_hat_t(x) = W_t(x)^{-1/2}``.

Both are computed from the exponents ``e_i = -||x - x_i||^2 / (2 h^2)``: ``log W = logsumexp(e)`` and ``m`` uses the
weights ``exp(e_i - max_j e_j)`` (Eq. 3.7's shift by ``d^2(x, X_t) / (2 h^2)``), so far from the data ``W`` never
underflows to 0 and ``m`` tends to the nearest-neighbour average (Prop. 3.1) instead of ``0/0``.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist
from scipy.special import logsumexp, softmax

from evroute.bo.base import FloatArray
from evroute.errors import check_positive

__all__ = ["NadarayaWatson", "scott_bandwidth", "silverman_bandwidth"]


def scott_bandwidth(t: int, dim: int, scale: float = 1.0 / np.sqrt(12.0)) -> float:
    """Scott's rule (BOKE Eq. 5.1) ``h_t = scale * t^{-1/(d+4)}``.

    The paper gives only the proportionality; the default ``scale = 1/sqrt(12)`` is the standard deviation of a
    uniform coordinate on ``[0, 1]`` (scipy's Scott factor applied to a uniform design in the unit cube).
    """
    return float(check_positive("bandwidth scale", scale) * max(int(t), 1) ** (-1.0 / (dim + 4)))


def silverman_bandwidth(t: int, dim: int, scale: float = 1.0 / np.sqrt(12.0)) -> float:
    """Silverman's rule (BOKE Eq. 5.2) ``h_t = scale * (t (d + 2) / 4)^{-1/(d+4)}``."""
    return float(check_positive("bandwidth scale", scale) * (max(int(t), 1) * (dim + 2) / 4) ** (-1.0 / (dim + 4)))


class NadarayaWatson:
    """Gaussian-kernel regression ``m_t`` and log kernel density ``log W_t`` of a data set.

    Args:
        x: ``(t, d)`` inputs (duplicates allowed).
        y: ``(t,)`` outputs.
        h: bandwidth ``h > 0``.
    """

    def __init__(self, x: FloatArray, y: FloatArray, h: float) -> None:
        self.x = np.asarray(x, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.h = check_positive("bandwidth", h)

    def _exponents(self, xq: FloatArray) -> FloatArray:
        return -cdist(xq, self.x, "sqeuclidean") / (2.0 * self.h**2)

    def predict(self, xq: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``m_t`` ``(q,)`` and ``log W_t`` ``(q,)`` at ``xq`` ``(q, d)``."""
        e = self._exponents(np.atleast_2d(xq))
        log_w = logsumexp(e, axis=1)
        p = softmax(e, axis=1)
        return p @ self.y, log_w

    def log_density(self, xq: FloatArray) -> FloatArray:
        """``log W_t`` ``(q,)`` at ``xq`` ``(q, d)``."""
        return logsumexp(self._exponents(np.atleast_2d(xq)), axis=1)

    def predict_grad(self, x: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
        """``m_t(x)``, ``log W_t(x)`` and the gradients ``grad m_t``, ``grad log W_t`` ``(d,)`` at ``x`` ``(d,)``."""
        diff = x[None, :] - self.x  # (t, d)
        e = -np.sum(diff**2, axis=1) / (2.0 * self.h**2)
        log_w = float(logsumexp(e))
        p = np.exp(e - log_w)
        de = -diff / self.h**2  # d e_i / d x
        m = float(p @ self.y)
        return m, log_w, de.T @ (p * (self.y - m)), de.T @ p
