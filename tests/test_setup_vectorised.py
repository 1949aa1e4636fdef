"""Vectorised set-up steps give the numbers of the per-edge code they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.experiments.runner import load_linegraph
from evroute.routes import corner_route, edge_midpoints


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=60), st.integers(0, 2**32 - 1))
def test_edge_midpoints_equal_per_edge_means(counts: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    geometry = [rng.normal([6.1, 49.6], 0.05, size=(k, 2)) for k in counts]
    expected = np.array([g.mean(axis=0) for g in geometry])
    np.testing.assert_array_equal(edge_midpoints(geometry), expected)  # bit for bit, counts above 8 included


def test_corner_routes_are_the_per_edge_ones() -> None:
    lg = load_linegraph("synthetic:2000:0")
    mid = np.array([g.mean(axis=0) for g in lg.network.geometry])
    lo, hi = mid.min(axis=0), mid.max(axis=0)
    rel = (mid - lo) / np.where(hi > lo, hi - lo, 1.0)
    for name, (a, b) in {"A": ((0.0, 0.0), (1.0, 1.0)), "B": ((0.0, 1.0), (1.0, 0.0))}.items():
        expected = int(np.argmin(((rel - a) ** 2).sum(axis=1))), int(np.argmin(((rel - b) ** 2).sum(axis=1)))
        assert corner_route(lg, name) == expected
