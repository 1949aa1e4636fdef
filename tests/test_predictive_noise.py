"""The route intervals' noise fitted to out-of-fold trip residuals (:func:`evroute.models.trip_effect.
fold_residuals`, :func:`fit_predictive_noise`): on synthetic trip sums with a known whole-trip noise and trip effect
its 90 % predictive intervals cover new trips at their nominal level, including from 10 trips (where a normal at
the best fit does not), and the out-of-fold residuals keep the trip effect a posterior that saw the trip absorbs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.models.trip_effect import (
    TripResiduals,
    TripSums,
    cavity_residuals,
    fit_predictive_noise,
    fit_route_noise,
    fold_residuals,
)

PHI = 0.3


def _sums(rng: np.random.Generator, n: int, k0: float, tau0: float) -> tuple[np.ndarray, ...]:
    """``n`` trip residuals ``d ~ N(0, s + k0 PHI r + tau0^2 mu^2)`` with varied ``s``, ``r``, ``mu`` (Wh^2, Wh)."""
    mu = rng.uniform(100.0, 600.0, n)
    r = rng.uniform(50.0, 400.0, n)
    s = rng.uniform(0.0, 100.0, n)
    d = np.sqrt(s + k0 * PHI * r + tau0**2 * mu**2) * rng.standard_normal(n)
    return d, s, r, mu


def _coverage(n: int, k0: float, tau0: float, reps: int, seed: int) -> tuple[float, float, float]:
    """(predictive coverage, its Monte Carlo s.e. over repetitions, a plug-in normal's coverage): per repetition
    ``n`` training residuals fitted, 10 new trips scored."""
    rng = np.random.default_rng(seed)
    cov, plug = np.zeros(reps), np.zeros(reps)
    for i in range(reps):
        fit = fit_predictive_noise(TripResiduals(*_sums(rng, n, k0, tau0)), PHI)
        d, s, r, mu = _sums(rng, 10, k0, tau0)
        cov[i] = fit.covers(d, s, PHI * r, mu**2, 0.9).mean()
        g = int(np.argmax(fit.weight))  # the posterior mode: a normal with (k, tau^2) plugged in
        plug[i] = (np.abs(d) <= 1.6448536 * np.sqrt(s + fit.k[g] * PHI * r + fit.tau2[g] * mu**2)).mean()
    return float(cov.mean()), float(cov.std(ddof=1) / np.sqrt(reps)), float(plug.mean())


@pytest.mark.parametrize(("n", "k0", "tau0"), [(10, 0.5, 0.08), (10, 2.0, 0.01), (100, 0.0, 0.12)])
def test_predictive_intervals_cover_at_their_nominal_level(n: int, k0: float, tau0: float) -> None:
    """Known ``k`` and ``tau``, 400 repetitions of 10 new trips: the 90 % predictive coverage is within 0.9 +- (3
    Monte Carlo s.e. + 0.01) (the s.e. ~0.004 over repetitions; 0.01 for a Bayesian predictive's frequentist
    deviation under weak priors, which a pilot of 600 repetitions put at under 0.016 for N = 10 on four truths, 0.005
    for N = 100).  At N = 10 a normal with the best-fitting ``(k, tau^2)`` plugged in covers under 0.885 (pilot:
    0.866-0.868): the estimation uncertainty the predictive carries matters, and this test would see it missing."""
    cov, se, plug = _coverage(n, k0, tau0, 400, seed=n + int(100 * k0))
    assert abs(cov - 0.9) <= 3 * se + 0.01 + 0.006 * (n == 10), (cov, se)
    if n == 10:
        assert plug < 0.885, plug


def test_predictive_noise_recovers_k_and_tau_from_many_trips() -> None:
    """2,000 trips whose whole-trip noise and trip effect are of similar size: the posterior means of ``k`` and
    ``tau^2`` within 3 posterior s.d. of the truth (a pilot on six seeds: s.d. ~10 % of ``k``, ~15 % of ``tau^2``),
    and those s.d. below 20 % and 30 % of the truth (both identified)."""
    rng = np.random.default_rng(3)
    fit = fit_predictive_noise(TripResiduals(*_sums(rng, 2000, 1.5, 0.03)), PHI, grid=60)
    assert fit.trips == 2000
    sd_k = float(np.sqrt(fit.weight @ (fit.k - fit.k_mean) ** 2))
    sd_t = float(np.sqrt(fit.weight @ (fit.tau2 - fit.tau2_mean) ** 2))
    assert abs(fit.k_mean - 1.5) < 3 * sd_k and sd_k < 0.2 * 1.5, (fit.k_mean, sd_k)
    assert abs(fit.tau2_mean - 0.03**2) < 3 * sd_t and sd_t < 0.3 * 0.03**2, (fit.tau2_mean, sd_t)


def test_half_width_is_the_central_quantile_of_the_mixture() -> None:
    """:meth:`PredictiveNoise.half_width` solves ``central_prob(q) = level`` (to 1e-6); ``covers`` agrees at the
    boundary; one grid point of weight 1 gives the normal's 1.645 sd."""
    rng = np.random.default_rng(5)
    fit = fit_predictive_noise(TripResiduals(*_sums(rng, 8, 1.0, 0.1)), PHI, grid=12)
    base, a, b = np.array([10.0, 400.0]), np.array([30.0, 90.0]), np.array([1e4, 3.6e5])
    q = fit.half_width(base, a, b, 0.9)
    assert fit.central_prob(q, base, a, b) == pytest.approx([0.9, 0.9], abs=1e-6)
    assert fit.covers(0.999 * q, base, a, b).all() and not fit.covers(1.001 * q, base, a, b).any()
    one = type(fit)(fit.k[:1], fit.tau2[:1], np.ones(1), 8)
    sd = np.sqrt(base + one.k[0] * a + one.tau2[0] * b)
    assert one.half_width(base, a, b, 0.9) == pytest.approx(1.6448536 * sd, rel=1e-6)
    with pytest.raises(ParameterError):
        fit.half_width(base, a, b, 1.0)


def test_out_of_fold_residuals_keep_the_trip_effect_a_learned_trip_absorbs() -> None:
    """Edge energies with their true prior (s.d. 5 Wh), each of 100 trips on 5 edges of its own (as on a large
    network with few trips), one precise reading of its sum and a 20 % trip effect: a posterior that saw a trip
    explains its sum almost exactly, so the in-sample fit (:func:`fit_route_noise`) finds ``tau^2`` near 0 and its
    intervals cover under half of 400 new trips (on unseen edges: the prior), while 10-fold residuals (the posterior
    of the other folds' trips: the prior on a trip's edges) give ``tau^2`` within 40 % of the truth 0.04 (the
    estimate's relative s.e. ~ sqrt(2/100) = 0.14: about 3 s.e.) and cover at least 0.85 of them (0.9 less 3
    binomial s.e. of 400)."""
    from evroute.models.linear_obs import DiagonalKernel, LinearObsEdgeModel

    rng = np.random.default_rng(1)
    n_trips, per, tau0, n_new = 100, 5, 0.2, 400
    edges = np.arange(n_trips * per).reshape(-1, per)
    m0 = np.full(n_trips * per, 50.0)
    f = m0 + 5.0 * rng.standard_normal(n_trips * per)
    ys = (1 + tau0 * rng.standard_normal(n_trips)) * f[edges].sum(axis=1) + rng.standard_normal(n_trips)
    a, r0 = np.ones((1, per)), np.eye(1)

    def posterior_of(trips: list[int]) -> Any:
        model = LinearObsEdgeModel(m0, DiagonalKernel(np.full(len(m0), 25.0)), 1.0, 1.0, "bi")
        for t in trips:
            model.observe(edges[t], a, ys[t : t + 1], r0)
        return model.posterior()

    sums = TripSums()
    for t in range(n_trips):
        sums.add(edges[t], a.sum(axis=0), float(ys[t]), 1.0)
    post = posterior_of(list(range(n_trips)))
    inside = fit_route_noise(post.mean, post.covariance_of, sums, 1.0)

    def without(idx: np.ndarray) -> tuple[np.ndarray, Any]:
        p = posterior_of([t for t in range(n_trips) if t not in set(idx.tolist())])
        return p.mean, p.covariance_of

    fit = fit_predictive_noise(fold_residuals(without, sums, folds=10), 1.0)
    # new trips on edges nobody drove: predicted by the prior (mean 250 Wh, variance 5 x 25 Wh^2)
    mu, base = np.full(n_new, per * 50.0), np.full(n_new, per * 25.0)
    y_new = (1 + tau0 * rng.standard_normal(n_new)) * (mu + np.sqrt(base) * rng.standard_normal(n_new))
    err = mu - (y_new + rng.standard_normal(n_new))
    sd_in = np.sqrt(base + inside.noise_mult + inside.rel_var * mu**2)
    assert inside.rel_var < 0.002 and np.mean(np.abs(err) <= 1.6448536 * sd_in) < 0.5, inside
    assert fit.tau2_mean == pytest.approx(tau0**2, rel=0.4), fit.tau2_mean
    assert fit.covers(err, base, np.ones(n_new), mu**2).mean() >= 0.85


@pytest.mark.parametrize("with_basis", [False, True])
@pytest.mark.parametrize("folds", [13, 4])
def test_cavity_residuals_equal_refitting_without_each_fold(with_basis: bool, folds: int) -> None:
    """:func:`cavity_residuals` (each fold's readings taken out of the posterior of all) gives the numbers of
    :func:`fold_residuals` with a refit per fold, for independent edges and for a kernel with shared offsets (dense),
    windows with correlated noise and partial shares, leave-one-out and 4 folds: float rounding only (rtol 1e-9 of
    the largest value)."""
    from evroute.models.linear_obs import BasisKernel, DiagonalKernel, LinearObsEdgeModel

    rng = np.random.default_rng(0)
    n_edges, phi = 60, 0.7
    m0 = rng.uniform(20.0, 60.0, n_edges)
    kernel: Any = DiagonalKernel(np.full(n_edges, 25.0))
    if with_basis:
        basis = np.column_stack([rng.uniform(0.5, 2.0, n_edges), np.ones(n_edges)])
        kernel = BasisKernel(kernel, basis, np.array([4.0, 9.0]))
    f = m0 + 5.0 * rng.standard_normal(n_edges)
    trips = []
    for _ in range(13):
        e = np.sort(rng.choice(n_edges, 6, replace=False))
        a = np.zeros((3, 6))
        a[0, :2], a[1, 2:4], a[2, 4:] = rng.uniform(0.2, 1.0, 2), 1.0, rng.uniform(0.2, 1.0, 2)
        r0 = np.diag(rng.uniform(1.0, 3.0, 3))
        r0[0, 1] = r0[1, 0] = -0.3
        trips.append((e, a, a @ f[e] + rng.standard_normal(3), r0))

    def posterior_of(ts: list) -> Any:
        model = LinearObsEdgeModel(m0, kernel, 1.0, 1.0, "bi")
        model.noise_scale = phi
        for e, a, y, r0 in ts:
            model.observe(e, a, y, r0)
        return model.posterior()

    sums = TripSums()
    for e, a, y, r0 in trips:
        sums.add(e, a.sum(axis=0), float(y.sum()), float(r0.sum()))

    def without(idx: np.ndarray) -> tuple[np.ndarray, Any]:
        p = posterior_of([t for i, t in enumerate(trips) if i not in set(idx.tolist())])
        return p.mean, p.covariance_of

    refit = fold_residuals(without, sums, folds)
    full = posterior_of(trips)
    cavity = cavity_residuals(full.mean, full.covariance_of, trips, phi, folds)
    for name in ("d", "s", "r", "mu"):
        x, y = getattr(refit, name), getattr(cavity, name)
        assert np.max(np.abs(x - y)) <= 1e-9 * np.max(np.abs(x)), name
    assert np.all(refit.s > 0) and np.std(refit.d) > 1.0  # not a degenerate case


def test_bad_input_is_refused() -> None:
    d = np.array([1.0, np.nan])
    with pytest.raises(ParameterError):
        fit_predictive_noise(TripResiduals(d, np.ones(2), np.ones(2), np.ones(2)))
    with pytest.raises(ParameterError):
        fit_predictive_noise(TripResiduals(np.ones(2), np.ones(2), np.ones(2), np.ones(2)), tau_scale=0.0)
    with pytest.raises(ParameterError):
        fold_residuals(lambda idx: (np.zeros(1), None), TripSums())
    with pytest.raises(ParameterError):
        cavity_residuals(np.zeros(1), None, [], 1.0)
