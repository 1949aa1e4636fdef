"""The trip effect inside the linear-reading fit (:mod:`evroute.models.linear_obs_trip`, issue 35): Sherman-Morrison
statistics against the dense ``(R + kappa m m^T)^-1``, ``tau = 0`` giving today's statistics, a synthetic recovery
of the per-edge means and of ``tau``, intervals refitted out of fold that cover new trips, the model file and the
CLI option."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.models.linear_obs import DiagonalKernel, LinearObsEdgeModel, linear_posterior
from evroute.models.linear_obs_build import fit_hyperparameters, fit_with_trip_effect
from evroute.models.linear_obs_stats import LinearStatistics
from evroute.models.linear_obs_trip import TripRank1
from evroute.models.trip_effect import TripSums


def _tridiagonal(rng: np.random.Generator, m: int) -> np.ndarray:
    """A random tridiagonal SPD ``(m, m)`` noise covariance (diagonally dominant), Wh^2."""
    d = rng.uniform(1.0, 4.0, m)
    off = rng.uniform(-0.4, 0.4, m - 1) * np.sqrt(d[:-1] * d[1:])
    return np.diag(d) + np.diag(off, 1) + np.diag(off, -1)


def _random_trips(rng: np.random.Generator, n_edges: int, n_trips: int) -> list[Any]:
    """Per trip ``(edges (k,), A (m, k), y (m,), R (m, m))``: windows over contiguous runs of the trip's edges."""
    trips: list[Any] = []
    for _ in range(n_trips):
        k = int(rng.integers(2, 7))
        e = np.sort(rng.choice(n_edges, size=k, replace=False))
        m = int(rng.integers(1, k + 2))
        a = np.zeros((m, k))
        for i in range(m):
            lo = int(rng.integers(0, k))
            hi = int(rng.integers(lo, k))
            a[i, lo : hi + 1] = rng.uniform(0.1, 1.0, hi - lo + 1)
        trips.append((e, a, rng.normal(30.0, 10.0, m), _tridiagonal(rng, m)))
    return trips


def _sums_and_stats(trips: list[Any], n_edges: int) -> tuple[TripSums, LinearStatistics]:
    sums, stats = TripSums(), LinearStatistics(n_edges)
    for e, a, y, r in trips:
        stats.add(e, a, y, r)
        sums.add(e, a.sum(axis=0), float(y.sum()), float(r.sum()), readings=(e, a, y, r))
    return sums, stats


@pytest.mark.parametrize("kappa", [1e-4, 0.01, 0.3])
def test_sherman_morrison_statistics_equal_the_dense_inverse(kappa: float) -> None:
    """``Lambda``, ``h``, ``y^T R^-1 y`` and ``log det R`` with the effect equal the dense sums of ``A^T (R + kappa m
    m^T)^-1 A`` etc. over 30 random trips (``m = A f_0``).  Tolerance 1e-10 relative: float rounding of ``O(m)``
    term sums of well-conditioned (diagonally dominant) matrices."""
    rng = np.random.default_rng(3)
    n_edges = 25
    f0 = rng.uniform(5.0, 60.0, n_edges)
    trips = _random_trips(rng, n_edges, 30)
    sums, stats = _sums_and_stats(trips, n_edges)
    eff = TripRank1(sums, f0).statistics(stats, kappa)
    lam, h, yry, logdet = np.zeros((n_edges, n_edges)), np.zeros(n_edges), 0.0, 0.0
    for e, a, y, r in trips:
        mt = a @ f0[e]
        inv = np.linalg.inv(r + kappa * np.outer(mt, mt))
        lam[np.ix_(e, e)] += a.T @ inv @ a
        h[e] += a.T @ inv @ y
        yry += float(y @ inv @ y)
        logdet += float(np.linalg.slogdet(r + kappa * np.outer(mt, mt))[1])
    scale = np.abs(lam).max()
    assert np.abs(eff.matrix().toarray() - lam).max() <= 1e-10 * scale
    assert np.abs(eff.h - h).max() <= 1e-10 * np.abs(h).max()
    assert eff.yry == pytest.approx(yry, rel=1e-10) and eff.logdet_r == pytest.approx(logdet, rel=1e-10)
    assert eff.readings == stats.readings


