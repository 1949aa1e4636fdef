"""The sparse variational GP's minibatch objective from per-edge sufficient statistics (:mod:`evroute.models.gp`).

Routes revisit the same road segments, so a minibatch of ``B`` observations holds ``U < B`` distinct edges; with a
Gaussian likelihood the ELBO needs only each edge's count, sum and sum of squares.
"""

from __future__ import annotations

import math

import gpytorch
import numpy as np
import torch


def minibatch_statistics(edges: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sufficient statistics of a minibatch for a Gaussian likelihood, per distinct edge.

    Args:
        edges: ``(B,)`` edge index of each observation.
        y: ``(B,)`` observed values (model units).

    Returns:
        ``(U,)`` distinct edges (sorted), their observation counts ``n_u``, ``sum y`` and ``sum y^2``.
    """
    uniq, inv, counts = np.unique(edges, return_inverse=True, return_counts=True)
    return (
        uniq,
        counts.astype(np.float64),
        np.bincount(inv, weights=y, minlength=len(uniq)),
        np.bincount(inv, weights=y * y, minlength=len(uniq)),
    )


def elbo_from_statistics(
    gp: gpytorch.models.ApproximateGP,
    likelihood: gpytorch.likelihoods.GaussianLikelihood,
    x: torch.Tensor,
    counts: torch.Tensor,
    sum_y: torch.Tensor,
    sum_y2: torch.Tensor,
    *,
    batch_size: int,
    num_data: int,
) -> torch.Tensor:
    """GPyTorch's :class:`~gpytorch.mlls.VariationalELBO` of a minibatch, from per-input sufficient statistics.

    With a Gaussian likelihood the expected log-likelihood of the ``n_u`` observations ``y`` at one input ``u``
    depends on them only through ``n_u``, ``sum y`` and ``sum y^2``::

        sum_j E_q[log N(y_j | f_u, s^2)]
            = -1/2 [n_u log(2 pi s^2) + (sum y^2 - 2 mu_u sum y + n_u (mu_u^2 + v_u)) / s^2]

    so the minibatch objective ``ELL / batch_size - KL / num_data`` (exactly what ``VariationalELBO`` returns for
    the ``batch_size`` observations one by one) costs ``O(U M^2)`` for ``U`` distinct inputs instead of
    ``O(batch_size M^2)``.  Routes revisit the same road segments, so ``U`` is a fraction of the batch.

    Args:
        x: ``(U, d)`` distinct inputs; counts, sum_y, sum_y2: ``(U,)`` statistics (model units).
    """
    f = gp(x)
    mu, var = f.mean, f.variance
    noise = likelihood.noise.squeeze()
    ell = (
        -0.5
        * (
            counts * torch.log(2 * math.pi * noise) + (sum_y2 - 2.0 * mu * sum_y + counts * (mu * mu + var)) / noise
        ).sum()
    )
    kl = gp.variational_strategy.kl_divergence()
    return ell / batch_size - kl / num_data
