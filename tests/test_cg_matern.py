"""The factorization-free graph Matérn sampler (:mod:`evroute.kernels.cg_matern`) and the environments' ``"scale"``
draw built on it (:mod:`evroute.environments.paper`): against dense linear algebra and the sparse Cholesky draw."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from evroute.environments import paper
from evroute.environments.paper import EnvironmentConfig, sample_prior_function_and_variance
from evroute.kernels import cg_matern
from evroute.kernels.cg_matern import BLOCK_THETA, CGMaternSampler, compiled_available, strong_block_inverse
from evroute.linegraph import build_line_graph
from evroute.network.country import synthetic_country
from evroute.network.synthetic import synthetic_city


@pytest.fixture(scope="module")
def lg():  # noqa: ANN201
    return build_line_graph(synthetic_city(600, 2))


@pytest.fixture(scope="module")
def country_lap():  # noqa: ANN201
    """A small synthetic country's Laplacian: short ramps make its largest diagonal 3,249 (cond(A) <= 1,625)."""
    return build_line_graph(synthetic_country(6000, 0)).laplacian()


def _dense_a(lap: sp.spmatrix, nu: float, kappa: float) -> np.ndarray:
    return lap.toarray() + 2.0 * nu / kappa**2 * np.eye(lap.shape[0])


needs_numba = pytest.mark.skipif(not compiled_available(), reason="the compiled kernels need numba")


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=needs_numba)])
@pytest.mark.parametrize("precond", ["jacobi", "block"])
@pytest.mark.parametrize("rtol", [1e-4, 1e-8])
def test_solve_is_within_the_stated_bound(lg, rtol: float, precond: str, compiled: bool) -> None:  # noqa: ANN001
    lap = lg.laplacian()
    s = CGMaternSampler(lap, 2.0, 1.0, rtol=rtol, precond=precond, compiled=compiled)
    assert s.compiled == compiled
    a = _dense_a(lap, 2.0, 1.0)
    ev = np.linalg.eigvalsh(a)
    assert ev[-1] / ev[0] <= s.cond_bound * (1 + 1e-12)  # the stated bound really bounds cond(A)
    b = np.random.default_rng(0).standard_normal((lap.shape[0], 5))
    x = s.solve(b)
    exact = np.linalg.solve(a, b)
    # ||x - x*|| <= ||A^-1|| ||A x - b|| <= cond(A) rtol ||x*|| per column (residual stopping rule)
    err = np.linalg.norm(x - exact, axis=0) / np.linalg.norm(exact, axis=0)
    assert np.all(err <= rtol * s.cond_bound)
    assert np.all(np.linalg.norm(a @ x - b, axis=0) <= rtol * np.linalg.norm(b, axis=0))


