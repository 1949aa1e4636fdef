"""Simulated energy environment of the reference paper (Sec. 4.1, App. B).

The true expected energy of every edge is one draw

    f ~ GP(E_det, sigma0^2 [w k_G k_f + (1 - w) k_f'])

with ``E_det`` the physics energy model, ``k_G`` the normalised graph Matérn kernel on the line graph
(``nu = 2``, ``kappa = 1``), ``k_f`` and ``k_f'`` Matérn-5/2 kernels on the standardised contexts
(lengthscale 1), ``sigma0^2 = 0.25^2 sigma_det^2`` and ``sigma_det^2`` the variance of ``E_det`` over
all edges.  Because ``k_G``, ``k_f`` and ``k_f'`` all have unit (average) variance, ``sigma0^2`` is the
average prior variance of ``f`` whatever the split ``w`` between the product and the additive term
(default ``w = 0.5``, the paper gives a single outputscale for the sum).  A driven edge returns
``f_e + eps`` with ``eps ~ N(0, 0.1^2 sigma_det^2)`` (semi-bandit feedback).

Sampling backends (``method``):

* ``"dense"``: exact joint draw through a Cholesky factor (:func:`evroute.kernels.linalg.jittered_cholesky`) of the
  ``E x E`` covariance of the models' edge kernel (:func:`prior_kernel`; Luxembourg, 5.6k edges, in seconds).
* ``"sparse"``: no ``E x E`` matrix.  ``k_f`` and ``k_f'`` are replaced by ``n_features`` random Fourier
  features ``phi_j`` and the product term is drawn as ``sum_j phi_j * g_j`` with independent exact graph
  Matérn draws ``g_j`` (sparse solves): its covariance is ``sum_j phi_j phi_j^T o K_G``, which tends
  to ``K_f o K_G``.  Used above ``dense_max`` edges (100k-edge synthetic cities).  For even ``graph_nu`` the graph draws
  are sparse Cholesky solves (:mod:`evroute.kernels.sparse_cholesky`; SuperLU before :data:`DRAW_VERSION` 2: the
  same draws to rounding, ``~1e-15`` relative).
* ``"scale"``: the sparse construction with fewer terms and no factorization, for networks of a million edges and
  more (from :data:`SCALE_MIN_EDGES` edges under ``"auto"``, even integer ``graph_nu``): :data:`SCALE_GRAPH_DRAWS`
  features times graph draws in the product term, each draw by preconditioned conjugate gradients
  (:class:`~evroute.kernels.cg_matern.CGMaternSampler`, relative residual :data:`SCALE_RTOL`, preconditioner
  :data:`SCALE_PRECOND`, fused compiled passes when numba is installed), and
  :data:`SCALE_FEATURES` features in the additive term.  Same covariance in expectation over the features; the
  random-feature error of the product term's covariance is about ``1 / sqrt(8)`` per entry instead of
  ``1 / sqrt(512)``.  Memory ``O(E)`` (the ``(E, 8)`` features and a few ``(E, 8)`` solver arrays, no
  ``(E, n_features)`` matrix and no Cholesky factor, whose fill-in made 5M edges run out of memory); time
  ``O(E)`` times the CG iterations (a few dozen: the spectrum of ``A`` is bounded, :mod:`cg_matern`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile, network_energy_wh
from evroute.environments.base import EnergyEnvironment, config_from_params
from evroute.errors import ParameterError, check_positive
from evroute.kernels import GraphMaternKernel
from evroute.kernels.cg_matern import BLOCK_THETA, CGMaternSampler, compiled_available
from evroute.kernels.edge import EdgeKernel, GraphKernel, Points, edge_kernel
from evroute.kernels.graph_gram import dense_graph_gram
from evroute.kernels.linalg import geometric_jitters, jittered_cholesky
from evroute.kernels.matern import matern_rff, rff_blocks
from evroute.kernels.sparse_cholesky import CholeskyMaternSampler
from evroute.linegraph import LineGraph


@dataclass(frozen=True)
class EnvironmentConfig:
    """Parameters of the simulated environment (defaults: the paper's)."""

    outputscale_frac: float = 0.25  # sigma0 / sigma_det
    noise_frac: float = 0.1  # noise std / sigma_det
    lengthscale: float = 1.0  # context lengthscale of k_f and k_f' (standardised units)
    graph_nu: float = 2.0
    graph_kappa: float = 1.0
    product_weight: float = 0.5  # w: share of sigma0^2 in the k_G k_f term
    method: str = "auto"  # auto | dense | sparse | scale
    dense_max: int = 6000
    n_features: int = 512

    def __post_init__(self) -> None:
        check_positive("outputscale_frac", self.outputscale_frac, allow_zero=True)
        check_positive("noise_frac", self.noise_frac)
        check_positive("lengthscale", self.lengthscale)
        if not 0.0 <= self.product_weight <= 1.0:
            raise ParameterError(f"product_weight must be in [0, 1], got {self.product_weight}")
        if self.method not in ("auto", "dense", "sparse", "scale"):
            raise ParameterError(f"unknown environment method {self.method!r} (use auto, dense, sparse or scale)")
        check_positive("graph_nu", self.graph_nu)
        check_positive("graph_kappa", self.graph_kappa)
        if self.dense_max < 0 or self.n_features < 1:
            raise ParameterError(f"dense_max must be >= 0 and n_features >= 1, got {self.dense_max}, {self.n_features}")

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)


