"""The synthetic country is pinned bit for bit (issue 39's cold set-up work vectorises its generator: the same
parameters must keep giving the identical network, or :data:`evroute.network.country.COUNTRY_VERSION` is bumped).

The digests below were computed at ``d5ee1c3`` (before the generator was optimised) by :func:`country_digest`: every
array of the network (ids, junctions, lengths, speeds, elevations, turns, the geometry's points and counts) and every
``meta`` entry, with its dtype and shape, so a change of any value, order or type changes the digest."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.network import RoadNetwork
from evroute.network._graph import junction_turns, largest_scc_edges, node_codes
from evroute.network.country import COUNTRY_VERSION, synthetic_country
from evroute.network.country_towns import largest_parts, town_grid
from evroute.network.polylines import as_polylines
from evroute.network.synthetic import decimal_order, prefixed_ids


def _update(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    else:
        h.update(repr(value).encode())


def country_digest(net: RoadNetwork) -> str:
    """SHA-256 over every array of ``net`` and every ``meta`` entry (in key order), dtypes and shapes included."""
    h = hashlib.sha256()
    h.update(net.name.encode())
    for f in ("edge_ids", "from_node", "to_node", "length_m", "speed_mps", "z_from_m", "z_to_m", "turns"):
        _update(h, getattr(net, f))
    lines = as_polylines(net.geometry)
    _update(h, np.asarray(lines.xy))
    _update(h, np.asarray(lines.counts))
    for k in sorted(net.meta):
        h.update(k.encode())
        _update(h, net.meta[k])
    return h.hexdigest()


PINNED: dict[tuple[int, int, str], str] = {
    (2000, 0, "{}"): "58f2dd99216b6c6630c369cf4d66402c4b8cf84022576930aff2fd962e434734",
    (4000, 2, "{}"): "d2b7de740ca166483664aa440a00a243f509880761af380a3e66c7e302fe913c",
    (20000, 1, "{}"): "75ed54207fdfd39e58cd06de298e7899108c13e00c0f737148c32b551b2645fd",
    (30000, 5, "{'max_elevation_m': 0.0}"): "59fba4517eec46e6ba10317626eb1363eb63818eac82ca730fd36d5a4044ceaa",
    (12000, 3, "{'origin_lonlat': (-3.0, 40.0), 'max_incline': 0.1}"): (
        "06e939039c770ce14e021bcc6ed61f8b796d52987e6200701d7e235329476310"
    ),
}
#: ``synthetic-country:1000000:0`` (1,015,190 edges; too slow for the suite: checked by hand with
#: ``python -c "from tests.test_country_pinned import *; print(country_digest(synthetic_country(1_000_000, 0)))"``)
DIGEST_1M = "422ad1a203219ed29e5dc8acd91d882bff8572aeeff1dd1e9420bd79071c13b1"


@pytest.mark.parametrize("n,seed,options", sorted(PINNED))
def test_country_is_bit_for_bit_the_pinned_one(n, seed, options):
    assert COUNTRY_VERSION == 1  # a bump re-pins these digests, with its reason in the commit
    kwargs = eval(options)  # noqa: S307 - the test's own literals
    assert country_digest(synthetic_country(n, seed, **kwargs)) == PINNED[(n, seed, options)]


def test_junction_codes_set_by_the_generator_are_node_codes():
    net = synthetic_country(20_000, 1)
    fi, ti, ids = net.junction_codes()
    (a, b), u = node_codes(net.from_node, net.to_node)
    assert ids.dtype == u.dtype and fi.dtype == a.dtype == np.int64
    assert np.array_equal(fi, a) and np.array_equal(ti, b) and np.array_equal(ids, u)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10**17), max_size=60), st.sampled_from(["n", "e", "", "ab"]))
def test_prefixed_ids_and_decimal_order_are_numpys_strings(values, prefix):
    v = np.array(values, dtype=np.int64)
    want = np.char.add(prefix, v.astype(str))
    got = prefixed_ids(prefix, v)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    u = np.unique(v)
    assert np.array_equal(u[decimal_order(u)].astype(str), np.sort(u.astype(str)))


def test_largest_parts_at_once_are_each_towns_own():
    grids = [town_grid(k, size, 7) for k, size in enumerate([60.0, 90.0, 300.0, 1500.0, 61.0, 75.0] * 4)]
    # a town of two equal parts (two dead-end pairs): the tie goes to the town's own pass, as build_grid
    grids.append({"frm": np.array([0, 1, 2, 3]), "to": np.array([1, 0, 3, 2]), "n_nodes": 4})
    kept = largest_parts(grids)
    for g, k in zip(grids, kept, strict=True):
        own = largest_scc_edges(len(g["frm"]), junction_turns(g["frm"], g["to"], n_nodes=g["n_nodes"]))
        assert k.dtype == own.dtype and np.array_equal(k, own)
    assert len(kept[-1]) == 2


@pytest.mark.parametrize("seed,n_nodes", [(3, 40), (4, 40), (5, 6), (6, 150), (7, 2)])
def test_junction_turns_against_brute_force(seed, n_nodes):
    """The turns (sorted without a sort, dead ends found without sorting pairs) are the docstring's, by brute force
    over every pair of edges (self-loops and parallel edges included)."""
    rng = np.random.default_rng(seed)
    frm, to = rng.integers(0, n_nodes, 300), rng.integers(0, n_nodes, 300)
    turns = junction_turns(frm, to, n_nodes=n_nodes)
    assert np.array_equal(turns, turns[np.lexsort((turns[:, 1], turns[:, 0]))])
    brute = sorted(
        (i, j)
        for i in range(300)
        for j in range(300)
        if to[i] == frm[j] and (to[j] != frm[i] or len({*to[frm == to[i]], *frm[to == to[i]]} - {to[i]}) <= 1)
    )
    assert turns.tolist() == [list(t) for t in brute]


def test_cold_and_warm_loads_are_the_generated_network(monkeypatch, tmp_path):
    """A cold load returns the network it generated (not a copy read back), the warm load the entry: both are the
    generated network bit for bit, ``meta`` and junction codes included."""
    from evroute.network.registry import load_network

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path))
    cold = load_network("synthetic-country:3000:4")
    assert any(tmp_path.rglob("*")), "the cold load wrote a cache entry"
    warm = load_network("synthetic-country:3000:4")
    assert warm is not cold
    fresh = synthetic_country(3000, 4)
    assert country_digest(cold) == country_digest(warm) == country_digest(fresh)
    for a, b in zip(cold.junction_codes(), warm.junction_codes(), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
