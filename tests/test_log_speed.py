"""The fast paths of learning from a long log (issue 35 item 4) give the results of the paths they replace."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.models.linear_obs import reading_batch


@pytest.mark.parametrize("m", [1, 2, 3, 40])
def test_banded_reading_batch_equals_the_dense_one(m: int) -> None:
    """A tridiagonal noise covariance given as its ``(2, m)`` band (what :func:`trace_readings` now makes) gives the
    batch of the ``(m, m)`` matrix bit for bit (the same banded or, for ``m <= 2``, dense Cholesky on the same
    numbers); ``Readings.noise_cov`` rebuilds the matrix and ``noise_sum`` is its sum up to summation order (rtol
    1e-12: ``2 m`` terms of one sign pattern, rounding ``~m eps``)."""
    from evroute.traces.observations import Readings

    rng = np.random.default_rng(m)
    v = rng.uniform(1.0, 3.0, m + 1)  # boundary variances: windows share boundaries, as in a trace
    band = np.zeros((2, m))
    band[0] = v[:-1] + v[1:] + rng.uniform(0.1, 0.5, m)
    band[1, : m - 1] = -v[1:-1] * (rng.uniform(size=m - 1) < 0.8)  # a few windows without a shared boundary
    a, y, e = rng.uniform(0, 1, (m, 5)), rng.uniform(10, 50, m), np.array([3, 9, 1, 7, 20])
    r = Readings(edges=e, a=a, y=y, noise_band=band, positions_m=np.arange(m + 1.0))
    dense = r.noise_cov
    assert np.array_equal(np.diag(dense), band[0]) and np.array_equal(np.diag(dense, -1), band[1, : m - 1])
    assert np.array_equal(dense, dense.T) and not np.triu(dense, 2).any()
    assert r.noise_sum() == pytest.approx(float(dense.sum()), rel=1e-12)
    want, got = reading_batch(e, a, y, dense), reading_batch(e, a, y, band, banded=True)
    for k in ("edges", "gram", "h"):
        assert np.array_equal(getattr(want, k), getattr(got, k)), k
    assert (want.readings, want.yry, want.logdet_r) == (got.readings, got.yry, got.logdet_r)