class PaperEnvironment(EnergyEnvironment):
    """The paper's environment: ``true_mean_wh`` is one draw ``E_det + sigma0 g`` of the GP above (static).

    Its energies can be negative on flat and downhill roads, and on real maps negative-energy cycles are reachable
    (then :meth:`optimal_route` raises :class:`~evroute.errors.NegativeCycleError`; the bandit falls back to the best
    known route, see :func:`evroute.bandit.regret_reference_route`).
    """

    name = "paper"

    @classmethod
    def sample(
        cls,
        linegraph: LineGraph,
        *,
        vehicle: VehicleProfile | None = None,
        config: EnvironmentConfig | None = None,
        seed: int = 0,
    ) -> PaperEnvironment:
        """Draw an environment on ``linegraph`` (deterministic given ``seed``)."""
        cfg = config or EnvironmentConfig()
        e_det = network_energy_wh(linegraph.network, vehicle)
        sigma_det2 = float(e_det.var())
        prior_var = cfg.outputscale_frac**2 * sigma_det2
        noise_var = cfg.noise_frac**2 * sigma_det2
        f = e_det + np.sqrt(prior_var) * seeded_prior_draw(linegraph, cfg, seed)[0] if prior_var > 0 else e_det
        return cls(linegraph, e_det, f, prior_var, noise_var, cfg)


def parse_params(params: dict[str, Any]) -> EnvironmentConfig:
    """:class:`EnvironmentConfig` from an experiment's ``environment`` dict (:class:`ParameterError` if invalid)."""
    return config_from_params(EnvironmentConfig, params, "paper")


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> PaperEnvironment:
    """Registry entry: the paper environment of ``seed`` with the parameters ``params``."""
    return PaperEnvironment.sample(linegraph, vehicle=vehicle, config=parse_params(params), seed=seed)


