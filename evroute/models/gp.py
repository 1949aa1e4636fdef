"""Contextual sparse variational GP edge model (paper Sec. 4, Algorithm 3).

    f ~ GP(E_det, k),   k = s_1 k_G k_f + s_2 k_f',   y = f_e + eps,  eps ~ N(0, varsigma^2)

Each :meth:`GPEdgeModel.update` (one bandit round):

1. appends the driven edges and their energies to the history;
2. sets the inducing points to the ``M`` most visited edges (edge-context tuples; ``M = 1000`` by
   default, all visited edges while fewer are visited).  The inducing set only changes when needed:
   while it grows, new edges are appended and ``q(u)`` is extended *exactly* (whitened
   parametrisation: the new whitened coordinates get their prior ``N(0, I)``, which is the old
   posterior's conditional); when an edge is swapped out at capacity, ``q(u)`` is re-fitted as the
   moment-matched projection of the old posterior onto the new inducing set.  Kept inducing points keep
   their learnt context coordinates; the edge coordinate is never trained;
3. runs ``steps`` optimisation steps on minibatches of ``batch_size`` observations drawn from the
   history: variational parameters by natural gradient descent (``gpytorch.optim.NGD``, lr 0.1) and
   hyperparameters (outputscales, lengthscales, inducing contexts; ``kappa``/``nu`` and the noise when
   made learnable) by Adam (lr 0.01).

:meth:`GPEdgeModel.posterior` returns the marginal predictive mean and variance of *every* edge,
computed once per round with one ``(E x M)`` cross-covariance (a gather from the cached graph Gram
matrix plus two Matérn evaluations) and ``C = L^-T (S - I) L^-1`` precomputed, so that
``var = k(x, x) + rowsum((K_XZ C) * K_XZ)`` (one ``E M^2`` matrix product, chunked over edges).

Units: the model works in units of ``sigma0`` (the prior standard deviation), so the prior has unit
average variance and ``E_det / sigma0`` as mean; :meth:`posterior` converts back to Wh.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import gpytorch
import numpy as np
import torch

from evroute.errors import ParameterError
from evroute.kernels.linalg import jittered_cholesky
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.gp_elbo import elbo_from_statistics, minibatch_statistics
from evroute.models.gp_kernels import EdgeContextKernel, EdgePriorMean, GraphMaternIndexKernel


@dataclass(frozen=True)
class GPConfig:
    """Settings of :class:`GPEdgeModel` (defaults: the paper's, Appendix B.3)."""

    n_inducing: int = 1000
    batch_size: int = 2500
    steps: int = 1  # optimisation steps per round
    ngd_lr: float = 0.1
    adam_lr: float = 0.01
    learn_inducing: bool = True  # train the context coordinates of the inducing points
    learn_hyper: bool = True  # outputscales and lengthscales
    learn_graph: bool = False  # kappa_G and nu_G (eigenpair path; costly on large networks)
    learn_noise: bool = False  # else fixed to the model prior's noise variance
    graph_method: str = "auto"  # auto | dense | eig
    n_eig: int = 512
    jitter: float | None = None  # Cholesky jitter of K_ZZ (None: 1e-6 for float64, 1e-4 for float32)
    dtype: str = "float64"
    device: str = "auto"  # auto | cpu | cuda
    pred_chunk: int = 256  # edges per block of the prediction (cache-sized blocks are ~2x faster than one block)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_inducing < 1 or self.batch_size < 1 or self.steps < 0:
            raise ParameterError("n_inducing and batch_size must be >= 1 and steps >= 0")
        if self.dtype not in ("float32", "float64"):
            raise ParameterError(f"dtype must be float32 or float64, got {self.dtype!r}")
        if self.graph_method not in ("auto", "dense", "eig"):
            raise ParameterError(f"graph_method must be auto, dense or eig, got {self.graph_method!r}")


class _SVGP(gpytorch.models.ApproximateGP):
    def __init__(self, inducing: torch.Tensor, mean: EdgePriorMean, kernel: EdgeContextKernel, jitter: float) -> None:
        dist = gpytorch.variational.NaturalVariationalDistribution(inducing.shape[0])
        strategy = gpytorch.variational.VariationalStrategy(
            self, inducing, dist, learn_inducing_locations=True, jitter_val=jitter
        )
        super().__init__(strategy)
        self.mean_module = mean
        self.covar_module = kernel

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


class GPEdgeModel(EdgeModel):
    """SVGP model of the expected energy of every edge (GP-UCB / GP-BUCB / GP-TS with the index policies).

    Args:
        prior_mean_wh: ``(E,)`` physics energies ``E_det`` (Wh), the prior mean.
        prior_var: ``sigma0^2`` (Wh^2), the average prior variance.
        noise_var: observation-noise variance (Wh^2).
        laplacian: ``(E, E)`` line-graph Laplacian (graph kernel).
        contexts: ``(E, d)`` standardised edge contexts.
        graph_nu, graph_kappa: initial graph Matérn parameters (paper: 2, 1).
        lengthscale: initial context lengthscale (paper: the prior's, 1).
        product_weight: initial ``s_1 / (s_1 + s_2)``; ``s_1 + s_2 = 1`` so the prior is ``sigma0^2``.
        config: :class:`GPConfig` (or keyword overrides through ``make_model("gp", env, ...)``).
    """

    _adam: torch.optim.Adam  # set by _make_optimizers (hyperparameter / inducing-point optimiser)
    _ngd: gpytorch.optim.NGD  # set by _make_optimizers (natural-gradient step of the variational distribution)

    @classmethod
    def checkpoint_classes(cls) -> tuple[type, ...]:
        """Classes a checkpoint of this model may hold besides those of a new model: the SVGP, its variational
        parts, optimisers and cached distributions, all made on the first update (see
        :mod:`evroute.experiments.checkpoint`)."""
        from linear_operator import operators as lo

        return (
            _SVGP,
            gpytorch.distributions.MultivariateNormal,
            gpytorch.optim.NGD,
            gpytorch.variational.NaturalVariationalDistribution,
            gpytorch.variational.VariationalStrategy,
            lo.CholLinearOperator,
            lo.DenseLinearOperator,
            lo.DiagLinearOperator,
            lo.TriangularLinearOperator,
            torch.optim.Adam,
        )

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
        config: GPConfig | None = None,
    ) -> None:
        self.config = cfg = config or GPConfig()
        self.prior_mean_wh = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean_wh)
        if prior_var <= 0 or noise_var <= 0:
            raise ParameterError("prior and noise variances must be > 0")
        self.scale = math.sqrt(float(prior_var))  # model units: Wh / sigma0
        self.contexts = np.asarray(contexts, dtype=np.float64)
        if self.contexts.shape[0] != self.n_edges:
            raise ParameterError("contexts and prior mean disagree on the number of edges")
        self.dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
        if cfg.device == "auto":
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        else:
            self.device = torch.device(cfg.device)
        self.jitter = cfg.jitter if cfg.jitter is not None else (1e-6 if cfg.dtype == "float64" else 1e-4)
        self._rng = np.random.default_rng(int(cfg.seed))

        graph = GraphMaternIndexKernel(
            laplacian, graph_nu, graph_kappa, learn=cfg.learn_graph, method=cfg.graph_method, n_eig=cfg.n_eig
        )
        kernel = EdgeContextKernel(
            graph,
            self.contexts.shape[1],
            lengthscale=lengthscale,
            outputscales=(product_weight, 1.0 - product_weight if product_weight < 1 else 1e-6),
        )
        mean = EdgePriorMean(self.prior_mean_wh / self.scale)
        # the variational model is built lazily once there is an inducing point
        self._kernel, self._mean = kernel.to(self.dtype), mean.to(self.dtype)
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_constraint=gpytorch.constraints.GreaterThan(1e-8)
        ).to(self.dtype)
        self.likelihood.noise = float(noise_var) / float(prior_var)
        self.likelihood.raw_noise.requires_grad_(cfg.learn_noise)
        if not cfg.learn_hyper:
            for p in (
                kernel.raw_outputscale_prod,
                kernel.raw_outputscale_add,
                kernel.kf.raw_lengthscale,
                kernel.kf2.raw_lengthscale,
            ):
                p.requires_grad_(False)
        self.gp: _SVGP | None = None
        self.inducing_edges = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(self.n_edges, dtype=np.int64)
        self._hist_e = np.zeros(1024, dtype=np.int64)
        self._hist_y = np.zeros(1024, dtype=np.float64)
        self.n_obs = 0
        self._x_all: torch.Tensor | None = None
        self._post: EdgePosterior | None = None
        self.stats: dict[str, float] = {}
        self._to_device()

    # ------------------------------------------------------------------ helpers
    def _to_device(self) -> None:
        for m in (self._kernel, self._mean, self.likelihood):
            m.to(device=self.device)
        if self.gp is not None:
            self.gp.to(device=self.device)

    def _inputs(self, edges: np.ndarray) -> torch.Tensor:
        e = np.asarray(edges, dtype=np.int64)
        x = np.concatenate([e[:, None].astype(np.float64), self.contexts[e]], axis=1)
        return torch.as_tensor(x, dtype=self.dtype, device=self.device)

    def _all_inputs(self) -> torch.Tensor:
        if self._x_all is None or self._x_all.dtype != self.dtype:
            self._x_all = self._inputs(np.arange(self.n_edges))
        return self._x_all

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_x_all"] = None
        return state

    @property
    def noise_var(self) -> float:
        """Current observation-noise variance (Wh^2)."""
        return float(self.likelihood.noise.detach().cpu()) * self.scale**2

    def hyperparameters(self) -> dict[str, Any]:
        """Current kernel hyperparameters (model units: outputscales relative to ``sigma0^2``)."""
        k = self._kernel
        return {
            "outputscale_prod": float(k.outputscale_prod.detach()),
            "outputscale_add": float(k.outputscale_add.detach()),
            "lengthscale_f": k.kf.lengthscale.detach().cpu().numpy().ravel().tolist(),
            "lengthscale_f2": k.kf2.lengthscale.detach().cpu().numpy().ravel().tolist(),
            "graph_nu": float(k.graph.nu.detach()),
            "graph_kappa": float(k.graph.kappa.detach()),
            "noise_var_wh2": self.noise_var,
            "n_inducing": int(len(self.inducing_edges)),
            "n_obs": int(self.n_obs),
        }

    # --------------------------------------------------------------- inducing set
    def _target_inducing(self) -> np.ndarray:
        """Inducing edges for this round.

        Kept members stay at their positions; an added edge takes the position of a dropped one (additions in
        edge order, surplus additions appended), so a swap of ``k`` edges changes ``k`` columns of every
        ``(., M)`` block (the kept graph-kernel columns are updated in place).
        """
        m_max = self.config.n_inducing
        visited = np.flatnonzero(self.counts > 0)
        cur = self.inducing_edges
        if len(visited) <= m_max:
            new = np.setdiff1d(visited, cur, assume_unique=True)
            return np.concatenate([cur, new])
        # top-M by count; ties keep current members (stable set), then lower edge index
        member = np.zeros(self.n_edges, dtype=bool)
        member[cur] = True
        order = np.lexsort((visited, ~member[visited], -self.counts[visited]))
        chosen = visited[order[:m_max]]
        kept = np.isin(cur, chosen)
        add = np.sort(np.setdiff1d(chosen, cur[kept], assume_unique=True))
        out = cur.copy()
        free = np.flatnonzero(~kept)
        n_fill = min(len(free), len(add))
        out[free[:n_fill]] = add[:n_fill]  # len(add) >= len(free): |chosen| = M >= |current members|
        return np.concatenate([out, add[n_fill:]])

    def _set_inducing(self) -> None:
        target = self._target_inducing()
        cur = self.inducing_edges
        if len(target) == len(cur) and np.array_equal(target, cur):
            return
        x_new = self._inputs(target)
        if self.gp is None:
            self.gp = _SVGP(x_new, self._mean, self._kernel, self.jitter).to(dtype=self.dtype, device=self.device)
            vd = self.gp.variational_strategy._variational_distribution
            with torch.no_grad():  # q(v) = N(0, I): the prior
                vd.natural_vec.zero_()
                vd.natural_mat.copy_(-0.5 * torch.eye(len(target), dtype=self.dtype, device=self.device))
            self.gp.variational_strategy.variational_params_initialized.fill_(1)
            self.inducing_edges = target
            self._kernel.graph.set_anchor(target)
            self._make_optimizers()
            return
        strat = self.gp.variational_strategy
        vd = strat._variational_distribution
        n_keep = len(cur)
        appended_only = len(target) >= n_keep and np.array_equal(target[:n_keep], cur)
        with torch.no_grad():
            z_old = strat.inducing_points.detach()
            if appended_only:
                m_new = len(target) - n_keep
                z = torch.cat([z_old, x_new[n_keep:]])
                nat_vec = torch.cat([vd.natural_vec, torch.zeros(m_new, dtype=self.dtype, device=self.device)])
                nat_mat = torch.block_diag(
                    vd.natural_mat, -0.5 * torch.eye(m_new, dtype=self.dtype, device=self.device)
                )
            else:
                pos = {int(e): i for i, e in enumerate(cur)}
                z = x_new.clone()
                for j, e in enumerate(target):  # kept points keep their learnt contexts
                    if int(e) in pos:
                        z[j] = z_old[pos[int(e)]]
                nat_vec, nat_mat = self._project(z_old, z)
        self._replace_inducing(z, nat_vec, nat_mat)
        self.inducing_edges = target
        self._kernel.graph.set_anchor(target)

    def _chol(self, x: torch.Tensor) -> torch.Tensor:
        return jittered_cholesky(self._kernel.forward(x, x), (self.jitter,), relative=False, plain_first=False)

    def _qv(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Whitened variational mean ``m`` and covariance ``S``."""
        strat = self.gp.variational_strategy  # type: ignore[union-attr]
        strat._clear_cache()  # the memoised q(u) may predate the last optimiser step
        q = strat.variational_distribution
        return q.mean.detach(), q.covariance_matrix.detach()

    def _project(self, z_old: torch.Tensor, z_new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Natural parameters of the old posterior's marginal at ``z_new``, whitened with ``z_new``."""
        m, s = self._qv()
        l_old = self._chol(z_old)
        a = torch.linalg.solve_triangular(l_old, self._kernel.forward(z_old, z_new), upper=False)
        mu = a.T @ m
        cov = self._kernel.forward(z_new, z_new) - a.T @ a + a.T @ s @ a
        l_new = self._chol(z_new)
        m_w = torch.linalg.solve_triangular(l_new, mu[:, None], upper=False)[:, 0]
        t = torch.linalg.solve_triangular(l_new, cov, upper=False)
        s_w = torch.linalg.solve_triangular(l_new, t.T, upper=False)
        s_w = 0.5 * (s_w + s_w.T) + 1e-8 * torch.eye(len(z_new), dtype=s_w.dtype, device=s_w.device)
        prec = torch.cholesky_inverse(jittered_cholesky(s_w))
        return prec @ m_w, -0.5 * prec

    def _replace_inducing(self, z: torch.Tensor, nat_vec: torch.Tensor, nat_mat: torch.Tensor) -> None:
        strat = self.gp.variational_strategy  # type: ignore[union-attr]
        vd = strat._variational_distribution
        strat.inducing_points = torch.nn.Parameter(z)
        vd.natural_vec = torch.nn.Parameter(nat_vec.contiguous())
        vd.natural_mat = torch.nn.Parameter(nat_mat.contiguous())
        vd.num_inducing_points = len(z)
        strat._clear_cache()
        self._make_optimizers(keep_adam=True)

    def _make_optimizers(self, keep_adam: bool = False) -> None:
        cfg = self.config
        strat = self.gp.variational_strategy  # type: ignore[union-attr]
        vd = strat._variational_distribution
        self._ngd = gpytorch.optim.NGD([vd.natural_vec, vd.natural_mat], num_data=max(self.n_obs, 1), lr=cfg.ngd_lr)
        hyper = [p for p in list(self._kernel.parameters()) + list(self.likelihood.parameters()) if p.requires_grad]
        z = [strat.inducing_points] if cfg.learn_inducing else []
        strat.inducing_points.requires_grad_(cfg.learn_inducing)
        if keep_adam and getattr(self, "_adam", None) is not None:
            old = self._adam.param_groups[1]["params"]
            for p in old:
                self._adam.state.pop(p, None)
            self._adam.param_groups[1]["params"] = z
            return
        self._adam = torch.optim.Adam([{"params": hyper}, {"params": z}], lr=cfg.adam_lr)

    # ------------------------------------------------------------------- update
    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        if len(e) == 0:
            return
        n = self.n_obs + len(e)
        if n > len(self._hist_e):
            cap = max(n, 2 * len(self._hist_e))
            self._hist_e = np.resize(self._hist_e, cap)
            self._hist_y = np.resize(self._hist_y, cap)
        self._hist_e[self.n_obs : n] = e
        self._hist_y[self.n_obs : n] = y
        self.n_obs = n
        np.add.at(self.counts, e, 1)
        self._post = None
        with gpytorch.settings.cholesky_jitter(self.jitter):
            t0 = time.perf_counter()
            self._set_inducing()
            t1 = time.perf_counter()
            for _ in range(self.config.steps):
                self._step()
        # wall-clock split of the last update (ms): inducing-set change (projection of q(u)) and optimisation
        self.stats["inducing_ms"] = 1e3 * (t1 - t0)
        self.stats["steps_ms"] = 1e3 * (time.perf_counter() - t1)

    def _step(self) -> None:
        cfg = self.config
        gp = self.gp
        assert gp is not None
        n = self.n_obs
        if n > cfg.batch_size:
            idx = self._rng.choice(n, size=cfg.batch_size, replace=False)
        else:
            idx = np.arange(n)
        edges, counts, sum_y, sum_y2 = minibatch_statistics(self._hist_e[idx], self._hist_y[idx] / self.scale)
        as_t = lambda a: torch.as_tensor(a, dtype=self.dtype, device=self.device)  # noqa: E731
        gp.train()
        self.likelihood.train()
        self._ngd.num_data = n
        self._ngd.zero_grad()
        self._adam.zero_grad()
        loss = -elbo_from_statistics(
            gp,
            self.likelihood,
            self._inputs(edges),
            as_t(counts),
            as_t(sum_y),
            as_t(sum_y2),
            batch_size=len(idx),
            num_data=n,
        )
        loss.backward()
        z = gp.variational_strategy.inducing_points
        if z.grad is not None:
            z.grad[:, 0] = 0.0  # the edge coordinate of an inducing point is discrete: never trained
        self._ngd.step()
        self._adam.step()
        self.stats["loss"] = float(loss.detach())

    # ---------------------------------------------------------------- posterior
    def posterior(self) -> EdgePosterior:
        if self._post is None:
            mean, var = self._predict()
            s2 = self.scale**2
            noise = np.full(self.n_edges, self.noise_var)
            self._post = EdgePosterior(mean=mean * self.scale, variance=np.maximum(var, 0.0) * s2, noise_var=noise)
        return self._post

    @torch.no_grad()
    def _predict(self) -> tuple[np.ndarray, np.ndarray]:
        x = self._all_inputs()
        k = self._kernel
        prior_mean = self._mean(x)
        prior_var = k.forward(x, x, diag=True)
        if self.gp is None:
            return prior_mean.cpu().numpy(), prior_var.cpu().numpy()
        z = self.gp.variational_strategy.inducing_points.detach()
        m, s = self._qv()
        l = self._chol(z)
        # mean = mu(x) + K_xZ L^-T m ;  var = k(x, x) + K_xZ C K_Zx with C = L^-T (S - I) L^-1
        alpha = torch.linalg.solve_triangular(l.T, m[:, None], upper=True)[:, 0]
        eye = torch.eye(len(z), dtype=s.dtype, device=s.device)
        t = torch.linalg.solve_triangular(l.T, s - eye, upper=True)
        c = torch.linalg.solve_triangular(l.T, t.T, upper=True)
        c = 0.5 * (c + c.T)
        mean = torch.empty_like(prior_mean)
        var = torch.empty_like(prior_var)
        step = self.config.pred_chunk
        for i in range(0, self.n_edges, step):
            kxz = k.forward(x[i : i + step], z)
            mean[i : i + step] = prior_mean[i : i + step] + kxz @ alpha
            var[i : i + step] = prior_var[i : i + step] + ((kxz @ c) * kxz).sum(-1)
        return mean.cpu().numpy(), var.cpu().numpy()


def gp_config_dict(model: GPEdgeModel) -> dict[str, Any]:
    return asdict(model.config)
