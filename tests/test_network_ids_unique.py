""":func:`evroute.network.road_network.all_unique` (the network's id check) against a set of the strings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.errors import DataError
from evroute.network.road_network import all_unique


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab-_0123456789éß", max_size=6), min_size=0, max_size=40))
def test_same_answer_as_a_set(words: list[str]) -> None:
    ids = np.asarray(words, dtype=str) if words else np.asarray([], dtype=str)
    assert all_unique(ids) == (len(set(ids.tolist())) == len(ids))


def test_a_hash_collision_falls_back_to_the_strings() -> None:
    # two different 2-character strings whose code points c0 * 1_000_003 + c1 agree: (1, 65) and (0, 65 + 1_000_003)
    pair = np.asarray(["\x01A", "\x00" + chr(65 + 1_000_003)])
    assert pair[0] != pair[1]
    assert all_unique(pair)  # the hashes collide; the strings decide
    assert not all_unique(np.asarray([f"e{i}" for i in range(1_000)] + ["e7"]))
    assert all_unique(np.asarray([f"e{i}" for i in range(1_000)]))
    # non-str arrays take the set path
    assert all_unique(np.asarray([1, 2, 3])) and not all_unique(np.asarray([1, 2, 1]))


def test_the_network_refuses_duplicate_ids() -> None:
    from netfixtures import grid_network

    net = grid_network(3, 3)
    ids = net.edge_ids.copy()
    ids[1] = ids[0]
    import dataclasses

    with pytest.raises(DataError, match="not unique"):
        dataclasses.replace(net, edge_ids=ids)
