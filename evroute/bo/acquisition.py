"""Acquisition functions: they see only a posterior (means and standard deviations), never the model.

Each ``*_terms`` function takes ``(m,)`` posterior means and standard deviations and returns the acquisition values
and their partial derivatives with respect to the mean and the standard deviation, ``(m,)`` each, which the
gradient-based optimiser chains with the model's ``d mean / dx`` and ``d std / dx``.  The posterior-level forms
(:func:`upper_confidence_bound`, :func:`expected_improvement`, :func:`log_probability_of_improvement`,
:func:`thompson_sample`) read a :class:`~evroute.kernels.posterior.GaussianPosterior`, as BoTorch's acquisitions read
``Model.posterior(X)``.

UCB and Thompson sampling are the project's one set of index functions (:mod:`evroute.kernels.indices`, shared with
the routing index policies; re-exported here): everything maximises (the BO rewards as they are).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from evroute.bo.base import FloatArray
from evroute.kernels.indices import thompson_sample, ucb_terms, upper_confidence_index
from evroute.kernels.posterior import GaussianPosterior

__all__ = [
    "ei_terms",
    "expected_improvement",
    "log_pi_terms",
    "log_probability_of_improvement",
    "thompson_sample",
    "ucb_terms",
    "upper_confidence_bound",
]

Terms = tuple[FloatArray, FloatArray, FloatArray]


def _improvement(mean: FloatArray, std: FloatArray, best: float, xi: float) -> Terms:
    s = np.maximum(std, 1e-12)
    imp = mean - best - xi
    return imp, s, imp / s


def ei_terms(mean: FloatArray, std: FloatArray, best: float, xi: float = 0.0) -> Terms:
    """``EI = (mu - f+ - xi) Phi(z) + sigma phi(z)``, ``z = (mu - f+ - xi) / sigma``."""
    imp, s, z = _improvement(mean, std, best, xi)
    cdf, pdf = norm.cdf(z), norm.pdf(z)
    return imp * cdf + s * pdf, cdf, pdf


def log_pi_terms(mean: FloatArray, std: FloatArray, best: float, xi: float = 0.0) -> Terms:
    """``log PI = log Phi(z)`` (same argmax as ``PI``, well-conditioned gradients for very negative ``z``)."""
    _, s, z = _improvement(mean, std, best, xi)
    logcdf = norm.logcdf(z)
    ratio = np.exp(norm.logpdf(z) - logcdf)  # phi / Phi, finite for very negative z
    return logcdf, ratio / s, -ratio * z / s


def upper_confidence_bound(posterior: GaussianPosterior, width: float) -> FloatArray:
    """``(m,)`` UCB values of a posterior."""
    return upper_confidence_index(posterior.mean, posterior.std, width)


def expected_improvement(posterior: GaussianPosterior, best: float, xi: float = 0.0) -> FloatArray:
    """``(m,)`` expected improvement over ``best``."""
    return ei_terms(posterior.mean, posterior.std, best, xi)[0]


def log_probability_of_improvement(posterior: GaussianPosterior, best: float, xi: float = 0.0) -> FloatArray:
    """``(m,)`` log probability of improving on ``best + xi``."""
    return log_pi_terms(posterior.mean, posterior.std, best, xi)[0]
