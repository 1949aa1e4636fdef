import numpy as np
import pytest
from netfixtures import grid_network

from evroute.kernels import GraphMaternKernel, matern52, matern_rff
from evroute.linegraph import build_line_graph


@pytest.fixture(scope="module")
def lap():
    return build_line_graph(grid_network(4, 4)).laplacian()


@pytest.mark.parametrize("nu", [1, 2, 3])
def test_backends_agree_with_direct_dense_formula(lap, nu):
    kappa = 1.3
    dense = lap.toarray()
    w, u = np.linalg.eigh(dense)
    direct = u @ np.diag((2 * nu / kappa**2 + w) ** (-float(nu))) @ u.T
    direct_inv = np.linalg.inv(2 * nu / kappa**2 * np.eye(len(dense)) + dense)
    np.testing.assert_allclose(direct, np.linalg.matrix_power(direct_inv, nu), atol=1e-12)
    direct /= np.mean(np.diag(direct))
    for method in ("dense", "sparse"):
        k = GraphMaternKernel(lap, nu=nu, kappa=kappa, method=method)
        np.testing.assert_allclose(k.dense(), direct, atol=1e-10)
        np.testing.assert_allclose(k.diag().mean(), 1.0)
        assert np.linalg.eigvalsh(k.dense()).min() > 0  # positive definite


def test_truncated_eig_converges(lap):
    full = GraphMaternKernel(lap, method="dense").dense()
    k = GraphMaternKernel(lap, method="eig", n_eig=lap.shape[0] - 1).dense()
    assert np.abs(k - full).max() < 0.05


@pytest.mark.parametrize("nu", [1, 2])
def test_sparse_samples_have_kernel_covariance(lap, nu):
    k = GraphMaternKernel(lap, nu=nu, method="sparse")
    s = k.sample(40000, np.random.default_rng(0))
    cov = s @ s.T / s.shape[1]
    assert np.abs(cov - k.dense()).max() < 0.06


def test_hutchinson_normaliser_close_to_exact(lap):
    exact = GraphMaternKernel(lap, method="sparse")
    est = GraphMaternKernel(lap, method="sparse", exact_diag_max=0, n_probes=2000)
    assert est.scale == pytest.approx(exact.scale, rel=0.02)


def test_matern52_closed_form_and_rff():
    x = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    r = 1.0
    expected = (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    k = matern52(x)
    assert k[0, 1] == pytest.approx(expected) and k[0, 0] == 1.0
    pts = np.random.default_rng(1).normal(size=(30, 3))
    phi = matern_rff(pts, 40000, np.random.default_rng(2))
    assert np.abs(phi @ phi.T - matern52(pts)).max() < 0.05


@pytest.mark.slow
def test_diag_probing_converges_to_the_exact_diagonal():
    """Distance-colouring probes: the error is the kernel between same-coloured edges, shrinking with the hops."""
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network

    lap = build_line_graph(load_network("synthetic:1500:2")).laplacian()
    k = GraphMaternKernel(lap, 2.0, 1.0, method="sparse")
    exact = k.diag()
    errs = []
    for hops in (3, 8):
        est, n_col = k.diag_probing(hops)
        assert n_col < k.n
        errs.append(np.max(np.abs(est - exact) / exact))
    assert errs[1] < 0.1 * errs[0] and errs[1] < 1e-2


@pytest.mark.parametrize("nu", [1, 2])
def test_sample_blocks_are_bit_identical_to_sequential_samples(lap, nu):
    """Threaded block draws (the environment's sparse path) give exactly the numbers of one sample() per block."""
    k = GraphMaternKernel(lap, nu=nu, method="sparse")
    seq_rng, par_rng = np.random.default_rng(5), np.random.default_rng(5)
    seq = [k.sample(min(8, 30 - j), seq_rng) for j in range(0, 30, 8)]
    par = list(k.sample_blocks(30, 8, par_rng, threads=3))
    assert [b.shape for b in par] == [(k.n, 8)] * 3 + [(k.n, 6)]
    assert all(np.array_equal(a, b) for a, b in zip(seq, par, strict=True))
    assert np.array_equal(seq_rng.standard_normal(3), par_rng.standard_normal(3))  # same stream position after
