"""GPyTorch kernels and mean of the contextual GP edge model (paper Sec. 4, appendix B.1).

These modules hold the kernel's *trainable parameters* (GPyTorch constraints, autograd) for the SVGP and the
time-aware GP; the kernel they evaluate is the project's one kernel interface (:class:`evroute.kernels.base.Kernel`,
here :func:`evroute.kernels.edge.edge_kernel` on :class:`~evroute.kernels.edge.Points`), not a second definition.

Inputs are rows ``(edge_index, x_1, ..., x_d)``: column 0 is the line-graph node (road edge) as a float,
the other columns the standardised edge context (length, speed limit, incline).

* :class:`GraphMaternIndexKernel` -- the normalised graph Matérn kernel ``k_G`` on edge indices,
  ``K_G = c U (2 nu / kappa^2 I + Lambda)^(-nu) U^T`` with ``c`` giving unit *average* prior variance
  (the convention of :class:`evroute.kernels.GraphMaternKernel` and of the environment).
  Two regimes:

  - **fixed** ``kappa``, ``nu`` (default of the edge model): the exact dense Gram matrix is built once
    (up to ``dense_max`` edges, through :class:`~evroute.kernels.GraphMaternKernel`, exactly as the
    environment does) and every kernel block is a gather -- no ``E x E`` work per round.  Above
    ``dense_max`` edges the rank-``n_eig`` eigen approximation is used and rows are cached.
    :meth:`~GraphMaternIndexKernel.set_anchor` keeps the ``(E, M)`` columns of a fixed index set (the
    inducing edges of the SVGP): blocks against it are then contiguous row selections (and the block
    of all edges against it the kept matrix itself) instead of two-index gathers.
  - **learnable** ``kappa`` and ``nu`` (``learn=True``): blocks are computed from the Laplacian
    eigenpairs (dense ``eigh`` up to ``dense_max`` edges, the ``n_eig`` smallest pairs above) and are
    differentiable in both.  Cost ``O(n1 n2 k)`` per block with ``k`` eigenpairs.

* :class:`EdgeContextKernel` -- ``k = s_1 k_G k_f + s_2 k_f'`` with ``k_f``, ``k_f'`` Matérn-5/2 on the
  context columns (per-dimension lengthscales, separate outputscales ``s_1``, ``s_2``): the GPyTorch module (its
  parameters) around the one edge kernel :func:`evroute.kernels.edge.edge_kernel`, evaluated in torch.  ``kf`` and
  ``kf2`` are GPyTorch Matérn modules used only for their positive, per-dimension lengthscales.
* :class:`EdgePriorMean` -- the physics prior ``E_det`` looked up at the edge index.

Heavy caches (Gram matrix, eigenpairs) are not pickled: they are rebuilt on first use after loading
(memoised per process, so seeds of a sweep on the same network share them).
"""

from __future__ import annotations

import gpytorch
import numpy as np
import scipy.sparse as sp
import torch
from gpytorch.constraints import Positive

from evroute.kernels.edge import EdgeKernel, GraphKernel, Points, edge_kernel
from evroute.kernels.graph_gram import dense_graph_gram, graph_eigenpairs, laplacian_key
from evroute.kernels.graph_matern import DENSE_MAX_DEFAULT, matern_spectrum


