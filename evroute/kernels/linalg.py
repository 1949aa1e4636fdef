"""The project's one jittered Cholesky factorisation (NumPy / LAPACK ``dpotrf``, or torch for tensors).

Kernel matrices are positive semi-definite in exact arithmetic but can be numerically indefinite (repeated or close
inputs, a smooth kernel, large ``E``).  :func:`jittered_cholesky` returns the lower factor ``L`` of ``A + j I`` for
the first jitter ``j`` of a schedule that factorises (``j = 0`` first unless ``plain_first=False``).  Callers choose
the schedule; the ones in use:

* :data:`RELATIVE_JITTERS` (``1e-12 .. 1e-6`` times the mean diagonal, after a plain attempt): the exact GP edge
  model's posterior solves (:mod:`evroute.models.exact_posterior`), the time-aware GP, joint posterior draws;
* :func:`geometric_jitters` (``j_0, 10 j_0, 100 j_0, ...``): the environment's prior draw (``j_0 = 1e-10`` times the
  mean diagonal, always added) and :class:`evroute.bo.gp.ExactGP` (absolute, from ``1e-6`` on);
* :func:`evroute.kernels.posterior.sample_mvn`: ``1e-10, 1e-8, 1e-6`` times the mean diagonal, then an
  eigendecomposition;
* torch: the SVGP's whitening (one fixed jitter, default ``1e-6``, always added) and the exact GP's marginal
  likelihood (plain: a failure aborts the fit).

Users: every Cholesky of a kernel matrix in :mod:`evroute.models`, :mod:`evroute.bo` and :mod:`evroute.environments`
(GPyTorch's own, inside the SVGP's variational strategy, aside).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import scipy.linalg

__all__ = ["RELATIVE_JITTERS", "geometric_jitters", "jittered_cholesky", "solve_lower"]

#: relative jitters (times the mean diagonal) tried after a plain factorisation by default
RELATIVE_JITTERS: tuple[float, ...] = (1e-12, 1e-10, 1e-8, 1e-6)


def geometric_jitters(start: float, factor: float = 10.0, count: int = 8) -> Iterator[float]:
    """``start, start * factor, (start * factor) * factor, ...`` (``count`` values, by repeated multiplication)."""
    j = float(start)
    for _ in range(int(count)):
        yield j
        j *= factor


def jittered_cholesky(
    a: Any,
    jitters: Iterable[float] = RELATIVE_JITTERS,
    *,
    relative: bool = True,
    plain_first: bool = True,
    layout: str = "F",
) -> Any:
    """Lower Cholesky factor ``(n, n)`` of ``a + j I`` for the first jitter ``j`` that works (NumPy or torch).

    Args:
        a: ``(n, n)`` symmetric matrix (only its lower triangle is read).
        jitters: the jitters to try, in order, after ``j = 0`` (when ``plain_first``).
        relative: jitters are multiples of the mean diagonal ``mean(diag(a))`` (else absolute, in ``a``'s units).
        plain_first: try ``a`` itself first.
        layout: memory order of the NumPy factor, ``"F"`` (LAPACK's) or ``"C"`` (NumPy's ``linalg.cholesky``'s):
            the values are the same, but the order picks the BLAS kernel, hence the round-off, of a later product
            ``L @ z`` (callers keep the order their results were computed with).

    Raises:
        numpy.linalg.LinAlgError (``torch.linalg.LinAlgError`` for a tensor): when no jitter of the schedule gives a
            positive-definite matrix.
    """
    if type(a).__module__.startswith("torch"):
        return _torch_jittered_cholesky(a, jitters, relative, plain_first)
    if layout not in ("F", "C"):
        raise ValueError(f"layout must be 'F' or 'C', got {layout!r}")

    def factor(m: np.ndarray) -> np.ndarray:
        l_ = scipy.linalg.cholesky(m, lower=True, check_finite=False)
        return l_ if layout == "F" else np.ascontiguousarray(l_)

    if plain_first:
        try:
            return factor(a)
        except np.linalg.LinAlgError:
            pass
    scale = float(np.mean(np.diag(a))) if relative else 1.0
    n = a.shape[0]
    for j in jitters:
        b = np.array(a, dtype=np.float64, copy=True)
        b[np.diag_indices(n)] += j * scale
        try:
            return factor(b)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("matrix is not positive definite even with the largest jitter")


def _torch_jittered_cholesky(a: Any, jitters: Iterable[float], relative: bool, plain_first: bool) -> Any:
    """The torch path of :func:`jittered_cholesky` (differentiable; ``a + j I`` as a new tensor)."""
    import torch

    if plain_first:
        try:
            return torch.linalg.cholesky(a)
        except torch.linalg.LinAlgError:
            pass
    scale = float(a.diagonal().mean()) if relative else 1.0
    eye = torch.eye(a.shape[0], dtype=a.dtype, device=a.device)
    for j in jitters:
        try:
            return torch.linalg.cholesky(a + (j * scale) * eye)
        except torch.linalg.LinAlgError:
            continue
    raise torch.linalg.LinAlgError("matrix is not positive definite even with the largest jitter")


def solve_lower(l_: np.ndarray, b: np.ndarray, trans: int = 0) -> np.ndarray:
    """``L^-1 b`` (``trans=0``) or ``L^-T b`` (``trans=1``): lower-triangular ``L`` ``(n, n)``, ``b`` ``(n, ...)``."""
    return scipy.linalg.solve_triangular(l_, b, lower=True, trans=trans, check_finite=False)
