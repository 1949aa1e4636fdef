"""Inclines and lengths describe the same stretch of road; bridges and tunnels are interpolated, not draped."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from evroute.energy import VehicleProfile, elevation_potential_wh, network_energy_wh, reduced_cost_wh
from evroute.network import Dem, load_osm, load_sumo_net
from evroute.network.elevation import interpolate_structures, is_structure

HILL_NET = """<?xml version="1.0" encoding="UTF-8"?>
<net version="1.20" junctionCornerDetail="5" limitTurnSpeed="5.50">
    <location netOffset="0.00,0.00" convBoundary="0.00,0.00,300.00,0.00" origBoundary="0.00,0.00,300.00,0.00"
              projParameter="!"/>
    <edge id="up" from="J0" to="J1" priority="2">
        <lane id="up_0" index="0" speed="13.89" length="80.00" shape="10.00,-1.60 90.00,-1.60"/>
    </edge>
    <edge id="down" from="J1" to="J0" priority="2">
        <lane id="down_0" index="0" speed="13.89" length="80.00" shape="90.00,1.60 10.00,1.60"/>
    </edge>
    <edge id="steep" from="J1" to="J2" priority="2">
        <lane id="steep_0" index="0" speed="13.89" length="0.10" shape="99.95,-1.60 100.05,-1.60"/>
    </edge>
    <edge id="back" from="J2" to="J1" priority="2">
        <lane id="back_0" index="0" speed="13.89" length="0.10" shape="100.05,1.60 99.95,1.60"/>
    </edge>
    <junction id="J0" type="dead_end" x="0.00" y="0.00" z="0.00" incLanes="down_0" intLanes="" shape=""/>
    <junction id="J1" type="priority" x="100.00" y="0.00" z="8.00" incLanes="up_0 back_0" intLanes="" shape=""/>
    <junction id="J2" type="dead_end" x="110.00" y="0.00" z="0.70" incLanes="steep_0" intLanes="" shape=""/>
    <connection from="up" to="steep" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="steep" to="back" fromLane="0" toLane="0" dir="t" state="M"/>
    <connection from="back" to="down" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="up" to="down" fromLane="0" toLane="0" dir="t" state="M"/>
</net>
"""


def test_hand_made_net_with_known_z(tmp_path: Path) -> None:
    """Junction z 0, 8 and 0.7 m; a 0.1 m lane between junction centres 10 m apart drops 7.3 m (netconvert-like)."""
    p = tmp_path / "hill.net.xml"
    p.write_text(HILL_NET)
    net = load_sumo_net(p)
    i = {e: net.index_of(e) for e in ("up", "down", "steep", "back")}
    # junction centre to junction centre: 10 + 80 + 10 m (plus the 1.6 m lateral offsets at both ends)
    h_up = 2 * np.hypot(10.0, 1.6) + 80.0
    h_steep = np.hypot(0.05, 1.6) + 0.1 + np.hypot(9.95, 1.6)
    assert net.length_m[i["up"]] == pytest.approx(np.hypot(h_up, 8.0))
    assert net.length_m[i["steep"]] == pytest.approx(np.hypot(h_steep, 7.3))
    assert net.incline[i["up"]] == pytest.approx(8.0 / np.hypot(h_up, 8.0))
    assert net.incline[i["steep"]] == pytest.approx(-7.3 / np.hypot(h_steep, 7.3))  # not -73 clipped to -1
    raw = (net.z_to_m - net.z_from_m) / net.length_m
    assert np.abs(raw).max() < 1.0  # no clipping needed
    # the potential telescopes (consecutive edges share their junction's z) and no reduced cost is negative
    t = net.turns
    np.testing.assert_array_equal(net.z_to_m[t[:, 0]], net.z_from_m[t[:, 1]])
    assert reduced_cost_wh(net).min() >= 0.0
    # a round trip up-steep-back-down gains no energy
    assert network_energy_wh(net)[[i["up"], i["steep"], i["back"], i["down"]]].sum() > 0


def test_reduced_cost_is_the_dissipative_energy() -> None:
    from netfixtures import grid_network

    net = grid_network(4, 4, seed=3)
    v = VehicleProfile()
    r = reduced_cost_wh(net, v)
    np.testing.assert_allclose(r, network_energy_wh(net, v) - elevation_potential_wh(net, v))
    assert r.min() >= 0.0


def test_inconsistent_input_warns_naming_the_edges() -> None:
    from evroute.network.road_network import RoadNetwork

    with pytest.warns(UserWarning, match=r"1 edge\(s\) rise more than their length.*cliff \(length 1.00 m"):
        RoadNetwork(
            name="bad",
            edge_ids=np.array(["cliff", "ok"]),
            from_node=np.array(["a", "b"]),
            to_node=np.array(["b", "a"]),
            length_m=np.array([1.0, 100.0]),
            speed_mps=np.array([10.0, 10.0]),
            z_from_m=np.array([0.0, 5.0]),
            z_to_m=np.array([5.0, 0.0]),
            geometry=[np.zeros((2, 2))] * 2,
            turns=np.array([[0, 1], [1, 0]]),
        )


def test_structure_tags() -> None:
    assert is_structure({"bridge": "yes"}) and is_structure({"tunnel": ["no", "yes"]}) and is_structure({"layer": "-1"})
    assert not is_structure({"bridge": "no", "layer": "0"}) and not is_structure({"highway": "primary"})


def test_interpolation_is_linear_along_a_chain() -> None:
    # junctions 0-1-2-3-4 on a line; edges 1-2 and 2-3 are a tunnel: junction 2 is inside, 1 and 3 are the portals
    fi, ti = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 4])
    z = np.array([0.0, 10.0, 500.0, 40.0, 50.0])  # the DEM's mountain top at junction 2
    out, n = interpolate_structures(fi, ti, z, np.array([100.0, 100.0, 300.0, 100.0]), np.array([0, 1, 1, 0], bool))
    assert n == 1
    np.testing.assert_allclose(out, [0.0, 10.0, 10.0 + 30.0 * 100 / 400, 40.0, 50.0])


TUNNEL_OSM = """<?xml version="1.0" encoding="UTF-8"?>
<osm version="0.6" generator="hand">
  <node id="1" lat="49.6000" lon="6.1000"/><node id="2" lat="49.6000" lon="6.1010"/>
  <node id="3" lat="49.6000" lon="6.1020"/><node id="4" lat="49.6000" lon="6.1030"/>
  <node id="5" lat="49.6000" lon="6.1040"/>
  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="residential"/></way>
  <way id="20"><nd ref="2"/><nd ref="3"/><tag k="highway" v="residential"/><tag k="tunnel" v="yes"/>
    <tag k="layer" v="-1"/><tag k="maxspeed" v="50"/></way>
  <way id="30"><nd ref="3"/><nd ref="4"/><tag k="highway" v="residential"/><tag k="tunnel" v="yes"/>
    <tag k="layer" v="-1"/><tag k="maxspeed" v="30"/></way>
  <way id="40"><nd ref="4"/><nd ref="5"/><tag k="highway" v="residential"/></way>
