"""Exact GP on turn arms (``--model gp-exact --arms turn``): the exact GP edge model with the arc kernel.

The arms are the turns and terminal arms of :mod:`evroute.arms`; the prior is ``f ~ GP(m, k_arc)`` with the arc
kernel of :mod:`evroute.kernels.arcs` (``k_E`` of the tail edges plus ``s_3 k_E(heads) k_T(turn features)`` on turn
arms).  Everything else is :class:`~evroute.models.gp_exact.ExactGPEdgeModel`'s: per-arm sufficient statistics, the
exact posterior (:mod:`evroute.models.exact_posterior`, through its kernel-source interface ``n``, ``diag()``,
``columns(idx)``, ``dense()``), exact refreshes and type-II maximum-likelihood refits at doubling rounds.  The model
plugs in by overriding :meth:`ArcExactGPModel.kernel` (the kernel source) and
:meth:`ArcExactGPModel.fit_hyperparameters` (the arc kernel's marginal likelihood,
:func:`evroute.models.gp_arcs_mll.statistics_log_likelihood`, on the same :func:`~evroute.kernels.arcs.arc_kernel`
evaluated in torch).  Learnt: the edge kernel's outputscales and lengthscales, the turn outputscale ``s_3`` and the
turn-feature lengthscales (and the noise with ``learn_noise``).

The graph kernel stays one of edges (``E x E`` or local columns), so an arm's kernel column costs an edge column
gathered by the arms' tails and heads.  Methods are chosen on the number of ARMS (``dense_max``): above it the
low-rank posterior with local graph columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from evroute.errors import ParameterError
from evroute.kernels.arcs import arc_kernel, arc_points
from evroute.kernels.edge import GraphKernel, Points
from evroute.kernels.graph_matern_local import LocalGraphMatern
from evroute.models.gp_arcs_mll import maximise, statistics_log_likelihood
from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel
from evroute.models.gp_exact_mll import Hyper

__all__ = ["ArcExactGPModel", "ArcHyper", "ArcKernelColumns"]


@dataclass
class ArcHyper(Hyper):
    """:class:`~evroute.models.gp_exact_mll.Hyper` plus the turn term: outputscale ``s3`` and ``(f,)`` lengthscales."""

    s3: float = 0.0
    ls3: np.ndarray = field(default_factory=lambda: np.ones(1))

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "outputscale_turn": self.s3, "lengthscale_turn": self.ls3.tolist()}


class ArcKernelColumns:
    """The arc kernel on all ``A`` arms as a kernel source (``n``, ``diag()``, ``columns(idx)``, ``dense()``).

    Args:
        graph: the edge graph kernel source (dense ``(E, E)`` Gram matrix or local / global columns).
        graph_diag: ``(E,)`` graph prior variances when the source's own are not the ones to use.
        points: :func:`~evroute.kernels.arcs.arc_points` of all arms; tail, head: ``(A,)`` arm edges (terminal arms'
            head: the tail); d, f: numbers of edge contexts and turn features; hyper: the kernel's values.
    """

    def __init__(
        self,
        graph: Any,
        graph_diag: Any,
        points: Points,
        tail: np.ndarray,
        head: np.ndarray,
        d: int,
        f: int,
        hyper: ArcHyper,
    ) -> None:
        self.points, self.n = points, len(tail)
        self.k = arc_kernel(
            GraphKernel(graph, graph_diag),
            tail,
            head,
            d,
            f,
            hyper.s1,
            hyper.s2,
            hyper.ls1,
            hyper.ls2,
            hyper.s3,
            hyper.ls3,
        )
        self._dense_graph = isinstance(graph, np.ndarray)

    def diag(self) -> np.ndarray:
        return np.asarray(self.k.diag(self.points), dtype=np.float64)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        return np.asfortranarray(self.k(self.points, Points(idx, self.points.x[idx])))

    def dense(self, block: int = 512) -> np.ndarray:
        if not self._dense_graph:
            raise ParameterError("a dense arc kernel needs the dense graph Gram matrix")
        out = np.empty((self.n, self.n), order="F")
        for j in range(0, self.n, block):
            out[:, j : j + block] = self.columns(np.arange(j, min(j + block, self.n)))
        return out


class ArcExactGPModel(ExactGPEdgeModel):
    """Exact GP over turn arms (module doc).

    Args:
        prior_mean_wh: ``(A,)`` prior mean of every arm (Wh; the arm's edge's physics energy).
        prior_var, noise_var: ``sigma0^2`` and the observation-noise variance (Wh^2).
        laplacian: ``(E, E)`` line-graph Laplacian; contexts: ``(E, d)`` standardised edge contexts.
        tail, head: ``(A,)`` arm edges (``head = -1``: terminal arm); turn_features: ``(C, f)`` features of the turn
            arms (:meth:`evroute.linegraph.LineGraph.turn_features`).
        turn_outputscale: initial ``s_3`` (model units; 0 switches the turn term off, and it stays off);
        turn_lengthscale: initial turn-feature lengthscale (standardised units).
        graph_nu, graph_kappa, lengthscale, product_weight, config: as :class:`ExactGPEdgeModel`'s.
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        laplacian: Any,
        contexts: np.ndarray,
        tail: np.ndarray,
        head: np.ndarray,
        turn_features: np.ndarray,
        *,
        turn_outputscale: float = 0.5,
        turn_lengthscale: float = 1.0,
        graph_nu: float = 2.0,
        graph_kappa: float = 1.0,
        lengthscale: float = 1.0,
        product_weight: float = 0.5,
        config: ExactGPConfig | None = None,
    ) -> None:
        if config is not None and config.ts_joint:
            raise ParameterError("ts_joint is not available with turn arms")
        if turn_outputscale < 0 or turn_lengthscale <= 0:
            raise ParameterError("turn_outputscale must be >= 0 and turn_lengthscale > 0")
        tail = np.asarray(tail, dtype=np.int64)
        head = np.asarray(head, dtype=np.int64)
        ctx = np.asarray(contexts, dtype=np.float64)
        feats = np.asarray(turn_features, dtype=np.float64)
        if int((head >= 0).sum()) != feats.shape[0]:
            raise ParameterError(f"{int((head >= 0).sum())} turn arms but {feats.shape[0]} turn feature rows")
        self.arc_points = arc_points(ctx, tail, head, feats)
        self.tail, self.head = tail, np.where(head >= 0, head, tail)
        self.d, self.f = ctx.shape[1], feats.shape[1]
        super().__init__(
            prior_mean_wh,
            prior_var,
            noise_var,
            laplacian,
            self.arc_points.x,
            graph_nu=graph_nu,
            graph_kappa=graph_kappa,
            lengthscale=lengthscale,
            product_weight=product_weight,
            config=config,
        )
        h = self.hyper
        self.learn_turn = turn_outputscale > 0
        self.hyper = ArcHyper(
            h.s1,
            h.s2,
            np.full(self.d, float(lengthscale)),
            np.full(self.d, float(lengthscale)),
            h.noise,
            float(turn_outputscale),
            np.full(self.f, float(turn_lengthscale)),
        )

    def kernel(self) -> ArcKernelColumns:  # type: ignore[override]
        """The arc kernel source on all arms (module doc)."""
        g, gdiag = self._graph_source()
        assert isinstance(self.hyper, ArcHyper)
        return ArcKernelColumns(g, gdiag, self.arc_points, self.tail, self.head, self.d, self.f, self.hyper)

    def fit_hyperparameters(self) -> None:
        """Maximise the exact marginal likelihood of the arms' statistics under the arc kernel (L-BFGS)."""
        e, n, ybar, scatter = self.statistics()
        if len(e) > self.config.fit_max_edges:  # the most visited arms (ties: first visited)
            keep = np.sort(np.argsort(-n, kind="stable")[: self.config.fit_max_edges])
            e, n, ybar, scatter = e[keep], n[keep], ybar[keep], scatter[keep]
        edges, inv = np.unique(np.concatenate([self.tail[e], self.head[e]]), return_inverse=True)
        g, _ = self._graph_source()
        if isinstance(g, np.ndarray):
            g_ss = g[np.ix_(edges, edges)]
        elif isinstance(g, LocalGraphMatern):
            g_ss = g.sparse_columns(edges)[0][edges].toarray()
        else:
            g_ss = g.columns(edges)[edges]
        h = self.hyper
        assert isinstance(h, ArcHyper)
        as_t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
        raw = {
            "log_s1": as_t(math.log(h.s1)),
            "log_s2": as_t(math.log(h.s2)),
            "log_ls1": as_t(np.log(h.ls1)),
            "log_ls2": as_t(np.log(h.ls2)),
            "log_noise": as_t(math.log(h.noise)),
            "log_s3": as_t(math.log(max(h.s3, 1e-300))),
            "log_ls3": as_t(np.log(h.ls3)),
        }
        u = len(e)
        tail_t, head_t = torch.as_tensor(inv[:u]), torch.as_tensor(inv[u:])
        g_t, x_t = as_t(g_ss), as_t(self.arc_points.x[e])
        m_t, n_t, y_t, s_t = (as_t(a) for a in (self.m0[e], n, ybar, scatter))
        p = Points(torch.arange(u), x_t)
        d, f = self.d, self.f

        def objective(r: dict[str, torch.Tensor]) -> torch.Tensor:
            s3 = r["log_s3"].exp() if self.learn_turn else torch.zeros(())
            k = arc_kernel(
                GraphKernel(g_t),
                tail_t,
                head_t,
                d,
                f,
                r["log_s1"].exp(),
                r["log_s2"].exp(),
                r["log_ls1"].exp(),
                r["log_ls2"].exp(),
                s3,
                r["log_ls3"].exp(),
            )(p, p)
            return statistics_log_likelihood(k, r["log_noise"].exp(), m_t, n_t, y_t, s_t)

        learn = ["log_s1", "log_s2", "log_ls1", "log_ls2"]
        learn += ["log_s3", "log_ls3"] if self.learn_turn else []
        learn += ["log_noise"] if self.config.learn_noise else []
        best = maximise(objective, raw, learn, self.config.fit_iters, float(n.sum()))
        if best is None:
            return
        self.hyper = ArcHyper(
            float(best["log_s1"].exp()),
            float(best["log_s2"].exp()),
            best["log_ls1"].exp().numpy(),
            best["log_ls2"].exp().numpy(),
            float(best["log_noise"].exp()),
            float(best["log_s3"].exp()) if self.learn_turn else 0.0,
            best["log_ls3"].exp().numpy(),
        )