#: Version of the prior draw (:func:`sample_prior_function_and_variance`); part of the compute-cache key of
#: :func:`seeded_prior_draw`: bump it whenever the draw of a seed changes.
DRAW_VERSION = 2  # 2: sparse draws (above dense_max edges, even nu) by sparse Cholesky solves, not SuperLU
#: ``method="auto"`` uses the ``"scale"`` method from this many edges (module doc); every committed study's network
#: has at most 100k edges, so their draws are those of the ``"sparse"`` (or ``"dense"``) method, unchanged.
SCALE_MIN_EDGES = 250_000
#: graph draws (random features of ``k_f``) in the product term of the ``"scale"`` method
SCALE_GRAPH_DRAWS = 8
#: random features of the additive term ``k_f'`` in the ``"scale"`` method
SCALE_FEATURES = 64
#: right-hand sides per conjugate-gradient solve in the ``"scale"`` method (memory: about 6 ``(E, SCALE_BLOCK)``
#: float64 arrays)
SCALE_BLOCK = 8
#: relative residual of the ``"scale"`` method's solves (draw error at most ``SCALE_RTOL cond(A)``, :mod:`cg_matern`)
SCALE_RTOL = 1e-5
#: preconditioner of the ``"scale"`` method's conjugate gradients (:mod:`evroute.kernels.cg_matern`): block Jacobi on
#: the strongly coupled clusters at threshold :data:`~evroute.kernels.cg_matern.BLOCK_THETA` (``"jacobi"`` before
#: issue 39's cold set-up work: 45 iterations instead of 19 on the 1M-edge synthetic country; both draws lie within
#: ``SCALE_RTOL cond(A)`` of the exact one)
SCALE_PRECOND = "block"
#: BLAS threads of the prior draw: a fixed count, so that a seed's draw does not depend on the BLAS thread count of the
#: process that makes it (another count sums in another order: other last bits), and one thread because more are
#: slower on a loaded 2-core machine (``docs/benchmark_gp_history.md``).
DRAW_BLAS_THREADS = 1
#: The parameters the unit-variance draw depends on (not the outputscale or noise fractions, which only scale it).
_DRAW_FIELDS = (
    "lengthscale",
    "graph_nu",
    "graph_kappa",
    "product_weight",
    "method",
    "dense_max",
    "n_features",
)


