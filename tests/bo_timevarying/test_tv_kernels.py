"""Closed-form kernel integrals against numerical integration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad, trapezoid

from evroute.bo.timevarying.kernels import (
    future_time_integral,
    matern,
    matern_dlog_lengthscale,
    matern_general,
    matern_grad_factor,
    spatial_convolution,
)
from evroute.errors import ParameterError


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_half_integer_matern_matches_bessel_form(nu: float) -> None:
    r = np.linspace(0.0, 3.0, 31)
    np.testing.assert_allclose(matern(r, 0.7, nu), matern_general(r, 0.7, nu), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_derivatives_match_finite_differences(nu: float) -> None:
    r, l, h = np.array([0.2, 0.9, 2.0]), 0.6, 1e-6
    fd = (matern(r, l * np.exp(h), nu) - matern(r, l * np.exp(-h), nu)) / (2 * h)
    np.testing.assert_allclose(matern_dlog_lengthscale(r, l, nu), fd, rtol=1e-5)
    fd_x = (matern(r + h, l, nu) - matern(r - h, l, nu)) / (2 * h)  # 1-D: dk/du = h(r) * r
    np.testing.assert_allclose(matern_grad_factor(r, l, nu) * r, fd_x, rtol=1e-5)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
@pytest.mark.parametrize("r", [0.0, 0.35, 1.2])
def test_spatial_convolution_1d(nu: float, r: float) -> None:
    l = 0.4
    num = quad(lambda z: float(matern(z, l, nu) * matern(z - r, l, nu)), -20, 20, points=[0.0, r], limit=400)[0]
    assert spatial_convolution(r, l, nu, 1) == pytest.approx(num, rel=1e-7)


def test_spatial_convolution_2d() -> None:
    l, r, nu = 0.5, 0.3, 2.5
    g = np.linspace(-5, 5, 801)
    xx, yy = np.meshgrid(g, g, indexing="ij")
    vals = matern(np.hypot(xx, yy), l, nu) * matern(np.hypot(xx - r, yy), l, nu)
    num = trapezoid(trapezoid(vals, g, axis=1), g)
    assert spatial_convolution(r, l, nu, 2) == pytest.approx(num, rel=1e-4)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_future_time_integral(nu: float) -> None:
    ti, tj, t0, l = np.array([-1.0, 0.2, 0.5]), np.array([-0.3, 0.5]), 0.5, 0.7
    out = future_time_integral(ti, tj, t0, l, nu)
    assert out.shape == (3, 2)
    for a, b in np.ndindex(out.shape):
        num = quad(lambda t, a=a, b=b: float(matern(t - ti[a], l, nu) * matern(t - tj[b], l, nu)), t0, np.inf)[0]
        assert out[a, b] == pytest.approx(num, rel=1e-7)


def test_future_time_integral_rejects_future_observations() -> None:
    with pytest.raises(ParameterError):
        future_time_integral([1.0], [0.0], 0.5, 1.0, 1.5)
    with pytest.raises(ParameterError):
        matern([0.1], 1.0, 2.0)
