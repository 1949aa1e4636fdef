"""Exact GP edge model (``--model gp-exact``): the paper's GP without the sparse approximation.

Same prior as the SVGP model (:mod:`evroute.models.gp`): ``f ~ GP(E_det, s_1 k_G k_f + s_2 k_f')`` with the graph
Matérn kernel ``k_G`` on the line graph and Matérn-5/2 kernels ``k_f``, ``k_f'`` on the standardised edge contexts;
Gaussian noise.  Every observation is of one of the ``E`` edges, so the exact posterior over all edges is a finite
Gaussian kept by :mod:`evroute.models.exact_posterior`:

* ``method="dense"``: ``Sigma`` (``E x E``) with one BLAS ``dsyrk`` rank-``k`` update per round (``E^2 k``; ``Sigma``,
  ``K`` and the graph Gram matrix take ``3 * 8 E^2`` bytes: 0.8 GB on Luxembourg, 1.5 GB at ``dense_max`` = 8000);
* ``method="lowrank"``: ``Sigma = K - K_{.U} A^-1 K_{U.}`` over the distinct visited edges ``U``
  (``E |U| k + |U|^3 / 3`` per round); with ``method="lowrank"`` or above ``dense_max`` edges the graph-kernel
  columns and prior variances come from truncated local solves on line-graph neighbourhoods with an a-posteriori
  entry-wise error bound ``graph_tol`` (:class:`~evroute.kernels.graph_matern_local.LocalGraphMatern`; default 1e-6 of
  the average prior variance; ``graph_solver="global"``: global SuperLU solves and probed variances, the slower
  earlier path) and no ``E x E`` matrix exists anywhere;
* ``method="incremental"``: the same no-``E x E`` representation, updated at the cost of what the index policies
  read (:class:`~evroute.models.exact_incremental.IncrementalPosterior`: cached posterior covariance columns of
  recently driven edges, ``E |U|`` work only for newly visited or dropped edges, ``E k^2`` for the means and
  variances, ``chol(A)`` of the visited block re-factorised when the update history has cost as much);
* ``method="auto"`` (default): incremental (dense on a torch device, ``device="cuda"``).  With ``switch_edges > 0``
  (up to ``dense_max`` edges) the incremental or low-rank method runs until that many distinct edges are visited,
  then the dense one (the switch is an exact refresh; ``method="lowrank", switch_edges=E // 4`` is the default of
  earlier versions).

Up to ``dense_max`` edges the graph-kernel columns come from the dense graph Gram matrix (exact); above it, and with
``method="lowrank"``, from the local solves above.

Per-edge sufficient statistics (count, sum, sum of squares) are kept; every ``refresh_every`` rounds the posterior is
recomputed from them exactly (bounding the round-off of the incremental updates).  Hyperparameters (outputscales,
context lengthscales; the noise with ``learn_noise``) maximise the exact marginal likelihood of the statistics
(:func:`marginal_log_likelihood`) at rounds ``refit_first * 2^j`` (the data doubled since the last fit); the graph
``kappa``, ``nu`` stay fixed, as in the SVGP model.

Units: like the SVGP model, everything is in units of ``sigma0`` internally; :meth:`posterior` returns Wh.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.kernels.edge import GraphKernel, Points, edge_kernel, edge_points
from evroute.kernels.graph_gram import dense_graph_gram
from evroute.kernels.graph_matern import GraphMaternKernel
from evroute.kernels.graph_matern_local import LocalGraphMatern
from evroute.kernels.linalg import jittered_cholesky, solve_lower
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.exact_incremental import IncrementalPosterior
from evroute.models.exact_posterior import DensePosterior, LowRankPosterior
from evroute.models.gp_exact_mll import Hyper, fit_hyperparameters, marginal_log_likelihood

DENSE_MAX = 8000


@dataclass(frozen=True)
class ExactGPConfig:
    """Settings of :class:`ExactGPEdgeModel`."""

    method: str = "auto"  # auto (incremental) | incremental | dense | lowrank
    dense_max: int = DENSE_MAX  # the dense graph Gram matrix (exact columns) is used up to this many edges
    switch_edges: int = 0  # > 0: incremental / low-rank until this many distinct edges are visited, then dense
    refresh_every: int = 200  # rounds between exact refreshes from the statistics (0: never)
    refit_first: int = 16  # first hyperparameter refit (round); then at 2x, 4x, ... (0: never refit)
    fit_iters: int = 20  # L-BFGS iterations per refit
    fit_max_edges: int = 1000  # refit on at most this many distinct edges (the most visited)
    learn_hyper: bool = True  # outputscales and lengthscales
    learn_noise: bool = False  # else fixed to the model prior's noise variance
    device: str = "cpu"  # cpu | auto | cuda (dense path on a torch device)
    ts_joint: bool = False  # Thompson sampling with one joint posterior draw (Matheron update; dense method only)
    graph_solver: str = "local"  # low-rank path graph columns: local (truncated local solves) | global (SuperLU)
    graph_tol: float = 1e-6  # local: entry-wise error bound of the graph-kernel columns (units of the mean variance)
    diag_hops: int = 20  # global, above 4000 edges: graph prior variances by probing with a distance-20 colouring
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in ("auto", "dense", "lowrank", "incremental"):
            raise ParameterError(f"method must be auto, incremental, dense or lowrank, got {self.method!r}")
        if (
            min(self.refresh_every, self.switch_edges, self.refit_first) < 0
            or self.fit_iters < 1
            or self.fit_max_edges < 2
        ):
            raise ParameterError("refresh_every, switch_edges, refit_first >= 0, fit_iters >= 1, fit_max_edges >= 2")
        if self.ts_joint and self.method == "lowrank":
            raise ParameterError("ts_joint needs the dense kernel (method auto, incremental or dense)")
        if self.graph_solver not in ("local", "global") or not 0 < self.graph_tol < 1:
            raise ParameterError(
                f"graph_solver must be local or global and 0 < graph_tol < 1, got "
                f"{self.graph_solver!r}, {self.graph_tol}"
            )
        if self.device not in ("cpu", "auto", "cuda"):
            raise ParameterError(f"device must be cpu, auto or cuda, got {self.device!r}")
        if self.dense_max < 0 or self.diag_hops < 1 or not 0 <= self.seed <= 2**32 - 1:
            raise ParameterError(
                f"dense_max must be >= 0, diag_hops >= 1 and 0 <= seed < 2**32, got {self.dense_max}, "
                f"{self.diag_hops}, {self.seed}"
            )


class EdgeKernelColumns:
    """The edge kernel ``K = s1 K_G o K_f + s2 K_f'`` on all edges as a
    :class:`~evroute.models.exact_posterior.KernelSource` (columns, diagonal, dense blocks).

    ``graph``: a dense ``(E, E)`` normalised graph Gram matrix, a :class:`GraphMaternKernel` (columns by sparse solves;
    ``graph_diag`` its ``(E,)`` prior variances) or a :class:`LocalGraphMatern` (sparse truncated columns: the
    product term is evaluated only at their non-zeros).  The kernel itself is :func:`evroute.kernels.edge.edge_kernel`;
    with an ``(E,)`` ``amplitude`` ``a`` it is ``a_i a_j K_ij`` (per-edge prior variances, the oracle ablation).
    """

    def __init__(
        self,
        graph: Any,
        contexts: np.ndarray,
        hyper: Hyper,
        graph_diag: np.ndarray | None = None,
        amplitude: np.ndarray | None = None,
    ) -> None:
        self.graph, self.x, self.h = graph, contexts, hyper
        self.n = contexts.shape[0]
        self.k = edge_kernel(GraphKernel(graph, graph_diag), hyper.s1, hyper.s2, hyper.ls1, hyper.ls2)
        self._all = Points(None, contexts)
        self.a = amplitude

    def diag(self) -> np.ndarray:
        d = self.k.diag(self._all)
        return d if self.a is None else d * self.a**2

    def columns(self, idx: np.ndarray) -> np.ndarray:
        c = self.k(self._all, edge_points(self.x, idx))
        if self.a is not None:
            c = np.asarray(c) * self.a[:, None] * self.a[idx][None, :]
        return np.asfortranarray(c)

    def dense(self, block: int = 512) -> np.ndarray:
        if not isinstance(self.graph, np.ndarray):
            raise ParameterError("a dense kernel needs the dense graph Gram matrix")
        out = np.empty((self.n, self.n), order="F")
        for j in range(0, self.n, block):  # column blocks: temporaries stay E x block
            sl = slice(j, j + block)
            out[:, sl] = self.k(self._all, edge_points(self.x, sl))
            if self.a is not None:
                out[:, sl] *= self.a[:, None] * self.a[None, sl]
        return out


class ExactGPEdgeModel(EdgeModel):
    """Exact GP model of the expected energy of every edge (use with any index policy).

    Args:
        prior_mean_wh: ``(E,)`` physics energies ``E_det`` (Wh), the prior mean.
        prior_var: ``sigma0^2`` (Wh^2); noise_var: observation-noise variance (Wh^2).
        laplacian: ``(E, E)`` line-graph Laplacian; contexts: ``(E, d)`` standardised contexts.
        graph_nu, graph_kappa, lengthscale, product_weight: initial kernel (the model prior's, as for the SVGP).
        prior_var_edges: ``(E,)`` prior variances of the edges (Wh^2) or ``None``: the kernel is then scaled per edge,
            ``a_i a_j K_ij`` with ``a = sqrt(prior_var_edges / (prior_var diag K))`` at the INITIAL kernel (fixed
            through the refits), so that its diagonal is ``prior_var_edges`` (the oracle ablation's actual
            variances).
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        laplacian: Any,
        contexts: np.ndarray,
        *,
        graph_nu: float = 2.0,
        graph_kappa: float = 1.0,
        lengthscale: float = 1.0,
        product_weight: float = 0.5,
        config: ExactGPConfig | None = None,
        prior_var_edges: np.ndarray | None = None,
    ) -> None:
        self.config = cfg = config or ExactGPConfig()
        self.prior_mean_wh = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean_wh)
        if prior_var <= 0 or noise_var <= 0:
            raise ParameterError("prior and noise variances must be > 0")
        self.scale = math.sqrt(float(prior_var))
        self.contexts = np.asarray(contexts, dtype=np.float64)
        if self.contexts.shape[0] != self.n_edges:
            raise ParameterError("contexts and prior mean disagree on the number of edges")
        # auto: incremental (dense on a torch device); with switch_edges > 0, dense once that many edges are visited
        on_device = cfg.device != "cpu" and self._device() is not None
        self.method = cfg.method if cfg.method != "auto" else ("dense" if on_device else "incremental")
        self._hybrid = cfg.switch_edges > 0 and self.method != "dense" and self.n_edges <= cfg.dense_max
        self.switch_edges = cfg.switch_edges
        self._dense_graph = self.n_edges <= cfg.dense_max and (self.method != "lowrank" or self._hybrid)
        if self.method == "dense" and not self._dense_graph:
            raise ParameterError(f"the dense method needs <= dense_max edges ({self.n_edges} > {cfg.dense_max})")
        if cfg.ts_joint and not self._dense_graph:
            raise ParameterError(f"ts_joint needs the dense kernel ({self.n_edges} edges > dense_max)")
        d = self.contexts.shape[1]
        w = float(product_weight)
        self.hyper = Hyper(
            w,
            1.0 - w if w < 1 else 1e-6,
            np.full(d, float(lengthscale)),
            np.full(d, float(lengthscale)),
            float(noise_var) / float(prior_var),
        )
        self.graph_nu, self.graph_kappa = float(graph_nu), float(graph_kappa)
        self._var_edges = None if prior_var_edges is None else np.asarray(prior_var_edges, np.float64) / prior_var
        if self._var_edges is not None and (self._var_edges.shape != (self.n_edges,) or np.any(self._var_edges <= 0)):
            raise ParameterError(f"prior_var_edges must be ({self.n_edges},) and > 0")
        self._hyper0 = self.hyper
        self._amp: np.ndarray | None = None
        self._lap = laplacian
        self.m0 = self.prior_mean_wh / self.scale
        self.counts = np.zeros(self.n_edges, dtype=np.int64)
        self.sum_y = np.zeros(self.n_edges)
        self.sum_y2 = np.zeros(self.n_edges)
        self.order = np.zeros(0, dtype=np.int64)  # visited edges in order of first visit
        self.t = 0
        self._snap: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
        self._since: list[tuple[np.ndarray, np.ndarray]] = []  # batches since the last refresh
        self._post: Any = None
        self._graph: Any = None
        self._chol_k: np.ndarray | None = None  # Cholesky factor of K (joint TS draws)
        self.stats: dict[str, float] = {}

    # ------------------------------------------------------------------------------------------------ kernel
    def _graph_source(self) -> tuple[Any, np.ndarray | None]:
        if self._graph is None:
            if self._dense_graph:
                self._graph = (dense_graph_gram(self._lap, self.graph_nu, self.graph_kappa), None)
            elif self.config.graph_solver == "local":
                local = LocalGraphMatern(self._lap, self.graph_nu, self.graph_kappa, tol=self.config.graph_tol)
                self._graph = (local, local.diag())
            else:
                glob = GraphMaternKernel(self._lap, self.graph_nu, self.graph_kappa, method="sparse")
                probed = self.n_edges > 4000
                self._graph = (glob, glob.diag_probing(self.config.diag_hops)[0] if probed else glob.diag())
        return self._graph

    def kernel(self) -> EdgeKernelColumns:
        g, gdiag = self._graph_source()
        return EdgeKernelColumns(g, self.contexts, self.hyper, gdiag, self.amplitude())

    def amplitude(self) -> np.ndarray | None:
        """``(E,)`` per-edge kernel amplitude ``a`` (``None`` without ``prior_var_edges``), from the initial kernel."""
        if self._var_edges is not None and self._amp is None:
            g, gdiag = self._graph_source()
            self._amp = np.sqrt(self._var_edges / EdgeKernelColumns(g, self.contexts, self._hyper0, gdiag).diag())
        return self._amp

    def _device(self) -> Any:
        if self.config.device == "cpu":
            return None
        import torch

        if self.config.device == "auto" and not torch.cuda.is_available():
            return None
        return torch.device("cuda")

    def _new_posterior(self) -> Any:
        if self.method == "dense":
            return DensePosterior(self.kernel(), self.m0, self.hyper.noise, device=self._device())
        if self.method == "incremental":
            return IncrementalPosterior(self.kernel(), self.m0, self.hyper.noise)
        return LowRankPosterior(self.kernel(), self.m0, self.hyper.noise)

    def _ensure(self) -> Any:
        """The posterior object (rebuilt after unpickling: refresh from the snapshot, then replay the batches)."""
        if self._post is None:
            self._post = self._new_posterior()
            self._post.refresh(*self._snap)
            for e, y in self._since:
                self._post.condition(e, y)
        return self._post

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_post"] = None
        state["_graph"] = None
        state["_chol_k"] = None
        return state

    # ------------------------------------------------------------------------------------------ statistics
    def statistics(self, edges: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(edges, n_u, ybar_u, scatter_u)`` of the visited edges (model units), in first-visit order."""
        e = self.order if edges is None else edges
        n = self.counts[e].astype(np.float64)
        ybar = self.sum_y[e] / n
        scatter = np.maximum(self.sum_y2[e] - n * ybar * ybar, 0.0)
        return e, n, ybar, scatter

    # ----------------------------------------------------------------------------------------------- update
    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        import time

        e, y = self._check_batch(edges, energies_wh)
        if len(e) == 0:
            return
        post = self._ensure()
        y = y / self.scale
        new = e[self.counts[e] == 0]
        _, first = np.unique(new, return_index=True)
        new = new[np.sort(first)]  # first-visit order (the low-rank posterior's column order)
        if len(new):
            self.order = np.concatenate([self.order, new])
        np.add.at(self.counts, e, 1)
        np.add.at(self.sum_y, e, y)
        np.add.at(self.sum_y2, e, y * y)
        self.t += 1
        cfg = self.config
        t0 = time.perf_counter()
        refit = (
            cfg.learn_hyper
            and cfg.refit_first > 0
            and self.t >= cfg.refit_first
            and (self.t / cfg.refit_first).is_integer()
            and math.log2(self.t / cfg.refit_first).is_integer()
        )
        switch = self._hybrid and self.method != "dense" and len(self.order) > self.switch_edges
        if switch:
            self.method = "dense"
            self._post = None
        self.stats["refit_cpu_ms"] = 0.0
        if refit:
            c0 = time.process_time()
            self.fit_hyperparameters()
            self._post = self._chol_k = None
            self.stats["refit_cpu_ms"] = 1e3 * (time.process_time() - c0)
        if refit or switch or (cfg.refresh_every and self.t % cfg.refresh_every == 0):
            self._snap = self.statistics()[:3]
            self._since = []
            post = self._ensure()  # new posterior after a refit or switch, else the same object refreshed below
            if not (refit or switch):
                post.refresh(*self._snap)
        else:
            post.condition(e, y)
            self._since.append((e, y))
        self.stats["update_ms"] = 1e3 * (time.perf_counter() - t0)
        self.stats["refit"] = float(refit)

    def posterior(self) -> EdgePosterior:
        post = self._ensure()
        s2 = self.scale**2
        return EdgePosterior(
            mean=post.mu * self.scale,
            variance=np.maximum(post.var, 0.0) * s2,
            noise_var=np.full(self.n_edges, self.hyper.noise * s2),
            sampler=self.joint_sample if self.config.ts_joint else None,
        )

    def joint_sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw ``(E,)`` (Wh) of all edges from the exact joint posterior, by Matheron's rule::

            f* = f + K_{.U} A^-1 (ybar_U - f_U - eps),  f ~ N(m, K),  eps ~ N(0, diag(s^2 / n_U))

        ``f`` uses the Cholesky factor of ``K`` (``E^3 / 3`` once per hyperparameter setting, then ``E^2`` per
        draw); the update costs ``|U|^3 / 3 + E |U|``.  Needs the dense kernel (``E <= dense_max``).
        """
        post = self._ensure()
        dense = isinstance(post, DensePosterior)
        if self._chol_k is None:
            self._chol_k = jittered_cholesky(post._k if dense else self.kernel().dense())
        f = self.m0 + self._chol_k @ rng.standard_normal(self.n_edges)
        e, n, ybar, _ = self.statistics()
        if len(e):
            eps = np.sqrt(self.hyper.noise / n) * rng.standard_normal(len(e))
            kxu = post._k[:, e] if dense else post._kxu_cols(post._slot[e])
            l_ = jittered_cholesky(kxu[e] + np.diag(self.hyper.noise / n))
            f += kxu @ solve_lower(l_, solve_lower(l_, ybar - f[e] - eps), trans=1)
        return f * self.scale

    def set_hyper(self, hyper: Hyper) -> None:
        """Use ``hyper`` from now on: the posterior is rebuilt exactly from the statistics, as after a refit."""
        self.hyper = hyper
        self._snap = self.statistics()[:3]
        self._since = []
        self._post = self._chol_k = None

    @property
    def noise_var(self) -> float:
        return self.hyper.noise * self.scale**2

    def hyperparameters(self) -> dict[str, Any]:
        return {
            **self.hyper.as_dict(),
            "graph_nu": self.graph_nu,
            "graph_kappa": self.graph_kappa,
            "method": self.method,
            "n_visited": int(len(self.order)),
            "rounds": self.t,
        }

    # ----------------------------------------------------------------------------------------------- refit
    def _graph_block(self, e: np.ndarray) -> np.ndarray:
        """``(U, U)`` graph Gram block of the edges ``e``."""
        g, _ = self._graph_source()
        if isinstance(g, np.ndarray):
            return np.asarray(g[np.ix_(e, e)])
        if isinstance(g, LocalGraphMatern):
            return np.asarray(g.sparse_columns(e)[0][e].toarray())
        return np.asarray(g.columns(e)[e])

    def log_evidence(self) -> float:
        """``log p(y)`` of every observation so far under the current hyperparameters, in Wh (the model-unit
        likelihood :func:`~evroute.models.gp_exact_mll.marginal_log_likelihood` minus ``N log sigma0`` for ``N``
        observations: the change of units), so that models with other ``sigma0`` compare; 0 before any data."""
        e, n, ybar, scatter = self.statistics()
        if len(e) == 0:
            return 0.0
        amp = self.amplitude()
        ll = marginal_log_likelihood(
            self.hyper,
            self._graph_block(e),
            self.contexts[e],
            self.m0[e],
            n,
            ybar,
            scatter,
            amplitude=None if amp is None else amp[e],
        )
        return float(ll) - float(n.sum()) * math.log(self.scale)

    def fit_hyperparameters(self) -> None:
        """Maximise the exact marginal likelihood of the statistics (L-BFGS, from the current values)."""
        e, n, ybar, scatter = self.statistics()
        if len(e) > self.config.fit_max_edges:  # the most visited edges (ties: first visited)
            keep = np.sort(np.argsort(-n, kind="stable")[: self.config.fit_max_edges])
            e, n, ybar, scatter = e[keep], n[keep], ybar[keep], scatter[keep]
        self.hyper = fit_hyperparameters(
            self.hyper,
            self._graph_block(e),
            self.contexts[e],
            self.m0[e],
            n,
            ybar,
            scatter,
            iters=self.config.fit_iters,
            learn_noise=self.config.learn_noise,
            amplitude=None if self.amplitude() is None else self.amplitude()[e],  # type: ignore[index]
        )


def exact_config_dict(model: ExactGPEdgeModel) -> dict[str, Any]:
    return asdict(model.config)
