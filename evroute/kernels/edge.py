"""Composable kernels on the edges of the road network: the edge kernel ``s_1 k_G k_f + s_2 k_f'`` defined once.

An edge kernel is a :class:`~evroute.kernels.base.Kernel` (the project's one kernel interface) on :class:`Points`
(edges and their contexts); kernels compose GPyTorch-style with ``*`` (:class:`~evroute.kernels.base.Product`), ``+``
(:class:`~evroute.kernels.base.Sum`) and ``scale`` (:class:`~evroute.kernels.base.Scaled`), defined once in
:mod:`evroute.kernels.base` for every kind of point.  The building blocks:

* :class:`GraphKernel` -- the normalised graph Matérn kernel ``k_G`` on line-graph nodes, from any of the graph
  sources of :mod:`evroute.kernels.graph_matern` (a dense Gram matrix, sparse-solve columns, truncated local columns)
  or the torch module of the SVGP (:class:`evroute.models.gp_kernels.GraphMaternIndexKernel`, through its
  ``block`` / ``diag_values``);
* :class:`ContextMatern` -- a Matérn kernel (:func:`evroute.kernels.matern.matern`, per-dimension lengthscales) on the
  standardised edge contexts.

:func:`edge_kernel` builds the paper's kernel ``k((e, x), (e', x')) = s_1 k_G(e, e') k_f(x, x') + s_2 k_f'(x, x')``
(paper Sec. 4, appendix B.1), evaluated as ``(s_1 K_G) o K_f + s_2 K_f'``.  One definition serves every user:

* NumPy float64 (parameters floats / arrays): the exact GP edge model (:mod:`evroute.models.gp_exact`) and the
  environments' exact prior draw (:func:`evroute.environments.paper.prior_kernel`; above ``dense_max`` edges their
  random-feature draw approximates the same kernel);
* torch (parameters tensors, differentiable): the SVGP and the time-aware GP
  (:class:`evroute.models.gp_kernels.EdgeContextKernel`).  The exact GP's marginal likelihood
  (:mod:`evroute.models.gp_exact_mll`) assembles the same kernel from its NumPy parts for the analytic gradient.

Kernels are evaluated on :class:`Points`: edge indices (what ``k_G`` reads; ``None`` for all edges in order) and
their ``(k, d)`` contexts (what ``k_f`` reads), NumPy or torch.  A graph source of truncated local columns gives SciPy
sparse blocks; :class:`Product` then evaluates its other factor only at the non-zeros (:meth:`EdgeKernel.pairs`) and
:class:`Sum` adds the sparse block into the dense one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from evroute.kernels.base import Array, Kernel, Product, Scaled, Sum
from evroute.kernels.graph_matern import GraphMaternKernel
from evroute.kernels.graph_matern_local import LocalGraphMatern
from evroute.kernels.matern import matern, scaled_cdist

__all__ = [
    "ContextMatern",
    "EdgeKernel",
    "GraphKernel",
    "Points",
    "Product",
    "Scaled",
    "Sum",
    "edge_kernel",
    "edge_points",
]


class Points(NamedTuple):
    """Points of an edge kernel: ``k`` edges and their contexts."""

    idx: Any  # (k,) integer edge indices (NumPy or torch), a slice, or None: all edges 0..E-1 in order
    x: Array  # (k, d) standardised contexts of those edges

    def take(self, rows: np.ndarray) -> Points:
        """The points at positions ``rows`` ``(m,)``."""
        return Points(rows if self.idx is None else self.idx[rows], self.x[rows])


def edge_points(contexts: Array, idx: Any = None) -> Points:
    """:class:`Points` of the edges ``idx`` (``None``: all, a slice, or indices) given all ``(E, d)`` contexts."""
    return Points(idx, contexts if idx is None else contexts[idx])


def _is_torch(a: Any) -> bool:
    return type(a).__module__.startswith("torch")


#: the edge kernels are :class:`~evroute.kernels.base.Kernel` s on :class:`Points` (the name kept for their users)
EdgeKernel = Kernel


class GraphKernel(EdgeKernel):
    """The graph Matérn kernel ``k_G`` on line-graph nodes (reads the points' edge indices) from one of its sources.

    Args:
        source: a dense ``(E, E)`` Gram matrix (NumPy or torch), a
            :class:`~evroute.kernels.graph_matern.GraphMaternKernel` (columns by sparse solves), a
            :class:`~evroute.kernels.graph_matern_local.LocalGraphMatern` (sparse truncated columns: blocks against all
            edges only), or any object with ``n``, ``block(i, j)`` and ``diag_values()`` (the SVGP's torch module).
        diag: ``(E,)`` prior variances, when the source's own are not the ones to use.
    """

    def __init__(self, source: Any, diag: Array | None = None) -> None:
        self.source = source
        self.dense = isinstance(source, np.ndarray) or _is_torch(source)
        self.columns = isinstance(source, GraphMaternKernel | LocalGraphMatern)
        self.n = int(source.shape[0]) if self.dense else int(source.n)
        self._diag = diag

    def _prior_var(self) -> Array:
        if self._diag is not None:
            return self._diag
        if self.dense:
            self._diag = self.source.diagonal()
            return self._diag
        if self.columns:
            self._diag = self.source.diag()
            return self._diag
        return self.source.diag_values()  # the torch module: its parameters may change between calls

    def _every(self) -> Any:
        import torch

        return torch.arange(self.n, device=self.source.raw_kappa.device)

    def __call__(self, p: Points, q: Points) -> Array:
        s, i, j = self.source, p.idx, q.idx
        if self.dense:
            if j is None or i is None or isinstance(i, slice) or isinstance(j, slice):
                rows = s if i is None else s[i]
                return rows if j is None else rows[:, j]
            return s[i[:, None], j[None, :]]
        if not self.columns:
            return s.block(self._every() if i is None else i, self._every() if j is None else j)
        jj = np.arange(self.n) if j is None else np.asarray(j, dtype=np.int64)
        cols = s.sparse_columns(jj)[0] if isinstance(s, LocalGraphMatern) else s.columns(jj)
        return cols if i is None else cols[i]

    def diag(self, p: Points) -> Array:
        d = self._prior_var()
        return d if p.idx is None else d[p.idx]

    def pairs(self, p: Points, q: Points) -> Array:
        if self.dense:
            return self.source[p.idx, q.idx]
        if not self.columns:
            return self.source.block(p.idx, q.idx).diagonal()
        j = np.asarray(q.idx, dtype=np.int64)
        cols = self(Points(None, None), Points(j, None))
        return np.asarray(cols[np.asarray(p.idx), np.arange(len(j))]).reshape(-1)


class ContextMatern(EdgeKernel):
    """Matérn kernel on the edge contexts: ``k(x, x') = matern(||(x - x') / lengthscale||, 1, nu)``, ``k(x, x) = 1``.

    Args:
        lengthscale: a scalar or ``(d,)`` lengthscales (floats / NumPy, or a torch tensor, e.g. with gradient).
        nu: smoothness in {1/2, 3/2, 5/2} (:func:`evroute.kernels.matern.matern`).
    """

    def __init__(self, lengthscale: Any, nu: float = 2.5) -> None:
        self.lengthscale, self.nu = lengthscale, float(nu)

    def _ls(self, x: Array) -> Any:
        if _is_torch(self.lengthscale) or _is_torch(x):
            return self.lengthscale
        return np.broadcast_to(np.asarray(self.lengthscale, dtype=np.float64), (x.shape[1],))

    def __call__(self, p: Points, q: Points) -> Array:
        return matern(scaled_cdist(p.x, q.x, self._ls(p.x)), 1.0, self.nu)

    def diag(self, p: Points) -> Array:
        if _is_torch(p.x):
            import torch

            return torch.ones(p.x.shape[0], dtype=p.x.dtype, device=p.x.device)
        return np.ones(p.x.shape[0])

    def pairs(self, p: Points, q: Points) -> Array:
        ls = self._ls(p.x)
        d = p.x / ls - q.x / ls
        if _is_torch(d):
            return matern((d * d).sum(-1).sqrt(), 1.0, self.nu)
        return matern(np.sqrt(np.sum(d**2, axis=1)), 1.0, self.nu)


def edge_kernel(graph: GraphKernel, s1: Any, s2: Any, ls1: Any, ls2: Any, nu: float = 2.5) -> EdgeKernel:
    """The paper's edge kernel ``s_1 k_G k_f + s_2 k_f'``, evaluated as ``(s_1 K_G) o K_f + s_2 K_f'``.

    Args:
        graph: ``k_G``; s1, s2: outputscales (model units); ls1, ls2: scalar or ``(d,)`` lengthscales of ``k_f``,
            ``k_f'``; nu: Matérn smoothness of ``k_f`` and ``k_f'`` (the paper: 5/2).
    """
    return graph.scale(s1) * ContextMatern(ls1, nu) + ContextMatern(ls2, nu).scale(s2)
