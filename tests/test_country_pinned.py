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

from evroute.network import RoadNetwork
from evroute.network.country import COUNTRY_VERSION, synthetic_country
from evroute.network.polylines import as_polylines


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
