"""The ExactGP model (posterior, marginal likelihood) against GPyTorch's ExactGP, and a GPyTorch model driving a
policy through the adapter."""

from __future__ import annotations

import gpytorch
import numpy as np
import pytest
import torch

from evroute.bo import (
    GPUCB,
    BoxDomain,
    ExactGP,
    FiniteDomain,
    GaussianPosterior,
    Matern,
    SquaredExponential,
    run_policy,
)
from evroute.bo.acquisition import expected_improvement, upper_confidence_bound
from evroute.bo.adapters import TorchModel
from evroute.bo.timevarying.gp import GPHyper, SpatioTemporalKernel, spatio_temporal_gp


class _ExactGP(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood, kernel) -> None:  # noqa: ANN001
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel)

    def forward(self, x):  # noqa: ANN001, ANN201
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def _gpytorch(x: np.ndarray, y: np.ndarray, kernel, lengthscale: float, outputscale: float, noise: float) -> TorchModel:  # noqa: ANN001, E501
    lik = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=gpytorch.constraints.GreaterThan(1e-12)).double()
    xt, yt = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
    gp = _ExactGP(xt, yt, lik, kernel).double()
    gp.covar_module.outputscale = outputscale  # set in float64 (after .double())
    gp.covar_module.base_kernel.lengthscale = lengthscale
    lik.noise = noise
    return TorchModel(gp, lik)


def test_static_policy_posterior_equals_gpytorch() -> None:
    rng = np.random.default_rng(0)
    dom = BoxDomain.unit(2)
    pol = GPUCB(dom, kernel=SquaredExponential(0.3), lam=0.01, seed=0)
    x = rng.random((12, 2))
    pol.tell_many(x, np.sin(4 * x[:, 0]) + x[:, 1])
    q = rng.random((7, 2))
    ours = pol.posterior_at(q)
    ref = _gpytorch(x, pol.y, gpytorch.kernels.RBFKernel(), 0.3, 1.0, 0.01 + 1e-10).posterior(q)  # our 1e-10 jitter
    np.testing.assert_allclose(ours.mean, ref.mean, atol=1e-10)
    # GPyTorch's predictive (co)variance differs at the 1e-8 level (its own numerical safeguards)
    np.testing.assert_allclose(ours.variance, ref.variance, atol=1e-7)
    np.testing.assert_allclose(ours.covariance, ref.covariance, atol=1e-7)
    # the tuple API is the marginal view of the same posterior
    m, s = pol.posterior(q)
    np.testing.assert_array_equal(m, ours.mean)
    np.testing.assert_allclose(s, ours.std, rtol=1e-15)


def test_spatiotemporal_posterior_equals_gpytorch() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((15, 3))
    y = np.cos(3 * x[:, 0]) * x[:, 2]
    gp = spatio_temporal_gp(nu_s=2.5, nu_t=None, init=GPHyper(signal=1.7, length_s=0.4, noise=0.02))
    gp.set_train_data(SpatioTemporalKernel.inputs(x, 0.0), y)
    q = rng.random((6, 3))
    ours = gp.posterior(SpatioTemporalKernel.inputs(q, 0.0), standardized=True)
    z = (y - gp.y_mean) / gp.y_std  # the GP works on standardised observations
    ref = _gpytorch(x, z, gpytorch.kernels.MaternKernel(nu=2.5), 0.4, 1.7, 0.02 + 1e-8).posterior(q)
    np.testing.assert_allclose(ours.mean, ref.mean, atol=1e-9)
    np.testing.assert_allclose(ours.covariance, ref.covariance, atol=1e-7)
    orig = gp.posterior(SpatioTemporalKernel.inputs(q, 0.0))
    np.testing.assert_allclose(orig.mean, gp.y_mean + gp.y_std * ours.mean, rtol=1e-14)


@pytest.mark.slow
def test_posterior_object_samples_and_acquisitions() -> None:
    cov = np.array([[1.0, 0.8], [0.8, 1.0]])
    post = GaussianPosterior(np.array([0.0, 1.0]), np.diag(cov), cov)
    draws = post.sample(np.random.default_rng(0), 20000)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.03)
    np.testing.assert_allclose(upper_confidence_bound(post, 2.0), [2.0, 3.0])
    # EI at z = 0 is sigma phi(0)
    assert expected_improvement(post, best=1.0)[1] == pytest.approx(1.0 / np.sqrt(2 * np.pi))
    shifted = post.affine(3.0, 2.0)
    np.testing.assert_allclose(shifted.covariance, 4 * cov)
    with pytest.raises(Exception, match="no joint covariance"):
        _ = GaussianPosterior(np.zeros(1), np.ones(1)).covariance


