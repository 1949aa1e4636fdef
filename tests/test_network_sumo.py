"""Tests of the SUMO loader and the netconvert wrapper on hand-made files."""

from __future__ import annotations

import bz2
import gzip
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from evroute.errors import DataError
from evroute.network import load_sumo_net, netconvert_binary, netconvert_options, osm_to_sumo

FIXTURES = Path(__file__).parent / "fixtures"
TINY_NET = FIXTURES / "tiny.net.xml"
TINY_OSM = FIXTURES / "tiny.osm.xml"
UTM32 = "+proj=utm +zone=32 +ellps=WGS84 +datum=WGS84 +units=m +no_defs"


def _turn_ids(net):
    return {(net.edge_ids[a], net.edge_ids[b]) for a, b in net.turns.tolist()}


def test_tiny_net_edges_and_turns():
    net = load_sumo_net(TINY_NET)
    assert net.name == "tiny"
    assert net.edge_ids.tolist() == ["a", "-a", "b", "c", "-c"]  # no walk-only edge, no internal edge
    assert _turn_ids(net) == {("a", "b"), ("a", "c"), ("a", "-a"), ("-c", "-a"), ("-c", "b")}
    assert net.n_turns == 5  # the two lane connections a->b count once
    # junction centre -> lane-shape start -> lane-shape end -> junction centre, then the slope length with the rise
    horizontal = np.array([3.2 + 100 + 3.2, 1.6 + 100 + 1.6, 1.6 + 100 + 1.6, 1.6 + 100 + 1.6, 1.6 + 100 + 1.6])
    np.testing.assert_allclose(net.length_m, np.hypot(horizontal, [10.0, -10.0, -6.0, 20.0, -20.0]))
    np.testing.assert_allclose(net.speed_mps, [13.89, 13.89, 27.78, 8.33, 8.33])
    assert net.from_node.tolist() == ["J0", "J1", "J1", "J1", "J3"]
    assert net.to_node.tolist() == ["J1", "J0", "J2", "J3", "J1"]


def test_tiny_net_elevation_from_junctions():
    net = load_sumo_net(TINY_NET)
    np.testing.assert_allclose(net.z_from_m, [0.0, 10.0, 10.0, 10.0, 30.0])
    np.testing.assert_allclose(net.z_to_m, [10.0, 0.0, 4.0, 30.0, 10.0])
    np.testing.assert_allclose(net.incline, np.array([10.0, -10.0, -6.0, 20.0, -20.0]) / net.length_m)
    assert net.meta["elevation"] == "junction z"


def test_shape_z_used_when_junctions_are_flat(tmp_path):
    text = re.sub(r'(<junction [^>]*?) z="[^"]*"', r"\1", TINY_NET.read_text())
    p = tmp_path / "flatj.net.xml"
    p.write_text(text)
    net = load_sumo_net(p)
    assert net.meta["elevation"] == "lane shape z (mean per junction)"
    # one z per junction (mean of the shape ends touching it: J1 has 9, 9, 9, 11, 11), shared by consecutive edges
    np.testing.assert_allclose(net.z_from_m, [1.0, 9.8, 9.8, 9.8, 29.0])
    np.testing.assert_allclose(net.z_to_m, [9.8, 1.0, 5.0, 29.0, 9.8])


def test_geometry_without_projection_is_metres():
    net = load_sumo_net(TINY_NET)
    assert net.meta["crs"] == "local-metres"
    g = net.geometry[0]
    np.testing.assert_allclose(g[0], [0.0, 0.0])
    np.testing.assert_allclose(g[-1], [100.0, 0.0])
    np.testing.assert_allclose(g[1:-1, 1], -3.2)  # mean of the two lane shapes


def test_geometry_with_projection_is_lonlat(tmp_path):
    from pyproj import Proj

    off = (-300000.0, -5500000.0)
    text = TINY_NET.read_text().replace('netOffset="0.00,0.00"', f'netOffset="{off[0]:.2f},{off[1]:.2f}"')
    text = text.replace('projParameter="!"', f'projParameter="{UTM32}"')
    p = tmp_path / "geo.net.xml"
    p.write_text(text)
    net = load_sumo_net(p)
    assert net.meta["crs"] == "EPSG:4326"
    lon, lat = Proj(UTM32)(100.0 - off[0], 100.0 - off[1], inverse=True)
    c = net.index_of("c")
    np.testing.assert_allclose(net.geometry[c][-1], [lon, lat], atol=1e-9)
    assert 5.0 < lon < 10.0 and 49.0 < lat < 50.5


def test_gzipped_net(tmp_path):
    p = tmp_path / "tiny.net.xml.gz"
    with gzip.open(p, "wb") as f:
        f.write(TINY_NET.read_bytes())
    net = load_sumo_net(p)
    assert net.name == "tiny" and net.n_edges == 5 and net.n_turns == 5


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_sumo_net(tmp_path / "nope.net.xml")
    bad = tmp_path / "bad.net.xml"
    bad.write_text(TINY_NET.read_text()[:1500])
    with pytest.raises(DataError, match="malformed") as exc:
        load_sumo_net(bad)
    assert "\n" not in str(exc.value)
    nopass = tmp_path / "walk.net.xml"
    nopass.write_text(re.sub(r'(<lane id="(?:a|-a|b|c|-c)_\d")', r'\1 allow="pedestrian"', TINY_NET.read_text()))
    with pytest.raises(DataError, match="no edges that allow 'passenger'"):
        load_sumo_net(nopass)


