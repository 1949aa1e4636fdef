"""Exact marginal likelihood of the per-edge sufficient statistics, and the hyperparameter fit of ``gp-exact``.

With ``n_u`` observations ``y_{u,1..n_u}`` of edge ``u`` (mean ``ybar_u``, scatter ``S_u = sum_j (y_{u,j} - ybar_u)^2``)
and i.i.d. Gaussian noise ``s^2``, the likelihood factorises exactly into the mean part and the within-edge part::

    log p(y) = log N(ybar_U | m_U, K_UU + diag(s^2 / n_U))
               - sum_u [ (n_u - 1) / 2 log(2 pi s^2) + S_u / (2 s^2) + 1/2 log n_u ]

(the within-edge scatter is what identifies the noise ``s^2``), with ``K_UU`` the edge kernel
:func:`evroute.kernels.edge.edge_kernel` evaluated in torch (differentiable in the outputscales and lengthscales).
This equals GPyTorch's ``ExactGP`` marginal likelihood on the raw observations (times their number; tested) at
``O(|U|^3)`` instead of ``O(N^3)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from evroute.kernels.edge import GraphKernel, Points, edge_kernel
from evroute.kernels.linalg import jittered_cholesky


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


def marginal_log_likelihood(
    raw: dict[str, torch.Tensor],
    g_uu: torch.Tensor,
    x_u: torch.Tensor,
    m_u: torch.Tensor,
    n: torch.Tensor,
    ybar: torch.Tensor,
    scatter: torch.Tensor,
    amplitude: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact ``log p(y | theta)`` (scalar) from the statistics of ``|U|`` distinct edges.

    Args:
        raw: log-parameters ``log_s1``, ``log_s2`` (scalars), ``log_ls1``, ``log_ls2`` (``(d,)``), ``log_noise``.
        g_uu: ``(U, U)`` graph Gram block; x_u: ``(U, d)`` contexts; m_u: ``(U,)`` prior mean;
        n, ybar, scatter: ``(U,)`` statistics (model units).
        amplitude: ``(U,)`` per-edge kernel amplitude ``a`` (kernel ``a_i a_j K_ij``) or ``None``.
    """
    s1, s2, noise = raw["log_s1"].exp(), raw["log_s2"].exp(), raw["log_noise"].exp()
    p = Points(None, x_u)  # the U distinct edges, in the order of g_uu
    k = edge_kernel(GraphKernel(g_uu), s1, s2, raw["log_ls1"].exp(), raw["log_ls2"].exp())(p, p)
    if amplitude is not None:
        k = k * amplitude[:, None] * amplitude[None, :]
    a = k + torch.diag(noise / n)
    l_ = jittered_cholesky(0.5 * (a + a.T), ())  # plain: a failure aborts the fit
    r = (ybar - m_u).unsqueeze(-1)
    z = torch.linalg.solve_triangular(l_, r, upper=False)
    u = len(n)
    ll_mean = -0.5 * (z * z).sum() - torch.log(torch.diagonal(l_)).sum() - 0.5 * u * math.log(2 * math.pi)
    ll_within = -(0.5 * (n - 1.0) * torch.log(2 * math.pi * noise) + scatter / (2.0 * noise) + 0.5 * torch.log(n)).sum()
    return ll_mean + ll_within


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
    """Hyperparameters maximising :func:`marginal_log_likelihood` (L-BFGS with strong Wolfe line search, float64,
    started at ``hyper``); returns a new :class:`Hyper` (``hyper`` if the fit fails)."""
    as_t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    raw = {
        "log_s1": as_t(math.log(hyper.s1)),
        "log_s2": as_t(math.log(hyper.s2)),
        "log_ls1": as_t(np.log(hyper.ls1)),
        "log_ls2": as_t(np.log(hyper.ls2)),
        "log_noise": as_t(math.log(hyper.noise)),
    }
    learn = ["log_s1", "log_s2", "log_ls1", "log_ls2"] + (["log_noise"] if learn_noise else [])
    for k in learn:
        raw[k].requires_grad_(True)
    data = [as_t(a) for a in (g_uu, x_u, m_u, n, ybar, scatter)] + ([as_t(amplitude)] if amplitude is not None else [])
    scale = 1.0 / max(float(n.sum()), 1.0)
    opt = torch.optim.LBFGS([raw[k] for k in learn], lr=1.0, max_iter=iters, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = -marginal_log_likelihood(raw, *data) * scale
        loss.backward()
        return loss

    try:
        with torch.no_grad():
            before = float(-marginal_log_likelihood(raw, *data) * scale)
        opt.step(closure)
        with torch.no_grad():
            raw = {k: v.detach().clamp(-9.0, 9.0) for k, v in raw.items()}  # e^+-9: keeps K well defined
            after = float(-marginal_log_likelihood(raw, *data) * scale)
    except (RuntimeError, torch.linalg.LinAlgError):  # pragma: no cover - a Cholesky failure mid-search
        return hyper
    if not math.isfinite(after) or after > before:
        return hyper
    return Hyper(
        float(raw["log_s1"].exp()),
        float(raw["log_s2"].exp()),
        raw["log_ls1"].exp().numpy(),
        raw["log_ls2"].exp().numpy(),
        float(raw["log_noise"].exp()),
    )