def seeded_prior_draw(linegraph: LineGraph, cfg: EnvironmentConfig, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sample_prior_function_and_variance` with ``np.random.default_rng(seed)``: the ``(E,)`` draw and its
    ``(E,)`` prior variances, computed with :data:`DRAW_BLAS_THREADS` BLAS threads and kept in the compute cache
    (:mod:`evroute.network.computecache`; the paper and the consistent environment of a seed share it)."""
    from threadpoolctl import threadpool_limits

    from evroute.network.computecache import cached_compute

    def draw() -> np.ndarray:  # the Laplacian it builds is not kept (models that need it build it again)
        with threadpool_limits(DRAW_BLAS_THREADS, user_api="blas"), linegraph.transient("incidence", "laplacian"):
            g, v = sample_prior_function_and_variance(linegraph, cfg, np.random.default_rng(seed))
        return np.stack([g, v])

    inputs = {
        "linegraph": linegraph.content_digest(),  # determines the Laplacian and contexts (without building them)
        "config": {k: v for k, v in asdict(cfg).items() if k in _DRAW_FIELDS},
        "seed": int(seed),
        "version": DRAW_VERSION,
        "blas_threads": DRAW_BLAS_THREADS,
    }
    method = cfg.method if cfg.method != "auto" else _auto_method(linegraph.n_nodes, cfg)
    if method == "scale":  # its constants make the draw (the other methods' keys are as before it existed)
        scale: list[object] = [SCALE_GRAPH_DRAWS, SCALE_FEATURES, SCALE_BLOCK, SCALE_RTOL]
        if SCALE_PRECOND != "jacobi":  # the solver changes a draw's last digits (keys of Jacobi draws as before)
            scale += [SCALE_PRECOND, BLOCK_THETA, compiled_available()]
        inputs["scale"] = scale
    both = cached_compute("prior-draw", inputs, draw, what="environment draw", array=True, blas=False)
    return both[0], both[1]


def sample_prior_function(linegraph: LineGraph, cfg: EnvironmentConfig, rng: np.random.Generator) -> np.ndarray:
    """One ``(E,)`` draw from ``GP(0, w k_G k_f + (1 - w) k_f')`` (unit average variance)."""
    return sample_prior_function_and_variance(linegraph, cfg, rng)[0]


def sample_prior_function_and_variance(
    linegraph: LineGraph, cfg: EnvironmentConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One ``(E,)`` draw of :func:`sample_prior_function` and the ``(E,)`` prior variance of each of its entries.

    The variances are exact for ``method="dense"``; for ``"sparse"`` they are the variances of the random-feature
    construction given its features, with the graph kernel's diagonal estimated from the draw's own graph samples
    (``n_features`` samples per edge, relative error about ``sqrt(2 / n_features)``).  Same random stream as
    :func:`sample_prior_function`: the draw is the same for the same ``rng`` state.
    """
    n = linegraph.n_nodes
    x = linegraph.contexts()
    method = cfg.method if cfg.method != "auto" else _auto_method(n, cfg)
    if method == "scale":
        return _scale_draw(linegraph, cfg, rng)
    w = cfg.product_weight
    # integer nu: sparse precision solves (also the fastest way to the dense K_G); else eigendecomposition
    graph_method = "sparse" if float(cfg.graph_nu).is_integer() else "dense"
    if method == "dense":
        cov = prior_covariance(linegraph, cfg)
        return _cholesky(cov) @ rng.standard_normal(n), np.diag(cov).copy()
    # unnormalised graph kernel: the draws g_j themselves estimate its average variance (n * D terms); even integer
    # nu: sparse Cholesky solves (kernels.sparse_cholesky), else SuperLU or the eigendecomposition
    graph: GraphMaternKernel | CholeskyMaternSampler
    if graph_method == "sparse" and int(cfg.graph_nu) % 2 == 0:
        graph = CholeskyMaternSampler(linegraph.laplacian(), cfg.graph_nu, cfg.graph_kappa)
    else:
        graph = GraphMaternKernel(
            linegraph.laplacian(), cfg.graph_nu, cfg.graph_kappa, method=graph_method, normalise=False
        )
    f = np.zeros(n)
    var = np.zeros(n)
    if w > 0:
        # single-precision cosines; each row's sum of squares (float64) while its block is in cache
        phi = np.empty((n, cfg.n_features), dtype=np.float32)
        phi_sq = np.empty(n)
        for r, rows in rff_blocks(x, cfg.n_features, rng, cfg.lengthscale, dtype=np.float32):
            phi[r : r + len(rows)] = rows
            phi_sq[r : r + len(rows)] = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
        block = 64
        g_sq = np.zeros(n)
        # blocks drawn in order (SuperLU: their solves on a thread pool, the same numbers as graph.sample per block;
        # sparse Cholesky: lazily into two reused buffers, the same numbers: nothing draws from rng in this loop)
        blocks = (
            graph.sample_blocks(cfg.n_features, block, rng, lazy=True)
            if isinstance(graph, CholeskyMaternSampler)
            else graph.sample_blocks(cfg.n_features, block, rng)
        )
        for j, g in zip(range(0, cfg.n_features, block), blocks, strict=True):
            g_sq += np.einsum("ij,ij->i", g, g)
            f += np.einsum("ij,ij->i", phi[:, j : j + block], g)
        del phi
        _normalise_product(f, var, g_sq, phi_sq, w, cfg.n_features)
    if w < 1:
        _add_context_term(f, var, x, cfg.n_features, cfg.lengthscale, 1.0 - w, rng)
    return f, var


def _normalise_product(
    f: np.ndarray, var: np.ndarray, g_sq: np.ndarray, phi_sq: np.ndarray, w: float, n_features: int
) -> None:
    """Scale the product term ``f`` ``(E,)`` (sum over ``n_features`` of features times graph draws) in place to
    average variance ``w`` (the graph kernel's average variance estimated by the draws' squares ``g_sq``) and add
    each edge's variance to ``var`` ``(E,)`` (``phi_sq``: each edge's sum of squared features)."""
    scale = w / (float(g_sq.sum()) / (len(f) * n_features))
    f *= np.sqrt(scale)
    var += scale * (g_sq / n_features) * phi_sq


def _add_context_term(
    f: np.ndarray,
    var: np.ndarray,
    x: np.ndarray,
    n_features: int,
    lengthscale: float,
    weight: float,
    rng: np.random.Generator,
) -> None:
    """Add ``sqrt(weight)`` times a random-feature draw of the context Matérn ``k_f'`` on ``x`` ``(E, d)`` to ``f``
    and its variances to ``var`` (both ``(E,)``, in place), row block by row block (no ``(E, n_features)``
    matrix): the random features' draws, then the weights' normals, as when the whole matrix was made first."""
    rows2 = rff_blocks(x, n_features, rng, lengthscale, dtype=np.float32)
    z = rng.standard_normal(n_features)
    for r, rows in rows2:
        part = slice(r, r + len(rows))
        f[part] += np.sqrt(weight) * (rows @ z)
        var[part] += weight * np.einsum("ij,ij->i", rows, rows, dtype=np.float64)


def _scale_draw(
    linegraph: LineGraph, cfg: EnvironmentConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The ``"scale"`` method of :func:`sample_prior_function_and_variance` (module doc): the sparse method's
    construction with :data:`SCALE_GRAPH_DRAWS` graph draws by conjugate gradients (:class:`CGMaternSampler`, no
    factorization) and :data:`SCALE_FEATURES` features in the additive term; ``O(E)`` memory."""
    if not float(cfg.graph_nu).is_integer() or int(cfg.graph_nu) % 2:
        raise ParameterError(f"environment method 'scale' needs an even integer graph_nu, got {cfg.graph_nu}")
    n, x, w = linegraph.n_nodes, linegraph.contexts(), cfg.product_weight
    f, var = np.zeros(n), np.zeros(n)
    if w > 0:
        d = min(cfg.n_features, SCALE_GRAPH_DRAWS)
        phi = matern_rff(x, d, rng, cfg.lengthscale, dtype=np.float32)  # (E, d): small at d = 8
        phi_sq = np.einsum("ij,ij->i", phi, phi, dtype=np.float64)
        graph = CGMaternSampler(
            linegraph.laplacian(), cfg.graph_nu, cfg.graph_kappa, rtol=SCALE_RTOL, precond=SCALE_PRECOND, compiled=True
        )
        g_sq = np.zeros(n)
        for j, g in zip(range(0, d, SCALE_BLOCK), graph.sample_blocks(d, SCALE_BLOCK, rng), strict=True):
            g_sq += np.einsum("ij,ij->i", g, g)
            f += np.einsum("ij,ij->i", phi[:, j : j + g.shape[1]], g, dtype=np.float64)
        del phi
        _normalise_product(f, var, g_sq, phi_sq, w, d)
    if w < 1:
        _add_context_term(f, var, x, min(cfg.n_features, SCALE_FEATURES), cfg.lengthscale, 1.0 - w, rng)
    return f, var


def _auto_method(n: int, cfg: EnvironmentConfig) -> str:
    """``dense`` up to ``cfg.dense_max`` edges, ``scale`` from :data:`SCALE_MIN_EDGES` (even integer ``graph_nu``
    only), ``sparse`` between."""
    if n <= cfg.dense_max:
        return "dense"
    even = float(cfg.graph_nu).is_integer() and int(cfg.graph_nu) % 2 == 0
    return "scale" if n >= SCALE_MIN_EDGES and even else "sparse"


def prior_kernel(linegraph: LineGraph, cfg: EnvironmentConfig) -> EdgeKernel:
    """The perturbation's kernel ``w k_G k_f + (1 - w) k_f'`` (unit average variance): the models' edge kernel
    (:func:`evroute.kernels.edge.edge_kernel`) on the exact normalised graph Gram matrix
    (:func:`evroute.kernels.graph_gram.dense_graph_gram`, not memoised), with ``s_1 = w``, ``s_2 = 1 - w`` and both
    context lengthscales ``cfg.lengthscale``."""
    kg = dense_graph_gram(linegraph.laplacian(), cfg.graph_nu, cfg.graph_kappa, memo=False)
    w, ls = cfg.product_weight, cfg.lengthscale
    return edge_kernel(GraphKernel(kg), w, 1.0 - w, ls, ls)


def prior_covariance(linegraph: LineGraph, cfg: EnvironmentConfig) -> np.ndarray:
    """The dense ``(E, E)`` covariance of :func:`prior_kernel` on all edges."""
    every = Points(None, linegraph.contexts())
    return prior_kernel(linegraph, cfg)(every, every)


def _cholesky(cov: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of ``cov + j I``, ``j = 1e-10, 1e-9, ... 1e-3`` times the mean diagonal (always jittered:
    the covariance is numerically semi-definite)."""
    start = 1e-10 * float(np.mean(np.diag(cov)))
    try:
        return jittered_cholesky(cov, geometric_jitters(start, 10.0, 8), relative=False, plain_first=False, layout="C")
    except np.linalg.LinAlgError:
        raise ParameterError("environment covariance is not positive definite even with jitter") from None


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = EnvironmentConfig
