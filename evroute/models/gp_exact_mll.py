"""Exact marginal likelihood of the per-edge sufficient statistics, its gradient, and the hyperparameter fit of
``gp-exact`` (NumPy / SciPy: no torch on the model's hot path).

With ``n_u`` observations ``y_{u,1..n_u}`` of edge ``u`` (mean ``ybar_u``, scatter ``S_u = sum_j (y_{u,j} - ybar_u)^2``)
and i.i.d. Gaussian noise ``s^2``, the likelihood factorises exactly into the mean part and the within-edge part::

    log p(y) = log N(ybar_U | m_U, A) - sum_u [ (n_u - 1) / 2 log(2 pi s^2) + S_u / (2 s^2) + 1/2 log n_u ],
    A = s_1 G_UU o K_f + s_2 K_f' + diag(s^2 / n_U)

(the within-edge scatter is what identifies the noise ``s^2``; the first term, its weights
``alpha alpha^T - A^-1`` and the L-BFGS-B fit are the one exact-GP core's, :mod:`evroute.kernels.exact`, shared with
the BO GP), ``K_f``, ``K_f'`` Matérn kernels on the contexts with
per-dimension lengthscales (:func:`evroute.kernels.matern.matern`; the edge kernel of
:func:`evroute.kernels.edge.edge_kernel`).  This equals GPyTorch's ``ExactGP`` marginal likelihood on the raw
observations (times their number; tested) at ``O(|U|^3)`` instead of ``O(N^3)``.

The gradient in the log-parameters is the usual ``1/2 tr((alpha alpha^T - A^-1) dA/dtheta)`` (``alpha = A^-1 (ybar -
m_U)``) plus the within-edge terms; for a lengthscale ``l_j`` of ``k(r)``,
``dk/dlog l_j = -h(r) (x_j - x'_j)^2 / l_j^2`` with ``h`` of :func:`~evroute.kernels.matern.matern_grad_factor`, and
the sum over pairs is taken as ``2 sum_a x_a^2 (P 1)_a - 2 x^T P x`` (``|U|^2`` per dimension).  One evaluation:
one Cholesky and one inverse from it (``dpotrf`` + ``dpotri``, ``|U|^3``), and ``O(|U|^2 d)`` more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.kernels.exact import likelihood_weights, log_marginal_likelihood, maximise_log_parameters
from evroute.kernels.linalg import jittered_cholesky
from evroute.kernels.matern import matern_with_grad_factor, scaled_cdist

__all__ = ["Hyper", "MarginalLikelihood", "fit_hyperparameters", "marginal_log_likelihood"]

#: bounds of the log-parameters during a fit (e^+-9: keeps K well defined)
LOG_BOUND = 9.0


@dataclass
class Hyper:
    """Kernel hyperparameters in model units (variances relative to ``sigma0^2``)."""

    s1: float
    s2: float
    ls1: np.ndarray  # (d,) lengthscales of k_f
    ls2: np.ndarray  # (d,) lengthscales of k_f'
    noise: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "outputscale_prod": self.s1,
            "outputscale_add": self.s2,
            "lengthscale_f": self.ls1.tolist(),
            "lengthscale_f2": self.ls2.tolist(),
            "noise": self.noise,
        }

    def pack(self) -> np.ndarray:
        """``(2 + 2 d + 1,)`` log-parameters ``[log s1, log s2, log ls1, log ls2, log noise]``."""
        return np.log(np.concatenate([[self.s1, self.s2], self.ls1, self.ls2, [self.noise]]))

    @staticmethod
    def unpack(theta: np.ndarray) -> Hyper:
        d = (len(theta) - 3) // 2
        v = np.exp(np.asarray(theta, dtype=np.float64))
        return Hyper(float(v[0]), float(v[1]), v[2 : 2 + d].copy(), v[2 + d : 2 + 2 * d].copy(), float(v[-1]))


def _pair_sq_sum(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(d,)`` ``sum_ab p_ab (x_aj - x_bj)^2`` for symmetric ``p`` ``(m, m)`` and ``x`` ``(m, d)``."""
    return 2.0 * (x * x).T @ p.sum(axis=1) - 2.0 * np.einsum("aj,aj->j", x, p @ x)