@pytest.mark.parametrize("precond", ["jacobi", "block"])
@pytest.mark.parametrize(("nu", "kappa"), [(2.0, 1.0), (4.0, 0.7)])
def test_colour_is_the_dense_matrix_power(lg, nu: float, kappa: float, precond: str) -> None:  # noqa: ANN001
    lap = lg.laplacian()
    s = CGMaternSampler(lap, nu, kappa, rtol=1e-10, precond=precond)
    z = np.random.default_rng(1).standard_normal((lap.shape[0], 3))
    want = np.linalg.matrix_power(np.linalg.inv(_dense_a(lap, nu, kappa)), int(nu) // 2) @ z
    # two solves at most, each within rtol cond(A) (relative): 1e-10 * cond * (nu / 2) with room for rounding
    np.testing.assert_allclose(s.colour(z), want, rtol=0, atol=1e-8 * np.abs(want).max())


def test_sample_blocks_shapes_and_stream(lg) -> None:  # noqa: ANN001
    s = CGMaternSampler(lg.laplacian(), 2.0, 1.0)
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    blocks = [b.copy() for b in s.sample_blocks(11, 4, r1)]
    assert [b.shape[1] for b in blocks] == [4, 4, 3]
    z = np.concatenate([r2.standard_normal((s.n, m)) for m in (4, 4, 3)], axis=1)
    both = s.colour(z)  # one solve of all columns stops at another iteration: each within rtol cond(A) of exact
    np.testing.assert_allclose(
        np.concatenate(blocks, axis=1), both, rtol=0, atol=2 * s.rtol * s.cond_bound * np.abs(both).max()
    )
    assert r1.standard_normal() == r2.standard_normal()  # the same stream consumed


def _strong_clusters(a: sp.csr_matrix, theta: float) -> list[list[int]]:
    """Connected components of the strong couplings of ``a``, entry by entry with a plain union-find."""
    d, parent = a.diagonal(), list(range(a.shape[0]))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    coo = a.tocoo()
    for i, j, v in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
        if i != j and abs(v) >= theta * (d[i] * d[j]) ** 0.5:
            parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(a.shape[0]):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


@pytest.mark.parametrize("chunk", [1 << 16, 999])
def test_block_inverse_is_the_exact_inverse_of_each_strong_cluster(
    country_lap,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
) -> None:
    monkeypatch.setattr(cg_matern, "_STRENGTH_ROWS", chunk)  # one chunk, or six of them
    a = (country_lap + 4.0 * sp.identity(country_lap.shape[0])).tocsr()
    m = strong_block_inverse(a, BLOCK_THETA)
    clusters = _strong_clusters(a, BLOCK_THETA)
    assert max(len(c) for c in clusters) > 2  # the graph has clusters beyond pairs
    assert m.nnz == sum(len(c) ** 2 for c in clusters)  # nothing outside the clusters' blocks
    singles = [c[0] for c in clusters if len(c) == 1]
    np.testing.assert_array_equal(m.diagonal()[singles], 1.0 / a.diagonal()[singles])
    m_rows = m.tolil()  # cheap row slicing for the few hundred blocks
    for c in (c for c in clusters if len(c) > 1):
        want = np.linalg.inv(a[c][:, c].toarray())
        # a dense inverse of an SPD block of at most 64 nodes with condition below cond(A): a few ulps
        np.testing.assert_allclose(m_rows[c][:, c].toarray(), want, rtol=1e-12, atol=1e-13 * np.abs(want).max())


def test_block_preconditioner_needs_fewer_iterations_on_short_edges(country_lap) -> None:  # noqa: ANN001
    b = np.random.default_rng(2).standard_normal((country_lap.shape[0], 4))
    jac = CGMaternSampler(country_lap, 2.0, 1.0, rtol=1e-8)
    blk = CGMaternSampler(country_lap, 2.0, 1.0, rtol=1e-8, precond="block")
    x_jac, x_blk = jac.solve(b), blk.solve(b)
    assert blk.iterations < 0.8 * jac.iterations  # measured 29 against 40 (1M-edge country: 19 against 45)
    a = country_lap + 4.0 * sp.identity(country_lap.shape[0])
    for x in (x_jac, x_blk):  # both meet the stopping rule, so both lie within rtol cond(A) of the exact solve
        assert np.all(np.linalg.norm(a @ x - b, axis=0) <= 1e-8 * np.linalg.norm(b, axis=0))
    err = np.linalg.norm(x_blk - x_jac, axis=0) / np.linalg.norm(x_jac, axis=0)
    assert np.all(err <= 2 * 1e-8 * blk.cond_bound)


@needs_numba
def test_compiled_kernels_equal_numpy() -> None:
    from evroute.kernels import cg_compiled

    rng = np.random.default_rng(4)
    mat = sp.random(300, 300, density=0.03, random_state=5, format="csr") + sp.identity(300, format="csr")
    v, x, r, p, ap = (rng.standard_normal((300, 5)) for _ in range(5))
    alpha = rng.standard_normal(5)
    out = np.empty_like(v)
    dots = cg_compiled.matdot(mat.indptr, mat.indices, mat.data, v, out)
    # sums of a few dozen products in another order: within 1e-13 of the largest magnitude
    np.testing.assert_allclose(out, mat @ v, rtol=0, atol=1e-13 * np.abs(mat @ v).max())
    np.testing.assert_allclose(dots, np.einsum("ij,ij->j", v, mat @ v), rtol=1e-12)
    x2, r2 = x + alpha * p, r - alpha * ap
    rr = cg_compiled.step(x, r, p, ap, alpha)
    np.testing.assert_array_equal(x, x2)  # one product and one sum per entry, as NumPy does: bit for bit
    np.testing.assert_array_equal(r, r2)
    np.testing.assert_allclose(rr, np.einsum("ij,ij->j", r2, r2), rtol=1e-12)
    p2 = v + alpha * p
    cg_compiled.direction(p, v, alpha)
    np.testing.assert_array_equal(p, p2)


@pytest.mark.parametrize("precond", ["jacobi", "block"])
@needs_numba
def test_compiled_solve_equals_numpy_solve(country_lap, precond: str) -> None:  # noqa: ANN001
    b = np.random.default_rng(6).standard_normal((country_lap.shape[0], 8))
    fast = CGMaternSampler(country_lap, 2.0, 1.0, rtol=1e-5, precond=precond, compiled=True)
    slow = CGMaternSampler(country_lap, 2.0, 1.0, rtol=1e-5, precond=precond)
    x_fast, x_slow = fast.solve(b), slow.solve(b)
    # the same iteration with dot products summed in another order; both meet the stopping rule, so both lie within
    # rtol cond(A) of the exact solve (measured: identical bits)
    err = np.linalg.norm(x_fast - x_slow, axis=0) / np.linalg.norm(x_slow, axis=0)
    assert np.all(err <= 2 * 1e-5 * fast.cond_bound)


def test_block_draws_are_reproducible(country_lap) -> None:  # noqa: ANN001
    s = CGMaternSampler(country_lap, 2.0, 1.0, rtol=1e-5, precond="block", compiled=compiled_available())
    one = np.concatenate(list(s.sample_blocks(8, 8, np.random.default_rng(7))), axis=1)
    two = np.concatenate(list(s.sample_blocks(8, 8, np.random.default_rng(7))), axis=1)
    assert np.array_equal(one, two)  # fixed operation order: bit for bit


def test_unknown_preconditioner_is_refused(lg) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="unknown preconditioner"):
        CGMaternSampler(lg.laplacian(), 2.0, 1.0, precond="ilu")


