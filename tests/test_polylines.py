"""Packed polylines (:class:`evroute.network.polylines.Polylines`) behave as the list of per-edge arrays they replace,
and a network carrying them equals one carrying the list (the synthetic city and its cache entry)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.network.polylines import Polylines, as_polylines
from evroute.network.synthetic import synthetic_city


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.integers(1, 5), min_size=1, max_size=30), seed=st.integers(0, 1000))
def test_polylines_equal_the_list_they_pack(counts, seed) -> None:
    rng = np.random.default_rng(seed)
    lines = [rng.normal(size=(k, 2)) for k in counts]
    packed = as_polylines(lines)
    assert len(packed) == len(lines) and as_polylines(packed) is packed
    for a, b in zip(packed, lines, strict=True):
        assert np.array_equal(a, b)
    for i in range(-len(lines), len(lines)):
        assert np.array_equal(packed[i], lines[i])
    assert all(np.array_equal(a, b) for a, b in zip(packed[1::2], lines[1::2], strict=True))
    assert np.array_equal(packed.first(), np.array([g[0] for g in lines]))
    assert np.array_equal(packed.last(), np.array([g[-1] for g in lines]))
    idx = rng.integers(0, len(lines), 7)
    assert all(np.array_equal(a, lines[i]) for a, i in zip(packed.take(idx), idx, strict=True))
    with pytest.raises(IndexError):
        packed[len(lines)]


def test_polylines_refuse_inconsistent_arrays() -> None:
    with pytest.raises(ValueError, match="shape"):
        Polylines(np.zeros((3, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="start at 0"):
        Polylines(np.zeros((3, 2)), np.array([0, 2]))
    with pytest.raises(ValueError, match="non-decreasing"):
        Polylines(np.zeros((3, 2)), np.array([0, 2, 1, 3]))


def test_network_geometry_is_packed_and_subnetworks_keep_it() -> None:
    net = synthetic_city(300, seed=1)
    assert isinstance(net.geometry, Polylines)
    keep = np.arange(0, net.n_edges, 3)
    sub = net.subnetwork(keep)
    assert isinstance(sub.geometry, Polylines)
    assert len(sub.geometry) == len(keep)
    assert all(np.array_equal(sub.geometry[j], net.geometry[int(i)]) for j, i in enumerate(keep))
    ids, x, y, _ = net.junction_positions()
    fi, _, ids2 = net.junction_codes()
    assert np.array_equal(ids, ids2)
    # a junction's position is the mean of the edge ends there: the start of an edge is at its junction
    assert np.allclose(np.c_[x[fi], y[fi]], as_polylines(net.geometry).first(), atol=1e-9)
