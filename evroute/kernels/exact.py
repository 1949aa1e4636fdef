"""The project's one exact-GP core: conditioning on a Cholesky factor, the log marginal likelihood with its
gradient weights, and the one fit of log-parameters.  Both exact GPs call it: the routing edge model
(:mod:`evroute.models.exact_posterior`, :mod:`evroute.models.gp_exact_mll`) and the BO GP
(:class:`evroute.bo.gp.ExactGP`, which the static and time-varying BO policies share).

With training inputs ``U``, ``A = K_UU + D`` (``D`` the noise: ``s^2 I``, or ``diag(s^2 / n_U)`` for averaged
observations) factorised as ``A = L L^T`` by the one jittered Cholesky
(:func:`evroute.kernels.linalg.jittered_cholesky`) and the residual ``r = y_U - m_U``:

* :func:`condition`: ``mu_Q - m_Q = K_QU A^-1 r = B L^-1 r`` and ``var_Q - k(Q, Q) = -rowsum(B o B)``, with
  ``B = K_QU L^-T`` ``(|Q|, |U|)``;
* :func:`log_marginal_likelihood`: ``log N(r | 0, A) = -1/2 r^T alpha - sum log diag L - |U|/2 log(2 pi)``,
  ``alpha = A^-1 r``;
* :func:`likelihood_weights`: ``Q = alpha alpha^T - A^-1`` (``A^-1`` by LAPACK ``dpotri`` from ``L``), so that
  ``d log p / d theta = 1/2 <Q, dA/d theta>`` for any parameter ``theta`` of ``A``;
* :func:`maximise_log_parameters`: L-BFGS-B over log-parameters in a box (SciPy), warm-started.

**Sign convention**: every objective here is a log density to be *maximised* (the log marginal likelihood, or a log
posterior with the BO GP's lengthscale priors); :func:`maximise_log_parameters` negates it for SciPy's minimiser
(negation is exact, so the numbers are those of minimising the negated objective).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.linalg
from scipy.linalg import lapack
from scipy.optimize import OptimizeResult, minimize

from evroute.kernels.linalg import solve_lower

__all__ = ["condition", "likelihood_weights", "log_marginal_likelihood", "maximise_log_parameters"]

FloatArray = np.ndarray
LogObjective = Callable[[FloatArray], tuple[float, FloatArray]]


def condition(l_: FloatArray, k_qu: FloatArray, residual: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The exact posterior's corrections at query points ``Q`` from the factor ``L`` ``(n, n)`` of ``A``.

    Args:
        l_: lower Cholesky factor of ``A = K_UU + D`` ``(n, n)``.
        k_qu: ``(m, n)`` prior covariances of the query points and the training inputs.
        residual: ``(n,)`` ``y_U - m_U``.

    Returns:
        ``(dmean (m,), dvar (m,), B (m, n))``: the posterior mean is ``m_Q + dmean``, the posterior variances
        ``k(Q, Q) - dvar`` and the joint covariance ``K_QQ - B B^T`` (``B`` Fortran-ordered).
    """
    b = np.asfortranarray(solve_lower(l_, k_qu.T).T)  # K_QU L^-T
    return b @ solve_lower(l_, residual), np.einsum("ij,ij->i", b, b), b


def log_marginal_likelihood(l_: Any, residual: Any) -> tuple[Any, Any]:
    """``(log N(residual | 0, A), alpha = A^-1 residual (n,))`` from the lower factor ``L`` of ``A`` ``(n, n)``.

    NumPy: a float and an array.  torch (differentiable, for kernels without an analytic gradient: the turn-arm GP's
    fit, :mod:`evroute.models.gp_arcs_mll`): a scalar tensor, ``-1/2 |L^-1 r|^2 - sum log diag L - n/2 log(2 pi)``, and
    ``alpha`` as a tensor.
    """
    if type(l_).__module__.startswith("torch"):
        import torch

        z = torch.linalg.solve_triangular(l_, residual.unsqueeze(-1), upper=False)
        ll_t = -0.5 * (z * z).sum() - torch.log(torch.diagonal(l_)).sum() - 0.5 * len(residual) * math.log(2 * math.pi)
        return ll_t, torch.linalg.solve_triangular(l_.T, z, upper=True).squeeze(-1)
    alpha = scipy.linalg.cho_solve((l_, True), residual, check_finite=False)
    ll = (
        -0.5 * float(residual @ alpha)
        - float(np.log(np.diagonal(l_)).sum())
        - 0.5 * len(residual) * math.log(2 * math.pi)
    )
    return ll, alpha


def likelihood_weights(l_: FloatArray, alpha: FloatArray) -> FloatArray:
    """``Q = alpha alpha^T - A^-1`` ``(n, n)``: ``d log p / d theta = 1/2 <Q, dA / d theta>``.

    ``A^-1`` from the factor by LAPACK ``dpotri`` (``n^3 / 3``); it fills the lower triangle of a copy of ``L``,
    whose upper triangle is zero, so ``A^-1 = T + T^T - diag(T)``.
    """
    ainv, info = lapack.dpotri(l_, lower=1)
    if info:  # pragma: no cover - the factorisation succeeded, so its inverse cannot fail
        raise np.linalg.LinAlgError("dpotri failed")
    q = np.outer(alpha, alpha)
    q -= ainv
    q -= ainv.T
    q[np.diag_indices_from(q)] += np.diagonal(ainv)
    return q


def maximise_log_parameters(
    objective: LogObjective,
    theta0: FloatArray,
    bounds: Sequence[tuple[float, float]],
    maxiter: int,
    maxfun: int | None = None,
) -> OptimizeResult:
    """Maximise ``objective(theta) -> (value, gradient (p,))`` over log-parameters ``theta`` in the box ``bounds``.

    SciPy's L-BFGS-B on the negated objective from ``theta0`` ``(p,)``, at most ``maxiter`` iterations (and ``maxfun``
    evaluations when given).  Returns SciPy's result, whose ``fun`` is the *negated* optimum (``-value``).
    """

    def negated(theta: FloatArray) -> tuple[float, FloatArray]:
        value, grad = objective(theta)
        return -value, -grad

    options: dict[str, int] = {"maxiter": int(maxiter)} | ({} if maxfun is None else {"maxfun": int(maxfun)})
    return minimize(negated, theta0, jac=True, method="L-BFGS-B", bounds=list(bounds), options=options)
