"""Trip ends (:func:`evroute.traces.observations.trace_readings`' ``drop_start`` / ``drop_end``): energy drawn at a
trip's start and end (standing with the auxiliaries on, a departure manoeuvre squeezed into metres of the first
matched edge) is not spread along the edge, so windows over a small share of the first / last edge divide it into a
many times too large edge energy; dropping those windows recovers the edges' energies exactly (closed form), where
keeping them does not."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.models.linear_obs import DiagonalKernel, LinearObsEdgeModel
from evroute.traces.mapmatch import MatchedTrace
from evroute.traces.observations import trace_readings
from evroute.traces.reader import Trace

CAP = 50_000.0  # usable capacity, Wh
LENGTH = np.array([120.0, 200.0, 152.0, 180.0, 92.0, 160.0])  # a line of edges 0 -> 1 -> ... -> 5 (m)
RATE = np.array([0.12, 0.2, 0.15, 0.1, 0.25, 0.18])  # dissipation, Wh/m: edge e's energy RATE * LENGTH
START_WH, END_WH = 12.0, 6.0  # drawn standing at the start and at the end of every trip (not per metre)


def line_trip(first: int, last: int, s0: float, s1: float, step_m: float = 4.0) -> tuple[Trace, MatchedTrace]:
    """A trip on the edges ``first..last`` from ``s0`` m into ``first`` to ``s1`` m into ``last``, sampled every
    ``step_m`` m, with 10 standing samples at each end drawing :data:`START_WH` / :data:`END_WH` and the edges'
    energy ``RATE`` per metre in between (battery energy in closed form; no mechanical energy: the readings are the
    dissipation)."""
    path = np.arange(first, last + 1)
    starts = np.concatenate([[0.0], np.cumsum(LENGTH[path])[:-1]])
    a, b = s0, starts[-1] + s1
    s = np.concatenate([np.full(10, a), np.arange(a, b, step_m), np.full(10, b)])
    k = np.minimum(np.searchsorted(starts, s, side="right") - 1, len(path) - 1)
    cum = np.concatenate([[0.0], np.cumsum(RATE[path] * LENGTH[path])])
    diss = cum[k] + RATE[path[k]] * (s - starts[k]) - (cum[0] + RATE[first] * a)
    stand = np.concatenate(
        [np.linspace(0, START_WH, 10), np.full(len(s) - 20, START_WH), START_WH + np.linspace(0, END_WH, 10)]
    )
    soc = 90.0 - (diss + stand) / CAP * 100.0
    n = len(s)
    trace = Trace(np.arange(n, dtype=float), np.full(n, 5.0), np.zeros(n), soc, np.zeros(n), np.zeros(n), name="t")
    return trace, MatchedTrace(path[k], s - starts[k], path, k, 1)


def _trips(rng: np.random.Generator, n: int) -> list[tuple[Trace, MatchedTrace]]:
    """``n`` random trips of at least three edges, starting in the last 2-15 % of their first edge and ending in the
    first 2-15 % of their last (a short share: the case that divides the end energies by a small number)."""
    out = []
    for _ in range(n):
        first = int(rng.integers(0, 4))
        last = int(rng.integers(first + 2, 6))
        # on the 4 m sampling grid, as the lengths: every junction is a sample (the readings then exact)
        s0 = 4.0 * np.round(LENGTH[first] * (1.0 - rng.uniform(0.02, 0.15)) / 4.0)
        s1 = 4.0 * np.round(LENGTH[last] * rng.uniform(0.02, 0.15) / 4.0)
        out.append(line_trip(first, last, s0, s1))
    return out


def _learn(trips: list[tuple[Trace, MatchedTrace]], drop: bool) -> np.ndarray:
    """``(6,)`` BI posterior means (a flat prior: variance 1e6 Wh^2 around 0) of the trips' readings."""
    model = LinearObsEdgeModel(np.zeros(6), DiagonalKernel(np.full(6, 1e6)), 1.0, 1e-4, "bi")
    for tr, m in trips:
        r = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_start=drop, drop_end=drop)
        assert r is not None
        model.observe(r.edges, r.a, r.y, r.noise_cov)
    return model.posterior().mean


def test_dropping_trip_ends_recovers_edge_energies() -> None:
    """With the trip ends dropped, every edge some trip drives whole (1-4) is learned at its true energy
    ``RATE * LENGTH`` (closed form; tolerance 1e-3 Wh: the flat prior's shrinkage, noise / prior variance ~ 1e-10,
    and the readings' float rounding at 1e-9 Wh; junctions fall on samples, so the windows' levels are exact);
    keeping them, the end energies divided by the end edges' small shares put edges 1-4 (each the first or last
    edge of some trips) off by more than 1 Wh: the test can fail."""
    trips = _trips(np.random.default_rng(0), 60)
    truth = RATE * LENGTH
    got = _learn(trips, drop=True)
    np.testing.assert_allclose(got[1:5], truth[1:5], atol=1e-3)
    kept = _learn(trips, drop=False)
    assert np.abs(kept[1:5] - truth[1:5]).max() > 1.0


def test_trip_end_windows_counted_and_flags_independent() -> None:
    """``trimmed`` counts the windows over the first / last path edge; each flag drops only its own end; without
    either the readings are the old ones (nothing trimmed); a trip on one or two edges has nothing left with both."""
    tr, m = line_trip(0, 3, 100.0, 20.0)
    full = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9)
    assert full is not None and full.trimmed == 0
    start = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_start=True)
    end = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_end=True)
    both = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_start=True, drop_end=True)
    assert start is not None and end is not None and both is not None
    assert 0 not in start.edges and 3 in start.edges and 3 not in end.edges and 0 in end.edges
    assert set(both.edges.tolist()) == {1, 2}
    assert start.trimmed + end.trimmed == both.trimmed == len(full.y) - len(both.y) > 0
    # the kept windows are the full trace's windows over edges 1-2 only, reading for reading
    inner = np.flatnonzero(full.a[:, np.isin(full.edges, [0, 3])].sum(axis=1) == 0)
    np.testing.assert_array_equal(both.y, full.y[inner])
    short, ms = line_trip(1, 2, 150.0, 100.0)
    assert trace_readings(short, ms, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_start=True, drop_end=True) is None


@pytest.mark.parametrize("drop", [False, True])
def test_windows_sum_to_the_kept_stretch(drop: bool) -> None:
    """The readings still telescope: they sum to the battery energy between the first and last kept boundary."""
    tr, m = line_trip(1, 4, 32.0, 48.0)  # junctions on the 4 m sampling grid
    r = trace_readings(tr, m, LENGTH, CAP, 1e-4, soc_step=1e-9, drop_start=drop, drop_end=drop)
    assert r is not None
    truth = r.a.sum(axis=0) @ (RATE * LENGTH)[r.edges]
    extra = 0.0 if drop else START_WH + END_WH
    assert r.y.sum() == pytest.approx(truth + extra, abs=1e-6)