def test_posterior_with_the_effect_equals_the_observation_space_solve() -> None:
    """The model's posterior mean and log marginal likelihood with ``tau`` equal the dense observation-space
    computation ``mu = f_0 + K A^T (A K A^T + S)^-1 (y - A f_0)``, ``S = phi blockdiag(R_t) + tau^2 blockdiag(m_t
    m_t^T)`` (rtol 1e-9: two different factorizations of the same well-conditioned system)."""
    rng = np.random.default_rng(4)
    n_edges, phi, tau = 20, 1.7, 0.12
    f0 = rng.uniform(5.0, 60.0, n_edges)
    prior_var = rng.uniform(10.0, 50.0, n_edges)
    trips = _random_trips(rng, n_edges, 12)
    model = LinearObsEdgeModel(f0, DiagonalKernel(prior_var), 1.0, 1.0, "bi")
    for e, a, y, r in trips:
        model.observe(e, a, y, r)
        model.trips.add(e, a.sum(axis=0), float(y.sum()), float(r.sum()), readings=(e, a, y, r))
    model.noise_scale, model.trip_tau = phi, tau
    post = model.posterior()
    rows = sum(len(t[2]) for t in trips)
    big_a, s, yy = np.zeros((rows, n_edges)), np.zeros((rows, rows)), np.zeros(rows)
    o = 0
    for e, a, y, r in trips:
        sl = slice(o, o + len(y))
        big_a[sl, e], yy[sl] = a, y
        mt = a @ f0[e]
        s[sl, sl] = phi * r + tau**2 * np.outer(mt, mt)
        o += len(y)
    k = np.diag(prior_var)
    cov = big_a @ k @ big_a.T + s
    mu = f0 + k @ big_a.T @ np.linalg.solve(cov, yy - big_a @ f0)
    res = yy - big_a @ f0
    ll = -0.5 * (res @ np.linalg.solve(cov, res) + np.linalg.slogdet(cov)[1] + rows * np.log(2 * np.pi))
    assert post.mean == pytest.approx(mu, rel=1e-9)
    assert model.log_ml == pytest.approx(ll, rel=1e-9)


def test_tau_zero_is_todays_fit() -> None:
    """``tau = 0``: the statistics are the same object and the posterior the same, bit for bit; ``kappa`` near 0
    departs from them at first order, ``kappa sum_t g_t g_t^T`` and ``kappa sum_t q_t^2`` (1e-6 relative: the
    second-order term and the subtraction's rounding); a negative or NaN ``kappa`` is refused."""
    rng = np.random.default_rng(5)
    n_edges = 20
    f0 = rng.uniform(5.0, 60.0, n_edges)
    trips = _random_trips(rng, n_edges, 15)
    sums, stats = _sums_and_stats(trips, n_edges)
    rank1 = TripRank1(sums, f0)
    assert rank1.statistics(stats, 0.0) is stats
    tiny = rank1.statistics(stats, 1e-12)  # first order in kappa: Lambda - kappa sum g g^T (kappa^2 s terms ~1e-20)
    first = np.zeros((n_edges, n_edges))
    for e, g in zip(rank1.edges, rank1.g, strict=True):
        first[np.ix_(e, e)] += np.outer(g, g)
    diff = stats.matrix().toarray() - tiny.matrix().toarray()
    assert np.abs(diff - 1e-12 * first).max() <= 1e-6 * 1e-12 * np.abs(first).max()
    assert stats.yry - tiny.yry == pytest.approx(1e-12 * float(np.sum(rank1.q**2)), rel=1e-6)
    model = LinearObsEdgeModel(f0, DiagonalKernel(np.full(n_edges, 30.0)), 1.0, 1.0, "bi")
    model.stats, model.trips, model.noise_scale = stats, sums, 1.3
    mu, var, _, ll = linear_posterior(model.kernel, 1.0, f0, stats, noise_scale=1.3)
    post = model.posterior()
    assert var is not None
    assert np.array_equal(post.mean, mu) and np.array_equal(post.variance, var) and model.log_ml == ll
    for bad in (-1e-3, float("nan")):
        with pytest.raises(ParameterError, match="kappa"):
            rank1.statistics(stats, bad)