@pytest.mark.parametrize("nu", [1.0, 3.0, 2.5])
def test_odd_or_fractional_nu_is_refused(lg, nu: float) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="even integer"):
        CGMaternSampler(lg.laplacian(), nu, 1.0)


def test_scale_method_equals_the_sparse_draw_with_as_many_features(lg) -> None:  # noqa: ANN001
    # with n_features = SCALE_GRAPH_DRAWS (<= SCALE_FEATURES) the scale method consumes the generator exactly as the
    # sparse one does; only the solver differs (conjugate gradients vs sparse Cholesky)
    d = paper.SCALE_GRAPH_DRAWS
    assert d <= paper.SCALE_FEATURES and d <= paper.SCALE_BLOCK
    for w in (0.5, 1.0):
        r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
        fs, vs = sample_prior_function_and_variance(
            lg, EnvironmentConfig(method="scale", n_features=d, product_weight=w), r1
        )
        fc, vc = sample_prior_function_and_variance(
            lg, EnvironmentConfig(method="sparse", n_features=d, product_weight=w), r2
        )
        assert r1.standard_normal() == r2.standard_normal()
        cond = CGMaternSampler(lg.laplacian(), 2.0, 1.0).cond_bound
        # each graph draw within SCALE_RTOL cond(A) (relative); the normalisation and variances inherit it, x4 room
        tol = 4 * paper.SCALE_RTOL * cond
        np.testing.assert_allclose(fs, fc, rtol=0, atol=tol * np.abs(fc).max())
        np.testing.assert_allclose(vs, vc, rtol=tol)


def test_auto_method_thresholds() -> None:
    cfg = EnvironmentConfig()
    assert paper._auto_method(cfg.dense_max, cfg) == "dense"
    assert paper._auto_method(paper.SCALE_MIN_EDGES - 1, cfg) == "sparse"
    assert paper._auto_method(paper.SCALE_MIN_EDGES, cfg) == "scale"
    assert paper._auto_method(paper.SCALE_MIN_EDGES, EnvironmentConfig(graph_nu=3.0)) == "sparse"
    # every committed study's network is below the threshold (largest: synthetic:100000)
    assert paper.SCALE_MIN_EDGES > 100_000 * 1.02


def test_scale_method_refuses_odd_nu(lg) -> None:  # noqa: ANN001
    from evroute.errors import ParameterError

    with pytest.raises(ParameterError, match="even integer graph_nu"):
        sample_prior_function_and_variance(lg, EnvironmentConfig(method="scale", graph_nu=3.0), np.random.default_rng())


def test_scale_draw_has_unit_average_variance(lg) -> None:  # noqa: ANN001
    f, v = sample_prior_function_and_variance(lg, EnvironmentConfig(method="scale"), np.random.default_rng(0))
    assert np.all(np.isfinite(f)) and np.all(v > 0)
    # product term: mean of scale g_sq / d is w exactly, times phi_sq (mean 1 +- Monte Carlo over 8 features, and the
    # additive term's 64): a loose bound, 4 sigma of the features' error sqrt(2 / 8) = 0.5 on the product half
    assert abs(v.mean() - 1.0) < 0.5


def test_scale_draw_is_reproducible_for_a_seed(lg) -> None:  # noqa: ANN001
    cfg = EnvironmentConfig(method="scale")
    one = sample_prior_function_and_variance(lg, cfg, np.random.default_rng(11))
    two = sample_prior_function_and_variance(lg, cfg, np.random.default_rng(11))
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])  # bit for bit
    assert paper.SCALE_PRECOND == "block"  # the draw above ran the block preconditioner
