"""What ``evroute learn`` keeps of each trace for its route intervals (:class:`evroute.models.trip_effect.TripSums`
with readings, :func:`evroute.models.trip_effect.out_of_fold_noise`): a trace learned in several blocks (a long CSV
log, :mod:`evroute.traces.stream`) is kept as one trip whose readings, taken out of the posterior, give exactly what
refitting without all its blocks gives; the compact storage round-trips; bad readings are refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evroute.errors import ParameterError
from evroute.experiments.trip_workers import _merge_sums
from evroute.models.linear_obs import BasisKernel, DiagonalKernel, LinearObsEdgeModel, reading_batch
from evroute.models.trip_effect import (
    TripSums,
    cavity_residuals,
    fit_predictive_noise,
    fold_count,
    fold_residuals,
    out_of_fold_noise,
)

N_EDGES, PHI = 50, 0.6


def _block(rng: np.random.Generator, f: np.ndarray, edges: np.ndarray) -> tuple:
    """One block of a trace: windows over consecutive runs of ``edges`` (partial shares at the runs' ends), a
    tridiagonal noise covariance as its band (consecutive windows share a boundary reading): the ``TripSum`` the
    workers produce, ``(edges, w, Y, r, (edges, A, y, band))``."""
    k = len(edges)
    m = k - 1
    a = np.zeros((m, k))
    for j in range(m):  # window j drives the end of edge j and the start of edge j + 1
        a[j, j], a[j, j + 1] = rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0)
    band = np.vstack([rng.uniform(1.0, 3.0, m), np.r_[rng.uniform(-0.4, 0.4, m - 1), 0.0]])
    y = a @ f[edges] + rng.standard_normal(m)
    r = float(band[0].sum() + 2.0 * band[1].sum())
    return edges, a.sum(axis=0), float(y.sum()), r, (edges, a, y, band)


def _world(with_basis: bool) -> tuple[Any, np.ndarray, list[list[tuple]]]:
    """A kernel, the prior mean and 12 traces of 1-3 blocks each (blocks of one trace may share edges)."""
    rng = np.random.default_rng(3)
    m0 = rng.uniform(20.0, 60.0, N_EDGES)
    kernel: Any = DiagonalKernel(np.full(N_EDGES, 25.0))
    if with_basis:
        basis = np.column_stack([rng.uniform(0.5, 2.0, N_EDGES), np.ones(N_EDGES)])
        kernel = BasisKernel(kernel, basis, np.array([4.0, 9.0]))
    f = m0 + 5.0 * rng.standard_normal(N_EDGES)
    traces = []
    for _ in range(12):
        path = rng.choice(N_EDGES, 9, replace=False)
        cuts = sorted(rng.choice(np.arange(3, 7), int(rng.integers(0, 3)), replace=False))
        pieces = np.split(path, cuts)
        traces.append([_block(rng, f, np.sort(p)) for p in pieces if len(p) >= 2])
    return kernel, m0, traces


def _posterior(kernel: Any, m0: np.ndarray, traces: list[list[tuple]]) -> Any:
    """The posterior of every block learned as its own batch (as ``learn_logs`` does), readings' noise scale PHI."""
    model = LinearObsEdgeModel(m0, kernel, 1.0, 1.0, "bi")
    model.noise_scale = PHI
    for blocks in traces:
        for e, _, _, _, (_, a, y, band) in blocks:
            model.observe_batch(reading_batch(e, a, y, band, banded=True))
    return model.posterior()


def _merged(traces: list[list[tuple]]) -> TripSums:
    sums = TripSums()
    for blocks in traces:
        total = None
        for b in blocks:
            total = _merge_sums(total, b)
        assert total is not None
        sums.add(*total)
    return sums


@pytest.mark.parametrize("with_basis", [False, True])
def test_a_trace_learned_in_blocks_is_taken_out_exactly(with_basis: bool) -> None:
    """Traces of several blocks merged as the workers merge them (edges united, readings stacked, the noise
    block-diagonal): the exact out-of-fold residuals from the posterior of all (:func:`cavity_residuals` on the kept
    readings, 4 folds and leave-one-out) equal refitting without each fold's blocks, to float rounding (1e-9 of the
    largest value), for independent edges and for shared offsets (every edge coupled)."""
    kernel, m0, traces = _world(with_basis)
    assert max(len(b) for b in traces) >= 2  # some traces do come in blocks
    sums = _merged(traces)
    full = _posterior(kernel, m0, traces)
    readings = [sums.readings(i) for i in range(len(sums))]

    def without(idx: np.ndarray) -> tuple[np.ndarray, Any]:
        p = _posterior(kernel, m0, [t for i, t in enumerate(traces) if i not in set(idx.tolist())])
        return p.mean, p.covariance_of

    for folds in (4, 12):
        refit = fold_residuals(without, sums, folds)
        cavity = cavity_residuals(full.mean, full.covariance_of, readings, PHI, folds)
        for name in ("d", "s", "r", "mu"):
            x, y = getattr(refit, name), getattr(cavity, name)
            assert np.max(np.abs(x - y)) <= 1e-9 * np.max(np.abs(x)), (name, folds)
    assert np.std(refit.d) > 1.0 and np.all(refit.s > 0)  # not a degenerate case
    pn = out_of_fold_noise(full.mean, full.covariance_of, sums, PHI)
    want = fit_predictive_noise(cavity_residuals(full.mean, full.covariance_of, readings, PHI, 10), PHI)
    assert pn is not None and np.array_equal(pn.weight, want.weight)  # out_of_fold_noise: 10 folds of 12 trips


def test_readings_survive_the_arrays_and_cost_what_the_doc_says() -> None:
    """:meth:`TripSums.arrays` / :meth:`from_arrays` keep each trace's readings bit for bit (a trace without readings
    stays without: it gives no out-of-fold residual); the bytes kept are ``24 m + 24 nnz(A)`` per trace."""
    _, _, traces = _world(False)
    sums = _merged(traces)
    sums.add(np.array([1, 2]), np.ones(2), 10.0, 2.0)  # a trace of a format-1 file: no readings
    back = TripSums.from_arrays(sums.arrays())
    assert len(back) == len(sums) and back.with_readings().tolist() == list(range(len(traces)))
    for i in back.with_readings():
        for x, y in zip(sums.readings(int(i)), back.readings(int(i)), strict=True):
            np.testing.assert_array_equal(x, y)
    m = sum(len(sums.readings(i)[2]) for i in range(len(traces)))
    nnz = sum(int(np.count_nonzero(sums.readings(i)[1])) for i in range(len(traces)))
    assert sums.readings_bytes() == 24 * m + 24 * nnz
    empty = TripSums()
    empty.add(np.array([1, 2]), np.ones(2), 10.0, 2.0)
    assert out_of_fold_noise(np.zeros(N_EDGES), None, empty, 1.0) is None  # nothing to take out: no mixture


def test_fold_count_keeps_folds_of_at_most_ten_trips() -> None:
    assert [fold_count(n) for n in (1, 10, 100, 101, 1000, 1005)] == [10, 10, 10, 11, 100, 101]
    assert all(-(-n // fold_count(n)) <= 10 for n in range(1, 2000))


def test_bad_readings_are_refused() -> None:
    sums = TripSums()
    e, a, y = np.array([3, 4]), np.ones((2, 2)), np.ones(2)
    with pytest.raises(ParameterError, match="tridiagonal"):
        e3 = np.array([3, 4, 5])
        sums.add(e3, np.full(3, 3.0), 3.0, 9.0, (e3, np.ones((3, 3)), np.ones(3), np.ones((3, 3))))
    with pytest.raises(ParameterError, match="do not fit"):
        sums.add(e, a.sum(axis=0), 2.0, 2.0, (np.array([3, 5]), a, y, np.eye(2)))
    with pytest.raises(ParameterError, match="NaN"):
        sums.add(e, a.sum(axis=0), 2.0, 2.0, (e, a, np.array([1.0, np.nan]), np.eye(2)))
    assert len(sums) == 0
    band = np.array([[2.0, 3.0], [0.5, 0.0]])  # two readings: the band, not the matrix [[2, 3], [0.5, 0]]
    sums.add(e, a.sum(axis=0), 2.0, 6.0, (e, a, y, band))
    np.testing.assert_array_equal(sums.readings(0)[3], [[2.0, 0.5], [0.5, 3.0]])