# ----------------------------------------------------------------------------------------- netconvert
@pytest.fixture(scope="module")
def tiny_converted(tmp_path_factory) -> Path:
    return osm_to_sumo(TINY_OSM, tmp_path_factory.mktemp("nc") / "tiny.net.xml")


def test_netconvert_binary_found():
    exe = netconvert_binary()
    assert exe.is_file() and exe.name.startswith("netconvert")


def test_netconvert_options():
    opts = netconvert_options()
    for flag in ("--keep-edges.by-vclass", "--junctions.join", "--geometry.remove", "--osm.elevation"):
        assert flag in opts
    assert opts[opts.index("--osm.elevation") + 1] == "true"
    off = netconvert_options(elevation=False, join_junctions=False, extra_args=("--no-turnarounds", "true"))
    assert off[off.index("--osm.elevation") + 1] == "false" and "--junctions.join" not in off
    assert off[-2:] == ["--no-turnarounds", "true"]


def test_osm_to_sumo_tiny(tiny_converted):
    net = load_sumo_net(tiny_converted)
    # way 10 (A-B-C) split at B, way 20 one-way D->B->E, way 30 two-way, the footway dropped
    assert set(net.edge_ids.tolist()) == {"10#0", "10#1", "-10#0", "-10#1", "20#0", "20#1", "30", "-30"}
    z = dict(zip(net.edge_ids.tolist(), zip(net.z_from_m.tolist(), net.z_to_m.tolist(), strict=True), strict=True))
    assert z["10#0"] == pytest.approx((100.0, 110.5))
    assert z["10#1"] == pytest.approx((110.5, 120.0))  # "120 m" parsed by netconvert
    assert z["20#0"] == pytest.approx((130.0, 110.5))
    assert z["30"] == pytest.approx((120.0, 90.0))
    speeds = dict(zip(net.edge_ids.tolist(), np.round(net.speed_limit_mps * 3.6).tolist(), strict=True))
    assert speeds["10#0"] == 50 and speeds["20#1"] == 70 and speeds["30"] == 50  # 30: untagged unclassified
    free = dict(zip(net.edge_ids.tolist(), (net.speed_mps * 3.6).tolist(), strict=True))
    assert free["20#1"] == pytest.approx(70 * 0.85, abs=0.05) and free["10#0"] == pytest.approx(50, abs=0.05)
    turns = _turn_ids(net)
    assert {("20#0", "20#1"), ("10#0", "10#1"), ("10#1", "30"), ("-30", "-10#1"), ("20#0", "-10#0")} <= turns
    assert ("20#1", "20#0") not in turns  # one-way street
    assert net.meta["crs"] == "EPSG:4326"
    lon, lat = net.geometry[net.index_of("10#0")][0]
    assert lon == pytest.approx(6.1000, abs=2e-4) and lat == pytest.approx(49.6000, abs=2e-4)


def test_osm_to_sumo_bz2_and_gz_output(tmp_path, tiny_converted):
    src = tmp_path / "tiny.osm.bz2"
    src.write_bytes(bz2.compress(TINY_OSM.read_bytes()))
    out = osm_to_sumo(src, tmp_path / "out" / "tiny.net.xml.gz", elevation=False)
    assert out.is_file() and out.read_bytes()[:2] == b"\x1f\x8b"
    net = load_sumo_net(out)
    ref = load_sumo_net(tiny_converted)
    assert sorted(net.edge_ids.tolist()) == sorted(ref.edge_ids.tolist())
    assert np.all(net.z_from_m == 0)  # elevation=False
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["tiny.net.xml.gz"]  # no temp files left


def test_osm_to_sumo_failures(tmp_path):
    with pytest.raises(DataError, match="OSM file not found"):
        osm_to_sumo(tmp_path / "missing.osm", tmp_path / "x.net.xml")
    bad = tmp_path / "bad.osm"
    bad.write_text("<osm><node id='1' lat='x'")
    out_dir = tmp_path / "o"
    with pytest.raises(DataError, match=r"netconvert failed on .*bad\.osm: Error:") as exc:
        osm_to_sumo(bad, out_dir / "bad.net.xml")
    assert "\n" not in str(exc.value)
    assert list(out_dir.iterdir()) == []  # nothing half-written
    existing = tmp_path / "keep.net.xml"
    shutil.copy(TINY_NET, existing)
    with pytest.raises(DataError):
        osm_to_sumo(bad, existing)
    assert existing.read_text() == TINY_NET.read_text()  # an old output survives a failed conversion


def test_netconvert_missing(monkeypatch):
    import evroute.network.netconvert as nc

    monkeypatch.setattr(nc, "sumo_wheel_home", lambda: None)
    monkeypatch.delenv("SUMO_HOME", raising=False)
    monkeypatch.setattr(nc.shutil, "which", lambda name: None)
    with pytest.raises(DataError, match="netconvert not found"):
        nc.netconvert_binary()


def test_conversion_leaves_process_proj_settings_alone(tmp_path):
    before = {k: os.environ.get(k) for k in ("PROJ_DATA", "PROJ_LIB", "SUMO_HOME")}
    osm_to_sumo(TINY_OSM, tmp_path / "t.net.xml")
    load_sumo_net(tmp_path / "t.net.xml")
    assert {k: os.environ.get(k) for k in before} == before
    from pyproj import CRS

    assert CRS.from_epsg(32632).is_projected  # PROJ still usable in this process
