"""Exact GP posterior over the expected energies of all ``E`` edges (the posterior object of ``--model gp-exact``).

Every observation is of one of ``E`` edges with fixed contexts, so the exact posterior of ``f`` given ``n_u``
observations of each visited edge ``u`` (mean ``ybar_u``) is a finite Gaussian (the ``n_u`` observations of one edge
are equivalent to one observation ``ybar_u`` with noise ``s^2 / n_u``)::

    mu    = m + K_{.U} A^-1 (ybar_U - m_U),      A = K_UU + diag(s^2 / n_U)
    Sigma = K - K_{.U} A^-1 K_{U.}

Two interchangeable representations (:class:`DensePosterior`, :class:`LowRankPosterior`), both with
:meth:`refresh` (the from-scratch solve above, from the per-edge sufficient statistics) and :meth:`condition`
(one round: a batched rank-``k`` Schur-complement update with the ``k`` new observations ``y_R``)::

    C = Sigma[:, R],  L = chol(C[R] + s^2 I),  W = L^-1 C^T,  Sigma -= W^T W,  mu += W^T L^-1 (y_R - mu_R)

* :class:`DensePosterior` keeps ``Sigma`` (``E x E``, float64, Fortran order, lower triangle valid) and updates it
  with one BLAS ``dsyrk`` (half the flops of a GEMM; ``E^2 k`` per round).  ``E^2`` memory: the model uses it up to
  ``dense_max`` edges.
* :class:`LowRankPosterior` never forms an ``E x E`` matrix: it keeps the kernel columns ``K_{.U}`` of the visited
  edges (``E x |U|``), the Cholesky factor of ``A`` and the marginal variances.  ``Sigma[:, R]`` is
  ``K_{.R} - K_{.U} A^-1 K_{UR}`` (``E |U| k``), the mean is recomputed exactly every round (``E |U|``) and the
  variances follow the rank-``k`` update; a refresh recomputes them exactly (``E |U|^2``).

The from-scratch solve is the one exact-GP core's (:func:`evroute.kernels.exact.condition`, shared with the BO GP).
Factorisations use the one jittered Cholesky (:func:`evroute.kernels.linalg.jittered_cholesky`: plain, then
``1e-12 .. 1e-6`` times the mean diagonal).  Both work in model units (the caller scales by ``sigma0``) and on NumPy
float64 arrays (CPU); the dense one also runs on a torch device (CUDA) with a full ``addmm`` in place of ``dsyrk``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from scipy.linalg import blas

from evroute.kernels.exact import condition
from evroute.kernels.linalg import jittered_cholesky, solve_lower


class KernelSource(Protocol):
    """What the posteriors need from the kernel (model units)."""

    n: int

    def diag(self) -> np.ndarray: ...  # (E,) prior variances

    def columns(self, idx: np.ndarray) -> np.ndarray: ...  # (E, len(idx)) K[:, idx]

    def dense(self) -> np.ndarray: ...  # (E, E), Fortran order


def exact_solve(
    kernel: KernelSource, prior_mean: np.ndarray, edges: np.ndarray, counts: np.ndarray, means: np.ndarray, noise: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From-scratch posterior ``(mu (E,), var (E,), B (E, |U|))`` with ``Sigma = K - B B^T``.

    Args:
        edges: ``(U,)`` distinct observed edges; counts: ``(U,)`` ``n_u >= 1``; means: ``(U,)`` ``ybar_u``.
    """
    mu = np.array(prior_mean, dtype=np.float64, copy=True)
    var = kernel.diag().copy()
    if len(edges) == 0:
        return mu, var, np.zeros((kernel.n, 0))
    kxu = kernel.columns(edges)
    a = kxu[edges] + np.diag(noise / counts)
    l_ = jittered_cholesky(0.5 * (a + a.T))
    dmu, dvar, b = condition(l_, kxu, means - prior_mean[edges])  # the exact-GP core; b = K_{.U} L^-T
    mu += dmu
    var -= dvar
    return mu, var, b


