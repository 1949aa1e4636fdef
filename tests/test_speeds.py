"""Posted speeds, defaults by road class and context, free-flow speeds: evroute.network.speeds and both loaders."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from evroute.network import speeds as S

FIXTURE = Path(__file__).parent / "fixtures" / "speeds.osm.xml"
MPH = 1.609344

#: (from node, to node) -> posted km/h expected for every drivable direction of the fixture (see its header comment);
#: ways 101 and 111 are untagged (111: "signals") in a rural neighbourhood (4-5 junctions within 300 m < 8)
EXPECTED_KMH: dict[tuple[int, int], float] = {
    (1, 2): S.RURAL_SPEEDS_KMH["residential"],
    (2, 1): S.RURAL_SPEEDS_KMH["residential"],
    (2, 3): 30 * MPH,
    (3, 2): 30 * MPH,
    (3, 4): 50.0,
    (4, 3): 50.0,
    (4, 5): 30.0,
    (5, 4): 30.0,
    (5, 6): S.WALK_KMH,
    (6, 5): S.WALK_KMH,
    (6, 7): S.NO_LIMIT_KMH,
    (7, 8): 70.0,
    (8, 7): 40.0,
    (9, 8): 60.0,
    (9, 10): S.RURAL_SPEEDS_KMH["primary"],  # maxspeed:type FR:rural sets the context, not the speed
    (10, 9): S.RURAL_SPEEDS_KMH["primary"],
    (10, 11): S.RURAL_SPEEDS_KMH["living_street"],
    (11, 10): S.RURAL_SPEEDS_KMH["living_street"],
    (11, 12): S.RURAL_SPEEDS_KMH["tertiary"],
    (12, 11): S.RURAL_SPEEDS_KMH["tertiary"],
}
#: the class of each directed pair (for the free-flow factor)
CLASS = {
    1: "residential",
    2: "primary",
    3: "secondary",
    4: "tertiary",
    5: "unclassified",
    6: "motorway",
    7: "secondary",
    8: "primary",
    9: "primary",
    10: "living_street",
    11: "tertiary",
}


def _cls(a: int, b: int) -> str:
    return CLASS[min(a, b)]


@pytest.mark.parametrize(
    ("value", "kmh"),
    [
        ("50", 50.0),
        ("50 km/h", 50.0),
        ("30 mph", 30 * MPH),
        ("20mph", 20 * MPH),
        ("10 knots", 18.52),
        ("FR:urban", 50.0),
        ("FR:rural", 80.0),
        ("DE:rural", 100.0),
        ("LU:motorway", 130.0),
        ("DE:zone30", 30.0),
        ("DE:zone:20", 20.0),
        ("DE:living_street", S.WALK_KMH),
        ("FR:living_street", 20.0),
        ("XX:rural", 90.0),
        ("none", S.NO_LIMIT_KMH),
        ("walk", S.WALK_KMH),
        ("50;30", 40.0),
        ("signals", None),
        ("variable", None),
        ("fast", None),
        ("", None),
        (None, None),
        ("0", None),
    ],
)
def test_parse_maxspeed(value, kmh):
    got = S.parse_maxspeed(value)
    if kmh is None:
        assert got is None
    else:  # unit conversions are exact products: only float rounding
        assert got == pytest.approx(kmh, rel=1e-12)


def test_tag_context():
    assert S.tag_context({"maxspeed:type": "DE:urban"}) == "urban"
    assert S.tag_context({"source:maxspeed": "FR:rural"}) == "rural"
    assert S.tag_context({"zone:traffic": "DE:zone30"}) == "urban"
    assert S.tag_context({"maxspeed": "BE:motorway"}) == "rural"
    assert S.tag_context({"maxspeed": "50"}) is None and S.tag_context({}) is None


def test_resolve_way_speeds_fixture():
    ws = S.resolve_way_speeds(FIXTURE)
    assert ws["102"].forward_kmh == pytest.approx(30 * MPH) and ws["102"].source == "maxspeed"
    assert ws["103"].source == "zone" and ws["101"].source == "default"
    assert (ws["107"].forward_kmh, ws["107"].backward_kmh) == (70.0, 40.0)
    assert ws["108"].forward_kmh == ws["108"].backward_kmh == 60.0  # one-way against the node order
    assert ws["106"].forward_kmh == ws["106"].backward_kmh == S.NO_LIMIT_KMH  # one-way motorway
    assert ws["109"].context == "rural"  # from its maxspeed:type
    assert ws["101"].context == "rural" and ws["111"].context == "rural"  # 5 and 4 junctions within 300 m


def test_urban_ways_junction_density():
    """A 100 m street grid is urban (about 28 junctions within 300 m of its middle), a lone road is not."""
    deg = 100.0 / 111_320.0
    nodes: dict[str, tuple[float, float]] = {}
    ways: dict[str, tuple[list[str], dict[str, str]]] = {}
    n = 9
    for i in range(n):
        for j in range(n):
            nodes[f"{i}_{j}"] = (6.0 + j * deg / np.cos(np.radians(49.6)), 49.6 + i * deg * 111_320 / 110_540)
    for i in range(n):  # east-west and north-south streets
        ways[f"r{i}"] = ([f"{i}_{j}" for j in range(n)], {"highway": "residential"})
        ways[f"c{i}"] = ([f"{j}_{i}" for j in range(n)], {"highway": "residential"})
    nodes.update({"a": (7.0, 49.6), "b": (7.01, 49.6), "c": (7.02, 49.6)})
    ways["lone1"] = (["a", "b"], {"highway": "primary"})
    ways["lone2"] = (["b", "c"], {"highway": "primary"})
    urban = S.urban_ways(nodes, ways)
    assert {f"r{i}" for i in range(n)} | {f"c{i}" for i in range(n)} <= urban
    assert not {"lone1", "lone2"} & urban
    # the default of an untagged way follows: 50 in town, 90 on a rural primary road
    assert S.default_speed_kmh("primary", "urban") == 50.0 and S.default_speed_kmh("primary", "rural") == 90.0


def test_free_flow_factor():
    limit = np.array([50, 60, 70, 90, 130, 90, 90]) / 3.6
    cls = np.array(["residential", "primary", "primary", "secondary", "motorway", "trunk", ""], dtype=object)
    np.testing.assert_array_equal(
        S.free_flow_factor(limit, cls), [1, 1, S.RURAL_FREE_FLOW_FACTOR, S.RURAL_FREE_FLOW_FACTOR, 1, 1, 1]
    )
    assert S.road_class("highway.primary|railway.tram") == "primary" and S.road_class(["tertiary", "x"]) == "tertiary"
    assert S.road_class("railway.rail") == "" and S.road_class(None) == ""
    # Monaco's MoST file writes tunnels and bridges into the class: they keep the speeds of their class
    assert (
        S.road_class("motorway_tunnel") == "motorway" and S.base_class("steps_bridge") == "steps_bridge"
    )  # not a road class
    assert S.default_speed_kmh("primary_bridge", "rural") == S.RURAL_SPEEDS_KMH["primary"]


def test_write_resolved_osm(tmp_path):
    out = tmp_path / "resolved.osm"
    S.write_resolved_osm(FIXTURE, out)
    root = ET.parse(out).getroot()
    tags = {w.get("id"): {t.get("k"): t.get("v") for t in w.iter("tag")} for w in root.iter("way")}
    assert tags["102"]["maxspeed"] == "48.2803" and tags["105"]["maxspeed"] == "7"
    assert tags["107"]["maxspeed:forward"] == "70" and tags["107"]["maxspeed:backward"] == "40"
    assert "maxspeed" not in tags["107"] and tags["111"]["maxspeed"] == "80"
    assert "maxspeed:type" not in tags["109"] and tags["109"]["maxspeed"] == "90"  # netconvert would read FR:rural
    assert tags["109"]["highway"] == "primary"  # other tags kept
    assert len(list(root.iter("node"))) == 12


def _by_pair(net, node_of) -> dict[tuple[int, int], tuple[float, float]]:
    """(from junction, to junction) -> (limit km/h, free-flow km/h) of every edge of a network."""
    out = {}
    for f, t, lim, sp in zip(net.from_node, net.to_node, net.speed_limit_mps, net.speed_mps, strict=True):
        out[(node_of(f), node_of(t))] = (lim * 3.6, sp * 3.6)
    return out


def _check(pairs: dict[tuple[int, int], tuple[float, float]], tol_kmh: float) -> None:
    assert set(pairs) == set(EXPECTED_KMH)
    for (a, b), (lim, free) in pairs.items():
        want = EXPECTED_KMH[(a, b)]
        assert lim == pytest.approx(want, abs=tol_kmh), (a, b)
        factor = S.free_flow_factor(np.array([want / 3.6]), np.array([_cls(a, b)], dtype=object))[0]
        assert free == pytest.approx(want * factor, abs=tol_kmh), (a, b)


def test_osmnx_loader_speeds():
    from evroute.network.osm import load_osm

    net = load_osm(FIXTURE)
    _check(_by_pair(net, int), 1e-9)  # osmnx keeps the resolved floats


def test_netconvert_loader_speeds(tmp_path):
    """netconvert writes lane speeds in m/s with 2 decimals: 0.005 m/s = 0.018 km/h."""
    from evroute.network.netconvert import osm_to_sumo
    from evroute.network.sumo import load_sumo_net

    net = load_sumo_net(osm_to_sumo(FIXTURE, tmp_path / "speeds.net.xml", join_junctions=False))
    _check(_by_pair(net, int), 0.02)


def test_speed_limits_travel_with_the_network():
    """Posted limits survive subnetworks, smoothing and draping; dataclasses.replace resets them to the speeds."""
    import dataclasses

    from evroute.errors import DataError
    from evroute.network.inclines import smooth_elevations
    from evroute.network.osm import load_osm

    net = load_osm(FIXTURE)
    assert np.any(net.speed_limit_mps > net.speed_mps)  # the rural primary roads (factor 0.85)
    sub = net.subnetwork(np.array([0, 2]))
    np.testing.assert_array_equal(sub.speed_limit_mps, net.speed_limit_mps[[0, 2]])
    np.testing.assert_array_equal(smooth_elevations(net, 50.0).speed_limit_mps, net.speed_limit_mps)
    fresh = dataclasses.replace(net, speed_mps=net.speed_mps * 0.5)
    np.testing.assert_array_equal(fresh.speed_limit_mps, fresh.speed_mps)
    with pytest.raises(DataError, match="shape"):
        net.with_speed_limits(net.speed_limit_mps[:-1])
    with pytest.raises(DataError, match="finite and > 0"):
        net.with_speed_limits(np.zeros(net.n_edges))
