"""n* against brute force, the W2 criterion against numerical integration, the response-time model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import trapezoid

from evroute.bo.gp import ExactGP
from evroute.bo.timevarying.bolt import (
    ResponseTimeModel,
    integrated_w2_removal,
    integrated_w2_to_prior,
    optimal_dataset_size,
    squared_norm_u,
)
from evroute.bo.timevarying.gp import GPHyper, SpatioTemporalKernel, spatio_temporal_gp
from evroute.bo.timevarying.kernels import matern
from evroute.errors import ParameterError


@pytest.mark.parametrize(
    ("length", "nu", "a", "b", "c3"),
    [
        (50.0, 1.5, 0.1, 1e-3, 0.0),
        (300.0, 2.5, 0.5, 1e-4, 1e-8),
        (20.0, 0.5, 0.05, 1e-2, 1e-7),
        (500.0, 1.5, 1.0, 0, 1e-7),
    ],
)
def test_n_star_matches_brute_force(length: float, nu: float, a: float, b: float, c3: float) -> None:
    def response(n: float) -> float:
        return a + b * n + c3 * n**3

    def k_t(lag: np.ndarray) -> np.ndarray:
        return matern(lag, length, nu)

    n_max = 3000
    values = [squared_norm_u(n, response(n), k_t) for n in range(1, n_max + 1)]
    brute = int(np.argmax(values)) + 1
    assert brute < n_max
    for n0 in (1, 7, brute, 2 * brute, n_max - 1):
        assert optimal_dataset_size(k_t, response, n0=n0, n_max=n_max) == brute


def test_n_star_is_n_max_for_constant_response_time() -> None:
    assert optimal_dataset_size(lambda lag: matern(lag, 1000.0, 1.5), lambda n: 1.0, n0=5, n_max=400) == 400


def _gp(n: int = 6, seed: int = 0) -> tuple[ExactGP, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, t = rng.random((n, 1)), np.sort(rng.random(n) * 2.0)
    y = np.sin(5 * x[:, 0]) + t
    gp = spatio_temporal_gp(2.5, 1.5, init=GPHyper(1.0, 0.3, 1.0, 0.05), fit_iters=0)
    gp.set_train_data(SpatioTemporalKernel.inputs(x, t), y)
    return gp, x, t, y


@pytest.mark.slow
def test_w2_criterion_matches_numerical_integration() -> None:
    gp, x, t, y = _gp()
    t0 = 2.0
    crit = integrated_w2_removal(gp, t0)
    xs, ts = np.linspace(-5.0, 6.0, 551), np.linspace(t0, 14.0, 601)
    xx, tt = np.meshgrid(xs, ts, indexing="ij")
    grid = SpatioTemporalKernel.inputs(xx.reshape(-1, 1), tt.reshape(-1))
    post = gp.posterior(grid, standardized=True)
    m1, s1 = post.mean, post.std

    def integrate(v: np.ndarray) -> float:
        return float(trapezoid(trapezoid(v.reshape(xx.shape), ts, axis=1), xs))

    for i in range(gp.n):
        other = spatio_temporal_gp(2.5, 1.5, init=GPHyper(1.0, 0.3, 1.0, 0.05), fit_iters=0)
        other.set_train_data(SpatioTemporalKernel.inputs(x, t), y)
        other.remove([i])
        post2 = other.posterior(grid, standardized=True)
        m2, s2 = post2.mean, post2.std
        bound = integrate((m1 - m2) ** 2 + np.abs(s1**2 - s2**2))
        exact = integrate((m1 - m2) ** 2 + (s1 - s2) ** 2)
        assert crit[i] ** 2 == pytest.approx(bound, rel=2e-3, abs=1e-6)
        assert crit[i] ** 2 >= exact * (1 - 2e-3)
    prior = integrate(m1**2 + gp.kernel.signal - s1**2)
    assert integrated_w2_to_prior(gp, t0) ** 2 == pytest.approx(prior, rel=2e-3)


def test_w2_needs_temporal_kernel() -> None:
    gp = spatio_temporal_gp(2.5, None, fit_iters=0)
    gp.set_train_data(SpatioTemporalKernel.inputs(np.array([[0.1], [0.5]]), np.zeros(2)), np.array([0.0, 1.0]))
    with pytest.raises(ParameterError):
        integrated_w2_removal(gp, 0.0)


def test_response_time_model_recovers_cubic() -> None:
    model = ResponseTimeModel()
    assert not model.ready
    coef = np.array([0.5, 1e-2, 1e-4, 1e-6])
    for n in range(0, 200, 5):
        model.add(n, float(np.polyval(coef[::-1], n)))
    assert model.ready and not model.is_constant
    np.testing.assert_allclose(model.coefficients, coef, rtol=1e-6, atol=1e-12)
    assert model(300) == pytest.approx(float(np.polyval(coef[::-1], 300)), rel=1e-6)
    with pytest.raises(ParameterError):
        model.add(-1, 1.0)