@pytest.mark.slow
def test_gpytorch_model_drives_a_policy_through_the_adapter() -> None:
    def f(x: np.ndarray) -> float:
        return float(np.exp(-((x[0] - 0.63) ** 2) / 0.02))

    x0 = np.array([[0.1], [0.5], [0.9]])
    y0 = np.array([f(x) for x in x0])
    model = _gpytorch(x0, y0, gpytorch.kernels.RBFKernel(), 0.2, 1.0, 1e-3)
    pol = GPUCB(BoxDomain.unit(1), model=model, beta=2.0, seed=0)
    res = run_policy(pol, f, 15, f_max=1.0, initial=x0, seed=0)
    assert res.simple_regret[-1] < 1e-2
    # the same policy on our model with the same kernel makes the same first choice
    ours = GPUCB(BoxDomain.unit(1), kernel=SquaredExponential(0.2), lam=1e-3, beta=2.0, seed=0)
    ours.tell_many(x0, y0)
    theirs = GPUCB(BoxDomain.unit(1), model=_gpytorch(x0, y0, gpytorch.kernels.RBFKernel(), 0.2, 1.0, 1e-3), seed=0)
    theirs.tell_many(x0, y0)
    assert ours.ask()[0] == pytest.approx(theirs.ask()[0], abs=1e-3)
    # finite domain: every arm scored through the same posterior
    arms = FiniteDomain(np.linspace(0, 1, 41))
    fin = GPUCB(arms, model=_gpytorch(x0, y0, gpytorch.kernels.RBFKernel(), 0.2, 1.0, 1e-3), seed=0)
    res = run_policy(fin, f, 10, f_max=max(f(np.array([a])) for a in np.linspace(0, 1, 41)), initial=x0, seed=0)
    assert res.simple_regret[-1] < 1e-2


@pytest.mark.parametrize("nu", [0.5, 2.5])
def test_marginal_likelihood_equals_gpytorch(nu: float) -> None:
    rng = np.random.default_rng(2)
    x = rng.random((20, 2))
    y = np.sin(4 * x[:, 0]) + 0.1 * rng.standard_normal(20)
    gp = ExactGP(Matern(0.35, 1.4, nu=nu), 0.03)
    gp.set_train_data(x, y)
    ref = _gpytorch(x, y, gpytorch.kernels.MaternKernel(nu=nu), 0.35, 1.4, 0.03)
    assert ref.likelihood is not None
    ref.model.train()
    ref.likelihood.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(ref.likelihood, ref.model)
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10_000), gpytorch.settings.cholesky_jitter(1e-12):
        theirs = float(mll(ref.model(*ref.model.train_inputs), ref.model.train_targets)) * y.size
    assert gp.log_marginal_likelihood() == pytest.approx(theirs, rel=1e-7)  # GPyTorch kernels agree to ~1e-8
    # the spatio-temporal kernel's marginal likelihood (static form) equals GPyTorch's too
    st = spatio_temporal_gp(nu_s=nu, nu_t=None, init=GPHyper(signal=1.4, length_s=0.35, noise=0.03), fit_iters=0)
    st.set_train_data(SpatioTemporalKernel.inputs(x, 0.0), y)
    z = (y - st.y_mean) / st.y_std
    ref = _gpytorch(x, z, gpytorch.kernels.MaternKernel(nu=nu), 0.35, 1.4, 0.03 + 1e-8)
    assert ref.likelihood is not None
    ref.model.train()
    ref.likelihood.train()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(ref.likelihood, ref.model)
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10_000), gpytorch.settings.cholesky_jitter(1e-12):
        theirs = float(mll(ref.model(*ref.model.train_inputs), ref.model.train_targets)) * y.size
    assert st.log_marginal_likelihood() == pytest.approx(theirs, rel=1e-7)  # GPyTorch kernels agree to ~1e-8


def test_torch_model_gradients_match_ours() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.random((10, 2)), rng.standard_normal(10)
    gp = ExactGP(SquaredExponential(0.3), 0.01)
    gp.set_train_data(x, y)
    ref = _gpytorch(x, y, gpytorch.kernels.RBFKernel(), 0.3, 1.0, 0.01)
    q = rng.random(2)
    m, v, dm, dv = gp.mean_var_grad(q)
    m_ref, v_ref, dm_ref, dv_ref = ref.mean_var_grad(q)
    np.testing.assert_allclose([m, v], [m_ref, v_ref], atol=1e-6)
    np.testing.assert_allclose(dm, dm_ref, atol=1e-6)
    np.testing.assert_allclose(dv, dv_ref, atol=1e-6)
