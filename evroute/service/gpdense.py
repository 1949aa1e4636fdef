"""The exact GP served in array form: the prior kernel of all edges as one ``(E, E)`` matrix (computed once and kept
in the compute cache) and the saved sufficient statistics, so that a server starts and answers in milliseconds.

A saved exact-GP model (:mod:`evroute.models.store`) holds the prior mean, the hyperparameters and, per observed
edge ``u``, the count ``n_u`` and the sum of its energies.  With the prior kernel ``K`` (units of ``sigma0^2 = s^2``,
the kernel of the model's serve form: graph-kernel columns by local solves, :func:`evroute.models.store.load_model`
with ``serve=True``; column ``j`` of the matrix is the kernel column of edge ``j``, as computed), ``A = K_UU +
diag(noise / n_U)`` (``noise`` relative to ``s^2``) and ``A = L L^T``::

    mean  = s (m0 + K_:U A^-1 (ybar_U - m0_U)),     m0 = prior mean / s, ybar_U = sums / (n_U s)
    Sigma = s^2 (K - W^T W),                        W = L^-1 K_:U^T   (U x E, kept)
    var   = diag(Sigma),   noise_var = noise s^2

-- the exact posterior of :mod:`evroute.models.exact_posterior`, as :class:`evroute.driver.belief.RouteBelief`
computes it from the model.  A route's covariance is then a ``(k, U) x (U, k)`` product of kept arrays (no kernel
column to compute at query time).  ``K`` depends on the network and the hyperparameters only, not on the
observations: it is computed once per (network, hyperparameters) -- ``E`` local graph solves, seconds to a minute on
Luxembourg -- and kept in the compute cache (:func:`evroute.network.computecache.cached_compute`; 255 MB on
Luxembourg's 5644 edges), so later starts, and new model versions, only factor ``A`` and form ``W``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg

from evroute.driver.belief import RouteBelief
from evroute.kernels.linalg import jittered_cholesky
from evroute.linegraph import LineGraph

#: bump when the kernel computation below changes (part of the cache key)
KERNEL_VERSION = 1


def prior_kernel(path: str | Path, lg: LineGraph, header: dict[str, Any], block: int = 256) -> np.ndarray:
    """``(E, E)`` prior kernel of the exact GP saved in ``path`` (relative to ``s^2``), from the compute cache or
    computed in column blocks of ``block`` (kernel columns of the model's serve form)."""
    from evroute.models.store import load_model, network_hash
    from evroute.network.computecache import cached_compute

    def compute() -> np.ndarray:
        model: Any = load_model(path, lg, serve=True, observations=False)[0]
        kernel = model.kernel()
        n = lg.n_nodes
        out = np.empty((n, n), dtype=np.float64)
        for j in range(0, n, block):
            idx = np.arange(j, min(j + block, n))
            out[:, idx] = kernel.columns(idx)
        return out  # as computed (not symmetrised): the same numbers RouteBelief's kernel columns give

    hp = header["hyperparameters"]
    inputs = {
        "network": network_hash(lg),
        "hyperparameters": {k: hp[k] for k in sorted(hp) if k not in ("prior_var", "noise_var")},
        "lengthscales": np.load(path, allow_pickle=False)["lengthscale_f"].tolist(),
        "lengthscales2": np.load(path, allow_pickle=False)["lengthscale_f2"].tolist(),
        "version": KERNEL_VERSION,
    }
    # memory-mapped: the belief reads the observed edges' columns and the diagonal, routes their own blocks
    return cached_compute("serve-kernel", inputs, compute, what="served GP kernel", array=True, mmap=True)


@dataclass(frozen=True)
class DenseGP:
    """An exact GP's prior and sufficient statistics in array form (module doc); immutable, :meth:`updated` makes
    the next version sharing ``kernel``.

    Attributes:
        kernel: ``(E, E)`` prior kernel relative to ``s^2``.
        prior_mean_wh: ``(E,)``; scale: ``s`` (Wh); noise: the noise variance relative to ``s^2``.
        edges, counts, sums_wh: ``(U,)`` observed edges, their observation counts and energy sums (Wh).
    """

    kernel: np.ndarray
    prior_mean_wh: np.ndarray
    scale: float
    noise: float
    edges: np.ndarray
    counts: np.ndarray
    sums_wh: np.ndarray

    @classmethod
    def from_file(cls, path: str | Path, lg: LineGraph, header: dict[str, Any]) -> DenseGP:
        a = np.load(path, allow_pickle=False)
        hp = header["hyperparameters"]
        return cls(
            prior_kernel(path, lg, header),
            np.asarray(a["prior_mean_wh"], dtype=np.float64),
            float(np.sqrt(float(hp["prior_var"]))),
            float(hp["noise_var"]) / float(hp["prior_var"]),
            np.asarray(a["edges"], dtype=np.int64),
            np.asarray(a["counts"], dtype=np.float64),
            np.asarray(a["sum_y"], dtype=np.float64),
        )

    @property
    def n_edges(self) -> int:
        return len(self.prior_mean_wh)

    @property
    def observations(self) -> int:
        return int(self.counts.sum())

    def updated(self, edges: np.ndarray, energies_wh: np.ndarray) -> DenseGP:
        """The next version: ``energies_wh`` (Wh) observed on ``edges`` (line-graph indices, ``(k,)`` each)."""
        e = np.asarray(edges, dtype=np.int64)
        y = np.asarray(energies_wh, dtype=np.float64)
        order = {int(x): i for i, x in enumerate(self.edges.tolist())}
        new = [int(x) for x in dict.fromkeys(e.tolist()) if int(x) not in order]
        edges_all = np.concatenate([self.edges, np.asarray(new, dtype=np.int64)])
        pos = {int(x): i for i, x in enumerate(edges_all.tolist())}
        counts = np.concatenate([self.counts, np.zeros(len(new))])
        sums = np.concatenate([self.sums_wh, np.zeros(len(new))])
        idx = np.array([pos[int(x)] for x in e], dtype=np.int64)
        np.add.at(counts, idx, 1.0)
        np.add.at(sums, idx, y)
        return replace(self, edges=edges_all, counts=counts, sums_wh=sums)


class DenseGPBelief(RouteBelief):
    """:class:`~evroute.driver.belief.RouteBelief` of a :class:`DenseGP` (module doc): the same attributes and
    methods, with the route covariance from kept arrays.

    Args:
        gp: the statistics and kernel.
        floor_wh: ``(E,)`` lower bound of the posterior means (the elevation potential, as RouteBelief's
            ``potential_wh``); offset_wh: ``(E,)`` added to the means afterwards (models of reduced energies,
            :func:`evroute.driver.query.reduced_offset_wh`); trip_rel_var, noise_mult: ``tau^2`` of the trip-level
            effect and the whole-trip multiplier of the traversal noise learned from logs (as RouteBelief's).
    """

    def __init__(
        self,
        gp: DenseGP,
        floor_wh: np.ndarray | None = None,
        offset_wh: np.ndarray | None = None,
        trip_rel_var: float = 0.0,
        noise_mult: float = 1.0,
    ) -> None:
        s, k, u = gp.scale, gp.kernel, gp.edges
        m0 = gp.prior_mean_wh / s
        if len(u):
            a = k[np.ix_(u, u)] + np.diag(gp.noise / gp.counts)
            chol = jittered_cholesky(a)
            resid = gp.sums_wh / (gp.counts * s) - m0[u]
            alpha = scipy.linalg.cho_solve((chol, True), resid)
            w = scipy.linalg.solve_triangular(chol, k[:, u].T, lower=True, check_finite=False)
            mean = s * (m0 + k[:, u] @ alpha)
            var = s * s * (np.diag(k) - np.einsum("ij,ij->j", w, w))
        else:
            w = np.zeros((0, gp.n_edges))
            mean, var = gp.prior_mean_wh.copy(), s * s * np.diag(k).copy()
        self.model = gp  # type: ignore[assignment]  # what this belief serves (not an EdgeModel)
        self.mean = mean if floor_wh is None else np.maximum(mean, floor_wh)
        self.trip_rel_var = float(trip_rel_var)
        self.effect_mean = np.maximum(self.mean.copy(), 0.0)  # the means the trip effect scales (before the offset)
        if offset_wh is not None:
            self.mean = self.mean + offset_wh
        self.var = np.maximum(var, 0.0)
        self.noise_var = np.full(gp.n_edges, noise_mult * gp.noise * s * s)
        self.n_edges = gp.n_edges
        self.joint = True
        self._k, self._w, self._s2 = k, w, s * s

    def cov(self, edges: np.ndarray) -> np.ndarray:
        """``(k, k)`` posterior covariance (Wh^2) of the expected energies of ``edges``."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        we = self._w[:, e]
        c = self._k[np.ix_(e, e)] - we.T @ we
        return 0.5 * (c + c.T) * self._s2

    def route_moments(self, edges: np.ndarray, *, trip: bool = True) -> tuple[float, float]:
        """``(mean, variance)`` of a route's energy (Wh, Wh^2); plus one drive's noise and the trip-level effect when
        ``trip`` (:meth:`RouteBelief.trip_var`)."""
        e = np.asarray(edges, dtype=np.int64).reshape(-1)
        mean = float(self.mean[e].sum())
        # 1^T (K_ee - W_e^T W_e) 1 = sum(K_ee) - |W_e 1|^2: O(U k), no (k x k) product
        we1 = self._w[:, e].sum(axis=1)
        var = float(self._k[np.ix_(e, e)].sum() - we1 @ we1) * self._s2
        if trip:
            var += self.trip_var(e)
        return mean, max(var, 0.0)


__all__ = ["KERNEL_VERSION", "DenseGP", "DenseGPBelief", "prior_kernel"]
