"""Parsed networks in the compute cache (:mod:`evroute.network.netcache`): a network read back from its entry equals
the parsed one array for array (ids, attributes, polylines, turns, limits, meta), the second load does not parse,
and a change to the network code is a new key."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.network import netcache
from evroute.network.netcache import cached_network, network_from_tree, network_tree
from evroute.network.synthetic import synthetic_city


def _same(a, b) -> None:
    assert a.name == b.name and set(a.meta) == set(b.meta)
    np.testing.assert_equal(a.meta, b.meta)
    for k in ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    np.testing.assert_array_equal(a.speed_limit_mps, b.speed_limit_mps)
    assert len(a.geometry) == len(b.geometry)
    for ga, gb in zip(a.geometry, b.geometry, strict=True):
        np.testing.assert_array_equal(ga, gb)


def test_a_network_round_trips_through_its_tree() -> None:
    net = synthetic_city(150, seed=3)
    net.meta["note"] = "kept"
    net.with_speed_limits(net.speed_mps * 1.25)
    _same(network_from_tree(network_tree(net)), net)


def test_the_second_load_comes_from_the_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))
    calls = []

    def parse():
        calls.append(1)
        return synthetic_city(120, seed=1)

    first = cached_network({"x": 1}, parse, "demo network")
    again = cached_network({"x": 1}, parse, "demo network")
    assert len(calls) == 1
    _same(again, first)
    cached_network({"x": 2}, parse, "demo network")  # other inputs: parsed again
    assert len(calls) == 2
    netcache.network_code_digest.cache_clear()
    monkeypatch.setattr(netcache, "network_code_digest", lambda: "another code")
    cached_network({"x": 1}, parse, "demo network")  # the same inputs, other network code: parsed again
    assert len(calls) == 3


def test_a_corrupt_entry_is_rebuilt(tmp_path, monkeypatch) -> None:
    from evroute.network.computecache import compute_cache_dir

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))
    net = cached_network({"y": 1}, lambda: synthetic_city(100, seed=2), "demo network")
    (entry,) = [p for p in (compute_cache_dir() / "parsed-network").iterdir() if p.suffix == ".npz"]
    entry.write_bytes(entry.read_bytes()[:100])
    with pytest.warns(UserWarning, match="rebuilding"):
        again = cached_network({"y": 1}, lambda: synthetic_city(100, seed=2), "demo network")
    _same(again, net)
