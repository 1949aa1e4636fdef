"""A 90 % predictive interval for the energy of one trip, from a recorded day alone: errors correlated along a trip.

A route's predicted reduced energy is the sum of its arms' recorded means (:mod:`evroute.environments.sumo_replay`).
Treating the arms as independent gives ``Var = sum sigma_a^2 (1 + 1/n_a)``, too narrow: the traversals of one trip
share its clock time (the traffic then) and its driver (SUMO's speed factor), so their errors are correlated.  The
model here is a trip-level random effect, in each arm's own scale::

    x_i = mu_a + sigma_a (sqrt(rho) z_trip + sqrt(1 - rho) eps_i),   z_trip, eps_i independent, mean 0, variance 1

for traversal ``i`` of arm ``a`` in trip ``trip``: ``Cov(x_i, x_j) = rho(k) sigma_a sigma_b`` for two traversals of
one trip, ``k`` apart in it.  ``rho`` is one number (equicorrelation, ``max_lag = 0``) or, richer, a function of the
lag: ``rho(1), ..., rho(max_lag)`` and one ``rho_far`` for every lag beyond (a trip effect that fades along the
trip, e.g. congestion that is local, next to one that does not, the driver's speed factor).  A predictive interval
for a new trip over arms ``1..L`` (in driving order) with recorded ``(sigma_a, n_a)`` is then
``sum mean_a +- z sd`` with

    sd^2 = sum_a sigma_a^2 + sum_{a != b} rho(|a - b|) sigma_a sigma_b + sum_a sigma_a^2 / n_a

(the new trip's own spread plus the error of the recorded means, taken as independent between arms:
:func:`route_sd`).  With ``rho = 0`` it is the independent-arm interval.

Fitting (:func:`fit_trip_correlation`), by moments on the recorded day's whole trips (consecutive traversals of one
vehicle; ``evroute.sumo.replay.record_day`` keeps the vehicle id): with ``m_a``, ``s_a^2`` and ``n_a`` the sample
mean, variance and count of arm ``a`` and ``d_i = x_i - m_a``, for two traversals of one trip on different arms
(each arm's other traversals from other trips) ``E[d_i d_j] = rho sigma_a sigma_b (1 - 1/n_a)(1 - 1/n_b)``, so per
lag class

    rho_hat = sum_pairs d_i d_j / sum_pairs s_a s_b (1 - 1/n_a)(1 - 1/n_b),

a ratio of sums over all pairs of all trips (no distribution assumed; pairs weighted by ``s_a s_b``, as they weigh
in a route's variance).  Its standard error is the ratio estimator's with trips as clusters,
``sqrt(sum_trips (A_t - rho_hat B_t)^2) / B`` (``A_t``, ``B_t``: a trip's numerator and denominator sums).  Arms with
fewer than ``min_arm_samples`` traversals (no variance) add nothing.  What the estimator leaves out: two traversals of
one trip on the same arm (a loop: a biased pair, rare), and the traversals of one other trip driving both arms of a
pair (its correlation enters the means' errors, a term of relative size at most ``1 / n``).

The interval takes the normal quantile (a route's energy sums many traversals).  :func:`holdout_coverage` checks
the whole model without live data: it fits on half of a day's vehicles and covers the other half's trips.  On the
recorded Monaco and Luxembourg days of ``docs/results/sumo_live_routes.md`` (one rho 0.15 and 0.75) it covers about
91 % of held-out 20-traversal trips, and 92-93 % of the live SUMO trips there with turn arms (arms independent:
51-79 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from evroute.errors import DataError, ParameterError


@dataclass(frozen=True)
class TripCorrelation:
    """Fitted within-trip correlation of traversal errors (module doc).

    Attributes:
        rho_lag: ``(max_lag,)`` correlation of two traversals ``k = 1..max_lag`` apart in one trip (empty:
            equicorrelation).
        rho_far: correlation of two traversals more than ``max_lag`` apart (every pair when ``max_lag = 0``).
        se_lag, se_far: their standard errors (trips as clusters).
        pairs_lag, pairs_far: pairs of traversals each estimate rests on.
        trips: trips with at least two traversals of arms with a variance (the ones that inform ``rho``).
        traversals: traversals given.
    """

    rho_lag: tuple[float, ...]
    rho_far: float
    se_lag: tuple[float, ...]
    se_far: float
    pairs_lag: tuple[int, ...]
    pairs_far: int
    trips: int
    traversals: int

    @property
    def max_lag(self) -> int:
        return len(self.rho_lag)

    def rho(self, lag: np.ndarray) -> np.ndarray:
        """Correlation at each ``lag >= 1`` (the lag's own estimate up to ``max_lag``, ``rho_far`` beyond)."""
        k = np.asarray(lag, dtype=np.int64)
        table = np.asarray((*self.rho_lag, self.rho_far), dtype=np.float64)
        return table[np.clip(k, 1, self.max_lag + 1) - 1]


def arm_moments(values: np.ndarray, arm: np.ndarray) -> pd.DataFrame:
    """Per arm: ``mean``, ``var`` (sample variance, ``ddof = 1``; NaN with one traversal) and ``n`` (index: arm)."""
    g = pd.Series(np.asarray(values, dtype=np.float64)).groupby(np.asarray(arm))
    return pd.DataFrame({"mean": g.mean(), "var": g.var(ddof=1), "n": g.size()})


def fit_trip_correlation(
    values: np.ndarray,
    arm: np.ndarray,
    trip: np.ndarray,
    order: np.ndarray,
    *,
    max_lag: int = 0,
    min_arm_samples: int = 2,
) -> TripCorrelation:
    """Fit the within-trip correlation ``rho`` (by lag up to ``max_lag``) by moments on recorded trips (module doc).

    Args:
        values: ``(N,)`` recorded energies (Wh) of traversals, finite.
        arm: ``(N,)`` each traversal's arm (any hashable labels: an edge, a turn ``(e, e')`` code...).
        trip: ``(N,)`` each traversal's trip (vehicle) label.
        order: ``(N,)`` the traversal's place in its trip (entry time, or an index): sorted within a trip, it gives
            the driving order, and the lag of two traversals is how many places apart they are.
        max_lag: lags with a correlation of their own (0: one ``rho`` for every pair, equicorrelation).
        min_arm_samples: traversals an arm needs to count (its sample variance needs 2).

    Raises:
        ParameterError: arrays of different lengths, non-finite values, ``max_lag < 0`` or ``min_arm_samples < 2``,
            or no pair of traversals in one trip to fit on (then ``rho`` is not identified).
    """
    x = np.asarray(values, dtype=np.float64)
    n_tr = len(x)
    if not len(arm) == len(trip) == len(order) == n_tr:
        raise ParameterError("values, arm, trip and order must have the same length")
    if not np.all(np.isfinite(x)):
        raise ParameterError("recorded values must be finite (leave out NaN energies first)")
    if int(max_lag) < 0 or int(min_arm_samples) < 2:
        raise ParameterError(f"need max_lag >= 0 and min_arm_samples >= 2, got {max_lag} and {min_arm_samples}")
    arm_code, _ = pd.factorize(np.asarray(arm))
    mom = arm_moments(x, arm_code)
    n_a = mom["n"].to_numpy(dtype=np.float64)[arm_code]
    s_a = np.sqrt(np.nan_to_num(mom["var"].to_numpy(dtype=np.float64)))[arm_code]
    use = (n_a >= int(min_arm_samples)) & (s_a > 0)
    d = np.where(use, x - mom["mean"].to_numpy(dtype=np.float64)[arm_code], 0.0)
    w = np.where(use, s_a * (1.0 - 1.0 / np.maximum(n_a, 1.0)), 0.0)
    trip_code, _ = pd.factorize(np.asarray(trip))
    idx = np.lexsort((np.asarray(order), trip_code))
    tc, d, w, use = trip_code[idx], d[idx], w[idx], use[idx]
    n_trips = int(tc.max()) + 1 if n_tr else 0
    # all pairs of a trip: ((sum d)^2 - sum d^2) / 2, per trip
    a_all = 0.5 * (np.bincount(tc, d, n_trips) ** 2 - np.bincount(tc, d * d, n_trips))
    b_all = 0.5 * (np.bincount(tc, w, n_trips) ** 2 - np.bincount(tc, w * w, n_trips))
    u = use.astype(np.float64)
    p_all = 0.5 * (np.bincount(tc, u, n_trips) ** 2 - np.bincount(tc, u, n_trips))
    a_far, b_far, p_far = a_all.copy(), b_all.copy(), p_all.copy()
    lag_fits: list[tuple[float, float, int]] = []
    for k in range(1, int(max_lag) + 1):
        same = tc[k:] == tc[:-k] if k < len(tc) else np.zeros(0, dtype=bool)
        t = tc[k:][same]
        a_k = np.bincount(t, (d[k:] * d[:-k])[same], n_trips)
        b_k = np.bincount(t, (w[k:] * w[:-k])[same], n_trips)
        p_k = np.bincount(t, (u[k:] * u[:-k])[same], n_trips)
        a_far, b_far, p_far = a_far - a_k, b_far - b_k, p_far - p_k
        lag_fits.append(_ratio(a_k, b_k, p_k))
    rho_far, se_far, pairs_far = _ratio(a_far, b_far, p_far)
    if p_all.sum() == 0:
        raise ParameterError("no two traversals of one trip on arms with a variance: the correlation is not identified")
    per_trip = np.bincount(tc, u, n_trips)
    return TripCorrelation(
        rho_lag=tuple(r for r, _, _ in lag_fits),
        rho_far=rho_far,
        se_lag=tuple(s for _, s, _ in lag_fits),
        se_far=se_far,
        pairs_lag=tuple(p for _, _, p in lag_fits),
        pairs_far=pairs_far,
        trips=int((per_trip >= 2).sum()),
        traversals=n_tr,
    )


def day_arm_labels(edge: np.ndarray, next_edge: np.ndarray, arms: str, turn_min_samples: int = 2) -> np.ndarray:
    """``(N,)`` the arm of each recorded traversal as an integer label: its edge (``arms="edge"``), or (``"turn"``)
    its turn ``(edge, next_edge)`` when at least ``turn_min_samples`` recorded traversals took it, else its edge
    (how a turn arm without enough traversals of its own is predicted: by its edge)."""
    e = np.asarray(edge, dtype=np.int64)
    if arms == "edge":
        return e
    if arms != "turn":
        raise ParameterError(f"arms must be 'edge' or 'turn', got {arms!r}")
    nxt = np.asarray(next_edge, dtype=np.int64)
    n = int(max(e.max(initial=-1), nxt.max(initial=-1))) + 1
    key = e * (n + 1) + (nxt + 1)  # next edge -1 (unknown): its own key, never a turn
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    own = (nxt >= 0) & (cnt[inv] >= int(turn_min_samples))
    return np.where(own, n + key, e)  # turn labels above every edge label


def fit_day_correlation(
    day: pd.DataFrame, arms: str = "turn", *, turn_min_samples: int = 2, max_lag: int = 0
) -> TripCorrelation:
    """:func:`fit_trip_correlation` on a recorded day (:func:`evroute.sumo.replay.record_day`'s table).

    Each traversal's value is its reduced energy clipped at 0 (the replay's, :mod:`evroute.environments.sumo_replay`;
    NaN energies left out), its arm :func:`day_arm_labels`'s, its trip the SUMO vehicle, its order the entry time.

    Raises:
        DataError: a day recorded without vehicle ids (before day format 2: record it again).
    """
    if "vehicle" not in day.columns:
        raise DataError("the recorded day has no vehicle ids (recorded before day format 2): record it again")
    d = day[np.isfinite(day["reduced_wh"].to_numpy(dtype=np.float64))]
    nxt = d["next_edge"].to_numpy() if "next_edge" in d.columns else np.full(len(d), -1)
    return fit_trip_correlation(
        np.maximum(d["reduced_wh"].to_numpy(dtype=np.float64), 0.0),
        day_arm_labels(d["edge"].to_numpy(), nxt, arms, turn_min_samples),
        d["vehicle"].to_numpy(),
        d["entry_s"].to_numpy(dtype=np.float64),
        max_lag=max_lag,
    )


def holdout_coverage(
    day: pd.DataFrame,
    arms: str = "turn",
    *,
    window: int = 20,
    level: float = 0.9,
    turn_min_samples: int = 2,
    seed: int = 0,
) -> dict[str, float]:
    """Coverage of the interval on the recorded day's own trips, held out: a check of the model without live data.

    The day's vehicles are split at random (``seed``) into two halves; each half in turn is the training day (arm
    means, variances, counts and one ``rho``, :func:`fit_trip_correlation`) and the other half's trips are predicted:
    the first ``window`` consecutive traversals of every trip that has that many, all of arms (:func:`day_arm_labels`
    over the whole day) with at least 2 training traversals.  The prediction is the sum of the training means, the
    interval :func:`route_interval` with the fitted ``rho`` and with ``rho = 0`` (arms independent).

    Returns:
        ``windows`` (trips predicted, both halves), ``cover`` and ``cover_independent`` (shares inside the
        interval), ``rho_min`` and ``rho_max`` (the two halves' fits).
    """
    if "vehicle" not in day.columns:
        raise DataError("the recorded day has no vehicle ids (recorded before day format 2): record it again")
    if int(window) < 1:
        raise ParameterError(f"window must be >= 1, got {window}")
    d = day[np.isfinite(day["reduced_wh"].to_numpy(dtype=np.float64))]
    nxt = d["next_edge"].to_numpy() if "next_edge" in d.columns else np.full(len(d), -1)
    x = np.maximum(d["reduced_wh"].to_numpy(dtype=np.float64), 0.0)
    lab = day_arm_labels(d["edge"].to_numpy(), nxt, arms, turn_min_samples)
    veh, _ = pd.factorize(d["vehicle"].to_numpy())
    half = np.random.default_rng(seed).integers(0, 2, int(veh.max()) + 1 if len(veh) else 0)[veh]
    entry = d["entry_s"].to_numpy(dtype=np.float64)
    hits = {"cover": 0, "cover_independent": 0}
    rhos, n = [], 0
    for h in (0, 1):
        tr = half == h
        fit = fit_trip_correlation(x[tr], lab[tr], veh[tr], entry[tr])
        rhos.append(fit.rho_far)
        mom = arm_moments(x[tr], lab[tr])
        mom = mom[mom["n"] >= 2]
        te = pd.DataFrame({"x": x[~tr], "a": lab[~tr], "v": veh[~tr], "t": entry[~tr]}).sort_values(["v", "t"])
        te = te[te.groupby("v").cumcount() < int(window)]
        te = te[te.groupby("v")["x"].transform("size") == int(window)]
        known = te["a"].isin(mom.index)
        te = te[known.groupby(te["v"]).transform("all").to_numpy(dtype=bool)]
        for _, g in te.groupby("v"):
            m = mom.loc[g["a"].to_numpy()]
            sd, cnt = np.sqrt(m["var"].to_numpy()), m["n"].to_numpy()
            for key, corr in (("cover", fit), ("cover_independent", 0.0)):
                lo, hi = route_interval(float(m["mean"].sum()), sd, cnt, corr, level)
                hits[key] += int(lo <= float(g["x"].sum()) <= hi)
            n += 1
    return {
        "windows": float(n),
        "cover": hits["cover"] / n if n else math.nan,
        "cover_independent": hits["cover_independent"] / n if n else math.nan,
        "rho_min": float(min(rhos)),
        "rho_max": float(max(rhos)),
    }


#: columns of :func:`correlation_table`
CORRELATION_COLUMNS = ("arms", "max_lag", "lag", "rho", "se", "pairs", "trips", "traversals")


def correlation_table(
    day: pd.DataFrame,
    arms: tuple[str, ...] = ("edge", "turn"),
    lags: tuple[int, ...] = (0,),
    *,
    turn_min_samples: int = 2,
) -> pd.DataFrame:
    """:func:`fit_day_correlation` for each kind of ``arms`` and each ``max_lag`` in ``lags``, as a table to store:
    one row per estimate (:data:`CORRELATION_COLUMNS`; ``lag`` 1..max_lag, and ``lag`` 0 for ``rho_far``, every
    pair farther apart than ``max_lag``); :func:`correlation_from_table` reads a fit back."""
    rows = []
    for kind in arms:
        for max_lag in lags:
            f = fit_day_correlation(day, kind, turn_min_samples=turn_min_samples, max_lag=max_lag)
            est = [*zip(range(1, max_lag + 1), f.rho_lag, f.se_lag, f.pairs_lag, strict=True)]
            for lag, rho, se, pairs in [*est, (0, f.rho_far, f.se_far, f.pairs_far)]:
                rows.append((kind, max_lag, lag, rho, se, pairs, f.trips, f.traversals))
    return pd.DataFrame(rows, columns=list(CORRELATION_COLUMNS))


def correlation_from_table(table: pd.DataFrame, arms: str, max_lag: int) -> TripCorrelation:
    """The :class:`TripCorrelation` of ``arms`` and ``max_lag`` stored by :func:`correlation_table` (DataError if
    the table does not hold it)."""
    c = table[(table["arms"] == arms) & (table["max_lag"] == max_lag)]
    lags, far = c[c["lag"] > 0].sort_values("lag"), c[c["lag"] == 0]
    if len(far) != 1 or len(lags) != max_lag:
        raise DataError(f"the correlation table holds no single fit of {arms} arms with max_lag {max_lag}")
    return TripCorrelation(
        rho_lag=tuple(float(x) for x in lags["rho"]),
        rho_far=float(far["rho"].iloc[0]),
        se_lag=tuple(float(x) for x in lags["se"]),
        se_far=float(far["se"].iloc[0]),
        pairs_lag=tuple(int(x) for x in lags["pairs"]),
        pairs_far=int(far["pairs"].iloc[0]),
        trips=int(far["trips"].iloc[0]),
        traversals=int(far["traversals"].iloc[0]),
    )


def _ratio(a: np.ndarray, b: np.ndarray, pairs: np.ndarray) -> tuple[float, float, int]:
    """``(sum a / sum b, its cluster standard error, pairs)``; ``(nan, nan, 0)`` without pairs."""
    bs = float(b.sum())
    if bs <= 0:
        return math.nan, math.nan, 0
    r = float(a.sum()) / bs
    return r, float(np.sqrt(np.sum((a - r * b) ** 2)) / bs), int(round(float(pairs.sum())))


def route_sd(sd: np.ndarray, n: np.ndarray, correlation: TripCorrelation | float) -> float:
    """Predictive standard deviation (Wh) of one trip's energy over arms with recorded ``sd`` and counts ``n``.

    Args:
        sd: ``(L,)`` each arm's standard deviation of one traversal (Wh), in driving order (0 for an arm without a
            variance: it adds nothing).
        n: ``(L,)`` each arm's recorded traversals (the mean's error ``sd^2 / n``; ``n = 0``: no mean error term).
        correlation: a :class:`TripCorrelation`, or one ``rho`` for every pair (0: arms independent).

    Returns:
        ``sqrt(sum sd^2 + sum_{a != b} rho(|a - b|) sd_a sd_b + sum sd^2 / n)`` (module doc); ``(1 - rho) sum sd^2 +
        rho (sum sd)^2 + sum sd^2 / n`` under the root for one ``rho``.
    """
    s = np.asarray(sd, dtype=np.float64)
    cnt = np.asarray(n, dtype=np.float64)
    if s.shape != cnt.shape or s.ndim != 1:
        raise ParameterError("sd and n must be 1-d arrays of the same length")
    if np.any(~np.isfinite(s)) or np.any(s < 0):
        raise ParameterError("sd must be finite and >= 0")
    mean_err = float(np.sum(np.where(cnt > 0, s * s / np.maximum(cnt, 1.0), 0.0)))
    if isinstance(correlation, TripCorrelation):
        pos = np.arange(len(s))
        lag = np.abs(pos[:, None] - pos[None, :])
        r = np.where(lag == 0, 1.0, correlation.rho(np.maximum(lag, 1)))
        var = float(s @ r @ s)
    else:
        rho = float(correlation)
        var = (1.0 - rho) * float(s @ s) + rho * float(s.sum()) ** 2
    return math.sqrt(max(var, 0.0) + mean_err)


def route_interval(
    mean_wh: float, sd: np.ndarray, n: np.ndarray, correlation: TripCorrelation | float, level: float = 0.9
) -> tuple[float, float]:
    """Two-sided predictive interval ``mean_wh +- z sd`` (Wh) of one trip (``z``: the normal quantile of ``level``;
    ``sd``: :func:`route_sd`)."""
    if not 0.0 < level < 1.0:
        raise ParameterError(f"level must be in (0, 1), got {level}")
    half = NormalDist().inv_cdf(0.5 + level / 2.0) * route_sd(sd, n, correlation)
    return mean_wh - half, mean_wh + half


__all__ = [
    "CORRELATION_COLUMNS",
    "TripCorrelation",
    "correlation_from_table",
    "correlation_table",
    "arm_moments",
    "day_arm_labels",
    "fit_day_correlation",
    "fit_trip_correlation",
    "holdout_coverage",
    "route_interval",
    "route_sd",
]
