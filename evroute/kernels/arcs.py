"""Composable kernels on turn arms (line-graph arcs ``a = (e, e')``), built from the edge kernel.

A turn arm drives edge ``e`` and leaves into ``e'`` (terminal arms: ``e`` and the trip's end; :mod:`evroute.arms`).
Its energy is modelled as the edge's energy plus a turn term::

    f(e, e') = g(e) + h(e, e'),    g ~ GP(m, k_E),    h ~ GP(0, s_3 k_E(e', .) k_T(z, .) [turn] [turn])

so the arc kernel is

    k((e, e'), (f, f')) = k_E(e, f) + s_3 k_E(e', f') k_T(z_a, z_b) t_a t_b

with ``k_E`` the edge kernel ``s_1 k_G k_f + s_2 k_f'`` of :mod:`evroute.kernels.edge` (graph Matérn times context
Matérn plus context Matérn), ``k_T`` a Matérn kernel on the standardised turn features ``z`` (turn angle, speed-limit
change, right of way: :meth:`evroute.linegraph.LineGraph.turn_features`) and ``t`` = 1 for a turn, 0 for a terminal
arm (whose energy is the edge's alone).  The head factor ``k_E(e', f')`` lets turns into similar edges (in the graph
and in their contexts) share their turn terms; ``k_T`` lets similar turns (a left turn onto a slower road, a
yield) share them across the network.  With ``s_3 = 0`` the kernel is the edge kernel of the arms' edges, and the
exact GP on turn arms gives every arm its edge's posterior (tested).

Every factor is an :class:`~evroute.kernels.edge.EdgeKernel` on *arm points* ``Points(idx, x)``: ``idx`` arm indices
and ``x`` the ``(k, 2 d + f + 1)`` arm features of :func:`arc_points` (contexts of ``e``, contexts of ``e'``, turn
features, turn flag), so they compose with the edge kernel's ``*``, ``+`` and ``scale`` (GPyTorch style) and one
definition, :func:`arc_kernel`, serves the exact GP (NumPy) and its marginal likelihood (torch):

* :class:`OnEdges` -- an edge kernel evaluated at the arms' tail (or head) edges and their context columns;
* :class:`OnColumns` -- any kernel on a slice of the feature columns (``k_T`` on the turn features);
* :class:`TurnFlag` -- ``t_a t_b`` from the flag column (rank one, positive semi-definite).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.kernels.edge import Array, ContextMatern, EdgeKernel, Points, edge_kernel

__all__ = ["OnColumns", "OnEdges", "TurnFlag", "arc_kernel", "arc_points"]


def arc_points(contexts: np.ndarray, tail: np.ndarray, head: np.ndarray, turn_features: np.ndarray) -> Points:
    """:class:`Points` of all ``A`` arms: ``idx=None`` and ``x`` ``(A, 2 d + f + 1)``.

    Args:
        contexts: ``(E, d)`` standardised edge contexts.
        tail, head: ``(A,)`` arm edges (``head = -1``: terminal arm, whose head columns repeat the tail's).
        turn_features: ``(C, f)`` features of the ``C`` turn arms (the arms with ``head >= 0``, in order).
    """
    tail, head = np.asarray(tail, dtype=np.int64), np.asarray(head, dtype=np.int64)
    turn = head >= 0
    z = np.zeros((len(tail), turn_features.shape[1]))
    z[turn] = turn_features
    x = np.hstack([contexts[tail], contexts[np.where(turn, head, tail)], z, turn[:, None].astype(np.float64)])
    return Points(None, x)


def _take(a: Any, idx: Any) -> Any:
    """``a[idx]`` for ``idx`` None (all), a slice or indices."""
    return a if idx is None else a[idx]


class OnEdges(EdgeKernel):
    """An edge kernel at the arms' edges: ``k(p, q) = edge(Points(edge_of[p.idx], p.x[:, cols]), ...)``.

    Args:
        edge: the edge kernel (e.g. :func:`evroute.kernels.edge.edge_kernel`).
        edge_of: ``(A,)`` the edge of each arm (tails or heads) as the edge kernel indexes edges (NumPy or torch).
        cols: the slice of the arm features holding those edges' contexts.
    """

    def __init__(self, edge: EdgeKernel, edge_of: Any, cols: slice) -> None:
        self.edge, self.edge_of, self.cols = edge, edge_of, cols

    def _points(self, p: Points) -> Points:
        return Points(_take(self.edge_of, p.idx), p.x[:, self.cols])

    def __call__(self, p: Points, q: Points) -> Array:
        return self.edge(self._points(p), self._points(q))

    def diag(self, p: Points) -> Array:
        return self.edge.diag(self._points(p))

    def pairs(self, p: Points, q: Points) -> Array:
        return self.edge.pairs(self._points(p), self._points(q))


class OnColumns(EdgeKernel):
    """A kernel on the feature columns ``cols`` of the points (their indices are kept)."""

    def __init__(self, kernel: EdgeKernel, cols: slice) -> None:
        self.kernel, self.cols = kernel, cols

    def _points(self, p: Points) -> Points:
        return Points(p.idx, p.x[:, self.cols])

    def __call__(self, p: Points, q: Points) -> Array:
        return self.kernel(self._points(p), self._points(q))

    def diag(self, p: Points) -> Array:
        return self.kernel.diag(self._points(p))

    def pairs(self, p: Points, q: Points) -> Array:
        return self.kernel.pairs(self._points(p), self._points(q))


class TurnFlag(EdgeKernel):
    """``k(p, q) = t_p t_q`` with ``t`` the feature column ``col`` (1 for a turn arm, 0 for a terminal arm)."""

    def __init__(self, col: int) -> None:
        self.col = col

    def __call__(self, p: Points, q: Points) -> Array:
        return p.x[:, self.col][:, None] * q.x[:, self.col][None, :]

    def diag(self, p: Points) -> Array:
        return p.x[:, self.col] ** 2

    def pairs(self, p: Points, q: Points) -> Array:
        return p.x[:, self.col] * q.x[:, self.col]


def arc_kernel(
    graph: Any,
    tail: Any,
    head: Any,
    d: int,
    f: int,
    s1: Any,
    s2: Any,
    ls1: Any,
    ls2: Any,
    s3: Any,
    ls3: Any,
    nu: float = 2.5,
) -> EdgeKernel:
    """The arc kernel of the module doc, ``k_E(tail) + s_3 k_E(head) k_T t t``, on :func:`arc_points` features.

    Args:
        graph: the graph kernel ``k_G`` on edges (:class:`~evroute.kernels.edge.GraphKernel`).
        tail, head: ``(A,)`` edge index (as ``graph`` indexes edges) of each arm's tail and head (terminal arms: any
            valid edge, e.g. the tail; their turn term is 0).
        d, f: numbers of edge contexts and of turn features; s1, s2, ls1, ls2: the edge kernel's outputscales and
            lengthscales; s3: turn outputscale (model units); ls3: scalar or ``(f,)`` turn-feature lengthscales;
            nu: Matérn smoothness.
    """
    edge = edge_kernel(graph, s1, s2, ls1, ls2, nu)
    turn = OnColumns(ContextMatern(ls3, nu), slice(2 * d, 2 * d + f))
    term = (OnEdges(edge, head, slice(d, 2 * d)) * turn * TurnFlag(2 * d + f)).scale(s3)
    return OnEdges(edge, tail, slice(0, d)) + term
