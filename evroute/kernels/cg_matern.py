"""Graph Matérn draws without a factorization: Jacobi-preconditioned conjugate gradients, for even integer ``nu``.

``K = A^-nu`` with the SPD precision root ``A = 2 nu / kappa^2 I + Delta`` (as in
:mod:`evroute.kernels.sparse_cholesky`).  For even ``nu`` a draw is ``A^-(nu/2) z``, ``z ~ N(0, I)``.  The sparse
Cholesky factor of ``A`` on a million-edge line graph costs minutes and gigabytes (its fill-in grows faster than the
graph), while ``A`` itself is well conditioned: its spectrum lies in ``[2 nu / kappa^2, 2 nu / kappa^2 + g]`` with
``g`` the Gershgorin bound of the Laplacian (at most twice its largest diagonal entry), so after the symmetric Jacobi
scaling a few dozen conjugate-gradient iterations solve it to ``1e-8``.  Memory is ``O(nnz(A) + E m)`` for ``m``
right-hand sides at a time (five ``(E, m)`` arrays); time ``O(iterations nnz(A) m)``.

Accuracy (stated, tested): every solve stops when each column's residual satisfies ``||A x - b|| <= rtol ||b||``,
so the relative error of each solve is at most ``rtol cond(A)`` (:attr:`CGMaternSampler.cond_bound`), and of the
draw (``nu / 2`` solves) at most ``(nu / 2) rtol cond(A)`` to first order.  The result depends only on the inputs
(fixed operation order, no threads), so a seed's draw is reproducible.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

__all__ = ["CGMaternSampler"]


class CGMaternSampler:
    """Draws from the unnormalised graph Matérn ``N(0, A^-nu)`` for an even integer ``nu`` by conjugate gradients.

    Args:
        laplacian: ``(E, E)`` sparse symmetric PSD line-graph Laplacian.
        nu: smoothness, an even integer ``>= 2``.
        kappa: lengthscale ``> 0``.
        rtol: relative residual at which each solve stops (module docstring: the draw's error bound).
        max_iter: iteration cap (``RuntimeError`` if a column has not converged by then).
    """

    def __init__(
        self, laplacian: sp.spmatrix, nu: float, kappa: float, rtol: float = 1e-8, max_iter: int = 1000
    ) -> None:
        if not float(nu).is_integer() or int(nu) % 2 or nu < 2:
            raise ValueError(f"CGMaternSampler needs an even integer nu >= 2, got {nu}")
        self.power = int(nu) // 2
        self.rtol, self.max_iter = float(rtol), int(max_iter)
        lap = sp.csr_matrix(laplacian, dtype=np.float64)
        self.n = lap.shape[0]
        shift = 2.0 * nu / kappa**2
        self._a = (lap + shift * sp.identity(self.n, format="csr")).tocsr()
        self._dinv = 1.0 / self._a.diagonal()
        # Gershgorin: a Laplacian's off-diagonal entries of a row sum in absolute value to at most its diagonal entry
        # (D - W, or B B^T with two entries per column of B), so every eigenvalue is below twice the largest diagonal
        gersh = 2.0 * float(lap.diagonal().max()) if lap.nnz else 0.0
        #: upper bound of ``cond(A)``: (shift + Gershgorin bound of the Laplacian) / shift
        self.cond_bound = (shift + gersh) / shift
        #: iterations of the last :meth:`solve`
        self.iterations = 0

    def solve(self, b: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``(E, m)`` right-hand sides ``b`` -> ``A^-1 b`` (float64), each column to :attr:`rtol` (module doc).

        Five ``(E, m)`` float64 arrays at a time (``overwrite=True``: ``b`` itself, float64 C-contiguous, becomes the
        residual, one array fewer)."""
        b = np.asarray(b, dtype=np.float64)
        stop = self.rtol**2 * np.einsum("ij,ij->j", b, b)
        r = b if overwrite and b.flags.c_contiguous else b.copy()
        del b
        x = np.zeros_like(r)
        dinv = self._dinv[:, None]
        p = r * dinv
        rz = np.einsum("ij,ij->j", r, p)
        tmp = np.empty_like(r)
        for k in range(1, self.max_iter + 1):
            ap = self._a @ p
            alpha = rz / np.einsum("ij,ij->j", p, ap)
            x += np.multiply(p, alpha, out=tmp)
            r -= np.multiply(ap, alpha, out=ap)
            del ap
            if np.all(np.einsum("ij,ij->j", r, r) <= stop):
                self.iterations = k
                return x
            z = np.multiply(r, dinv, out=tmp)  # the preconditioned residual, in the scratch array
            rz_new = np.einsum("ij,ij->j", r, z)
            p *= rz_new / rz
            p += z
            rz = rz_new
        raise RuntimeError(f"conjugate gradients did not reach rtol {self.rtol:g} in {self.max_iter} iterations")

    def colour(self, z: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``(E, m)`` standard normals ``z`` -> ``A^-(nu/2) z``, draws from ``N(0, A^-nu)`` (float64); ``overwrite``:
        ``z`` may be used as scratch space."""
        out = np.asarray(z, dtype=np.float64)
        for k in range(self.power):
            out = self.solve(out, overwrite=overwrite or k > 0)
        return out

    def sample_blocks(self, n_samples: int, block: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Successive ``(E, <= block)`` draws, each block's normals drawn from ``rng`` just before its solves."""
        for j in range(0, n_samples, block):
            yield self.colour(rng.standard_normal((self.n, min(block, n_samples - j))), overwrite=True)
