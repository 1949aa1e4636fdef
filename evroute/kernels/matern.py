"""The project's one Matérn implementation: half-integer correlations, derivatives, Gram matrices, Fourier features.

Correlations ``k(0) = 1`` in the scaled distance ``s = sqrt(2 nu) r / l`` (:func:`matern`):

* ``nu = 1/2``: ``k = exp(-s)``
* ``nu = 3/2``: ``k = (1 + s) exp(-s)``
* ``nu = 5/2``: ``k = (1 + s + s^2 / 3) exp(-s)``

with their derivatives (:func:`matern_dlog_lengthscale` for marginal-likelihood gradients, :func:`matern_grad_factor`
for input gradients), any ``nu > 0`` through the Bessel function (:func:`matern_general`), and the dense Matérn-5/2
Gram matrix on edge contexts (:func:`matern52`):

    k(x, x') = s (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),  r = ||(x - x') / lengthscale||

:func:`matern` and :func:`scaled_cdist` take NumPy arrays or torch tensors (one definition; torch autograd flows
through them: the SVGP's context kernels; the exact GP's marginal likelihood uses the NumPy path and
:func:`matern_grad_factor`).  Users: :mod:`evroute.kernels.stationary`
(isotropic kernel classes of the BO policies), :mod:`evroute.bo.timevarying` (spatio-temporal GP), and, through
:class:`evroute.kernels.edge.ContextMatern`, the edge models and the environments.

Random Fourier features (Rahimi & Recht 2007): the spectral density of the Matérn-nu kernel with
lengthscale ``l`` in ``d`` dimensions is a multivariate Student-t with ``2 nu`` degrees of freedom and
scale ``1 / l``, so ``phi_j(x) = sqrt(2 / D) cos(w_j . x + b_j)`` with ``w_j = g_j / l * sqrt(2 nu / u_j)``,
``g_j ~ N(0, I)``, ``u_j ~ chi^2_{2 nu}``, ``b_j ~ U[0, 2 pi)`` gives ``E[phi(x) . phi(x')] = k(x, x')``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from math import lgamma, log
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist
from scipy.special import kv

from evroute.errors import ParameterError

__all__ = [
    "NU_VALUES",
    "check_nu",
    "matern",
    "matern52",
    "matern_dlog_lengthscale",
    "matern_general",
    "matern_grad_factor",
    "matern_rff",
    "matern_with_grad_factor",
    "scaled_cdist",
]

FloatArray = np.ndarray


NU_VALUES: tuple[float, ...] = (0.5, 1.5, 2.5)


def check_nu(nu: float) -> float:
    """Return ``nu`` as float if it is one of :data:`NU_VALUES`, else raise :class:`ParameterError`."""
    v = float(nu)
    if v not in NU_VALUES:
        raise ParameterError(f"Matérn smoothness nu must be one of {NU_VALUES}, got {nu!r}")
    return v


def _is_torch(a: Any) -> bool:
    return type(a).__module__.startswith("torch")


def _scaled_distance(r: Any, lengthscale: float, nu: float) -> Any:
    if not lengthscale > 0:
        raise ParameterError(f"lengthscale must be > 0, got {lengthscale!r}")
    if _is_torch(r):
        return math.sqrt(2.0 * nu) * r.abs() / float(lengthscale)
    return math.sqrt(2.0 * nu) * np.abs(np.asarray(r, dtype=float)) / float(lengthscale)


def matern(r: Any, lengthscale: float, nu: float) -> Any:
    """Matérn correlation ``k(r)`` for distances ``r`` (any shape, same units as ``lengthscale``; NumPy or torch)."""
    nu = check_nu(nu)
    s = _scaled_distance(r, lengthscale, nu)
    if nu == 0.5:
        return _exp_neg(s)
    if nu == 1.5:
        return (1.0 + s) * _exp_neg(s)
    return (1.0 + s + s * s / 3.0) * _exp_neg(s)


def _exp_neg(s: Any) -> Any:
    return (-s).exp() if _is_torch(s) else np.exp(-s)


def _dk_ds(s: FloatArray, nu: float) -> FloatArray:
    e = np.exp(-s)
    if nu == 0.5:
        return -e
    if nu == 1.5:
        return -s * e
    return -(s / 3.0) * (1.0 + s) * e


def matern_dlog_lengthscale(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """``d k(r) / d log(lengthscale)`` (same shape as ``r``); used by the marginal-likelihood gradient."""
    nu = check_nu(nu)
    s = _scaled_distance(r, lengthscale, nu)
    return -s * _dk_ds(s, nu)


def matern_grad_factor(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """``h(r)`` such that ``d k(||u - v||) / d u = h(r) (u - v)``; zero at ``r = 0`` for ``nu = 1/2`` (subgradient)."""
    nu = check_nu(nu)
    ra = np.abs(np.asarray(r, dtype=float))
    s = _scaled_distance(ra, lengthscale, nu)
    e = np.exp(-s)
    if nu == 1.5:
        return -(3.0 / lengthscale**2) * e
    if nu == 2.5:
        return -(5.0 / (3.0 * lengthscale**2)) * (1.0 + s) * e
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -e / (lengthscale * ra)
    return np.where(ra > 0, out, 0.0)


def matern_with_grad_factor(r: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """``(matern(r, 1, nu), matern_grad_factor(r, 1, nu))`` from one exponential (unit lengthscale, distances
    ``r >= 0`` already scaled; the exact GP's marginal-likelihood gradient evaluates both on ``|U|^2`` pairs)."""
    nu = check_nu(nu)
    r = np.asarray(r, dtype=np.float64)
    s = math.sqrt(2.0 * nu) * r
    e = np.exp(-s)
    if nu == 0.5:
        with np.errstate(divide="ignore", invalid="ignore"):
            return e, np.where(r > 0, -e / r, 0.0)
    if nu == 1.5:
        k = (1.0 + s) * e
        e *= -3.0
        return k, e
    h = (1.0 + s) * e  # (1 + s) e, then k = h + s^2 e / 3 and h = -(5/3) (1 + s) e
    s *= s
    s *= e
    s /= 3.0
    s += h
    h *= -5.0 / 3.0
    return s, h


def matern_general(r: ArrayLike, lengthscale: float, nu: float) -> FloatArray:
    """Matérn correlation for any ``nu > 0`` through the modified Bessel function ``K_nu`` (``k(0) = 1``)."""
    if not nu > 0:
        raise ParameterError(f"nu must be > 0, got {nu!r}")
    z = _scaled_distance(r, lengthscale, nu)
    safe = np.where(z > 0, z, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        val = np.exp((1.0 - nu) * log(2.0) - lgamma(nu) + nu * np.log(safe)) * kv(nu, safe)
    val = np.where(np.isfinite(val), val, 0.0)
    return np.where(z > 0, val, 1.0)


def _scaled(x: np.ndarray, lengthscale: float | np.ndarray) -> np.ndarray:
    ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), (x.shape[1],))
    if np.any(ls <= 0):
        raise ParameterError("lengthscales must be > 0")
    return x / ls


