"""A trip-level random effect (the driver, the day) estimated from trip logs, for route intervals.

The edges of one trip share its driver and its traffic, so their errors do not cancel along a route as independent
edge noise would.  The model: a trip's reduced energy over the edge shares ``w`` it drove is

    Y_t = w_t^T f + beta_t mu_t + eps_t,     beta_t ~ N(0, tau^2),   mu_t = w_t^T f,   eps_t ~ N(0, r_t)

(``tau``: the relative spread of one trip's energy around the edges' expectation -- a driver 10 % more economical
than the average has ``beta = -0.1``; ``r_t = 1^T R_t 1`` the trip's reading noise summed, :mod:`evroute.models.
linear_obs`).  A route asked about gets the variance ``tau^2 mu(R)^2`` on top of its edges' posterior and noise
(:class:`evroute.driver.belief.RouteBelief`).

**Estimate** (:func:`fit_trip_effect`, method of moments on the per-trip residual sums): with the posterior of all
readings (mean ``m``, covariance ``Sigma``), ``d_t = Y_t - w_t^T m`` has, under the model without the effect,
``E[d_t^2] = v_t = r_t - w_t^T Sigma w_t`` (in-sample residuals of a linear Gaussian model: ``Cov r = R - A Sigma
A^T``); the effect adds ``tau^2 mu_t^2``.  So

    tau_hat^2 = max(0, sum_t (d_t^2 - v_t) / sum_t mu_t^2),

a ratio of sums (no distribution assumed beyond the first two moments) with the standard error of a ratio estimator
with trips as clusters, ``sqrt(sum_t (d_t^2 - v_t - tau_hat^2 mu_t^2)^2) / sum_t mu_t^2``.  The posterior also
absorbs part of the effect (it treats it as noise), so ``tau_hat`` is slightly low when few trips share the edges;
with many trips per edge that share vanishes.

:class:`TripSums` keeps what the estimate needs of each learned trace -- its edges, their shares ``w`` (summed over
its windows), ``Y`` and ``r`` -- compactly (a model file holds it, so a resumed run re-estimates from all logs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.models.predictive_noise import PredictiveNoise, TripResiduals, fit_predictive_noise

#: a trace's readings as learned: ``(edges (k,), A (m, k), y (m,), R)`` with ``R`` the ``(m, m)`` noise covariance or
#: its ``(2, m)`` tridiagonal lower band (:attr:`evroute.traces.observations.Readings.noise_band`), Wh and Wh^2
Readings = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class TripSums:
    """Per learned trace: edges ``(k_t,)``, driven shares ``w`` ``(k_t,)``, reading sum ``Y`` (Wh) and its noise
    variance ``r`` (Wh^2, at noise scale 1); stored flat (``ptr`` ``(T + 1,)`` offsets into ``edge`` and ``w``).

    With its readings (:meth:`add`'s ``readings``), a trace also keeps what the exact out-of-fold residuals
    (:func:`cavity_residuals`, :func:`out_of_fold_noise`) take out of the posterior again: its ``m`` readings ``y``,
    the tridiagonal noise covariance ``R`` (diagonal and sub-diagonal) and the non-zero weights of ``A`` (each
    window drives a contiguous run of edges, so ``nnz(A) <= m + k``).  Bytes per trace: ``24 m`` (``y``, ``R``) +
    ``24 nnz(A)`` (row, column, value) + ``16 k`` (edges, shares) + 40; :meth:`readings_bytes` measures it.  A
    trace learned before readings were kept (a model file of format version 1) has none (``m = 0``)."""

    def __init__(self) -> None:
        self._edge: list[np.ndarray] = []
        self._w: list[np.ndarray] = []
        self._y: list[float] = []
        self._r: list[float] = []
        #: per trace ``(yr (m, 3): y, R's diagonal, R's sub-diagonal; rc (nnz, 2) rows and columns of A; val (nnz,))``
        self._read: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        return len(self._y)

    def add(self, edges: np.ndarray, w: np.ndarray, y: float, r: float, readings: Readings | None = None) -> None:
        """One trace: ``edges`` ``(k,)``, shares ``w`` ``(k,)`` (column sums of its ``A``), ``Y = sum y``,
        ``r = 1^T R 1``; optionally its ``readings`` (:data:`Readings`, over the same ``edges``; ``R`` tridiagonal)."""
        e, ww = np.asarray(edges, dtype=np.int64).reshape(-1), np.asarray(w, dtype=np.float64).reshape(-1)
        if e.shape != ww.shape or not (np.isfinite(ww).all() and np.isfinite(y) and r >= 0):
            raise ParameterError("trip sums: edges and shares of one shape, finite Y and r >= 0 needed")
        stored = (np.zeros((0, 3)), np.zeros((0, 2), np.int64), np.zeros(0))
        if readings is not None:
            stored = _compact(e, readings)
        self._edge.append(e)
        self._w.append(ww)
        self._y.append(float(y))
        self._r.append(float(r))
        self._read.append(stored)

    def trips(self) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
        """``(edges, w, Y, r)`` per trace."""
        return list(zip(self._edge, self._w, self._y, self._r, strict=True))

    def with_readings(self) -> np.ndarray:
        """``(T',)`` indices of the traces that kept their readings."""
        return np.flatnonzero([len(yr) > 0 for yr, _, _ in self._read]).astype(np.int64)

    def readings(self, i: int) -> Readings:
        """Trace ``i``'s readings ``(edges (k,), A (m, k), y (m,), R (m, m))`` as :func:`cavity_residuals` takes them
        (dense, built on demand)."""
        yr, rc, val = self._read[i]
        e, m = self._edge[i], len(yr)
        a = np.zeros((m, len(e)))
        a[rc[:, 0], rc[:, 1]] = val
        cov = np.diag(yr[:, 1]) + np.diag(yr[:-1, 2], -1) + np.diag(yr[:-1, 2], 1)
        return e, a, yr[:, 0].copy(), cov

    def readings_bytes(self) -> int:
        """Bytes the kept readings take (module doc's count, without the per-trace sums)."""
        return sum(yr.nbytes + rc.nbytes + val.nbytes for yr, rc, val in self._read)

    def arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays for a model file: ``trip_ptr``, ``trip_edge``, ``trip_w``, ``trip_yr`` ``(T, 2)``; and, when
        any trace kept its readings, ``trip_read_ptr`` ``(T + 1,)`` offsets into ``trip_read`` ``(M, 3)`` (``y``,
        ``R``'s diagonal and sub-diagonal per reading), ``trip_a_ptr`` ``(T + 1,)`` offsets into ``trip_a_rc``
        ``(N, 2)`` (reading within the trace, edge within the trace's edges) and ``trip_a_val`` ``(N,)``."""
        sizes = [len(e) for e in self._edge]
        out = {
            "trip_ptr": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "trip_edge": np.concatenate(self._edge).astype(np.int64) if sizes else np.zeros(0, np.int64),
            "trip_w": np.concatenate(self._w) if sizes else np.zeros(0),
            "trip_yr": np.column_stack([self._y, self._r]) if sizes else np.zeros((0, 2)),
        }
        if not len(self.with_readings()):
            return out
        m, nnz = [len(yr) for yr, _, _ in self._read], [len(val) for _, _, val in self._read]
        out["trip_read_ptr"] = np.concatenate([[0], np.cumsum(m)]).astype(np.int64)
        out["trip_read"] = np.concatenate([yr for yr, _, _ in self._read])
        out["trip_a_ptr"] = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
        out["trip_a_rc"] = np.concatenate([rc for _, rc, _ in self._read]).astype(np.int64)
        out["trip_a_val"] = np.concatenate([val for _, _, val in self._read])
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TripSums:
        """The inverse of :meth:`arrays` (arrays checked by :mod:`evroute.models.store_schema`)."""
        out = cls()
        if "trip_ptr" not in a:
            return out
        ptr = np.asarray(a["trip_ptr"], dtype=np.int64)
        for i in range(len(ptr) - 1):
            lo, hi = ptr[i], ptr[i + 1]
            out.add(a["trip_edge"][lo:hi], a["trip_w"][lo:hi], float(a["trip_yr"][i, 0]), float(a["trip_yr"][i, 1]))
            if "trip_read_ptr" in a:
                (r0, r1), (n0, n1) = a["trip_read_ptr"][i : i + 2], a["trip_a_ptr"][i : i + 2]
                yr = np.asarray(a["trip_read"][r0:r1], dtype=np.float64)
                rc = np.asarray(a["trip_a_rc"][n0:n1], dtype=np.int64)
                out._read[-1] = (yr, rc, np.asarray(a["trip_a_val"][n0:n1], dtype=np.float64))
        return out


def _compact(edges: np.ndarray, readings: Readings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A trace's readings as :class:`TripSums` keeps them (``R`` must be tridiagonal: the band or the matrix)."""
    e, a, y, r = readings
    a, y, r = np.atleast_2d(np.asarray(a, dtype=np.float64)), np.asarray(y, dtype=np.float64), np.asarray(r)
    m = len(y)
    if not np.array_equal(np.asarray(e, dtype=np.int64), edges) or a.shape != (m, len(edges)):
        raise ParameterError(f"trip readings: A {a.shape} and y ({m},) do not fit the trace's {len(edges)} edges")
    # the band (2, m) or the matrix (m, m); for m = 2 both are (2, 2): a band's last entry is 0, a variance is not
    if r.shape == (2, m) and (m != 2 or r[1, 1] == 0):
        band = r
    elif r.shape == (m, m):
        if np.triu(r, 2).any() or np.tril(r, -2).any():
            raise ParameterError("trip readings: the noise covariance must be tridiagonal")
        band = np.vstack([np.diag(r), np.r_[np.diag(r, -1), 0.0]])
    else:
        raise ParameterError(f"trip readings: noise covariance of shape {r.shape} for {m} readings")
    if not (np.isfinite(a).all() and np.isfinite(y).all() and np.isfinite(band).all()):
        raise ParameterError("trip readings contain NaN or inf")
    rows, cols = np.nonzero(a)
    return np.column_stack([y, band[0], band[1]]), np.column_stack([rows, cols]).astype(np.int64), a[rows, cols]


@dataclass(frozen=True)
class TripEffect:
    """The fitted trip-level effect: ``rel_var`` = ``tau^2`` (relative variance of one trip's reduced energy),
    ``se`` its standard error, ``trips`` the traces it rests on (module doc)."""

    rel_var: float
    se: float
    trips: int

    def to_dict(self) -> dict[str, Any]:
        return {"rel_var": self.rel_var, "se": self.se, "trips": self.trips}


def _quad(cov_of: Any, e: np.ndarray, w: np.ndarray) -> float:
    """``w^T Sigma_ee w``: without the ``(k, k)`` matrix where ``cov_of`` is a posterior's bound ``covariance_of``
    (:meth:`evroute.kernels.posterior.GaussianPosterior.quad_of`) or has a ``quad`` method
    (:class:`evroute.models.linear_obs.SubsetCovariance`), else from ``cov_of(e)``."""
    quad = getattr(cov_of, "quad", None) or getattr(getattr(cov_of, "__self__", None), "quad_of", None)
    return float(quad(e, w)) if quad is not None else float(w @ (np.asarray(cov_of(e)) @ w))


def fit_trip_effect(
    mean: np.ndarray, cov_of: Any, sums: TripSums, noise_scale: float = 1.0, *, min_trips: int = 2
) -> TripEffect:
    """``tau^2`` by moments (module doc) from the posterior ``mean`` ``(E,)`` (Wh), ``cov_of(idx)`` (the ``(k, k)``
    posterior covariance of edges ``idx``, Wh^2) and the traces' sums; ``noise_scale`` multiplies each ``r``.  Fewer
    than ``min_trips`` traces: ``tau^2 = 0`` with an infinite standard error (nothing to estimate from)."""
    trips = sums.trips()
    if len(trips) < min_trips:
        return TripEffect(0.0, float("inf"), len(trips))
    num, den = np.zeros(len(trips)), np.zeros(len(trips))
    m = np.asarray(mean, dtype=np.float64)
    for i, (e, w, y, r) in enumerate(trips):
        mu = float(w @ m[e])
        v = noise_scale * r - _quad(cov_of, e, w)
        num[i] = (y - mu) ** 2 - v
        den[i] = mu * mu
    total = float(den.sum())
    if not total > 0:
        return TripEffect(0.0, float("inf"), len(trips))
    tau2 = float(num.sum() / total)
    se = float(np.sqrt(np.sum((num - tau2 * den) ** 2)) / total)
    return TripEffect(max(tau2, 0.0), se, len(trips))


@dataclass(frozen=True)
class RouteNoise:
    """The route-level noise fitted from whole trips (:func:`fit_route_noise`): one traversal's noise is
    ``noise_mult`` times the readings' (at their noise scale), plus the trip effect ``rel_var`` = ``tau^2``; ``trips``
    the traces it rests on; ``noise_mult_se``, ``rel_var_se`` their standard errors (sandwich, trips as clusters;
    infinite when not estimated)."""

    noise_mult: float
    rel_var: float
    trips: int
    noise_mult_se: float = float("inf")
    rel_var_se: float = float("inf")

    def to_dict(self) -> dict[str, Any]:
        """What a model file keeps (``meta.trip_effect``; JSON: an infinite s.e. is ``None``)."""

        def fin(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "rel_var": self.rel_var,
            "noise_mult": self.noise_mult,
            "trips": self.trips,
            "rel_var_se": fin(self.rel_var_se),
            "noise_mult_se": fin(self.noise_mult_se),
            "method": "whole-trip",
        }


def fit_route_noise(
    mean: np.ndarray, cov_of: Any, sums: TripSums, noise_scale: float = 1.0, *, min_trips: int = 2
) -> RouteNoise:
    """The noise of a whole trip, from its residual sums: ``E[d_t^2] + w_t^T Sigma w_t = k phi r_t + tau^2 mu_t^2``
    (module doc's moments with the traversal noise's multiplier ``k`` free), ``(k, tau^2) >= 0`` by non-negative
    least squares over the trips.

    Why: readings over short windows see how the energy is spread *along* an edge (accelerating at its start, braking
    at its end), which the noise model of :mod:`evroute.traces.observations` counts as noise proportional to the
    driven share; over a whole trip that spread cancels, so the readings' noise scale ``phi`` (ML-II over windows)
    can overstate one whole traversal's noise many times.  A route interval needs the whole-trip noise: ``k phi``
    times the nominal traversal noise per edge, plus ``tau^2 mu^2``.  Fewer than ``min_trips`` traces: ``k = 1``,
    ``tau^2 = 0`` (the readings' noise as it is).  Standard errors: the least-squares sandwich ``(X^T X)^-1 X^T
    diag(e^2) X (X^T X)^-1`` with the trips' residuals ``e`` (each trip one cluster; a coefficient held at 0 by the
    constraint gets the unconstrained formula's value, a rough guide there)."""
    from scipy.optimize import nnls

    trips = sums.trips()
    if len(trips) < min_trips:
        return RouteNoise(1.0, 0.0, len(trips))
    m = np.asarray(mean, dtype=np.float64)
    x, target = np.zeros((len(trips), 2)), np.zeros(len(trips))
    for i, (e, w, y, r) in enumerate(trips):
        mu = float(w @ m[e])
        x[i] = (noise_scale * r, mu * mu)
        target[i] = (y - mu) ** 2 + _quad(cov_of, e, w)
    good = np.isfinite(x).all(axis=1) & np.isfinite(target)
    if good.sum() < min_trips or not np.any(x[good] > 0):
        return RouteNoise(1.0, 0.0, len(trips))
    norm = np.maximum(np.abs(x[good]).max(axis=0), 1e-300)  # columns of very different size (Wh^2 vs Wh^2 of mu^2)
    xs = x[good] / norm
    coef, _ = nnls(xs, target[good])
    res = target[good] - xs @ coef
    se = np.full(2, np.inf)
    gram = xs.T @ xs
    if good.sum() > 2 and np.linalg.cond(gram) < 1e12:
        inv = np.linalg.inv(gram)
        se = np.sqrt(np.maximum(np.diag(inv @ (xs.T * res**2) @ xs @ inv), 0.0)) / norm
    coef = coef / norm
    return RouteNoise(float(coef[0]), float(coef[1]), len(trips), float(se[0]), float(se[1]))


def fold_residuals(
    posterior_without: Callable[[np.ndarray], tuple[np.ndarray, Any]], sums: TripSums, folds: int = 10
) -> TripResiduals:
    """Each trip's sum predicted by a posterior that has not seen it: trip ``i`` in fold ``i mod K``, ``K =
    min(folds, T)`` (``folds >= T``: leave one trip out); ``posterior_without(idx)`` returns the posterior mean ``(E,)``
    and ``cov_of`` (as :func:`fit_trip_effect` takes it) learned from every trip of ``sums`` but those at ``idx``
    (indices into ``sums``' order).

    Why: a posterior that has seen a trip explains part of its trip effect through the trip's own edges (on edges no
    other trip drove, all of it), so in-sample residuals shrink towards zero and a noise fitted to them is too small
    for a trip not learned (the moment correction ``+ w^T Sigma w`` holds only when the posterior's noise is right);
    out-of-fold residuals are distributed as a new trip's error is (from slightly fewer trips: a little wider)."""
    trips = sums.trips()
    n = len(trips)
    if n == 0 or folds < 1:
        raise ParameterError("fold residuals need at least one trip and one fold")
    k = min(folds, n)
    d, s, r, mu = (np.zeros(n) for _ in range(4))
    fold_of = np.arange(n) % k
    for f in range(k):
        idx = np.flatnonzero(fold_of == f)
        mean, cov_of = posterior_without(idx)
        m = np.asarray(mean, dtype=np.float64)
        for i in idx:
            e, w, y, rr = trips[i]
            mu[i] = float(w @ m[e])
            d[i] = y - mu[i]
            s[i] = _quad(cov_of, e, w)
            r[i] = rr
    return TripResiduals(d, s, r, mu)


def cavity_residuals(
    mean: np.ndarray,
    cov_of: Any,
    readings: Sequence[Readings],
    noise_scale: float = 1.0,
    folds: int = 10,
    *,
    trip_effect: tuple[np.ndarray, float] | None = None,
) -> TripResiduals:
    """:func:`fold_residuals` without refitting: from the posterior of all trips (mean ``(E,)``, ``cov_of`` as
    :func:`fit_trip_effect` takes it) with each fold's readings taken out again -- exact for linear Gaussian readings,
    the same numbers as refitting without the fold, at the cost of the fold's edges and readings alone.

    ``readings``: per trip ``(edges (k,), A (m, k), y (m,), R (m, m))`` as learned (``y = A f[edges] + eps``, ``eps ~
    N(0, phi R)``, ``phi`` = ``noise_scale``); trip ``i`` in fold ``i mod K``, ``K = min(folds, T)``.  Over the fold's
    edges ``U`` (posterior mean ``m``, covariance ``S``) and its stacked readings: ``V = phi R - A S A^T`` (the
    covariance of their in-sample residuals), ``m_c = m + S A^T V^-1 (A m - y)``, ``S_c = S + S A^T V^-1 A S``
    (block leave-out of a Gaussian posterior; Sundararajan & Keerthi 2001 for one reading).  Each trip's ``w`` is
    its ``A``'s column sums, ``Y`` its readings' sum, ``r = 1^T R 1``, as :meth:`TripSums.add` keeps them.

    ``trip_effect`` ``(f_0 (E,) Wh, tau^2)``: the posterior was fitted with the trip effect in the readings' noise
    (:mod:`evroute.models.linear_obs_trip`): each trip's block of ``V`` gains ``tau^2 m_t m_t^T``, ``m_t = A_t
    f_0[edges]``, so the fold is taken out with the covariance it was learned with."""
    from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh

    n = len(readings)
    if n == 0 or folds < 1 or not noise_scale > 0:
        raise ParameterError("cavity residuals need at least one trip, one fold and a noise scale > 0")
    k = min(folds, n)
    d, s, r, mu = (np.zeros(n) for _ in range(4))
    m_all = np.asarray(mean, dtype=np.float64)
    fold_of = np.arange(n) % k
    for f in range(k):
        idx = np.flatnonzero(fold_of == f)
        fold = [readings[int(i)] for i in idx]  # each trip's readings taken once (a lazy sequence builds them here)
        u = np.unique(np.concatenate([np.asarray(rd[0], dtype=np.int64) for rd in fold]))
        sizes = [len(rd[2]) for rd in fold]
        a_f, r_f, y_f = np.zeros((sum(sizes), len(u))), np.zeros((sum(sizes), sum(sizes))), np.zeros(sum(sizes))
        o = 0
        for rd, size in zip(fold, sizes, strict=True):
            e, a, y, cov = rd
            a_f[o : o + size, np.searchsorted(u, e)] = a
            r_f[o : o + size, o : o + size] = cov
            y_f[o : o + size] = y
            o += size
        s_u, m_u = np.asarray(cov_of(u), dtype=np.float64), m_all[u]
        a_s = a_f @ s_u
        v = noise_scale * r_f - a_s @ a_f.T
        if trip_effect is not None and trip_effect[1] > 0:
            m0 = a_f @ np.asarray(trip_effect[0], dtype=np.float64)[u]  # (rows,) each trip's prior mean readings
            for o, size in zip(np.cumsum([0, *sizes[:-1]]), sizes, strict=True):
                v[o : o + size, o : o + size] += trip_effect[1] * np.outer(m0[o : o + size], m0[o : o + size])
        v = 0.5 * (v + v.T)
        try:
            g = cho_solve(cho_factor(v), a_s)  # V^-1 A S
        except LinAlgError:  # rounding made V indefinite: its pseudo-inverse on the positive part
            lam, q = eigh(v)
            keep = lam > lam.max() * 1e-12
            g = q[:, keep] @ ((q[:, keep].T @ a_s) / lam[keep, None])
        m_c = m_u + g.T @ (a_f @ m_u - y_f)
        s_c = s_u + a_s.T @ g
        for i, (e, a, y, cov) in zip(idx, fold, strict=True):
            cols, w = np.searchsorted(u, e), np.asarray(a).sum(axis=0)
            mu[i] = float(w @ m_c[cols])
            d[i] = float(np.sum(y)) - mu[i]
            s[i] = float(w @ s_c[np.ix_(cols, cols)] @ w)
            r[i] = float(np.sum(cov))
    return TripResiduals(d, s, r, mu)


#: folds of the out-of-fold trip residuals (:func:`fold_count`)
FOLDS = 10


def fold_count(n: int, folds: int = FOLDS) -> int:
    """The number of folds the out-of-fold residuals of ``n`` trips use: ``folds`` (trip ``i`` in fold ``i mod
    folds``; ``n <= folds``: leave one trip out) up to ``folds^2`` trips, beyond that ``ceil(n / folds)`` folds of at
    most ``folds`` trips each (a fold's stacked readings form one dense matrix: 100 trips' took > 10 GB)."""
    return max(folds, -(-n // folds))


class _TraceReadings(Sequence[Readings]):
    """The readings of ``sums``' traces ``idx``, each built when indexed (:meth:`TripSums.readings`)."""

    def __init__(self, sums: TripSums, idx: np.ndarray) -> None:
        self.sums, self.idx = sums, idx

    def __len__(self) -> int:
        return len(self.idx)

    def __getitem__(self, i: Any) -> Any:
        return self.sums.readings(int(self.idx[i]))


def out_of_fold_noise(
    mean: np.ndarray,
    cov_of: Any,
    sums: TripSums,
    noise_scale: float,
    *,
    folds: int = FOLDS,
    trip_effect: tuple[np.ndarray, float] | None = None,
    **prior: Any,
) -> PredictiveNoise | None:
    """The route intervals' predictive noise (what ``evroute learn`` stores and the known-truth study scores): the
    out-of-fold residuals of every trace of ``sums`` that kept its readings (:func:`cavity_residuals` in
    :func:`fold_count` folds, from the posterior of all readings: mean ``(E,)`` Wh, ``cov_of`` as
    :func:`fit_trip_effect` takes it, the readings' noise scale ``noise_scale``), then the posterior of ``(k,
    tau^2)`` (:func:`fit_predictive_noise`, with ``prior``'s keywords).  None when no trace kept its readings.

    ``trip_effect`` ``(f_0, tau^2)``: the trip effect was fitted with the readings (:mod:`evroute.models.
    linear_obs_trip`): the folds are taken out with the covariance they were learned with (:func:`cavity_residuals`),
    and ``(k, tau^2)`` of the intervals are fitted to those residuals as without it.  The readings' ``tau`` weighs the
    readings (the posterior); the intervals' is what held-out trips show: a normal ``tau`` matched by ML-II to heavy-
    tailed training trips (a few far off the edges' expectation) is wider than the typical new trip's spread (on the
    Luxembourg known-truth study the readings' ``tau`` gave 97 % coverage of 90 % intervals)."""
    idx = sums.with_readings()
    if not len(idx):
        return None
    res = cavity_residuals(
        mean, cov_of, _TraceReadings(sums, idx), noise_scale, fold_count(len(idx), folds), trip_effect=trip_effect
    )
    return fit_predictive_noise(res, noise_scale, **prior)


__all__ = [
    "FOLDS",
    "PredictiveNoise",
    "Readings",
    "fold_count",
    "out_of_fold_noise",
    "cavity_residuals",
    "RouteNoise",
    "TripEffect",
    "TripResiduals",
    "TripSums",
    "fit_predictive_noise",
    "fit_route_noise",
    "fit_trip_effect",
    "fold_residuals",
]