def _simulate(tau: float, seed: int, n_edges: int = 60, n_trips: int = 400, k: int = 8, s: float = 1.0):
    """Trips of ``k`` whole-edge readings ``y_e = f_e + beta_t f0_e + eps``, ``beta_t ~ N(0, tau^2)``, ``eps ~ N(0,
    s^2)`` (the model's generative form), true means ``f = f0 + N(0, 10^2)``; a BI model with prior ``N(f0, 10^2)``."""
    rng = np.random.default_rng(seed)
    f0 = rng.uniform(20.0, 40.0, n_edges)
    f = f0 + 10.0 * rng.standard_normal(n_edges)
    model = LinearObsEdgeModel(f0, DiagonalKernel(np.full(n_edges, 100.0)), 1.0, s * s, "bi")
    for _ in range(n_trips):
        e = np.sort(rng.choice(n_edges, size=k, replace=False))
        y = f[e] + tau * rng.standard_normal() * f0[e] + s * rng.standard_normal(k)
        a, r = np.eye(k), s * s * np.eye(k)
        model.observe(e, a, y, r)
        model.trips.add(e, np.ones(k), float(y.sum()), float(r.sum()), readings=(e, a, y, r))
    return model, f, f0


def _shape_error(err: np.ndarray, f0: np.ndarray) -> float:
    """Mean squared error of ``err`` ``(E,)`` with its component along ``f0`` taken out (Wh^2): a shift of every
    trip's ``beta`` by ``delta`` moves every ``f_e`` by ``-delta f0_e`` and no reading tells it (only the prior
    ``beta ~ N(0, tau^2)`` does, to ``tau / sqrt(T)``), so the realised mean of the ``beta``s stays in any fit."""
    return float(np.mean((err - (err @ f0) / (f0 @ f0) * f0) ** 2))


def test_fit_with_the_effect_recovers_the_means_and_tau() -> None:
    """400 trips of 8 of 60 edges (about 53 readings an edge), ``tau = 0.1``, ``s = 1`` Wh, ``f0`` 20-40 Wh.
    Without the effect each edge's estimate is about the mean of its readings: error variance ``(s^2 + tau^2
    f0_e^2) / n_e`` (``tau^2 f0^2`` about 9 Wh^2); with it each trip's ``beta`` is pinned by its 8 readings (posterior
    variance about ``s^2 / (8 f0^2)``), leaving about ``s^2 (1 + 1/8) / n_e``: apart from the one direction no reading
    identifies (:func:`_shape_error`), the mean squared error falls to about ``1.125 / 10`` = 0.11 of the plain
    fit's (measured 0.07-0.16 over seeds 0-5).  Asserted: below 0.25 for seeds 0 and 1 (the MSE over 60 edges has a
    relative spread of about ``sqrt(2/60) = 0.18`` each, so the ratio's is about 0.26 of it: 0.25 is over 4 of
    those above 0.11); the whole error (with the realised mean of the ``beta``s, a chi-square of one degree of
    freedom, expected as large as the rest) falls too.  ``tau``: ML-II's standard error from ``T`` trips,
    ``se(tau^2) ~ sqrt(2/T) (tau^2 + s^2/(8 f0^2))`` = 7.2e-4, ``se(tau) = se(tau^2) / (2 tau)`` = 0.0036; asserted
    within 4 of them (0.015).  With no effect in the data the fit keeps ``tau`` small (below 4 se of ``tau^2`` under
    the null, ``sqrt(4 sqrt(2/T) s^2/(8 f0^2))`` ~ 0.006, taken as 0.02)."""
    for seed in (0, 1):
        model, f, f0 = _simulate(0.1, seed)
        fit_hyperparameters(model)
        plain = model.posterior().mean - f
        _, _, tau = fit_with_trip_effect(model)
        assert model.trip_tau == tau
        with_effect = model.posterior().mean - f
        ratio = _shape_error(with_effect, f0) / _shape_error(plain, f0)
        assert ratio < 0.25, (seed, ratio)
        assert np.mean(with_effect**2) < np.mean(plain**2)
        assert abs(tau - 0.1) < 0.015, (seed, tau)
    model, f, _ = _simulate(0.0, 2)
    _, _, tau = fit_with_trip_effect(model)
    assert tau < 0.02


