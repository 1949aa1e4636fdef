"""Linear (sum) readings of the edge energies reduced to the sufficient statistics of their exact Gaussian posterior
(:mod:`evroute.models.linear_obs`, which computes the posterior from them and re-exports these names).

``m`` readings ``y = A f_edges + eps``, ``eps ~ N(0, R)`` (``A`` the driven share of each edge per reading, ``R``
their joint noise covariance, :mod:`evroute.traces.observations`) enter the posterior only through

    Lambda = sum_batches A^T R^-1 A      (sparse ``(E, E)``, Wh^-2)
    h      = sum_batches A^T R^-1 y      (``(E,)``, Wh^-1)

and, for the marginal likelihood, ``sum y^T R^-1 y`` and ``sum log det R``.  :func:`reading_batch` reduces one batch
(a pure function, so a worker process can run it); :class:`LinearStatistics` adds batches (the same statistics bit
for bit wherever each batch was computed) and stores them in a model file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from evroute.errors import DataError, ParameterError
from evroute.kernels.linalg import solve_lower


@dataclass(frozen=True)
class ReadingBatch:
    """One batch of linear readings reduced to its share of the sufficient statistics (:func:`reading_batch`).

    Attributes:
        edges: ``(k,)`` distinct edge indices.
        gram: ``(k, k)`` ``A^T R^-1 A``, Wh^-2.
        h: ``(k,)`` ``A^T R^-1 y``, Wh^-1.
        readings: ``m``, the number of readings.
        yry: ``y^T R^-1 y``; logdet_r: ``log det R`` (``R`` in Wh^2).
    """

    edges: np.ndarray
    gram: np.ndarray
    h: np.ndarray
    readings: int
    yry: float
    logdet_r: float


def reading_batch(
    edges: np.ndarray, a: np.ndarray, y: np.ndarray, noise_cov: np.ndarray, *, banded: bool = False
) -> ReadingBatch:
    """The contribution of ``m`` readings ``y = A f_edges + eps``, ``eps ~ N(0, noise_cov)`` to
    :class:`LinearStatistics` (``R = L L^T``, ``G = L^-1 A``: ``gram = G^T G``, ``h = G^T L^-1 y``); a pure function
    of its arguments, so it can run in a worker process.

    Args:
        edges: ``(k,)`` distinct edge indices the readings involve.
        a: ``(m, k)`` weights (driven share of each edge per reading).
        y: ``(m,)`` readings, Wh.
        noise_cov: ``(m, m)`` symmetric positive definite noise covariance, Wh^2; ``banded``: a tridiagonal one as its
            ``(2, m)`` lower band (diagonal, sub-diagonal; :attr:`evroute.traces.observations.Readings.noise_band`).
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1)
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    r = np.atleast_2d(np.asarray(noise_cov, dtype=np.float64))
    if banded and r.shape == (2, len(y)) and len(y) <= 2:  # the dense path below, as for the full matrix
        r, banded = np.diag(r[0]) + np.diag(r[1, :-1], -1) + np.diag(r[1, :-1], 1), False
    if a.shape != (len(y), len(e)) or r.shape != ((2, len(y)) if banded else (len(y), len(y))):
        raise ParameterError(f"readings: A {a.shape}, y {y.shape}, R {r.shape} do not fit {len(e)} edges")
    if len(np.unique(e)) != len(e) or (len(e) and e.min() < 0):
        raise ParameterError("readings: edges must be distinct non-negative indices")
    if not (np.isfinite(a).all() and np.isfinite(y).all() and np.isfinite(r).all()):
        raise DataError("readings contain NaN or inf")
    if len(y) == 0:
        return ReadingBatch(e, np.zeros((len(e), len(e))), np.zeros(len(e)), 0, 0.0, 0.0)
    r = r if banded else 0.5 * (r + r.T)
    try:
        if banded or (len(y) > 2 and not np.triu(r, 2).any()):  # tridiagonal (a trace's windows): banded Cholesky
            import scipy.linalg

            band = r if banded else np.vstack([np.diag(r), np.r_[np.diag(r, -1), 0.0]])
            lb = scipy.linalg.cholesky_banded(band, lower=True)
            gw = scipy.linalg.solve_banded((1, 0), lb, np.column_stack([a, y]))
            g, w, diag_l = gw[:, :-1], gw[:, -1], lb[0]
        else:
            lr = np.linalg.cholesky(r)
            g, w, diag_l = solve_lower(lr, a), solve_lower(lr, y), np.diag(lr)  # R^-1/2 A, R^-1/2 y
    except np.linalg.LinAlgError:
        raise ParameterError("readings: the noise covariance is not positive definite") from None
    return ReadingBatch(e, g.T @ g, g.T @ w, len(y), float(w @ w), 2.0 * float(np.log(diag_l).sum()))