class MarginalLikelihood:
    """``log p(y | theta)`` and its gradient in the log-parameters from the statistics of ``|U|`` distinct edges.

    Args:
        g_uu: ``(U, U)`` graph Gram block; x_u: ``(U, d)`` contexts; m_u: ``(U,)`` prior mean;
        n, ybar, scatter: ``(U,)`` statistics (model units); nu: Matérn smoothness of ``k_f``, ``k_f'``.
        amplitude: ``(U,)`` per-edge kernel amplitude ``a`` (kernel ``a_i a_j K_ij``: per-edge prior variances, the
            oracle ablation) or ``None``; it multiplies both terms and their gradients elementwise by ``a a^T``.
    """

    def __init__(
        self,
        g_uu: np.ndarray,
        x_u: np.ndarray,
        m_u: np.ndarray,
        n: np.ndarray,
        ybar: np.ndarray,
        scatter: np.ndarray,
        nu: float = 2.5,
        amplitude: np.ndarray | None = None,
    ) -> None:
        a = None if amplitude is None else np.asarray(amplitude, dtype=np.float64)
        self.aa = None if a is None else np.outer(a, a)
        self.g = np.asarray(g_uu, dtype=np.float64)
        if self.aa is not None:
            self.g = self.g * self.aa  # the product term's a_i a_j folds into the graph block
        self.x = np.asarray(x_u, dtype=np.float64)
        self.n = np.asarray(n, dtype=np.float64)
        self.r = np.asarray(ybar, dtype=np.float64) - np.asarray(m_u, dtype=np.float64)
        self.scatter = np.asarray(scatter, dtype=np.float64)
        self.nu = float(nu)
        self.evaluations = 0

    def _gram(self, ls: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(K, h, x / ls)``: the Matérn Gram matrix, its gradient factor (:func:`matern_with_grad_factor`) and the
        scaled inputs."""
        xs = self.x / ls
        k, h = matern_with_grad_factor(scaled_cdist(xs, xs, 1.0), self.nu)
        return k, h, xs

    def __call__(self, theta: np.ndarray, grad: bool = True) -> tuple[float, np.ndarray]:
        """``(log p, d log p / d theta (2 + 2 d + 1,))`` at log-parameters ``theta`` (:meth:`Hyper.pack` order).

        Raises:
            numpy.linalg.LinAlgError: ``A`` is not numerically positive definite (no jitter: the fit stops).
        """
        self.evaluations += 1
        h = Hyper.unpack(theta)
        d = self.x.shape[1]
        gk1, h1, x1 = self._gram(h.ls1)
        k2, h2, x2 = self._gram(h.ls2)
        if self.aa is not None:
            k2 *= self.aa
            h2 *= self.aa
        gk1 *= self.g  # G o K_f (o a a^T)
        a = h.s2 * k2
        a += h.s1 * gk1
        a[np.diag_indices_from(a)] += h.noise / self.n
        l_ = jittered_cholesky(a, ())  # plain: a failure stops the fit
        ll_mean, alpha = log_marginal_likelihood(l_, self.r)
        nm1 = self.n - 1.0
        ll = (
            ll_mean
            - float((0.5 * nm1 * math.log(2 * math.pi * h.noise) + self.scatter / (2 * h.noise)).sum())
            - 0.5 * float(np.log(self.n).sum())
        )
        if not grad:
            return ll, np.zeros(0)
        q = likelihood_weights(l_, alpha)  # d log p / d A = q / 2
        g = np.empty(3 + 2 * d)
        g[0] = 0.5 * h.s1 * float(np.vdot(q, gk1))
        g[1] = 0.5 * h.s2 * float(np.vdot(q, k2))
        # dK/dlog l_j = -h(r) (x_j - x'_j)^2 / l_j^2 (x scaled by l already)
        h1 *= q
        h1 *= self.g
        h1 *= -0.5 * h.s1
        g[2 : 2 + d] = _pair_sq_sum(h1, x1)
        h2 *= q
        h2 *= -0.5 * h.s2
        g[2 + d : 2 + 2 * d] = _pair_sq_sum(h2, x2)
        within = float((-0.5 * nm1 + self.scatter / (2 * h.noise)).sum())
        g[-1] = 0.5 * float(np.diagonal(q) @ (h.noise / self.n)) + within
        return ll, g


def marginal_log_likelihood(
    hyper: Hyper,
    g_uu: np.ndarray,
    x_u: np.ndarray,
    m_u: np.ndarray,
    n: np.ndarray,
    ybar: np.ndarray,
    scatter: np.ndarray,
    amplitude: np.ndarray | None = None,
) -> float:
    """Exact ``log p(y | hyper)`` (a float) from the statistics of ``|U|`` distinct edges (see the module docstring;
    ``amplitude``: :class:`MarginalLikelihood`'s)."""
    return MarginalLikelihood(g_uu, x_u, m_u, n, ybar, scatter, amplitude=amplitude)(hyper.pack(), grad=False)[0]


def fit_hyperparameters(
    hyper: Hyper,
    g_uu: np.ndarray,
    x_u: np.ndarray,
    m_u: np.ndarray,
    n: np.ndarray,
    ybar: np.ndarray,
    scatter: np.ndarray,
    *,
    iters: int = 20,
    learn_noise: bool = False,
    amplitude: np.ndarray | None = None,
) -> Hyper:
    """Hyperparameters maximising :func:`marginal_log_likelihood` (SciPy L-BFGS-B in the log-parameters, bounded
    to ``+-LOG_BOUND``, warm-started at ``hyper``, at most ``iters`` iterations, objective divided by the number of
    observations); returns a new :class:`Hyper` (``hyper`` itself if the fit fails or does not improve)."""
    f = MarginalLikelihood(g_uu, x_u, m_u, n, ybar, scatter, amplitude=amplitude)
    theta0 = hyper.pack()
    free = np.ones(len(theta0), dtype=bool)
    free[-1] = learn_noise
    theta0[free] = np.clip(theta0[free], -LOG_BOUND, LOG_BOUND)
    scale = 1.0 / max(float(np.sum(n)), 1.0)

    def objective(z: np.ndarray) -> tuple[float, np.ndarray]:
        th = theta0.copy()
        th[free] = z
        ll, g = f(th)
        return ll * scale, g[free] * scale

    try:
        before = -f(hyper.pack(), grad=False)[0] * scale
        res = maximise_log_parameters(
            objective,
            theta0[free],
            [(-LOG_BOUND, LOG_BOUND)] * int(free.sum()),
            maxiter=int(iters),
            maxfun=int(1.25 * iters) + 1,
        )
    except np.linalg.LinAlgError:  # a Cholesky failure mid-search
        return hyper
    if not math.isfinite(float(res.fun)) or float(res.fun) > before:
        return hyper
    th = theta0.copy()
    th[free] = res.x
    return Hyper.unpack(th)