</osm>
"""


def test_osm_tunnel_is_interpolated_not_draped(tmp_path: Path) -> None:
    """GraphHopper-style input (OSM without ele + a DEM): a mountain over the tunnel's middle junction is ignored."""
    p = tmp_path / "tunnel.osm"
    p.write_text(TUNNEL_OSM)
    lon = np.linspace(6.0990, 6.1050, 61)
    lat = np.linspace(49.6010, 49.5990, 21)  # north-up rows
    lo, la = np.meshgrid(lon, lat)
    z = 100.0 + 2000.0 * (lo - 6.099) + 300.0 * np.exp(-(((lo - 6.102) / 0.0003) ** 2))  # ramp + a 300 m peak
    dem = Dem(z=z, transform=(lon[1] - lon[0], 0.0, lon[0], 0.0, lat[1] - lat[0], lat[0]), crs="EPSG:4326")
    net = load_osm(p, dem=dem)
    zf = dict(zip(net.edge_ids.tolist(), net.z_from_m.tolist(), strict=True))
    z2, z4 = dem.sample(6.1010, 49.6), dem.sample(6.1030, 49.6)
    assert zf["2-3-0"] == pytest.approx(z2) and zf["4-5-0"] == pytest.approx(z4)  # portals: the DEM
    assert zf["3-4-0"] == pytest.approx(0.5 * (z2 + z4), rel=1e-6)  # inside: interpolated, not ~400 m
    assert dem.sample(6.1020, 49.6) > 350
    assert sorted(net.meta["structures"]) == ["2-3-0", "3-2-0", "3-4-0", "4-3-0"]
    assert np.all(np.abs(net.z_to_m - net.z_from_m) <= net.length_m)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not os.environ.get("EVROUTE_DATA"), reason="needs EVROUTE_DATA with monaco.osm")
def test_monaco_needs_no_clipping_and_has_no_negative_reduced_cost() -> None:
    from evroute.network.registry import load_network

    net = load_network("monaco")
    dz = net.z_to_m - net.z_from_m
    assert np.all(np.abs(dz) <= net.length_m)
    assert reduced_cost_wh(net).min() >= 0.0
    t = net.turns
    np.testing.assert_array_equal(net.z_to_m[t[:, 0]], net.z_from_m[t[:, 1]])
