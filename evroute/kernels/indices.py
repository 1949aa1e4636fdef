"""The project's one set of index / acquisition functions on a Gaussian posterior: UCB, Bayes-UCB, Thompson sampling.

**Sign convention: everything maximises a utility.**  An index is an optimistic value of a quantity to be
*maximised*: :func:`upper_confidence_index` is ``mu + w sigma``.  The BO policies (IGP-UCB, GP-UCB, the time-varying
ones) maximise rewards and use it as it is.  The routing index policies (:mod:`evroute.policies.index`) minimise
energy, a cost: they pass the negated energy, whose upper index ``-mu + w sigma`` is the negation of the energy's
lower index; :func:`lower_confidence_index` does exactly that (``-((-mu) + w sigma)``, which is ``mu - w sigma`` bit for
bit: IEEE negation is exact).

* UCB: ``mu + w sigma`` with the policy's width ``w`` (``sqrt(beta_t)``: GP-UCB, IGP-UCB, the routing UCB);
* Bayes-UCB (Kaufmann et al. 2012): the upper ``1 - eta`` quantile of ``N(mu, sigma^2)``, i.e. UCB with the width
  :func:`bayes_ucb_width` ``= Phi^-1(1 - eta)`` (0 once ``eta >= 1/2``);
* Thompson sampling: :func:`thompson_sample`, one draw of the posterior.  A draw needs no sign: the negation of a
  draw of ``f`` is a draw of ``-f``, so both stacks call it on their own posterior (energy or reward).

:func:`ucb_terms` also returns the partial derivatives that the BO acquisition optimiser chains with ``d mu / dx`` and
``d sigma / dx`` (:mod:`evroute.bo.acquisition`, which adds expected improvement and probability of improvement).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from evroute.kernels.posterior import GaussianPosterior

__all__ = [
    "bayes_ucb_width",
    "lower_confidence_index",
    "thompson_sample",
    "ucb_terms",
    "upper_confidence_index",
]

FloatArray = np.ndarray


def upper_confidence_index(mean: FloatArray, std: FloatArray, width: float) -> FloatArray:
    """``(m,)`` optimistic values ``mu + width sigma`` of a quantity to maximise (``(m,)`` means and std devs)."""
    return mean + width * std


def lower_confidence_index(mean: FloatArray, std: FloatArray, width: float) -> FloatArray:
    """``(m,)`` optimistic values ``mu - width sigma`` of a cost: the negated :func:`upper_confidence_index` of ``-mu``
    (bit for bit ``mu - width sigma``)."""
    return -upper_confidence_index(-mean, std, width)


def ucb_terms(mean: FloatArray, std: FloatArray, width: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(mu + width sigma, d/d mu, d/d sigma)``, ``(m,)`` each (GP-UCB / IGP-UCB with the width of the policy)."""
    return upper_confidence_index(mean, std, width), np.ones_like(mean), np.full_like(std, width)


def bayes_ucb_width(eta: float) -> float:
    """Width ``Phi^-1(1 - eta) = -Phi^-1(eta)`` of the upper ``1 - eta`` quantile (``0`` when ``eta >= 1/2``)."""
    return float(-ndtri(eta)) if eta < 0.5 else 0.0


def thompson_sample(
    posterior: GaussianPosterior, rng: np.random.Generator, scale: float = 1.0, *, joint: bool = True
) -> FloatArray:
    """``(m,)`` one draw of ``f`` at the posterior's points from ``N(mean, scale^2 covariance)``.

    The posterior's own ``sampler`` (a model-specific joint draw, e.g. the routing exact GP's Matheron update) when
    it has one; else a joint draw from its covariance (``joint``, the BO policies' GP-TS) or independent draws per
    point ``mean + scale std z`` (``joint=False``: the routing policies' Thompson sampling, as published).
    """
    if posterior.sampler is not None:
        draw = posterior.sampler(rng)
        return draw if scale == 1.0 else posterior.mean + scale * (draw - posterior.mean)
    if joint:
        return posterior.sample(rng, 1, scale)[0]
    std = posterior.std if scale == 1.0 else scale * posterior.std
    return posterior.mean + std * rng.standard_normal(len(posterior.mean))