def scaled_cdist(x1: Any, x2: Any, lengthscale: Any) -> Any:
    """``(n1, n2)`` Euclidean distances ``||x1_i / l - x2_j / l||`` of ``(n1, d)``, ``(n2, d)`` inputs with scalar or
    ``(d,)`` lengthscales ``l`` (NumPy: SciPy's ``cdist``; torch: ``torch.cdist``, differentiable, followed by
    ``clamp_min(0)`` as the exact GP's marginal likelihood always did, so its gradients keep their round-off)."""
    if _is_torch(x1):
        import torch

        return torch.cdist(x1 / lengthscale, x2 / lengthscale).clamp_min(0.0)
    a1, a2 = (np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in (x1, x2))
    return cdist(_scaled(a1, lengthscale), _scaled(a2, lengthscale))


def matern52(
    x1: np.ndarray, x2: np.ndarray | None = None, lengthscale: float | np.ndarray = 1.0, outputscale: float = 1.0
) -> np.ndarray:
    """Dense Matérn-5/2 Gram matrix, ``(n1, n2)`` for inputs ``(n1, d)`` and ``(n2, d)``."""
    x1 = np.atleast_2d(np.asarray(x1, dtype=np.float64))
    x2 = x1 if x2 is None else np.atleast_2d(np.asarray(x2, dtype=np.float64))
    return outputscale * matern(scaled_cdist(x1, x2, lengthscale), 1.0, 2.5)


#: Rows per block of :func:`rff_blocks` / :func:`matern_rff`: a multiple of 16, so that the per-row reductions done on
#: blocks (``einsum`` with a float64 accumulator, float32 x float64 ``matvec``) group their terms as on the whole
#: matrix (checked bit for bit in ``tests/test_setup_identical.py``); 512 x 512 float64 is 2 MB, cache-sized.
RFF_ROWS = 512


def rff_blocks(
    x: np.ndarray,
    n_features: int,
    rng: np.random.Generator,
    lengthscale: float | np.ndarray = 1.0,
    nu: float = 2.5,
    dtype: type = np.float64,
) -> Iterator[tuple[int, np.ndarray]]:
    """The rows of :func:`matern_rff` block by block: ``(r, Phi[r : r + RFF_ROWS])`` in order, each block a new
    array.  The random draws (all of them, from ``rng``) are made before the first block is yielded, so ``rng`` may
    be drawn from again between blocks without changing them."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    n, d = x.shape
    if n_features < 1:
        raise ParameterError(f"n_features must be >= 1, got {n_features}")
    g = rng.standard_normal((d, n_features))
    u = rng.chisquare(2.0 * nu, size=n_features)
    w = g * np.sqrt(2.0 * nu / u)[None, :]
    b = rng.uniform(0.0, 2.0 * np.pi, size=n_features)
    xs = _scaled(x, lengthscale)
    scale: np.ndarray = np.asarray(np.sqrt(2.0 / n_features), dtype=dtype)

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for r in range(0, n, RFF_ROWS):
            arg: np.ndarray = (xs[r : r + RFF_ROWS] @ w + b).astype(dtype, copy=False)
            yield r, np.multiply(np.cos(arg, out=arg), scale, out=arg)

    return blocks()


def matern_rff(
    x: np.ndarray,
    n_features: int,
    rng: np.random.Generator,
    lengthscale: float | np.ndarray = 1.0,
    nu: float = 2.5,
    dtype: type = np.float64,
) -> np.ndarray:
    """``(n, n_features)`` random Fourier features ``Phi`` with ``Phi @ Phi.T ~= k_Matern_nu(x, x)`` (unit variance).

    ``dtype=np.float32`` evaluates the cosines in single precision (about 10x faster for NumPy, relative error
    ~1e-7, far below the features' Monte Carlo error ``~1 / sqrt(n_features)``); the random draws are the same.
    The rows are computed in blocks of :data:`RFF_ROWS` (:func:`rff_blocks`: each entry by the same operations as one
    whole-matrix ``cos(x @ w + b) * sqrt(2 / n_features)``, so the same numbers, without ``(n, n_features)``
    float64 temporaries: 100k edges x 512 features, two fewer 400 MB arrays).
    """
    n = np.atleast_2d(np.asarray(x)).shape[0]
    out: np.ndarray = np.empty((n, n_features), dtype=dtype)
    for r, block in rff_blocks(x, n_features, rng, lengthscale, nu, dtype):
        out[r : r + len(block)] = block
    return out