# -------------------------------------------------------------------------------- graph kernel
class GraphMaternIndexKernel(gpytorch.kernels.Kernel):
    """Normalised graph Matérn kernel on line-graph node indices (input column 0 = edge index).

    Args:
        laplacian: ``(E, E)`` incidence Laplacian of the line graph (``LineGraph.laplacian()``).
        nu, kappa: initial smoothness and lengthscale (paper: 2 and 1).
        learn: make ``nu`` and ``kappa`` trainable (eigenpair path, see module docstring).
        method: ``"auto"`` (dense up to ``dense_max`` edges, else ``"eig"``), ``"dense"`` or ``"eig"``.
        n_eig: eigenpairs kept by ``"eig"``.
        row_cache_bytes: memory budget of the row cache used by the fixed ``"eig"`` path.
    """

    has_lengthscale = False

    def __init__(
        self,
        laplacian: sp.spmatrix,
        nu: float = 2.0,
        kappa: float = 1.0,
        *,
        learn: bool = False,
        method: str = "auto",
        n_eig: int = 512,
        dense_max: int = DENSE_MAX_DEFAULT,
        row_cache_bytes: int = 1 << 30,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self._lap = sp.csr_matrix(laplacian, dtype=np.float64)
        self.n = self._lap.shape[0]
        self._key = laplacian_key(self._lap)
        self.method = ("dense" if self.n <= dense_max else "eig") if method == "auto" else method
        if self.method not in ("dense", "eig"):
            raise ValueError(f"unknown method {method!r}")
        self.n_eig = int(min(n_eig, self.n - 1)) if self.method == "eig" else self.n
        self.row_cache_bytes = int(row_cache_bytes)
        self.register_parameter("raw_kappa", torch.nn.Parameter(torch.zeros((), dtype=torch.float64)))
        self.register_parameter("raw_nu", torch.nn.Parameter(torch.zeros((), dtype=torch.float64)))
        self.register_constraint("raw_kappa", Positive())
        self.register_constraint("raw_nu", Positive())
        self.kappa = kappa
        self.nu = nu
        self.raw_kappa.requires_grad_(learn)
        self.raw_nu.requires_grad_(learn)
        self._reset_caches()

    # -------------------------------------------------------------- parameters
    @property
    def kappa(self) -> torch.Tensor:
        return self.raw_kappa_constraint.transform(self.raw_kappa)

    @kappa.setter
    def kappa(self, value: float) -> None:
        v = torch.as_tensor(value, dtype=self.raw_kappa.dtype, device=self.raw_kappa.device)
        self.initialize(raw_kappa=self.raw_kappa_constraint.inverse_transform(v))

    @property
    def nu(self) -> torch.Tensor:
        return self.raw_nu_constraint.transform(self.raw_nu)

    @nu.setter
    def nu(self, value: float) -> None:
        v = torch.as_tensor(value, dtype=self.raw_nu.dtype, device=self.raw_nu.device)
        self.initialize(raw_nu=self.raw_nu_constraint.inverse_transform(v))

    @property
    def learnable(self) -> bool:
        return bool(self.raw_kappa.requires_grad or self.raw_nu.requires_grad)

    # ------------------------------------------------------------------ caches
    def _reset_caches(self) -> None:
        self._gram: torch.Tensor | None = None
        self._gram_key: tuple | None = None
        self._basis: tuple[torch.Tensor, torch.Tensor] | None = None
        self._rows: torch.Tensor | None = None
        self._row_slot: np.ndarray | None = None
        self._rows_key: tuple | None = None
        self._anchor: torch.Tensor | None = None
        self._anchor_cols: torch.Tensor | None = None  # (E, M) view of _anchor_buf
        self._anchor_buf: torch.Tensor | None = None
        self._diag: torch.Tensor | None = None
        self._diag_key: tuple | None = None
        self._anchor_key: tuple | None = None

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__.copy()
        state = dict(state)
        for k in (
            "_gram",
            "_gram_key",
            "_basis",
            "_rows",
            "_row_slot",
            "_rows_key",
            "_anchor_cols",
            "_anchor_buf",
            "_anchor_key",
            "_diag",
            "_diag_key",
        ):
            state[k] = None
        return state

    def _like(self) -> tuple[torch.dtype, torch.device]:
        return self.raw_kappa.dtype, self.raw_kappa.device

    def _graph_params(self) -> tuple[float, float]:
        """Current ``(nu, kappa)`` as Python floats (rounded so float32 storage keeps integer ``nu`` integral)."""
        return round(float(self.nu.detach()), 6), round(float(self.kappa.detach()), 6)

    def _params_key(self) -> tuple:
        return (*self._graph_params(), *self._like())

    def gram(self) -> torch.Tensor:
        """Exact dense normalised Gram matrix at the current (fixed) ``nu``, ``kappa`` (``method="dense"``)."""
        key = self._params_key()
        if self._gram is None or self._gram_key != key:
            nu, kappa = self._graph_params()
            g = dense_graph_gram(self._lap, nu, kappa, self._key)
            dtype, device = self._like()
            self._gram = torch.as_tensor(g, dtype=dtype, device=device)
            self._gram_key = key
        return self._gram

    def basis(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Laplacian eigenpairs as tensors ``(lambda (k,), U (E, k))``."""
        if self._basis is None or self._basis[0].dtype != self._like()[0]:
            lam, u = graph_eigenpairs(self._lap, self.method, self.n_eig, self._key)
            dtype, device = self._like()
            self._basis = (
                torch.as_tensor(lam, dtype=dtype, device=device),
                torch.as_tensor(u, dtype=dtype, device=device),
            )
        return self._basis

    def spectrum(self) -> torch.Tensor:
        """Normalised spectral weights ``c (2 nu / kappa^2 + lambda)^(-nu)`` (differentiable)."""
        lam, _ = self.basis()
        phi = matern_spectrum(lam, self.nu, self.kappa)
        return phi * (self.n / phi.sum())  # unit columns of U: mean diag = sum(phi) / E

    # ------------------------------------------------------------------ blocks
    def _use_gram(self) -> bool:
        return self.method == "dense" and not self.learnable

    def diag_values(self) -> torch.Tensor:
        """``(E,)`` prior variances of ``k_G`` (mean 1)."""
        if self._use_gram():
            return torch.diagonal(self.gram())
        if self.learnable:
            _, u = self.basis()
            return (u * u) @ self.spectrum()
        key = self._params_key()
        if self._diag is None or self._diag_key != key:  # O(E k): computed once for fixed kappa, nu
            _, u = self.basis()
            with torch.no_grad():
                self._diag = (u * u) @ self.spectrum()
            self._diag_key = key
        return self._diag

    def set_anchor(self, idx: np.ndarray | torch.Tensor | None) -> None:
        """Keep the columns ``K_G[:, idx]`` (``(E, M)``) for fast blocks against ``idx`` (``None`` drops them).

        The columns live in a buffer with spare capacity: when ``idx`` only appends entries or changes some
        positions (an inducing set that grows or swaps a few edges), only those columns are computed and written
        in place.  Ignored while ``kappa``/``nu`` are learnable (the columns would go stale).
        """
        if idx is None or self.learnable:
            self._anchor = self._anchor_cols = self._anchor_buf = self._anchor_key = None
            return
        dtype, device = self._like()
        new = torch.as_tensor(np.asarray(idx, dtype=np.int64), device=device)
        old, buf, key = self._anchor, self._anchor_buf, self._params_key()
        n_new = len(new)
        if old is not None and buf is not None and self._anchor_key == key and n_new >= len(old):
            n_old = len(old)
            changed = torch.cat([torch.nonzero(new[:n_old] != old).ravel(), torch.arange(n_old, n_new, device=device)])
            if n_new > buf.shape[1]:  # grow the buffer geometrically (amortised O(E) per appended column)
                bigger = torch.empty((self.n, max(n_new, 2 * buf.shape[1])), dtype=dtype, device=device)
                bigger[:, :n_old] = buf[:, :n_old]
                buf = bigger
            if len(changed):
                buf[:, changed] = self._columns_of(new[changed])
        else:
            buf = self._columns_of(new)
        self._anchor, self._anchor_buf, self._anchor_key = new, buf, key
        self._anchor_cols = buf[:, :n_new]

    def _columns_of(self, idx: torch.Tensor) -> torch.Tensor:
        """``K_G[:, idx]`` (``(E, len(idx))``, contiguous) at the current (fixed) parameters."""
        with torch.no_grad():
            if self._use_gram():
                return self.gram().index_select(0, idx).T.contiguous()  # symmetric: rows are columns
            _, u = self.basis()
            return u @ (u[idx] * self.spectrum()).T

    def _anchored(self, idx: torch.Tensor) -> bool:
        """Whether ``idx`` is the anchor (columns dropped by pickling or a parameter change are rebuilt here)."""
        a = self._anchor
        if a is None or len(idx) != len(a) or not torch.equal(idx, a.to(idx.device)):
            return False
        if self._anchor_cols is None or self._anchor_key != self._params_key():
            self._anchor_key = self._anchor_buf = None
            self.set_anchor(a.cpu().numpy())
        return True

    def _against_anchor(self, other: torch.Tensor) -> torch.Tensor:
        """``K_G[other, anchor]`` (``(n, M)``) from the kept columns."""
        cols = self._anchor_cols
        assert cols is not None
        if len(other) == self.n and bool((other == torch.arange(self.n, device=other.device)).all()):
            return cols
        return cols.index_select(0, other)

    def block(self, i1: torch.Tensor, i2: torch.Tensor) -> torch.Tensor:
        """``K_G[i1][:, i2]`` for integer index vectors."""
        if not self.learnable:
            if self._anchored(i2):
                return self._against_anchor(i1)
            if self._anchored(i1):
                return self._against_anchor(i2).T
        if self._use_gram():
            return self.gram()[i1[:, None], i2[None, :]]
        if not self.learnable:
            return self._cached_rows(i1)[:, i2]
        u1, inv1 = torch.unique(i1, return_inverse=True)
        u2, inv2 = torch.unique(i2, return_inverse=True)
        _, u = self.basis()
        b = (u[u1] * self.spectrum()) @ u[u2].T
        return b[inv1[:, None], inv2[None, :]]

    def _cached_rows(self, i1: torch.Tensor) -> torch.Tensor:
        """Rows ``K_G[i1, :]`` from a cache (fixed eigen path: one ``O(k E)`` product per new row)."""
        dtype, device = self._like()
        key = self._params_key()
        itemsize = torch.finfo(dtype).bits // 8
        cap = max(1, self.row_cache_bytes // (itemsize * self.n))
        idx = i1.detach().cpu().numpy()
        uniq = np.unique(idx)
        if len(uniq) > cap:  # too many for the cache: compute directly
            _, u = self.basis()
            return (u[i1] * self.spectrum()) @ u.T
        if self._rows is None or self._rows_key != key:
            self._rows = torch.empty((0, self.n), dtype=dtype, device=device)
            self._row_slot = np.full(self.n, -1, dtype=np.int64)
            self._rows_key = key
        slot = self._row_slot
        assert slot is not None
        missing = uniq[slot[uniq] < 0]
        if len(missing):
            if len(self._rows) + len(missing) > cap:
                self._rows = torch.empty((0, self.n), dtype=dtype, device=device)
                slot[:] = -1
                missing = uniq
            _, u = self.basis()
            with torch.no_grad():
                new = (u[torch.as_tensor(missing, device=device)] * self.spectrum()) @ u.T
            slot[missing] = np.arange(len(self._rows), len(self._rows) + len(missing))
            self._rows = torch.cat([self._rows, new])
        return self._rows[torch.as_tensor(slot[idx], device=device)]

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> torch.Tensor:
        if x1.dim() != 2 or x2.dim() != 2:
            raise ValueError("GraphMaternIndexKernel supports unbatched (n, d) inputs only")
        i1 = x1[:, 0].round().long()
        i2 = x2[:, 0].round().long()
        if diag:
            if not torch.equal(i1, i2):
                return torch.diagonal(self.block(i1, i2))
            return self.diag_values()[i1]
        return self.block(i1, i2)


# ---------------------------------------------------------------------------- full kernel
class EdgeContextKernel(gpytorch.kernels.Kernel):
    """``k((e, x), (e', x')) = s_1 k_G(e, e') k_f(x, x') + s_2 k_f'(x, x')`` (paper ``k_{G.f+f}``).

    Args:
        graph: the graph kernel on column 0.
        n_context: number of context columns (1..n_context).
        outputscales: initial ``(s_1, s_2)``.
        lengthscale: initial lengthscale of both Matérn-5/2 context kernels (all dimensions).
    """

    has_lengthscale = False

    def __init__(
        self,
        graph: GraphMaternIndexKernel,
        n_context: int = 3,
        *,
        outputscales: tuple[float, float] = (0.5, 0.5),
        lengthscale: float = 1.0,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.graph = graph
        self.kf = gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=n_context)
        self.kf2 = gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=n_context)
        self.kf.lengthscale = lengthscale
        self.kf2.lengthscale = lengthscale
        f64 = torch.float64
        self.register_parameter("raw_outputscale_prod", torch.nn.Parameter(torch.zeros((), dtype=f64)))
        self.register_parameter("raw_outputscale_add", torch.nn.Parameter(torch.zeros((), dtype=f64)))
        self.register_constraint("raw_outputscale_prod", Positive())
        self.register_constraint("raw_outputscale_add", Positive())
        self.initialize(
            raw_outputscale_prod=self.raw_outputscale_prod_constraint.inverse_transform(
                torch.tensor(float(outputscales[0]), dtype=f64)
            )
        )
        self.initialize(
            raw_outputscale_add=self.raw_outputscale_add_constraint.inverse_transform(
                torch.tensor(float(outputscales[1]), dtype=f64)
            )
        )

    @property
    def outputscale_prod(self) -> torch.Tensor:
        return self.raw_outputscale_prod_constraint.transform(self.raw_outputscale_prod)

    @property
    def outputscale_add(self) -> torch.Tensor:
        return self.raw_outputscale_add_constraint.transform(self.raw_outputscale_add)

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> torch.Tensor:
        if x1.dim() != 2 or x2.dim() != 2:
            raise ValueError("EdgeContextKernel supports unbatched (n, d) inputs only")
        k = self.edge_kernel()
        p = Points(x1[:, 0].round().long(), x1[:, 1:])
        if diag:
            return (
                k.diag(p) if x1 is x2 or torch.equal(x1, x2) else k.pairs(p, Points(x2[:, 0].round().long(), x2[:, 1:]))
            )
        return k(p, Points(x2[:, 0].round().long(), x2[:, 1:]))

    def edge_kernel(self) -> EdgeKernel:
        """The edge kernel at the current (differentiable) parameters: :func:`evroute.kernels.edge.edge_kernel` with
        this module's graph kernel, outputscales and the lengthscales of ``kf`` / ``kf2``."""
        return edge_kernel(
            GraphKernel(self.graph),
            self.outputscale_prod,
            self.outputscale_add,
            self.kf.lengthscale,
            self.kf2.lengthscale,
        )


class EdgePriorMean(gpytorch.means.Mean):
    """Prior mean ``E_det`` (in model units) looked up at the edge index of input column 0."""

    def __init__(self, prior_mean: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("values", torch.as_tensor(np.asarray(prior_mean, dtype=np.float64)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.values[x[..., 0].round().long()]