class LinearStatistics:
    """Sufficient statistics of linear readings: ``Lambda`` (sparse ``(E, E)``, Wh^-2), ``h`` (``(E,)``, Wh^-1)."""

    def __init__(self, n_edges: int) -> None:
        self.n_edges = int(n_edges)
        self.lam = sp.csr_matrix((self.n_edges, self.n_edges))
        self.h = np.zeros(self.n_edges)
        self.readings = 0
        #: ``sum y^T R^-1 y`` (Wh^0) and ``sum log det R`` over all readings: with ``Lambda`` and ``h`` they give the
        #: log marginal likelihood (:func:`log_marginal_likelihood`)
        self.yry = 0.0
        self.logdet_r = 0.0
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, edges: np.ndarray, a: np.ndarray, y: np.ndarray, noise_cov: np.ndarray) -> None:
        """Add ``m`` readings ``y = A f_edges + eps``, ``eps ~ N(0, noise_cov)`` (:func:`reading_batch`, then
        :meth:`add_batch`).

        Args:
            edges: ``(k,)`` distinct edge indices the readings involve.
            a: ``(m, k)`` weights (driven share of each edge per reading).
            y: ``(m,)`` readings, Wh.
            noise_cov: ``(m, m)`` symmetric positive definite noise covariance, Wh^2.
        """
        self.add_batch(reading_batch(edges, a, y, noise_cov))

    def add_batch(self, batch: ReadingBatch) -> None:
        """Add one batch's contribution (:func:`reading_batch`, computed here or in another process): adding the
        batches of a set of readings in the same order gives the same statistics, bit for bit, wherever each batch
        was computed."""
        e = batch.edges
        if len(e) and (e.min() < 0 or e.max() >= self.n_edges):
            raise ParameterError(f"readings: edges must be distinct indices in 0..{self.n_edges - 1}")
        if batch.readings == 0:
            return
        self._pending.append((e, batch.gram, batch.h))
        self.readings += batch.readings
        self.yry += batch.yry
        self.logdet_r += batch.logdet_r
        if len(self._pending) >= 256:
            self._flush()

    def add_direct(self, edges: np.ndarray, y: np.ndarray, noise_var: float | np.ndarray) -> None:
        """Single-edge readings (``a = e_u``): ``Lambda_uu += 1 / s_u^2``, ``h_u += y / s_u^2`` (repeats allowed)."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        w = 1.0 / np.broadcast_to(np.asarray(noise_var, dtype=np.float64), e.shape)
        yy = np.asarray(y, dtype=np.float64).reshape(-1)
        self.lam = self.lam + sp.csr_matrix((w, (e, e)), shape=self.lam.shape)
        np.add.at(self.h, e, w * yy)
        self.readings += len(e)
        self.yry += float(np.sum(w * yy * yy))
        self.logdet_r -= float(np.log(w).sum())

    def _flush(self) -> None:
        if not self._pending:
            return
        rows = np.concatenate([np.repeat(e, len(e)) for e, _, _ in self._pending])
        cols = np.concatenate([np.tile(e, len(e)) for e, _, _ in self._pending])
        vals = np.concatenate([g.ravel() for _, g, _ in self._pending])
        self.lam = (self.lam + sp.csr_matrix((vals, (rows, cols)), shape=self.lam.shape)).tocsr()
        for e, _, hv in self._pending:
            np.add.at(self.h, e, hv)
        self._pending = []

    def matrix(self) -> sp.csr_matrix:
        """``Lambda`` as a CSR matrix (pending batches folded in)."""
        self._flush()
        return self.lam

    def touched(self) -> np.ndarray:
        """``(|U|,)`` sorted indices of the edges any reading involved."""
        lam = self.matrix()
        return np.union1d(np.flatnonzero(np.diff(lam.indptr)), np.flatnonzero(self.h))

    def arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for a model file (``lin_row``, ``lin_col``, ``lin_val``, ``lin_h``, ``lin_readings``)."""
        coo = self.matrix().tocoo()
        return {
            "lin_row": coo.row.astype(np.int64),
            "lin_col": coo.col.astype(np.int64),
            "lin_val": coo.data.astype(np.float64),
            "lin_h": self.h.copy(),
            "lin_readings": np.array(self.readings, dtype=np.int64),
            "lin_yry_logdet": np.array([self.yry, self.logdet_r]),
        }

    @classmethod
    def from_arrays(cls, n_edges: int, a: dict[str, np.ndarray]) -> LinearStatistics:
        out = cls(n_edges)
        out.lam = sp.csr_matrix((a["lin_val"], (a["lin_row"], a["lin_col"])), shape=(n_edges, n_edges))
        out.h = np.asarray(a["lin_h"], dtype=np.float64).copy()
        out.readings = int(a["lin_readings"])
        out.yry, out.logdet_r = (float(v) for v in a["lin_yry_logdet"])
        return out


__all__ = ["LinearStatistics", "ReadingBatch", "reading_batch"]