def test_route_intervals_cover_new_trips_with_the_effect_in_the_fit() -> None:
    """With the effect fitted (``trip_effect_fit``) the posterior keeps the readings' ``tau`` and the intervals'
    ``(k, tau^2)`` are fitted to the out-of-fold residuals (:func:`~evroute.experiments.trip_learning.fit_noise`, a
    grid of ``tau^2``, not the readings' value); their 90 % intervals cover 2,000 new trips of the same world (3-15
    whole-edge readings each, so both terms are identified) 85-95 % of the time.  Tolerance: the 2,000 trips' own
    binomial s.d. is 0.7 points; the fitted variance from 120 trips has a relative s.e. of about sqrt(2 / 120) = 13 %,
    which moves a 90 % normal interval's coverage by about 1.1 points: 85-95 % is over 4 s.e. of both together
    (measured 93.1, 92.4, 89.7 % on seeds 0-2).  Off, ``tau`` stays 0 and the intervals estimate their own."""
    from evroute.experiments.trip_learning import fit_noise
    from evroute.models.predictive_noise import PredictiveNoise

    for seed in range(3):
        model, _, trip = _simulate_varied(0.1, seed)
        model.trip_effect_fit = True
        effect = fit_noise(model)
        assert model.trip_tau > 0.05
        assert len(set(effect["mixture"]["tau2"])) > 1  # fitted again, out of fold
        pn, post = PredictiveNoise.from_dict(effect), model.posterior()
        assert pn is not None
        err, base, a, b = (np.zeros(2000) for _ in range(4))
        for i in range(2000):
            e, y = trip()
            mu = float(post.mean[e].sum())
            err[i], base[i] = y.sum() - mu, float(post.covariance_of(e).sum())
            a[i], b[i] = float(post.noise_var[e].sum()), max(mu, 0.0) ** 2
        assert 0.85 <= pn.covers(err, base, a, b, 0.9).mean() <= 0.95, seed
    off, _, _ = _simulate(0.1, 3, n_trips=120)
    effect_off = fit_noise(off)
    assert off.trip_tau == 0.0 and len(set(effect_off["mixture"]["tau2"])) > 1


def _simulate_varied(tau: float, seed: int, n_edges: int = 60, n_trips: int = 120, s: float = 1.0):
    """As :func:`_simulate`, each trip of 3-15 whole-edge readings; also returns ``trip()``, a new trip ``(edges,
    readings)`` of the same world."""
    rng = np.random.default_rng(seed)
    f0 = rng.uniform(20.0, 40.0, n_edges)
    f = f0 + 10.0 * rng.standard_normal(n_edges)

    def trip() -> tuple[np.ndarray, np.ndarray]:
        e = np.sort(rng.choice(n_edges, size=int(rng.integers(3, 16)), replace=False))
        return e, f[e] + tau * rng.standard_normal() * f0[e] + s * rng.standard_normal(len(e))

    model = LinearObsEdgeModel(f0, DiagonalKernel(np.full(n_edges, 100.0)), 1.0, s * s, "bi")
    for _ in range(n_trips):
        e, y = trip()
        a, r = np.eye(len(e)), s * s * np.eye(len(e))
        model.observe(e, a, y, r)
        model.trips.add(e, np.ones(len(e)), float(y.sum()), float(r.sum()), readings=(e, a, y, r))
    return model, f, trip


