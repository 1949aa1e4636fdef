"""GPyTorch kernels of the GP edge model: positive definiteness and agreement with a direct dense computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from evroute.environments import PaperEnvironment
from evroute.kernels import matern52
from evroute.linegraph import build_line_graph
from evroute.models.gp_kernels import EdgeContextKernel, EdgePriorMean, GraphMaternIndexKernel
from evroute.network.registry import load_network


@pytest.fixture(scope="module")
def lg():
    return build_line_graph(load_network("synthetic:200:3"))


def direct_graph_matern(lap, nu, kappa):
    """Paper appendix B.1 written out: U (2 nu / kappa^2 + Lambda)^-nu U^T, normalised to unit mean variance."""
    lam, u = np.linalg.eigh(lap.toarray())
    k = u @ np.diag((2 * nu / kappa**2 + np.maximum(lam, 0)) ** (-nu)) @ u.T
    return k / np.mean(np.diag(k))


def idx_inputs(n):
    return torch.arange(n, dtype=torch.float64)[:, None]


@pytest.mark.parametrize("learn", [False, True])
@pytest.mark.parametrize("nu,kappa", [(2.0, 1.0), (1.5, 0.7), (3.0, 2.5)])
def test_graph_kernel_matches_direct_dense(lg, learn, nu, kappa):
    n = lg.n_nodes
    k = GraphMaternIndexKernel(lg.laplacian(), nu, kappa, learn=learn).double()
    x = idx_inputs(n)
    got = k.forward(x, x).detach().numpy()
    want = direct_graph_matern(lg.laplacian(), nu, kappa)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(k.forward(x, x, diag=True).detach().numpy(), np.diag(want), rtol=1e-7, atol=1e-9)
    # arbitrary (repeated, unsorted) index blocks are the matching sub-blocks
    i1 = torch.tensor([5, 3, 3, 0, n - 1])
    i2 = torch.tensor([7, 5, 1])
    np.testing.assert_allclose(
        k.block(i1, i2).detach().numpy(), want[np.ix_(i1.numpy(), i2.numpy())], rtol=1e-7, atol=1e-9
    )


def test_graph_kernel_differentiable_in_kappa_and_nu(lg):
    k = GraphMaternIndexKernel(lg.laplacian(), 2.0, 1.0, learn=True).double()
    x = idx_inputs(30)
    k.forward(x, x).sum().backward()
    assert k.raw_kappa.grad is not None and torch.isfinite(k.raw_kappa.grad) and k.raw_kappa.grad != 0
    assert k.raw_nu.grad is not None and torch.isfinite(k.raw_nu.grad) and k.raw_nu.grad != 0


def test_truncated_eigen_path_fixed_equals_learnable(lg):
    a = GraphMaternIndexKernel(lg.laplacian(), 2.0, 1.0, method="eig", n_eig=40).double()
    b = GraphMaternIndexKernel(lg.laplacian(), 2.0, 1.0, method="eig", n_eig=40, learn=True).double()
    i1, i2 = torch.tensor([4, 9, 4, 100]), torch.arange(lg.n_nodes)
    np.testing.assert_allclose(a.block(i1, i2).numpy(), b.block(i1, i2).detach().numpy(), rtol=1e-10, atol=1e-12)
    assert abs(float(b.diag_values().detach().mean()) - 1.0) < 1e-10  # normalised to unit average variance


@pytest.mark.parametrize("learn", [False, True])
def test_edge_context_kernel_positive_definite_and_matches_numpy(lg, learn):
    rng = np.random.default_rng(0)
    n = lg.n_nodes
    ctx = lg.contexts()
    edges = rng.integers(0, n, size=60)
    x_np = np.concatenate([edges[:, None], ctx[edges] + 0.3 * rng.standard_normal((60, 3))], axis=1)
    x = torch.as_tensor(x_np)
    kern = EdgeContextKernel(
        GraphMaternIndexKernel(lg.laplacian(), learn=learn), outputscales=(0.7, 0.4), lengthscale=0.8
    ).double()
    k = kern.forward(x, x).detach().numpy()
    np.testing.assert_allclose(k, k.T, atol=1e-12)
    assert np.linalg.eigvalsh(k).min() > -1e-10
    kg = direct_graph_matern(lg.laplacian(), 2.0, 1.0)[np.ix_(edges, edges)]
    kf = matern52(x_np[:, 1:], lengthscale=0.8)
    np.testing.assert_allclose(k, 0.7 * kg * kf + 0.4 * kf, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(kern.forward(x, x, diag=True).detach().numpy(), np.diag(k), rtol=1e-9)


def test_prior_mean_and_environment_kernel_agree(lg):
    env = PaperEnvironment.sample(lg, seed=1)
    mean = EdgePriorMean(env.prior_mean_wh).double()
    x = torch.as_tensor(np.concatenate([np.arange(lg.n_nodes)[:, None], lg.contexts()], axis=1))
    np.testing.assert_allclose(mean(x).numpy(), env.prior_mean_wh)
    # environment convention: sigma0^2 [w kG kf + (1 - w) kf'], unit components: average prior variance 1
    kern = EdgeContextKernel(GraphMaternIndexKernel(lg.laplacian()), outputscales=(0.5, 0.5)).double()
    assert abs(float(kern.forward(x, x, diag=True).mean()) - 1.0) < 1e-9


@pytest.mark.parametrize("method", ["dense", "eig"])
def test_anchored_blocks_equal_direct_blocks(lg, method):
    """Blocks against the anchor (kept columns) equal the direct blocks, through grow, swap and pickling."""
    import pickle

    n = lg.n_nodes
    ref = GraphMaternIndexKernel(lg.laplacian(), method=method, n_eig=40).double()
    k = GraphMaternIndexKernel(lg.laplacian(), method=method, n_eig=40).double()
    rng = np.random.default_rng(3)
    anchor = rng.choice(n, 25, replace=False)
    others = torch.as_tensor(rng.integers(0, n, 40))
    for step in range(5):
        k.set_anchor(anchor)
        a = torch.as_tensor(anchor)
        want = ref.block(torch.arange(n), a).numpy()
        np.testing.assert_allclose(k.block(torch.arange(n), a).numpy(), want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(k.block(a, a).numpy(), want[anchor], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(k.block(a, others).numpy(), want[others.numpy()].T, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(k.block(others, a).numpy(), want[others.numpy()], rtol=1e-12, atol=1e-14)
        if step == 0:  # grow: new edges appended (beyond the buffer's capacity)
            anchor = np.concatenate([anchor, np.setdiff1d(rng.choice(n, 10, replace=False), anchor)])
        elif step == 1:  # swap at capacity: new edges take the positions of dropped ones (updated in place)
            pos = rng.choice(len(anchor), 6, replace=False)
            anchor = anchor.copy()
            anchor[pos] = np.setdiff1d(np.arange(n), anchor)[:6]
        elif step == 2:  # any other change (here: shrink and reorder) rebuilds the columns
            anchor = anchor[::-1][:20].copy()
        else:  # columns are not pickled; they are rebuilt on first use
            k = pickle.loads(pickle.dumps(k))
            assert k._anchor_cols is None
    learnable = GraphMaternIndexKernel(lg.laplacian(), learn=True).double()
    learnable.set_anchor(anchor)  # ignored: the columns would go stale as kappa / nu change
    assert learnable._anchor is None
