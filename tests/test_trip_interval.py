"""The trip-correlated predictive interval (evroute.sumo.trip_interval): a case by hand, recovery of a known rho from
data drawn from the model, and the coverage of simulated trips."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evroute.errors import DataError, ParameterError
from evroute.sumo.trip_interval import (
    TripCorrelation,
    day_arm_labels,
    fit_day_correlation,
    fit_trip_correlation,
    holdout_coverage,
    route_interval,
    route_sd,
)


def test_fit_by_hand() -> None:
    # arm A: 0, 2, 4, 2 (mean 2, var 8/3); arm B: 1, 3, 2, 2 (mean 2, var 2/3); trips t1, t2, t5 drive A then B,
    # t3 and t4 one traversal each (they inform the means and variances only)
    values = [0, 1, 2, 3, 4, 2, 2, 2]
    arm = ["A", "B", "A", "B", "A", "B", "A", "B"]
    trip = ["t1", "t1", "t2", "t2", "t5", "t5", "t3", "t4"]
    order = [0, 1, 0, 1, 0, 1, 0, 0]
    f = fit_trip_correlation(np.array(values, dtype=float), np.array(arm), np.array(trip), np.array(order))
    # d: t1 (-2, -1), t2 (0, 1), t5 (2, 0): sum of products 2; each pair's weight
    # s_A s_B (1 - 1/4)^2 = sqrt(8/3 * 2/3) * 9/16 = 3/4, three pairs: 9/4; rho = 2 / (9/4) = 8/9
    assert f.rho_far == pytest.approx(8 / 9) and f.pairs_far == 3 and f.trips == 3 and f.traversals == 8
    # cluster s.e.: per trip A_t - rho B_t = 2 - 2/3, 0 - 2/3, 0 - 2/3; sqrt(16/9 + 4/9 + 4/9) / (9/4)
    assert f.se_far == pytest.approx(math.sqrt(24 / 9) / (9 / 4))
    assert f.max_lag == 0 and f.rho(np.array([1, 5])).tolist() == pytest.approx([8 / 9, 8 / 9])


def test_route_sd_by_hand() -> None:
    # (1 - rho) sum sd^2 + rho (sum sd)^2 + sum sd^2 / n = 0.5 * 5 + 0.5 * 9 + (1/4 + 4/1)
    assert route_sd(np.array([1.0, 2.0]), np.array([4, 1]), 0.5) == pytest.approx(math.sqrt(11.25))
    assert route_sd(np.array([1.0, 2.0]), np.array([4, 1]), 0.0) == pytest.approx(math.sqrt(5 + 4.25))  # independent
    lagged = TripCorrelation((0.5,), 0.1, (0.0,), 0.0, (1,), 1, 1, 3)
    # three arms of sd 1, no mean error: 3 + 2 * (rho(1) * 2 pairs + rho(2) * 1 pair) = 3 + 2 * 1.1
    assert route_sd(np.ones(3), np.zeros(3), lagged) == pytest.approx(math.sqrt(5.2))
    lo, hi = route_interval(100.0, np.array([1.0, 2.0]), np.array([4, 1]), 0.5, level=0.9)
    assert (hi - lo) / 2 == pytest.approx(1.6448536269514722 * math.sqrt(11.25)) and (lo + hi) / 2 == 100.0


def _simulate_day(
    rng: np.random.Generator, mu: np.ndarray, sig: np.ndarray, n_trips: int, rho1: float, rho_far: float
) -> tuple[np.ndarray, ...]:
    """Trips over consecutive arms ``start .. start + L - 1``; errors ``sig * e`` with ``e`` of unit variance,
    ``Corr(e_i, e_j) = rho1`` one apart and ``rho_far`` farther: a trip effect (``rho_far``) plus a moving average
    of order 1 (``rho1 - rho_far`` at lag 1, nothing beyond)."""
    a = len(mu)
    ma = math.sqrt(2.0 * (rho1 - rho_far))
    rest = math.sqrt(1.0 - rho_far - 2.0 * (rho1 - rho_far))
    xs, arms, trips, order = [], [], [], []
    for v in range(n_trips):
        length = int(rng.integers(2, 16))
        arm = np.arange(start := int(rng.integers(0, a - length)), start + length)
        eta = rng.normal(size=length + 1)
        e = (
            math.sqrt(rho_far) * rng.normal()
            + ma * (eta[:-1] + eta[1:]) / math.sqrt(2)
            + rest * rng.normal(size=length)
        )
        xs.append(mu[arm] + sig[arm] * e)
        arms.append(arm)
        trips.append(np.full(length, v))
        order.append(np.arange(length))
    return tuple(np.concatenate(x) for x in (xs, arms, trips, order))


def test_a_known_rho_is_recovered() -> None:
    """Data drawn from the model with rho = 0.3 (and, for the lag fit, rho(1) = 0.5, beyond 0.2): the estimates lie
    within 4 of their standard errors (each about 0.01 with 2,000 trips of 2-15 traversals; a miss has probability
    < 1e-4 for an unbiased, normal estimate), and the standard errors are as small as the sample size promises."""
    rng = np.random.default_rng(1)
    mu, sig = rng.uniform(5, 20, 200), rng.uniform(0.5, 4, 200)
    x, arm, trip, order = _simulate_day(rng, mu, sig, 2000, 0.3, 0.3)
    f = fit_trip_correlation(x, arm, trip, order)
    assert f.se_far < 0.02 and abs(f.rho_far - 0.3) < 4 * f.se_far
    independent = fit_trip_correlation(*_simulate_day(rng, mu, sig, 2000, 0.0, 0.0))
    assert abs(independent.rho_far) < 4 * independent.se_far  # no trip effect: none found
    x, arm, trip, order = _simulate_day(rng, mu, sig, 2000, 0.5, 0.2)
    g = fit_trip_correlation(x, arm, trip, np.asarray(order) * 7.5, max_lag=2)  # any increasing order works
    assert g.max_lag == 2 and max(g.se_lag + (g.se_far,)) < 0.02
    for est, se, true in zip((*g.rho_lag, g.rho_far), (*g.se_lag, g.se_far), (0.5, 0.2, 0.2), strict=True):
        assert abs(est - true) < 4 * se
    assert g.pairs_lag[0] > g.pairs_lag[1] > 0 and g.trips == 2000


@pytest.mark.slow
def test_simulated_trips_are_covered_near_nominal() -> None:
    """A day drawn from the model (rho = 0.3, about 50 traversals per arm), fitted; then 500 new routes of 20 arms,
    4 trips each: the 90 % interval covers 2,000 new trips at 90 % within 3 points (binomial s.d. 0.7 points; the
    trips of one route share its means' errors, which widens the spread a little), while the independent-arm
    interval covers far fewer."""
    rng = np.random.default_rng(2)
    a, rho = 120, 0.3
    mu, sig = rng.uniform(5, 20, a), rng.uniform(0.5, 4, a)
    x, arm, trip, order = _simulate_day(rng, mu, sig, 700, rho, rho)
    fit = fit_trip_correlation(x, arm, trip, order)
    mom = pd.DataFrame({"x": x, "a": arm}).groupby("a")["x"].agg(["mean", "std", "size"])
    hits = {"fit": 0, "independent": 0}
    total = 0
    for _ in range(500):
        route = np.arange(start := int(rng.integers(0, a - 20)), start + 20)
        m, s, n = (mom.loc[route, c].to_numpy() for c in ("mean", "std", "size"))
        for _ in range(4):
            e = math.sqrt(rho) * rng.normal() + math.sqrt(1 - rho) * rng.normal(size=20)
            live = float(np.sum(mu[route] + sig[route] * e))
            for key, corr in (("fit", fit), ("independent", 0.0)):
                lo, hi = route_interval(float(m.sum()), s, n, corr)
                hits[key] += lo <= live <= hi
            total += 1
    assert abs(hits["fit"] / total - 0.90) < 0.03
    assert hits["independent"] / total < 0.70


@pytest.mark.slow
def test_holdout_coverage_on_a_simulated_day() -> None:
    """The check on held-out trips of the recorded day: on a day drawn from the model (rho = 0.3) the fitted interval
    covers about 90 % of the held-out windows of 10 traversals (about 900 windows: binomial s.d. 1 point, tolerance
    4), the independent-arm interval far fewer, and both halves recover rho (s.e. about 0.02 each)."""
    rng = np.random.default_rng(3)
    mu, sig = rng.uniform(15, 30, 120), rng.uniform(0.5, 4, 120)  # no energy near 0: the clipping at 0 never acts
    x, arm, trip, order = _simulate_day(rng, mu, sig, 2000, 0.3, 0.3)
    day = pd.DataFrame(
        {"edge": arm, "next_edge": -1, "reduced_wh": x, "entry_s": order * 10.0, "vehicle": [f"v{t}" for t in trip]}
    )
    h = holdout_coverage(day, "edge", window=10)
    assert h["windows"] > 700 and abs(h["cover"] - 0.90) < 0.04 and h["cover_independent"] < 0.75
    assert 0.22 < h["rho_min"] <= h["rho_max"] < 0.38
    with pytest.raises(ParameterError):
        holdout_coverage(day, window=0)


def test_day_arm_labels_and_fit_on_a_day_table() -> None:
    edge = np.array([0, 0, 0, 1, 1, 2])
    nxt = np.array([1, 1, 2, 2, -1, 0])
    assert day_arm_labels(edge, nxt, "edge").tolist() == edge.tolist()
    lab = day_arm_labels(edge, nxt, "turn", 2)
    # only the turn 0 -> 1 has 2 traversals: an arm of its own (above every edge label); the rest keep their edges
    assert lab[0] == lab[1] and lab[0] > 2 and lab[2:].tolist() == [0, 1, 1, 2]
    with pytest.raises(ParameterError):
        day_arm_labels(edge, nxt, "lane")
    day = pd.DataFrame(
        {
            "edge": [0, 1, 0, 1, 0, 1],
            "next_edge": [1, 2, 1, 2, 1, 2],
            "reduced_wh": [1.0, 2.0, 3.0, 4.0, 2.0, np.nan],
            "entry_s": [0.0, 10.0, 5.0, 20.0, 7.0, 9.0],
            "vehicle": ["a", "a", "b", "b", "c", "c"],
        }
    )
    f = fit_day_correlation(day, "turn")  # c's second traversal has no energy: left out
    assert f.traversals == 5 and f.trips == 2 and f.pairs_far == 2
    with pytest.raises(DataError, match="vehicle ids"):
        fit_day_correlation(day.drop(columns="vehicle"))


def test_bad_input_is_refused() -> None:
    one = np.ones(3)
    with pytest.raises(ParameterError, match="same length"):
        fit_trip_correlation(one, one[:2], one, one)
    with pytest.raises(ParameterError, match="finite"):
        fit_trip_correlation(np.array([1.0, np.nan, 2.0]), one, one, one)
    with pytest.raises(ParameterError, match="not identified"):  # every trip a single traversal
        fit_trip_correlation(np.array([1.0, 2.0, 4.0]), np.zeros(3), np.arange(3), np.zeros(3))
    with pytest.raises(ParameterError):
        fit_trip_correlation(one, one, one, one, max_lag=-1)
    with pytest.raises(ParameterError):
        route_sd(np.array([1.0, -1.0]), np.array([2, 2]), 0.1)
    with pytest.raises(ParameterError):
        route_interval(0.0, one, one, 0.1, level=1.0)
