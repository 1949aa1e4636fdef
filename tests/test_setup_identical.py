"""Same seed, same numbers: the faster set-up (issue 21, BI-TS on 100k edges) makes the networks and environment draws
of the code before it bit for bit.

Two kinds of check: (1) the new code paths against the old formulations kept here or still in the code (lazy graph
draws into reused buffers against the up-front ones; random features in row blocks against the whole-matrix
formula; the sparse draw against the previous loop); (2) digests of small synthetic cities, their line graphs and
sparse draws, pinned to the values the code of commit 6f092a9 (before the change) gave on the project's VM
(x86-64, numpy 2.4.6).  (2) is skipped on another numpy, whose vectorised ``sin``/``cos`` may round differently.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evroute.environments.paper import EnvironmentConfig, sample_prior_function_and_variance
from evroute.kernels import matern
from evroute.kernels.sparse_cholesky import CholeskyMaternSampler
from evroute.linegraph import build_line_graph
from evroute.network.synthetic import synthetic_city


def _h(*arrays: np.ndarray) -> str:
    d = hashlib.sha256()
    for a in arrays:
        arr = np.ascontiguousarray(a)
        d.update(f"{arr.dtype.str}{arr.shape}".encode())
        d.update(arr.tobytes())
    return d.hexdigest()[:16]


@pytest.mark.parametrize(("nu", "n_samples"), [(2.0, 150), (4.0, 70), (2.0, 64)])
def test_lazy_graph_draws_equal_the_up_front_ones(nu: float, n_samples: int) -> None:
    lap = build_line_graph(synthetic_city(800, 1)).laplacian()
    sampler = CholeskyMaternSampler(lap, nu, 0.8)
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    upfront = [b.copy() for b in sampler.sample_blocks(n_samples, 64, r1)]
    lazy = [b.copy() for b in sampler.sample_blocks(n_samples, 64, r2, lazy=True)]
    assert [b.shape for b in lazy] == [b.shape for b in upfront]
    for a, b in zip(upfront, lazy, strict=True):
        np.testing.assert_array_equal(a, b)
    assert r1.standard_normal() == r2.standard_normal()  # the generator is left in the same state


def _rff_whole(x: np.ndarray, n_features: int, rng: np.random.Generator, ls: float, dtype: type) -> np.ndarray:
    """:func:`matern_rff` before it computed in row blocks (commit 6f092a9), nu = 5/2."""
    g = rng.standard_normal((x.shape[1], n_features))
    u = rng.chisquare(5.0, size=n_features)
    w = g * np.sqrt(5.0 / u)[None, :]
    b = rng.uniform(0.0, 2.0 * np.pi, size=n_features)
    arg: np.ndarray = (x / ls @ w + b).astype(dtype, copy=False)
    return np.cos(arg, out=arg) * np.asarray(np.sqrt(2.0 / n_features), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [7, 4096])
def test_random_features_in_row_blocks_equal_the_whole_matrix(
    dtype: type, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matern, "RFF_ROWS", rows)
    x = np.random.default_rng(0).standard_normal((9000, 3))
    r1, r2 = np.random.default_rng(2), np.random.default_rng(2)
    got = matern.matern_rff(x, 100, r1, 0.7, dtype=dtype)
    want = _rff_whole(x, 100, r2, 0.7, dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert r1.standard_normal() == r2.standard_normal()


def _sparse_draw_before(lg, cfg: EnvironmentConfig, rng: np.random.Generator):  # noqa: ANN001, ANN202
    """The sparse branch of :func:`sample_prior_function_and_variance` at commit 6f092a9 (even nu)."""
    n = lg.n_nodes
    x = lg.contexts()
    graph = CholeskyMaternSampler(lg.laplacian(), cfg.graph_nu, cfg.graph_kappa)
    f, var = np.zeros(n), np.zeros(n)
    w = cfg.product_weight
    if w > 0:
        phi = _rff_whole(x, cfg.n_features, rng, cfg.lengthscale, np.float32)
        g_sq = np.zeros(n)
        blocks = graph.sample_blocks(cfg.n_features, 64, rng)  # normals up front, fresh arrays
        for j, g in zip(range(0, cfg.n_features, 64), blocks, strict=True):
            g_sq += np.einsum("ij,ij->i", g, g)
            f += np.einsum("ij,ij->i", phi[:, j : j + 64], g)
        scale = w / (float(g_sq.sum()) / (n * cfg.n_features))
        f *= np.sqrt(scale)
        var += scale * (g_sq / cfg.n_features) * np.einsum("ij,ij->i", phi, phi, dtype=np.float64)
    if w < 1:
        phi2 = _rff_whole(x, cfg.n_features, rng, cfg.lengthscale, np.float32)
        f += np.sqrt(1.0 - w) * (phi2 @ rng.standard_normal(cfg.n_features))
        var += (1.0 - w) * np.einsum("ij,ij->i", phi2, phi2, dtype=np.float64)
    return f, var


@pytest.mark.parametrize(("weight", "nu"), [(0.5, 2.0), (1.0, 4.0), (0.0, 2.0)])
def test_sparse_draw_equals_the_previous_loop(weight: float, nu: float) -> None:
    lg = build_line_graph(synthetic_city(5000, 3))  # more rows than one random-feature block
    cfg = EnvironmentConfig(method="sparse", n_features=100, product_weight=weight, graph_nu=nu)
    r1, r2 = np.random.default_rng(1), np.random.default_rng(1)
    f, v = sample_prior_function_and_variance(lg, cfg, r1)
    f0, v0 = _sparse_draw_before(lg, cfg, r2)
    # equal to the last bits only with one BLAS thread: ``phi2 @ normals`` (a 100-term dot product per row) sums in
    # an order set by the BLAS thread count, so allow 100 * eps * sum|terms| (sum|terms| < 50 here): 1e-12
    np.testing.assert_allclose(f, f0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v, v0, rtol=0, atol=1e-12)
    assert r1.standard_normal() == r2.standard_normal()


# digests and the generator's next normal, from the code of commit 6f092a9 on the project's VM (numpy 2.4.6)
NETWORKS = {
    (2000, 0): ("ddaddf8751ed6fef", "f0696485e8bf23db", "ee150a45abf68795", "8103e0f820a18f72", "a8f4a7a0318b8189"),
    (5000, 3): ("92191b06e02e24fa", "d4e09381ab370c11", "1b7cfca07ada040c", "25ac858616b23d39", "51e7c79d915054ef"),
    (20, 1): ("25ff319c75bdf8c2", "83334e4db01fbca1", "0e2499c37b9bc3ee", "58cc3fdf164ac932", "5c28d13df9f7764b"),
}
DRAWS = {
    (2000, 0, 3, 100, 0.5): ("ffca0cf6bbf13c75", -1.7408378016768549),
    (2000, 0, 3, 100, 1.0): ("c171b9c3eedc0a0d", 0.6203453699735132),
    (2000, 0, 3, 100, 0.0): ("06dd1c57af7003cd", 0.36825449991781684),
    (5000, 3, 1, 512, 0.5): ("39bda663f062511a", -1.1792955859628298),
}
pinned = pytest.mark.skipif(not np.__version__.startswith("2.4."), reason="digests pinned with numpy 2.4")


@pinned
@pytest.mark.parametrize("size", sorted(NETWORKS))
def test_synthetic_city_and_line_graph_digests_are_pinned(size: tuple[int, int]) -> None:
    net = synthetic_city(*size)
    lap = build_line_graph(net).laplacian()
    got = (
        _h(net.edge_ids, net.from_node, net.to_node),
        _h(net.length_m, net.speed_mps, net.z_from_m, net.z_to_m),
        _h(np.concatenate(net.geometry), np.array([len(g) for g in net.geometry])),
        _h(net.turns),
        _h(lap.data, lap.indices, lap.indptr),
    )
    assert got == NETWORKS[size]


@pinned
@pytest.mark.parametrize("case", sorted(DRAWS))
def test_sparse_draw_digests_are_pinned(case: tuple[int, int, int, int, float]) -> None:
    n_edges, city_seed, seed, n_features, weight = case
    lg = build_line_graph(synthetic_city(n_edges, city_seed))
    cfg = EnvironmentConfig(method="sparse", n_features=n_features, product_weight=weight)
    rng = np.random.default_rng(seed)
    g, v = sample_prior_function_and_variance(lg, cfg, rng)
    assert (_h(g, v), float(rng.standard_normal())) == DRAWS[case]
