"""Truncated local graph Matérn columns (the exact GP's large-network path) against the exact dense kernel."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.errors import ParameterError
from evroute.kernels.graph_matern import GraphMaternKernel
from evroute.kernels.graph_matern_local import LocalGraphMatern
from evroute.linegraph import build_line_graph
from evroute.network.registry import load_network


@pytest.fixture(scope="module")
def lap():
    return build_line_graph(load_network("synthetic:1500:2")).laplacian()


@pytest.fixture(scope="module")
def raw(lap):
    return GraphMaternKernel(lap, 2.0, 1.0, method="sparse", normalise=False).dense()  # A^-2 (LAPACK)


@pytest.fixture(scope="module")
def exact(raw):
    return raw / np.mean(np.diag(raw))  # normalised to unit mean variance


@pytest.mark.slow
@pytest.mark.parametrize("nu", [1, 2, 3])
def test_residual_bound_holds_and_is_tight_for_single_columns(lap, nu):
    """e_nu bounds the entry-wise truncation error of A^-nu e_i at every radius, within a factor ~10 of it."""
    raw = GraphMaternKernel(lap, nu, 1.0, method="sparse", normalise=False).dense()
    k = LocalGraphMatern(lap, nu, 1.0, tol=1e-6, normalise=False)
    cols = np.array([5, 700, 1400])
    for hops in (1, 2, 4, 8):
        s, xs, res = k._solve(cols, hops, nu)
        assert len(s) < k.n  # truncated: the union of neighbourhoods is not the whole graph
        x = np.zeros((k.n, len(cols)))
        x[s] = xs[-1]
        err = np.abs(x - raw[:, cols]).max(axis=0)
        bound = k._inf_bound(res)
        assert np.all(err <= bound) and np.all(bound < 10 * err)
        assert np.all(x <= raw[:, cols] + 1e-15)  # M-matrix: the truncated column under-estimates


@pytest.mark.slow
@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_local_columns_and_variances_within_the_stated_bound(lap, exact, tol):
    k = LocalGraphMatern(lap, 2.0, 1.0, tol=tol, hops=2)
    d = np.diag(exact)
    assert np.max(np.abs(k.diag() - d) / d) <= tol
    assert (
        abs(k.scale * np.mean(np.diag(GraphMaternKernel(lap, 2.0, 1.0, method="dense", normalise=False).dense())) - 1.0)
        <= tol
    )  # the normaliser from the local variances
    for idx in (np.array([3]), np.array([10, 11, 12, 900])):
        c, bound = k.sparse_columns(idx)
        assert c.shape == (k.n, len(idx)) and np.all(bound <= 0.5 * tol)
        # stated bound: tol (truncation + dropped entries) + tol * max K (normaliser, relative error <= tol)
        assert np.abs(c.toarray() - exact[:, idx]).max() <= tol * (1.0 + exact.max())
        if len(idx) == 1:
            assert c.nnz < 0.5 * k.n  # sparse: local support only
    tighter = LocalGraphMatern(lap, 2.0, 1.0, tol=tol * 1e-3).columns(np.array([10, 900]))
    assert np.abs(tighter - exact[:, [10, 900]]).max() < 1e-3 * tol * (1.0 + exact.max())


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(0, 1525), min_size=1, max_size=6, unique=True))
def test_columns_do_not_depend_on_the_batch(lap, exact, idx):
    """A column is the same whether computed alone or in a batch (both within the bound of the exact one)."""
    k = _k(lap)
    idx = np.array(idx)
    batch = k.columns(idx)
    alone = np.column_stack([k.columns(idx[[j]])[:, 0] for j in range(len(idx))])
    assert np.abs(batch - alone).max() <= 2e-6 * (1.0 + exact.max())
    assert np.abs(batch - exact[:, idx]).max() <= 1e-6 * (1.0 + exact.max())


_CACHE: dict = {}


def _k(lap):
    if "k" not in _CACHE:
        _CACHE["k"] = LocalGraphMatern(lap, 2.0, 1.0, tol=1e-6)
    return _CACHE["k"]


def test_bad_parameters():
    lap = build_line_graph(load_network("synthetic:300:1")).laplacian()
    with pytest.raises(ParameterError):
        LocalGraphMatern(lap, 1.5, 1.0)
    with pytest.raises(ParameterError):
        LocalGraphMatern(lap, 2.0, 1.0, tol=0.0)


def test_no_columns_is_an_empty_matrix(lap):
    c, bound = _k(lap).sparse_columns(np.zeros(0, np.int64))
    assert c.shape == (lap.shape[0], 0) and bound.shape == (0,)