def test_the_model_file_keeps_the_setting(tmp_path) -> None:
    """``trip_effect_fit`` and ``trip_tau`` survive save and load; the loaded posterior is the saved one's (bit for
    bit: the same statistics and the same arithmetic); a file without them loads with the effect off."""
    from evroute.linegraph import build_line_graph
    from evroute.models.linear_obs_build import linear_model_from
    from evroute.models.store import load_model, prior_model, read_header, save_model
    from evroute.network.registry import load_network

    lg = build_line_graph(load_network("synthetic:60:3"))
    model = linear_model_from(prior_model("bi", lg))
    rng = np.random.default_rng(6)
    for e, a, y, r in _random_trips(rng, lg.n_nodes, 10):
        model.observe(e, a, y, r)
        model.trips.add(e, a.sum(axis=0), float(y.sum()), float(r.sum()), readings=(e, a, y, r))
    model.trip_effect_fit, model.trip_tau = True, 0.08
    path = save_model(tmp_path / "m.npz", model, lg)
    hp = read_header(path)["hyperparameters"]
    assert hp["trip_effect_fit"] is True and hp["trip_tau"] == 0.08
    back, _ = load_model(path, lg)
    assert back.trip_effect_fit and back.trip_tau == 0.08  # type: ignore[attr-defined]
    assert np.array_equal(back.posterior().mean, model.posterior().mean)
    plain = linear_model_from(prior_model("bi", lg))
    back0, _ = load_model(save_model(tmp_path / "p.npz", plain, lg), lg)
    assert not back0.trip_effect_fit and back0.trip_tau == 0.0  # type: ignore[attr-defined]
    assert "trip_tau" not in read_header(tmp_path / "p.npz")["hyperparameters"]


@pytest.mark.parametrize(
    ("flag", "value"), [("--trip-effect-fit", "yes"), ("--trip-tau-max", "0"), ("--trip-tau-max", "nan")]
)
def test_learn_rejects_bad_trip_effect_options(tmp_path, flag: str, value: str) -> None:
    """A bad ``--trip-effect-fit`` or ``--trip-tau-max``: one line ``evroute: error: ...`` naming it, exit 2, nothing
    written."""
    root = Path(__file__).resolve().parent.parent / "data"
    logs = sorted(str(p) for p in (root / "trip-log-sumo").glob("trip_*.csv"))[:1]
    out = tmp_path / "m.npz"
    cmd = ["learn", *logs, "--network", str(root / "sumo-tiny" / "grid.net.xml"), "--model-file", str(out)]
    res = subprocess.run([sys.executable, "-m", "evroute", *cmd, flag, value], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and flag in res.stderr
    assert res.stderr.startswith("evroute: error:") and not out.exists()


def test_learn_with_the_option_records_tau(tmp_path) -> None:
    """``evroute learn --trip-effect-fit on`` (8 SUMO logs): the model file records the setting and the readings'
    ``tau``, the stored interval mixture its own ``tau^2`` fitted out of fold (a grid, not that one number); a second
    run without the option keeps the file's setting; a new model without the option has it on, with ``off`` not."""
    from evroute.models.store import read_header

    root = Path(__file__).resolve().parent.parent / "data"
    logs = sorted(str(p) for p in (root / "trip-log-sumo").glob("trip_*.csv"))
    out = tmp_path / "m.npz"
    cmd = ["learn", *logs[:6], "--network", str(root / "sumo-tiny" / "grid.net.xml"), "--model-file", str(out)]
    res = subprocess.run(
        [sys.executable, "-m", "evroute", *cmd, "--model", "bi", "--trip-effect-fit", "on"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "(in the readings' fit: " in res.stdout + res.stderr
    head = read_header(out)
    hp, mix = head["hyperparameters"], head["meta"]["trip_effect"]["mixture"]
    assert hp["trip_effect_fit"] is True and 0 <= hp["trip_tau"] <= 1
    assert len(set(mix["tau2"])) > 1
    again = ["learn", *logs[6:], "--network", str(root / "sumo-tiny" / "grid.net.xml"), "--model-file", str(out)]
    res = subprocess.run([sys.executable, "-m", "evroute", *again], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert read_header(out)["hyperparameters"]["trip_effect_fit"] is True
    for option, want in (([], True), (["--trip-effect-fit", "off"], False)):  # a new model: on unless told off
        new = tmp_path / f"new{len(option)}.npz"
        cmd = ["learn", *logs[:3], "--network", str(root / "sumo-tiny" / "grid.net.xml"), "--model-file", str(new)]
        res = subprocess.run([sys.executable, "-m", "evroute", *cmd, *option], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert read_header(new)["hyperparameters"].get("trip_effect_fit", False) is want


@pytest.mark.parametrize("basis", [False, True])
def test_woodbury_log_ml_equals_the_refitted_statistics(basis: bool) -> None:
    """:class:`~evroute.models.linear_obs_trip.TripLogML` (one eigendecomposition without the effect, the effect as a
    rank-``T`` Woodbury downdate) equals :func:`~evroute.models.linear_obs.noise_log_ml` of the Sherman-Morrison
    statistics at each ``(phi, c, kappa)``, for independent edges and with shared offsets (a dense ``L``); ``kappa =
    0`` is the fit without the effect.  Tolerance 1e-10 relative: two exact factorizations of the same
    well-conditioned system (measured 2e-15 to 6e-15)."""
    from evroute.models.linear_obs import BasisKernel, NoiseEig, noise_log_ml
    from evroute.models.linear_obs_trip import TripLogML

    rng = np.random.default_rng(7)
    n_edges, scale2 = 40, 2.0
    f0 = rng.uniform(5.0, 50.0, n_edges)
    sums, stats = _sums_and_stats(_random_trips(rng, n_edges, 30), n_edges)
    kernel: Any = DiagonalKernel(rng.uniform(1.0, 10.0, n_edges))
    if basis:
        b = np.column_stack([rng.uniform(1.0, 3.0, n_edges), np.ones(n_edges)])
        kernel = BasisKernel(kernel, b, np.array([0.5, 4.0]))
    rank1 = TripRank1(sums, f0)
    fast = TripLogML(NoiseEig(kernel, scale2, f0, stats), rank1, f0)
    for phi, c, kappa in [(0.5, 1.0, 0.01), (2.0, 0.3, 0.2), (1.0, 3.0, 1e-4), (0.1, 1.0, 5.0), (1.0, 1.0, 0.0)]:
        slow = noise_log_ml(kernel, scale2, f0, rank1.statistics(stats, kappa), dense=True)(phi, c)
        assert fast(phi, c, kappa) == pytest.approx(slow, rel=1e-10, abs=0.0), (phi, c, kappa)


@pytest.mark.parametrize(
    ("tau", "seed", "c_bounds"), [(0.1, 0, (1e-3, 1e2)), (0.1, 1, (1.0, 1.0)), (0.0, 2, (1e-3, 1e2))]
)
def test_woodbury_fit_finds_the_refit_optimum(tau: float, seed: int, c_bounds: tuple[float, float]) -> None:
    """The fast fit (``method="woodbury"``) and the per-``kappa`` refit reach the same ML-II optimum on 100 trips
    of 8 of 150 edges (fewer traces than edges, where ``"auto"`` takes the fast one; with ``c`` free and held, and
    without an effect in the data): ``tau`` within 1e-3 relative (the refit's bounded search stops within 1e-3 in
    ``log kappa``, 5e-4 in ``tau``; the fast one's L-BFGS-B on central differences of step 1e-4 much closer), the
    log marginal likelihood within 1e-8 relative (second order in those steps) and never below the refit's by more
    than that; where the data have no effect both keep ``tau`` under 0.02 (the recovery test's null bound)."""
    fits = {}
    for method in ("woodbury", "refit", "auto"):
        model, _, _ = _simulate(tau, seed, n_edges=150, n_trips=100)
        fit = fit_with_trip_effect(model, c_bounds=c_bounds, method=method)
        model.posterior()
        fits[method] = (fit, model.log_ml)
    (fast, ml_fast), (ref, ml_ref) = fits["woodbury"], fits["refit"]
    assert fits["auto"] == fits["woodbury"]
    assert ml_fast == pytest.approx(ml_ref, rel=1e-8, abs=0.0)
    assert ml_fast >= ml_ref - 1e-8 * abs(ml_ref)
    if tau > 0:
        assert fast[2] == pytest.approx(ref[2], rel=1e-3)
    else:
        assert fast[2] < 0.02 and ref[2] < 0.02


def test_auto_refits_when_traces_outnumber_edges() -> None:
    """400 traces over 60 edges (``T >= |U|``: the ``T x T`` Woodbury matrices would cost more than the
    eigendecompositions): ``"auto"`` is the refit, bit for bit; a method it does not know is refused."""
    fits = []
    for method in ("auto", "refit"):
        model, _, _ = _simulate(0.1, 4, n_trips=400)
        fits.append(fit_with_trip_effect(model, method=method))
    assert fits[0] == fits[1]
    with pytest.raises(ParameterError, match="method"):
        fit_with_trip_effect(model, method="newton")
