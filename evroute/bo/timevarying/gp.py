"""The time-varying policies' GP: an :class:`~evroute.bo.gp.ExactGP` with a :class:`SpatioTemporalKernel`.

Inputs are rows ``[x, t]`` (:meth:`SpatioTemporalKernel.inputs`): points ``x`` ``(n, d)`` (the policies pass
unit-cube coordinates) and times ``t`` (seconds, or an iteration index for TV-GP-UCB); a *static* kernel
(``nu_t=None``) ignores ``t``.  Observations are standardised (zero mean, unit variance), so ``alpha``, ``Kinv`` and the
``standardized=True`` posterior are in standardised units.  Hyperparameters (signal variance ``lambda``,
lengthscales ``l_S``, ``l_T``, noise variance ``sigma0^2``) are fitted by maximising the exact log marginal
likelihood plus weak log-normal lengthscale priors (:meth:`~evroute.bo.gp.ExactGP.fit_hyperparameters`), warm-started
from the last fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from evroute.bo.gp import ExactGP
from evroute.bo.timevarying.kernels import SpatioTemporalKernel, pairwise_distances

__all__ = ["GPHyper", "HyperBounds", "SpatioTemporalKernel", "pairwise_distances", "spatio_temporal_gp"]

#: diagonal jitter of the time-varying GPs (standardised units)
JITTER = 1e-8
#: floor of their predictive variance
MIN_VARIANCE = 1e-12


@dataclass(frozen=True)
class GPHyper:
    """Kernel hyperparameters (standardised-output units): ``signal`` = lambda, lengthscales, ``noise`` = sigma0^2."""

    signal: float = 1.0
    length_s: float = 0.3
    length_t: float = 100.0
    noise: float = 0.01


@dataclass(frozen=True)
class HyperBounds:
    """Box bounds ``(low, high)`` of each hyperparameter for the marginal-likelihood fit."""

    signal: tuple[float, float] = (0.05, 20.0)
    length_s: tuple[float, float] = (0.01, 5.0)
    length_t: tuple[float, float] = (1.0, 1e4)
    noise: tuple[float, float] = (1e-5, 1.0)


def spatio_temporal_gp(
    nu_s: float = 2.5,
    nu_t: float | None = 1.5,
    *,
    bounds: HyperBounds | None = None,
    init: GPHyper | None = None,
    fit_iters: int = 20,
    prior_sd: float | None = 1.5,
) -> ExactGP:
    """The :class:`~evroute.bo.gp.ExactGP` of the time-varying policies.

    Args:
        nu_s: smoothness of ``k_S`` (0.5, 1.5 or 2.5; default Matérn-5/2).
        nu_t: smoothness of ``k_T`` (default Matérn-3/2), or ``None`` for a static (time-invariant) GP.
        bounds: hyperparameter bounds of the fit.
        init: initial hyperparameters (the first fit starts here, later fits from the previous optimum; the
            lengthscale priors are centred here).
        fit_iters: maximum L-BFGS-B iterations per fit (0: fixed hyperparameters).
        prior_sd: standard deviation of the log-normal lengthscale priors (``None``: maximum likelihood).
    """
    b, h = bounds or HyperBounds(), init or GPHyper()
    kernel = SpatioTemporalKernel(
        nu_s,
        nu_t,
        signal=h.signal,
        length_s=h.length_s,
        length_t=h.length_t,
        bounds={"signal": b.signal, "length_s": b.length_s, "length_t": b.length_t},
    )
    return ExactGP(
        kernel,
        h.noise,
        jitter=JITTER,
        min_variance=MIN_VARIANCE,
        standardize=True,
        fit_iters=fit_iters,
        prior_sd=prior_sd,
        noise_bounds=b.noise,
    )
