"""Vectorised set-up steps give the numbers of the per-edge code they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.experiments.runner import load_linegraph
from evroute.routes import corner_route, edge_midpoints


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_edge_midpoints_equal_per_edge_means(counts: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    geometry = [rng.normal([6.1, 49.6], 0.05, size=(k, 2)) for k in counts]
    expected = np.array([g.mean(axis=0) for g in geometry])
    np.testing.assert_array_equal(edge_midpoints(geometry), expected)  # bit for bit, counts above 8 included


def test_corner_routes_are_the_per_edge_ones() -> None:
    lg = load_linegraph("synthetic:2000:0")
    mid = np.array([g.mean(axis=0) for g in lg.network.geometry])
    lo, hi = mid.min(axis=0), mid.max(axis=0)
    rel = (mid - lo) / np.where(hi > lo, hi - lo, 1.0)
    for name, (a, b) in {"A": ((0.0, 0.0), (1.0, 1.0)), "B": ((0.0, 1.0), (1.0, 0.0))}.items():
        expected = int(np.argmin(((rel - a) ** 2).sum(axis=1))), int(np.argmin(((rel - b) ** 2).sum(axis=1)))
        assert corner_route(lg, name) == expected


def test_cholesky_graph_draws_equal_the_superlu_ones_to_rounding() -> None:
    """The sparse environment's graph draws (sparse Cholesky) against SuperLU's (GraphMaternKernel.sample_blocks)
    on the same normals; the generator is left in the same state (later draws from it are unchanged)."""
    from evroute.kernels.graph_matern import GraphMaternKernel
    from evroute.kernels.sparse_cholesky import CholeskyMaternSampler

    lap = load_linegraph("synthetic:2000:0").laplacian()
    for nu, kappa in ((2.0, 1.0), (4.0, 0.7)):
        ref = GraphMaternKernel(lap, nu, kappa, method="sparse", normalise=False)
        chol = CholeskyMaternSampler(lap, nu, kappa)
        r1, r2 = np.random.default_rng(4), np.random.default_rng(4)
        a = np.hstack(list(ref.sample_blocks(150, 64, r1, threads=1)))
        b = np.hstack(list(chol.sample_blocks(150, 64, r2)))
        # two backward-stable solvers of the same well-conditioned SPD system (lambda_min(A) >= 2 nu / kappa^2): they
        # agree to ~1e-15 relative; 1e-12 of the largest entry leaves a wide margin
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max())
        assert r1.standard_normal() == r2.standard_normal()
