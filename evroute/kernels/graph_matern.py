"""Graph Matérn prior on the nodes of the (weighted) line graph, paper appendix B.1.

    f ~ N(0, K),   K = c * U (2 nu / kappa^2 I + Lambda)^(-nu) U^T = c * (2 nu / kappa^2 I + Delta)^(-nu)

where ``Delta = B B^T = U Lambda U^T`` is the incidence Laplacian of the line graph and ``c``
normalises the kernel to unit *average* prior variance (``mean(diag(K)) = 1``), so that an
outputscale ``s`` multiplying ``K`` is the average prior variance of the process (Borovitskiy et al.
2021 normalise the same way).

Three interchangeable backends, chosen by ``method``:

``"dense"``  eigendecomposition of the dense Laplacian, ``O(E^3)`` time and ``O(E^2)`` memory.  Exact
             for any real ``nu``; right up to a few thousand edges (Luxembourg, 5.6k edges: see
             ``docs/graph_kernel.md`` for measured times).
``"sparse"`` exact for integer ``nu``: the precision ``A^nu`` with ``A = 2 nu / kappa^2 I + Delta`` is
             sparse, so ``K v = A^(-nu) v`` costs ``nu`` sparse triangular solve pairs with one sparse
             LU factorisation of ``A``; sampling uses ``A^(-nu/2)`` (even ``nu``) or an ``LDL^T`` factor
             of ``A`` (odd ``nu``).  The normaliser is estimated with seeded Hutchinson probes when
             ``E`` is too large for the exact diagonal.  Scales to 100k+ edges.
``"eig"``    the ``n_eig`` smallest eigenpairs of ``Delta`` (shift-invert Lanczos): a rank-``n_eig``
             approximation that keeps the smoothest graph modes (what the GP edge model can
             differentiate through).

``"auto"`` picks ``"dense"`` up to ``dense_max`` edges and ``"sparse"`` above.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg  # noqa: F401  (sp.linalg.spsolve_triangular)
from scipy.linalg import blas, lapack
from scipy.sparse.linalg import eigsh, splu

from evroute.errors import ParameterError, check_positive

DENSE_MAX_DEFAULT = 6000


def matern_spectrum(eigenvalues: Any, nu: Any, kappa: Any) -> Any:
    """Graph Matérn spectral weights ``(2 nu / kappa^2 + lambda)^(-nu)`` for Laplacian eigenvalues ``lambda`` (NumPy,
    or torch tensors: differentiable in ``nu`` and ``kappa``, the SVGP's learnable graph kernel)."""
    if type(eigenvalues).__module__.startswith("torch"):
        return (2.0 * nu / kappa**2 + eigenvalues.clamp_min(0.0)) ** (-nu)
    return (2.0 * nu / kappa**2 + np.maximum(eigenvalues, 0.0)) ** (-nu)


@dataclass
class _SparseFactor:
    lu: object  # scipy SuperLU of A
    sqrt_d: np.ndarray | None  # for odd nu: sqrt of the LDL^T diagonal (permuted order)


class GraphMaternKernel:
    """Normalised graph Matérn covariance on ``E`` line-graph nodes.

    Args:
        laplacian: ``(E, E)`` sparse symmetric PSD Laplacian (``LineGraph.laplacian()``).
        nu: smoothness ``nu > 0`` (integer for ``method="sparse"``).
        kappa: lengthscale ``kappa > 0`` (graph hops, weighted).
        method: ``"auto"``, ``"dense"``, ``"sparse"`` or ``"eig"`` (see module docstring).
        n_eig: number of eigenpairs for ``method="eig"``.
        normalise: scale to unit average prior variance (default ``True``).
        n_probes: Hutchinson probes for the sparse normaliser when ``E > exact_diag_max``.
        seed: seed of those probes (the normaliser is deterministic given the seed).
    """

    def __init__(
        self,
        laplacian: sp.spmatrix,
        nu: float = 2.0,
        kappa: float = 1.0,
        *,
        method: str = "auto",
        n_eig: int = 500,
        normalise: bool = True,
        dense_max: int = DENSE_MAX_DEFAULT,
        exact_diag_max: int = 4000,
        n_probes: int = 128,
        seed: int = 0,
    ) -> None:
        self.nu = check_positive("nu", nu)
        self.kappa = check_positive("kappa", kappa)
        self.laplacian = sp.csr_matrix(laplacian, dtype=np.float64)
        n = self.laplacian.shape[0]
        self.n = n
        if method == "auto":
            method = "dense" if n <= dense_max else "sparse"
        if method not in ("dense", "sparse", "eig"):
            raise ParameterError(f"unknown graph kernel method {method!r} (use auto, dense, sparse or eig)")
        if method == "sparse" and float(self.nu) != int(self.nu):
            raise ParameterError(f"method 'sparse' needs an integer nu, got {nu}")
        self.method = method
        self._eigvals: np.ndarray | None = None
        self._eigvecs: np.ndarray | None = None
        self._factor: _SparseFactor | None = None
        if method == "dense":
            w, u = np.linalg.eigh(self.laplacian.toarray())
            self._eigvals, self._eigvecs = np.maximum(w, 0.0), u
        elif method == "eig":
            k = int(min(max(1, n_eig), n - 1))
            # shift-invert around a small negative shift finds the smallest eigenvalues of the PSD Laplacian
            w, u = eigsh(self.laplacian.tocsc(), k=k, sigma=-1e-3, which="LM")
            order = np.argsort(w)
            self._eigvals, self._eigvecs = np.maximum(w[order], 0.0), u[:, order]
        else:
            self._factor = self._factorise()
        self.scale = 1.0
        if normalise:
            self.scale = 1.0 / self._mean_raw_variance(exact_diag_max, n_probes, seed)

    # ------------------------------------------------------------------ internals
    @property
    def shift(self) -> float:
        """``2 nu / kappa^2`` added to the Laplacian."""
        return 2.0 * self.nu / self.kappa**2

    def _precision_root(self) -> sp.csc_matrix:
        return (self.laplacian + self.shift * sp.identity(self.n, format="csr")).tocsc()

    def _factorise(self) -> _SparseFactor:
        # A is symmetric positive definite: symmetric minimum-degree ordering without pivoting gives
        # P A P^T = L D L^T (half the fill of the default COLAMD ordering on 100k-edge cities)
        lu = splu(
            self._precision_root(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
        )
        if int(self.nu) % 2 == 0:
            return _SparseFactor(lu, None)
        if not np.array_equal(lu.perm_r, lu.perm_c):  # pragma: no cover - SuperLU kept the symmetric order so far
            raise RuntimeError("sparse LDL^T factorisation lost symmetry; use method='dense' or 'eig'")
        return _SparseFactor(lu, np.sqrt(lu.U.diagonal()))

    def _spectrum(self) -> np.ndarray:
        assert self._eigvals is not None
        return matern_spectrum(self._eigvals, self.nu, self.kappa)

    def _apply_inverse_power(self, v: np.ndarray, power: int) -> np.ndarray:
        assert self._factor is not None
        out = np.asarray(v, dtype=np.float64)
        for _ in range(power):
            out = self._factor.lu.solve(out)  # type: ignore[attr-defined]
        return out

    def _mean_raw_variance(self, exact_diag_max: int, n_probes: int, seed: int) -> float:
        if self.method != "sparse":
            u = self._eigvecs
            assert u is not None
            return float(np.einsum("ij,j,ij->", u, self._spectrum(), u) / self.n)
        if self.n <= exact_diag_max:
            return float(np.trace(self._dense_raw()) / self.n)
        rng = np.random.default_rng(seed)
        z = rng.choice([-1.0, 1.0], size=(self.n, n_probes))
        return float(np.einsum("ij,ij->", z, self._raw_matmul(z)) / (self.n * n_probes))

    def _raw_matmul(self, v: np.ndarray) -> np.ndarray:
        if self.method == "sparse":
            return self._apply_inverse_power(v, int(self.nu))
        u = self._eigvecs
        assert u is not None
        return u @ (self._spectrum()[:, None] * (u.T @ v))

    # -------------------------------------------------------------------- public
    def matmul(self, v: np.ndarray) -> np.ndarray:
        """``K @ v`` for ``v`` of shape ``(E,)`` or ``(E, k)``."""
        v = np.asarray(v, dtype=np.float64)
        if v.shape[0] != self.n:
            raise ParameterError(f"vector has {v.shape[0]} rows, kernel has {self.n} nodes")
        return self.scale * self._raw_matmul(v)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``(E, len(idx))`` columns ``K[:, idx]``."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.method != "sparse":
            u = self._eigvecs
            assert u is not None
            return self.scale * (u @ (self._spectrum()[:, None] * u[idx].T))
        e = np.zeros((self.n, len(idx)))
        e[idx, np.arange(len(idx))] = 1.0
        return self.matmul(e)

    def _dense_raw(self) -> np.ndarray:
        if self.method != "sparse":
            u = self._eigvecs
            assert u is not None
            return (u * self._spectrum()) @ u.T
        # dense LAPACK inverse of A from its Cholesky factor (potrf + potri), then A^-nu as a symmetric
        # product (syrk for the even part): BLAS-3, far faster than E sparse solves
        c, info = lapack.dpotrf(self._precision_root().toarray(), lower=1)
        if info == 0:
            c, info = lapack.dpotri(c, lower=1)
        if info != 0:  # pragma: no cover - A = shift * I + PSD is positive definite
            raise RuntimeError(f"LAPACK failed on the graph precision (info={info})")
        inv = np.tril(c) + np.tril(c, -1).T
        nu = int(self.nu)
        half = np.linalg.matrix_power(inv, nu // 2) if nu >= 2 else None
        out = inv if half is None else blas.dsyrk(1.0, half)  # upper triangle of half @ half.T
        if half is not None:
            out = np.triu(out) + np.triu(out, 1).T
            if nu % 2:
                out = out @ inv
        return out

    def dense(self) -> np.ndarray:
        """The full ``(E, E)`` covariance (``O(E^2)`` memory: only for up to some thousand edges)."""
        return self.scale * self._dense_raw()

    def diag(self) -> np.ndarray:
        """``(E,)`` prior variances (exact for the eigen backends; from columns for ``"sparse"``)."""
        if self.method != "sparse":
            u = self._eigvecs
            assert u is not None
            return self.scale * np.einsum("ij,j,ij->i", u, self._spectrum(), u)
        return np.einsum("ii->i", self.dense()).copy()

    def diag_probing(self, hops: int = 8, block: int = 32) -> tuple[np.ndarray, int]:
        """``(E,)`` prior variances by probing with a distance-``hops`` colouring, and the number of colours.

        Edges of one colour are more than ``hops`` line-graph hops apart, so ``(K z_c)_i`` for the indicator
        ``z_c`` of ``i``'s colour is ``K_ii`` plus entries ``K_ij`` between edges more than ``hops`` apart, which
        decay geometrically with the distance for the graph Matérn kernel (``K = c A^-nu``, ``A = 2 nu / kappa^2 I +
        Delta``).  One sparse solve of ``A^nu`` per colour, no ``E x E`` matrix; the error is measured against the
        exact diagonal in ``docs/gp.md`` (Monaco: max relative error 1e-2 at 14 hops, 1e-6 at 20).
        """
        adj = (abs(self.laplacian) > 0).astype(np.int8).tocsr()
        reach = sp.identity(self.n, dtype=np.int8, format="csr")
        for _ in range(hops):  # pattern of (I + |Delta|)^hops: pairs within `hops` hops
            reach = ((reach @ adj + reach) > 0).astype(np.int8).tocsr()
        colour = np.full(self.n, -1, dtype=np.int64)
        indptr, indices = reach.indptr, reach.indices
        for i in np.argsort(-np.diff(indptr), kind="stable"):  # greedy, most constrained first
            used = colour[indices[indptr[i] : indptr[i + 1]]]
            free = np.ones(len(used) + 1, dtype=bool)
            free[used[(used >= 0) & (used <= len(used))]] = False
            colour[i] = int(np.argmax(free))
        n_col = int(colour.max()) + 1
        out = np.empty(self.n)
        for c0 in range(0, n_col, block):
            cols = np.arange(c0, min(c0 + block, n_col))
            z = (colour[:, None] == cols[None, :]).astype(np.float64)
            kz = self.matmul(z)
            sel = colour - c0
            mine = (sel >= 0) & (sel < len(cols))
            out[mine] = kz[np.flatnonzero(mine), sel[mine]]
        return out, n_col

    @property
    def eigenpairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(eigenvalues (k,), eigenvectors (E, k))`` of the Laplacian (eigen backends only)."""
        if self._eigvals is None or self._eigvecs is None:
            raise ParameterError("eigenpairs are only available for method 'dense' or 'eig'")
        return self._eigvals, self._eigvecs

    def sample(self, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``(E, n_samples)`` independent draws from ``N(0, K)``.

        Exact for ``"dense"`` and ``"sparse"``; for ``"eig"`` a draw of the rank-``n_eig`` approximation.
        """
        return self._colour(rng.standard_normal((self.n, n_samples)))

    def sample_blocks(
        self, n_samples: int, block: int, rng: np.random.Generator, threads: int | None = None
    ) -> Iterator[np.ndarray]:
        """Successive ``(E, <= block)`` draws: the same numbers, in the same order, as calling
        ``sample(min(block, rest), rng)`` once per block (the normals are drawn up front in that order), with the
        blocks' sparse solves on ``threads`` threads (SuperLU releases the GIL; default: the usable cores, at most
        4).  One block's solve does not depend on how many run beside it, so the draws are bit-identical."""
        zs = [rng.standard_normal((self.n, min(block, n_samples - j))) for j in range(0, n_samples, block)]
        if threads is None:
            threads = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
        with ThreadPoolExecutor(max(1, threads)) as pool:
            yield from pool.map(self._colour, zs)

    def _colour(self, z: np.ndarray) -> np.ndarray:
        """``(E, m)`` standard normals ``z`` -> draws from ``N(0, K)``."""
        if self.method != "sparse":
            u = self._eigvecs
            assert u is not None
            k = u.shape[1]
            z = z[:k] if k < self.n else z
            return np.sqrt(self.scale) * (u @ (np.sqrt(self._spectrum())[:, None] * z))
        nu = int(self.nu)
        f = self._factor
        assert f is not None
        if nu % 2 == 1:
            # A = P^T L D L^T P  =>  P^T L^-T D^-1/2 z has covariance A^-1
            lu = f.lu
            sqrt_d = f.sqrt_d
            assert sqrt_d is not None, "odd-nu sparse factors always carry the LDL^T diagonal"
            d = sqrt_d**2
            # L^T = D^-1 U (upper triangular): solve L^T y = D^-1/2 z, then undo the permutation
            lt = (sp.diags(1.0 / d) @ lu.U).tocsr()  # type: ignore[attr-defined]
            y = sp.linalg.spsolve_triangular(lt, z / sqrt_d[:, None], lower=False)
            z = y[lu.perm_c]  # type: ignore[attr-defined]
        out = self._apply_inverse_power(z, nu // 2)
        return np.sqrt(self.scale) * out
