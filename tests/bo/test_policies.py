"""Policy formulas against hand computations, and each policy finding the optimum of an easy 1-D function."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import norm

from evroute.bo import (
    BOKE,
    GPEI,
    GPPI,
    GPTS,
    GPUCB,
    IGPUCB,
    KRUCB,
    BOKEPlus,
    BoxDomain,
    FiniteDomain,
    Matern,
    NadarayaWatson,
    SquaredExponential,
    SrinivasGPUCB,
    ikr_ucb,
    info_gain_bound,
    run_policy,
    scott_bandwidth,
)
from evroute.errors import ParameterError


def bump(x: np.ndarray) -> float:
    """Easy 1-D objective on [0, 1]: a Gaussian bump of width 0.1 at 0.63 (max 1) plus a weaker one at 0.15."""
    return float(np.exp(-((x[0] - 0.63) ** 2) / 0.02) + 0.5 * np.exp(-((x[0] - 0.15) ** 2) / 0.02))


# ------------------------------------------------------------------------------------------ hand computations
def test_information_gain_bounds_by_hand() -> None:
    assert info_gain_bound(1, SquaredExponential(), 1) == 0.0
    assert info_gain_bound(100, SquaredExponential(), 1) == pytest.approx(math.log(100) ** 2)
    assert info_gain_bound(100, SquaredExponential(), 3) == pytest.approx(math.log(100) ** 4)
    assert info_gain_bound(100, Matern(nu=2.5), 1) == pytest.approx(100 ** (2 / 7) * math.log(100))


def test_widths_by_hand() -> None:
    dom = FiniteDomain(np.linspace(0, 1, 5))
    ig = IGPUCB(dom, B=2.0, R=0.5, delta=0.1, lam=0.25)
    t = 10
    gam = math.log(t - 1) ** 2
    assert ig.width(t) == pytest.approx(2.0 + 0.5 * math.sqrt(2 * (gam + 1 + math.log(10))))
    ts = GPTS(dom, B=2.0, R=0.5, delta=0.1, lam=0.25)
    assert ts.width(t) == pytest.approx(2.0 + 0.5 * math.sqrt(2 * (gam + 1 + math.log(20))))
    sr = SrinivasGPUCB(dom, B=2.0, delta=0.1, lam=0.25)
    assert sr.width(t) == pytest.approx(math.sqrt(2 * 4.0 + 300 * gam * math.log(t / 0.1) ** 3))
    assert IGPUCB(dom).R == pytest.approx(0.1)  # default R = sqrt(lam)
    assert IGPUCB(dom, lam="theory", horizon=100).lam == pytest.approx(1.02)
    assert IGPUCB(dom, gamma=1.0, B=0.0, R=1.0).width(5) == pytest.approx(math.sqrt(2 * (2 + math.log(10))))
    with pytest.raises(ParameterError):
        IGPUCB(dom, lam="theory")
    with pytest.raises(ParameterError):
        IGPUCB(dom, delta=1.5)


def test_ucb_picks_argmax_of_mean_plus_width_sigma() -> None:
    dom = FiniteDomain(np.linspace(0, 1, 21))
    pol = IGPUCB(dom, lam=0.01, seed=0)
    pol.tell([0.5], 1.0)
    pol.tell([0.8], -1.0)
    mean, std = pol.posterior()
    expected = dom.points[np.argmax(mean + pol.width(3) * std)]
    np.testing.assert_array_equal(pol.ask(), expected)


def test_ei_pi_values_and_gradients_by_hand() -> None:
    box = BoxDomain.unit(1)
    ei, pi = GPEI(box, xi=0.1), GPPI(box, xi=0.1)
    for pol in (ei, pi):
        pol.incumbent = 0.3
    mean, std = np.array([0.5, 0.2]), np.array([0.4, 0.1])
    z = (mean - 0.3 - 0.1) / std
    val, dm, ds = ei.acquisition(mean, std)
    np.testing.assert_allclose(val, (mean - 0.4) * norm.cdf(z) + std * norm.pdf(z))
    np.testing.assert_allclose(dm, norm.cdf(z))
    np.testing.assert_allclose(ds, norm.pdf(z))
    val, dm, ds = pi.acquisition(mean, std)
    np.testing.assert_allclose(val, norm.logcdf(z))
    for k in range(2):
        g = approx_fprime(np.array([mean[k], std[k]]), lambda v: pi.acquisition(v[:1], v[1:])[0][0], 1e-8)
        np.testing.assert_allclose([dm[k], ds[k]], g, rtol=1e-4)


def test_nadaraya_watson_by_hand_and_far_from_data() -> None:
    x = np.array([[0.0], [0.5], [0.5]])
    y = np.array([1.0, 2.0, 4.0])
    nw = NadarayaWatson(x, y, 0.25)
    w = np.exp(-((0.2 - x[:, 0]) ** 2) / (2 * 0.0625))
    m, log_w = nw.predict(np.array([[0.2]]))
    assert m[0] == pytest.approx(w @ y / w.sum())
    assert log_w[0] == pytest.approx(np.log(w.sum()))
    # far away the weights underflow; log-space keeps W finite and m is the nearest-neighbour average (Prop. 3.1)
    m, log_w = nw.predict(np.array([[60.0]]))
    assert np.isfinite(log_w[0]) and log_w[0] < -20000 and m[0] == pytest.approx(3.0)
    _, _, dm, dlw = nw.predict_grad(np.array([0.3]))
    np.testing.assert_allclose(dm, approx_fprime(np.array([0.3]), lambda z: nw.predict(z[None])[0][0], 1e-8), rtol=1e-5)
    np.testing.assert_allclose(
        dlw, approx_fprime(np.array([0.3]), lambda z: nw.log_density(z[None])[0], 1e-8), rtol=1e-5
    )


def test_boke_beta_bandwidth_and_acquisition_by_hand() -> None:
    assert scott_bandwidth(32, 1, 0.5) == pytest.approx(0.5 * 32 ** (-1 / 5))
    pol = BOKE(BoxDomain.unit(2), varsigma=0.5, delta=0.05)
    assert pol.beta(7) == pytest.approx(2 * 0.25 * math.log(2 * math.pi**2 * 49 / (3 * 0.05)))
    # the asinh form of IKR-UCB ranks points exactly as m + sqrt(beta / W) does
    rng = np.random.default_rng(0)
    m, log_w, beta = rng.standard_normal(200), rng.uniform(-30, 3, 200), 3.0
    direct = m + np.sqrt(beta) * np.exp(-0.5 * log_w)
    np.testing.assert_array_equal(np.argsort(ikr_ucb(m, log_w, beta)), np.argsort(direct))
    assert np.all(np.isfinite(ikr_ucb(np.zeros(2), np.array([-1e6, -1e4]), beta)))


def test_krucb_requery_and_widening() -> None:
    dom = BoxDomain.unit(1)
    pol = KRUCB(dom, alpha=0.5, seed=0)
    pol.tell_many([[0.1], [0.5], [0.9]], [0.0, 1.0, 0.2])
    # t = 3, 3^0.5 < 3 distinct points: re-query the best-scoring observed point
    nw = pol.model()
    distinct, scores = pol.scores(nw)
    x = pol.ask()
    np.testing.assert_allclose(x, dom.from_unit(distinct[np.argmax(scores)]))
    pol.tell(x, 1.0)
    pol.tell(x, 1.0)
    pol.tell(x, 1.0)  # t = 6, sqrt(6) < 3 still
    pol.tell(x, 1.0)
    pol.tell(x, 1.0)
    pol.tell(x, 1.0)  # t = 9: 9^0.5 = 3, widening
    centre = x
    x_new = pol.ask()
    assert not np.any(np.all(np.isclose(pol.X, x_new), axis=1))
    assert np.linalg.norm(x_new - centre) < pol.bandwidth(pol.n_obs) + 1e-12


def test_seeded_policies_are_reproducible() -> None:
    dom = BoxDomain.unit(1)
    runs = [run_policy(BOKEPlus(dom, seed=4), bump, 8, f_max=1.0, seed=1).x for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])


# ------------------------------------------------------------------------------------------ easy 1-D optimisation
FINITE = FiniteDomain(np.linspace(0, 1, 101))
BOX = BoxDomain.unit(1)
F_MAX = max(bump(p) for p in FINITE.points)

# (policy factory, budget, tolerance on the final simple regret); budgets are rounds after the 5-point design below.
# KR-UCB only refines around observed points (progressive widening), so it needs a design that brackets the optimum.
DESIGN = [[0.0], [0.25], [0.5], [0.75], [1.0]]
CASES = {
    "IGP-UCB": (lambda d: IGPUCB(d, lam=1e-4, seed=0), 30, 1e-2),
    "GP-UCB(Srinivas)": (lambda d: SrinivasGPUCB(d, lam=1e-4, seed=0), 60, 1e-2),
    "GP-UCB(fixed)": (lambda d: GPUCB(d, beta=2.0, lam=1e-4, seed=0), 30, 1e-2),
    "GP-TS": (lambda d: GPTS(d, lam=1e-4, n_candidates=300, seed=0), 30, 1e-2),
    "GP-EI": (lambda d: GPEI(d, lam=1e-4, seed=0), 30, 1e-2),
    "GP-PI": (lambda d: GPPI(d, lam=1e-4, seed=0), 30, 1e-2),
    "BOKE": (lambda d: BOKE(d, seed=0), 40, 1e-2),
    "BOKE+": (lambda d: BOKEPlus(d, seed=0), 60, 1e-2),
    # 1-D, 5-point design: alpha = 0.5 widens from t = 25 on.  With the default alpha = 0.8 the widening steps land
    # ~h_t away from the re-queried best point and stall at a simple regret of 0.097 here (the paper: KR-UCB "may fail
    # to ensure global convergence"); see docs/bo.md.
    "KR-UCB": (lambda d: KRUCB(d, alpha=0.5, seed=0), 250, 5e-2),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("domain", [FINITE, BOX], ids=["finite", "box"])
def test_policy_finds_optimum_of_easy_function(name: str, domain) -> None:  # noqa: ANN001
    make, budget, tol = CASES[name]
    f_max = F_MAX if isinstance(domain, FiniteDomain) else 1.0
    res = run_policy(make(domain), bump, budget, f_max=f_max, initial=DESIGN, seed=0)
    assert np.all(np.isfinite(res.y))
    assert res.simple_regret[-1] < tol, f"{name}: simple regret {res.simple_regret[-1]:.3g} after {budget} rounds"