class DensePosterior:
    """Dense exact posterior: ``mu`` ``(E,)`` and ``Sigma`` ``(E, E)`` (lower triangle), rank-``k`` updates.

    Args:
        device: ``None`` for NumPy + BLAS ``dsyrk`` (CPU), else a torch device (full-matrix torch updates).
    """

    def __init__(self, kernel: KernelSource, prior_mean: np.ndarray, noise: float, device: Any = None) -> None:
        self.kernel, self.prior_mean, self.noise = kernel, np.asarray(prior_mean, dtype=np.float64), float(noise)
        self.device = device
        self.n = kernel.n
        self._k = kernel.dense()  # (E, E) prior covariance, Fortran order (symmetric)
        self.mu = self.prior_mean.copy()
        self.sigma: Any = None
        self.refresh(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))

    # -------------------------------------------------------------------------------------------- refresh
    def refresh(self, edges: np.ndarray, counts: np.ndarray, means: np.ndarray) -> None:
        """Exact posterior from the sufficient statistics (bounds the round-off of the rank-k updates)."""
        mu, _, b = exact_solve(_DenseView(self._k), self.prior_mean, edges, counts, means, self.noise)
        sig = np.array(self._k, order="F", copy=True)
        if b.shape[1]:
            sig = blas.dsyrk(-1.0, b, beta=1.0, c=sig, trans=0, lower=1, overwrite_c=1)
        if self.device is None:
            self.sigma = sig
        else:
            import torch

            full = np.tril(sig) + np.tril(sig, -1).T
            self.sigma = torch.as_tensor(full, device=self.device)
        self.mu = mu

    # ------------------------------------------------------------------------------------------- marginals
    @property
    def var(self) -> np.ndarray:
        if self.device is None:
            return np.diagonal(self.sigma).copy()
        return self.sigma.diagonal().cpu().numpy()

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``Sigma[:, idx]`` ``(E, k)`` (NumPy)."""
        if self.device is not None:
            import torch

            return self.sigma[:, torch.as_tensor(idx, device=self.device)].cpu().numpy()
        s = self.sigma
        out = np.empty((self.n, len(idx)), order="F")
        for j, r in enumerate(idx):  # lower triangle valid: Sigma[i, r] = s[i, r] (i >= r), s[r, i] (i < r)
            out[r:, j] = s[r:, r]
            out[:r, j] = s[r, :r]
        return out

    def condition(self, edges: np.ndarray, y: np.ndarray) -> None:
        """Condition on ``k`` observations ``y`` ``(k,)`` of ``edges`` ``(k,)`` (repeats allowed)."""
        c = self.columns(edges)
        l_ = jittered_cholesky(c[edges] + self.noise * np.eye(len(edges)))
        w = solve_lower(l_, c.T)  # (k, E)
        self.mu += w.T @ solve_lower(l_, y - self.mu[edges])
        if self.device is None:
            self.sigma = blas.dsyrk(-1.0, np.asfortranarray(w), beta=1.0, c=self.sigma, trans=1, lower=1, overwrite_c=1)
        else:
            import torch

            wt = torch.as_tensor(w, device=self.device)
            self.sigma.addmm_(wt.T, wt, alpha=-1.0)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One joint draw ``(E,)`` from ``N(mu, Sigma)`` (Cholesky of ``Sigma``: ``E^3 / 3``; for checks)."""
        s = self.sigma if self.device is None else self.sigma.cpu().numpy()
        full = np.tril(s) + np.tril(s, -1).T
        l_ = jittered_cholesky(full)
        return self.mu + l_ @ rng.standard_normal(self.n)


class _DenseView:
    """A dense ``K`` as a :class:`KernelSource`."""

    def __init__(self, k: np.ndarray) -> None:
        self.k, self.n = k, k.shape[0]

    def diag(self) -> np.ndarray:
        return np.diagonal(self.k).copy()

    def columns(self, idx: np.ndarray) -> np.ndarray:
        return self.k[:, idx]

    def dense(self) -> np.ndarray:
        return self.k


class LowRankPosterior:
    """Exact posterior without any ``E x E`` matrix: ``Sigma = K - K_{.U} A^-1 K_{U.}`` over the visited edges.

    Keeps ``K_{.U}`` ``(E, |U|)`` (columns appended as edges are first visited, in ``(E, 256)`` blocks so that growing
    it never copies it), ``chol(A)`` (recomputed per round, ``|U|^3 / 3``), the exact mean, and the marginal
    variances (rank-``k`` updates, exact at each refresh).
    """

    BLOCK = 256
    PIECE = 256  # kernel columns per call: the context kernel's E x PIECE temporaries (206 MB each at E = 100k)

    def __init__(self, kernel: KernelSource, prior_mean: np.ndarray, noise: float) -> None:
        self.kernel, self.prior_mean, self.noise = kernel, np.asarray(prior_mean, dtype=np.float64), float(noise)
        self.n = kernel.n
        self._prior_var = kernel.diag()
        self.edges = np.zeros(0, np.int64)  # U, in order of first visit
        self._slot = np.full(self.n, -1, np.int64)
        self._blocks: list[np.ndarray] = []  # K_{.U} in (E, BLOCK) Fortran blocks
        self._counts = np.zeros(0)
        self._means = np.zeros(0)
        self._l: np.ndarray | None = None
        self.mu = self.prior_mean.copy()
        self.var = self._prior_var.copy()

    def _add_edges(self, edges: np.ndarray) -> None:
        """Append the columns of edges not yet in ``U`` (in the given order; repeats count once)."""
        new = edges[self._slot[edges] < 0]
        _, first = np.unique(new, return_index=True)
        new = new[np.sort(first)]
        if not len(new):
            return
        m0 = len(self.edges)
        done = 0
        while done < len(new):
            if done % self.PIECE == 0:  # kernel columns in pieces: their E x piece temporaries stay bounded
                cols, at = self.kernel.columns(new[done : done + self.PIECE]), done
            b, off = divmod(m0 + done, self.BLOCK)
            if b == len(self._blocks):
                self._blocks.append(np.empty((self.n, self.BLOCK), order="F"))
            take = min(self.BLOCK - off, len(new) - done, at + self.PIECE - done)
            self._blocks[b][:, off : off + take] = cols[:, done - at : done - at + take]
            done += take
        self._slot[new] = np.arange(m0, m0 + len(new))
        self.edges = np.concatenate([self.edges, new])
        self._counts = np.concatenate([self._counts, np.zeros(len(new))])
        self._means = np.concatenate([self._means, np.zeros(len(new))])

    # ------------------------------------------------------------------ K_{.U} in blocks
    def _spans(self, m: int) -> list[tuple[np.ndarray, int, int]]:
        """``(block, lo, hi)``: the blocks holding columns ``lo:hi`` of the first ``m`` columns of ``K_{.U}``."""
        return [
            (blk, b * self.BLOCK, min((b + 1) * self.BLOCK, m))
            for b, blk in enumerate(self._blocks)
            if b * self.BLOCK < m
        ]

    def _kxu_rows(self, rows: np.ndarray, m: int) -> np.ndarray:
        """``K[rows, U[:m]]`` ``(len(rows), m)``."""
        return np.hstack([blk[rows, : hi - lo] for blk, lo, hi in self._spans(m)])

    def _kxu_cols(self, slots: np.ndarray) -> np.ndarray:
        """``K[:, U[slots]]`` ``(E, len(slots))``, Fortran order."""
        out = np.empty((self.n, len(slots)), order="F")
        b, off = np.divmod(slots, self.BLOCK)
        for bb in np.unique(b):
            sel = np.flatnonzero(b == bb)
            out[:, sel] = self._blocks[bb][:, off[sel]]
        return out

    def _kxu_matmul(self, z: np.ndarray, m: int, c: np.ndarray | None = None, alpha: float = 1.0) -> np.ndarray:
        """``c + alpha K_{.U[:m]} z`` for ``z`` ``(m, k)`` (``c`` ``(E, k)`` Fortran, updated in place; ``None``: 0)."""
        for blk, lo, hi in self._spans(m):
            beta = 0.0 if c is None else 1.0
            c = blas.dgemm(alpha, blk[:, : hi - lo], z[lo:hi], beta=beta, c=c, overwrite_c=1)
        return np.zeros((self.n, z.shape[1]), order="F") if c is None else c

    @property
    def kxu(self) -> np.ndarray:
        """``K_{.U}`` ``(E, |U|)`` as one array (a copy; for checks)."""
        return self._kxu_cols(np.arange(len(self.edges)))

    def _factor(self) -> None:
        """``chol(A)`` and the exact mean from the current statistics (only edges observed at least once)."""
        m = len(self.edges)
        if m == 0:
            self._l = None
            return
        a = self._kxu_rows(self.edges, m) + np.diag(self.noise / np.maximum(self._counts, 1e-300))
        self._l = jittered_cholesky(0.5 * (a + a.T))
        alpha = solve_lower(self._l, solve_lower(self._l, self._means - self.prior_mean[self.edges]), trans=1)
        self.mu = self.prior_mean + self._kxu_matmul(alpha[:, None], m)[:, 0]

    def refresh(self, edges: np.ndarray, counts: np.ndarray, means: np.ndarray, chunk: int = 4096) -> None:
        """Exact posterior (mean and marginal variances) from the sufficient statistics."""
        self._add_edges(np.asarray(edges, np.int64))
        self._counts[:] = 0.0
        self._means[:] = 0.0
        s = self._slot[edges]
        self._counts[s], self._means[s] = counts, means
        self._factor()
        self.var = self._prior_var.copy()
        if self._l is not None:
            m = len(self.edges)
            for i in range(0, self.n, chunk):  # (|U|, chunk) = L^-1 K_{U, chunk}: no second E x |U| array
                rows = np.arange(i, min(i + chunk, self.n))
                b = solve_lower(self._l, self._kxu_rows(rows, m).T)
                self.var[rows] -= np.einsum("ij,ij->j", b, b)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """``Sigma[:, idx]`` ``(E, k)`` for edges already in ``U``."""
        kxr = self._kxu_cols(self._slot[idx])
        if self._l is None:
            return kxr
        m = len(self._l)  # the factor covers the edges observed before this round (a prefix of U)
        z = solve_lower(self._l, solve_lower(self._l, kxr[self.edges[:m]]), trans=1)
        return self._kxu_matmul(z, m, c=kxr, alpha=-1.0)  # in place: E |U| k

    def condition(self, edges: np.ndarray, y: np.ndarray) -> None:
        """Condition on ``k`` observations: variances by the rank-``k`` update, the mean exactly."""
        self._add_edges(edges)
        c = self.columns(edges)  # (E, k), Fortran order
        l_ = jittered_cholesky(c[edges] + self.noise * np.eye(len(edges)))
        w = blas.dtrsm(1.0, l_, c, side=1, lower=1, trans_a=1, overwrite_b=1)  # C L^-T in place (E k^2)
        self.var -= np.einsum("ij,ij->i", w, w)
        s = self._slot[edges]
        for si, yi in zip(s, y, strict=True):  # running means of the statistics
            self._counts[si] += 1.0
            self._means[si] += (yi - self._means[si]) / self._counts[si]
        self._factor()
