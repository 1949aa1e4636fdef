"""The exact marginal likelihood of per-arm sufficient statistics in torch (autograd), for kernels without an
analytic gradient: the turn-arm GP (:mod:`evroute.models.gp_arcs`), whose arc kernel adds a turn term to the edge
kernel.

Same formula as :mod:`evroute.models.gp_exact_mll` (which evaluates it and its analytic gradient in NumPy for the
edge kernel)::

    log p(y) = log N(ybar_U | m_U, K_UU + diag(s^2 / n_U))
               - sum_u [ (n_u - 1) / 2 log(2 pi s^2) + S_u / (2 s^2) + 1/2 log n_u ]

given the ``(U, U)`` kernel block ``K_UU`` of the observed arms (a differentiable torch tensor); the first term is the
one exact-GP core's :func:`evroute.kernels.exact.log_marginal_likelihood` (its torch path).  Tested to agree
with :class:`evroute.models.gp_exact_mll.MarginalLikelihood` on the edge kernel.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from evroute.kernels.exact import log_marginal_likelihood
from evroute.kernels.linalg import jittered_cholesky

__all__ = ["maximise", "statistics_log_likelihood"]


def statistics_log_likelihood(
    k: torch.Tensor, noise: torch.Tensor, m_u: torch.Tensor, n: torch.Tensor, ybar: torch.Tensor, scatter: torch.Tensor
) -> torch.Tensor:
    """The module doc's ``log p(y)`` given the ``(U, U)`` kernel block ``k`` of the observed arms and the noise."""
    a = k + torch.diag(noise / n)
    l_ = jittered_cholesky(0.5 * (a + a.T), ())  # plain: a failure aborts the fit
    ll_mean, _ = log_marginal_likelihood(l_, ybar - m_u)  # the exact-GP core's (torch path)
    ll_within = -(0.5 * (n - 1.0) * torch.log(2 * math.pi * noise) + scatter / (2.0 * noise) + 0.5 * torch.log(n)).sum()
    return ll_mean + ll_within


def maximise(
    objective: Any, raw: dict[str, torch.Tensor], learn: list[str], iters: int, n_obs: float
) -> dict[str, torch.Tensor] | None:
    """Maximise ``objective(raw)`` (a log likelihood of ``n_obs`` observations) over the log-parameters ``learn`` of
    ``raw`` (L-BFGS, strong Wolfe line search, from their values; the others fixed).  Returns the new parameters,
    clamped to ``[-9, 9]`` (``e^+-9`` keeps ``K`` well defined), or ``None`` when the fit failed or did not improve."""
    for k in learn:
        raw[k].requires_grad_(True)
    scale = 1.0 / max(n_obs, 1.0)
    opt = torch.optim.LBFGS([raw[k] for k in learn], lr=1.0, max_iter=iters, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = -objective(raw) * scale
        loss.backward()
        return loss

    try:
        with torch.no_grad():
            before = float(-objective(raw) * scale)
        opt.step(closure)
        with torch.no_grad():
            out = {k: v.detach().clamp(-9.0, 9.0) for k, v in raw.items()}
            after = float(-objective(out) * scale)
    except (RuntimeError, torch.linalg.LinAlgError):  # pragma: no cover - a Cholesky failure mid-search
        return None
    if not math.isfinite(after) or after > before:
        return None
    return out
