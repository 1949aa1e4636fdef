"""Dense graph Matérn Gram matrices and Laplacian eigenpairs, memoised per process (shared by models and environments).

* :func:`dense_graph_gram` -- the exact ``(E, E)`` normalised graph Matérn Gram matrix (unit mean diagonal, exactly
  symmetric): the exact GP edge model, the SVGP's fixed graph kernel and the environments' prior draw all use it;
* :func:`graph_eigenpairs` -- the Laplacian eigenpairs of the SVGP's learnable / eigen-truncated graph kernel.

Memoised per process on the Laplacian's bytes and the parameters (the last 4 results), so the seeds of a sweep on the
same network share them; the Gram matrix is also kept in the content-addressed compute cache on disk
(:mod:`evroute.network.computecache`, key: the Laplacian's checksum, ``nu``, ``kappa``, :data:`GRAM_VERSION`) for
``E`` between :data:`DISK_MIN_EDGES` and :data:`DISK_MAX_EDGES`, so the processes of a sweep compute it once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from evroute.kernels.graph_matern import GraphMaternKernel

__all__ = ["dense_graph_gram", "graph_eigenpairs", "laplacian_key"]

_MEMO: OrderedDict[tuple, object] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 4
#: Version of the Gram computation; part of the disk cache key (bump it when :func:`dense_graph_gram` changes).
GRAM_VERSION = 1
#: Edge counts whose Gram matrix goes to the disk cache: below, computing is as fast as loading (E = 1,000: 0.1 s);
#: above, the file would be too large (E = 16,000: 2 GB).
DISK_MIN_EDGES = 1000
DISK_MAX_EDGES = 16000


def laplacian_key(lap: sp.csr_matrix) -> str:
    h = hashlib.sha1()
    for a in (lap.indptr, lap.indices, lap.data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _memo(key: tuple, build: Callable[[], Any]) -> Any:
    with _MEMO_LOCK:
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    val = build()
    with _MEMO_LOCK:
        _MEMO[key] = val
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return val


def dense_graph_gram(
    lap: sp.csr_matrix, nu: float, kappa: float, key: str | None = None, *, memo: bool = True
) -> np.ndarray:
    """Exact ``(E, E)`` graph Matérn Gram matrix normalised to unit mean diagonal (memoised per process unless
    ``memo=False``; the memoised array is shared: do not modify it)."""
    key = key or laplacian_key(lap)

    def build() -> np.ndarray:
        if float(nu).is_integer():
            # integer nu: K = A^-nu with A = 2 nu / kappa^2 I + Delta, by LAPACK potrf + potri and a symmetric
            # product (syrk): 2 E^3 flops, half of a Cholesky solve against I plus a GEMM (same values to ~1e-11)
            g = GraphMaternKernel(lap, nu, kappa, method="sparse", normalise=False).dense()
        else:
            g = GraphMaternKernel(lap, nu, kappa, method="dense", normalise=False).dense()
        g = 0.5 * (g + g.T)
        g /= float(np.mean(np.diag(g)))
        return g

    def build_or_load() -> np.ndarray:
        if not DISK_MIN_EDGES <= lap.shape[0] <= DISK_MAX_EDGES:
            return build()
        from evroute.network.computecache import cached_compute

        inputs = {"laplacian_sha1": laplacian_key(lap), "nu": float(nu), "kappa": float(kappa), "version": GRAM_VERSION}
        return cached_compute("graph-gram", inputs, build, what="graph Gram matrix", array=True)

    if not memo:
        return build_or_load()
    return _memo(("gram", key, float(nu), float(kappa)), build_or_load)


def graph_eigenpairs(
    lap: sp.csr_matrix, method: str, n_eig: int, key: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Laplacian eigenpairs ``(lambda (k,), U (E, k))``: all (``"dense"``) or the ``n_eig`` smallest (``"eig"``)."""
    key = key or laplacian_key(lap)

    def build() -> tuple[np.ndarray, np.ndarray]:
        k = GraphMaternKernel(lap, 2.0, 1.0, method=method, n_eig=n_eig, normalise=False)
        return k.eigenpairs

    return _memo(("eig", key, method, int(n_eig) if method == "eig" else 0), build)
