"""Inclines that describe roads: bridges/tunnels on every loader path, smoothing along the roads, steep-edge report."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from evroute.network.inclines import (
    grade,
    horizontal_length_m,
    smooth_elevations,
    smooth_junction_elevations,
    steep_edges,
    warn_steep,
)
from evroute.network.registry import load_network
from evroute.network.road_network import RoadNetwork

LON0, STEP, LAT = 6.100, 0.001, 49.6
# junction k (1..8) at lon LON0 + (k - 1) * STEP: road 1-2, tunnel 2-3-4 (two ways, an inside junction 3),
# road 4-5, bridge 5-6-7 (two ways, inside junction 6), road 7-8.  The approach roads share their speed with the
# structure next to them, so only the bridge/tunnel tags tell them apart.
STRUCTURES_OSM = """<?xml version="1.0" encoding="UTF-8"?>
<osm version="0.6" generator="hand">
{nodes}
  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="residential"/><tag k="maxspeed" v="50"/></way>
  <way id="20"><nd ref="2"/><nd ref="3"/><tag k="highway" v="residential"/><tag k="tunnel" v="yes"/>
    <tag k="layer" v="-1"/><tag k="maxspeed" v="50"/></way>
  <way id="30"><nd ref="3"/><nd ref="4"/><tag k="highway" v="residential"/><tag k="tunnel" v="yes"/>
    <tag k="layer" v="-1"/><tag k="maxspeed" v="30"/></way>
  <way id="40"><nd ref="4"/><nd ref="5"/><tag k="highway" v="residential"/><tag k="maxspeed" v="30"/></way>
  <way id="50"><nd ref="5"/><nd ref="6"/><tag k="highway" v="residential"/><tag k="bridge" v="yes"/>
    <tag k="layer" v="1"/><tag k="maxspeed" v="30"/></way>
  <way id="60"><nd ref="6"/><nd ref="7"/><tag k="highway" v="residential"/><tag k="bridge" v="yes"/>
    <tag k="layer" v="1"/><tag k="maxspeed" v="50"/></way>
  <way id="70"><nd ref="7"/><nd ref="8"/><tag k="highway" v="residential"/><tag k="maxspeed" v="50"/></way>
</osm>
""".format(nodes="\n".join(f'  <node id="{k}" lat="{LAT}" lon="{LON0 + (k - 1) * STEP:.4f}"/>' for k in range(1, 9)))
HILL_M, VALLEY_M, RAMP_M_PER_DEG = 300.0, 60.0, 3000.0


def _terrain(lon: np.ndarray) -> np.ndarray:
    """A 4 % ramp, a 300 m hill over junction 3 (the tunnel) and a 60 m deep valley under junction 6 (the bridge)."""
    return (
        100.0
        + RAMP_M_PER_DEG * (lon - 6.099)
        + HILL_M * np.exp(-(((lon - 6.102) / 0.0003) ** 2))
        - VALLEY_M * np.exp(-(((lon - 6.105) / 0.0003) ** 2))
    )


@pytest.fixture
def structures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The OSM file (no ``ele`` tags) and a GeoTIFF DEM of :func:`_terrain`, written with rasterio."""
    import rasterio
    from rasterio.transform import Affine

    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))
    osm = tmp_path / "structures.osm"
    osm.write_text(STRUCTURES_OSM)
    res = 0.0001
    lon = 6.0990 + res * (np.arange(101) + 0.5)  # pixel centres
    z = np.tile(_terrain(lon), (21, 1))
    tif = tmp_path / "dem.tif"
    with rasterio.open(
        tif,
        "w",
        driver="GTiff",
        height=21,
        width=101,
        count=1,
        dtype="float64",
        crs="EPSG:4326",
        transform=Affine(res, 0.0, 6.0990, 0.0, -res, 49.6010),
    ) as dst:
        dst.write(z, 1)
    return osm, tif


def _junction_z(net: RoadNetwork, lon: float) -> float:
    ids, x, y, z = net.junction_positions()
    i = int(np.argmin(np.hypot(x - lon, y - LAT)))
    assert abs(x[i] - lon) < 1e-4, f"no junction at lon {lon}"  # the portal is a junction of its own
    return float(z[i])


def _eastbound(net: RoadNetwork, lo: float, hi: float) -> np.ndarray:
    """Indices of the eastbound edges between lon ``lo`` and ``hi``."""
    a = np.array([g[0, 0] for g in net.geometry])
    b = np.array([g[-1, 0] for g in net.geometry])
    return np.flatnonzero((a > lo - 1e-4) & (b < hi + 1e-4) & (b > a))


@pytest.mark.parametrize("loader", ["netconvert", "osmnx"])
@pytest.mark.parametrize("smooth_m", [0.0, 50.0])
def test_tunnel_and_bridge_span_portal_to_portal(structures, loader: str, smooth_m: float) -> None:
    osm, tif = structures
    net = load_network(str(osm), dem=str(tif), loader=loader, smooth_m=smooth_m)
    h = horizontal_length_m(net)
    g = grade(net)
    for (lo, hi), depth in (((0.101, 0.103), HILL_M), ((0.104, 0.106), -VALLEY_M)):
        lo, hi = 6.0 + lo, 6.0 + hi
        idx = _eastbound(net, lo, hi)
        assert len(idx) >= 1 and set(net.edge_ids[idx]) <= set(net.meta["structures"])
        portal_grade = (_junction_z(net, hi) - _junction_z(net, lo)) / h[idx].sum()
        np.testing.assert_allclose(g[idx], portal_grade, atol=1e-7)  # linear from portal to portal
        # the terrain between the portals differs from that line by the whole hill / valley
        mid = 0.5 * (lo + hi)
        assert abs(_terrain(np.array(mid)) - 0.5 * (_junction_z(net, lo) + _junction_z(net, hi))) > 0.9 * abs(depth)
    assert np.abs(g).max() < 0.06  # a ~4 % ramp everywhere; draped, the tunnel would climb 300 m in 72 m
    if smooth_m == 0:  # raw: the portals are the DEM's values, so the tunnel has the ramp's grade
        assert _junction_z(net, 6.101) == pytest.approx(float(_terrain(np.array(6.101))), abs=0.05)


def test_netconvert_keeps_structures_apart_from_their_approach_roads(structures) -> None:
    """``--geometry.remove`` alone merged way 10 into tunnel way 20 (same speed): the portal junction vanished."""
    osm, _ = structures
    with pytest.warns(UserWarning, match="flat"):
        net = load_network(str(osm), loader="netconvert")  # flat: nothing to smooth
    ids = set(net.edge_ids.tolist())
    assert {"10", "20", "30", "40", "50", "60", "70"} <= ids
    assert sorted(net.meta["structures"]) == ["-20", "-30", "-50", "-60", "20", "30", "50", "60"]


def test_one_road_piece_closed_form() -> None:
    """Two junctions, rise H over h: the minimiser keeps the mean and shrinks the rise to H / (1 + 4 ell^2 / h^2)."""
    h, rise, ell = 30.0, 12.0, 50.0
    z = smooth_junction_elevations(
        np.array([0, 1]), np.array([1, 0]), np.array([5.0, 5.0 + rise]), np.array([h, h]), ell
    )
    assert z.mean() == pytest.approx(5.0 + rise / 2)
    assert z[1] - z[0] == pytest.approx(rise / (1 + 4 * ell**2 / h**2))


def test_step_is_smoothed_by_the_exponential_window() -> None:
    """A 20 m step on a long road becomes ``H/2 (1 + sign(s) (1 - exp(-|s| / ell)))`` whatever the edge lengths.

    The discrete problem is the finite-difference form of ``z - ell^2 z'' = z0`` (each junction standing for the
    half edges around it); with spacing <= 2 m and ell = 50 m its error is O((h / ell)^2) of the step, below 2 cm.
    """
    rng = np.random.default_rng(0)
    h = rng.uniform(0.5, 2.0, 4000)  # uneven edge lengths, 5.0 km of road
    s = np.concatenate([[0.0], np.cumsum(h)])
    m = len(s) // 2
    s -= 0.5 * (s[m] + s[m + 1])  # the step lies mid-way between two junctions (where their stretches meet)
    z0 = np.where(s > 0, 20.0, 0.0)
    n = len(s)
    fi, ti = np.arange(n - 1), np.arange(1, n)
    ell = 50.0
    z = smooth_junction_elevations(np.concatenate([fi, ti]), np.concatenate([ti, fi]), z0, np.tile(h, 2), ell)
    exact = 10.0 * (1 + np.sign(s) * (1 - np.exp(-np.abs(s) / ell)))
    centre = np.abs(s) < 1000  # away from the dead ends 2.5 km away
    np.testing.assert_allclose(z[centre], exact[centre], atol=0.02)
    assert np.max(np.abs(np.diff(z)) / h) == pytest.approx(20.0 / (2 * ell), rel=0.02)  # steepest: H / (2 ell)


def test_noise_left_after_smoothing_matches_the_window() -> None:
    """White elevation noise of s.d. 5 m on junctions 5 m apart (raw grade s.d. 141 %) leaves a grade s.d. of
    ``sigma sqrt(h / (4 ell^3))`` = 1.58 % with ell = 50 m (the module docstring's formula).

    20,000 junctions, grades correlated over ~ell / h = 10 edges: ~1,000 independent ones, so the s.d. estimate
    has a relative standard error of ~2 % and the finite-difference bias at h / ell = 0.1 is below 1 %: 6 %
    tolerance is three standard errors.
    """
    rng = np.random.default_rng(0)
    n, h, sigma, ell = 20_000, 5.0, 5.0, 50.0
    z0 = rng.normal(0.0, sigma, n)
    z = smooth_junction_elevations(np.arange(n - 1), np.arange(1, n), z0, np.full(n - 1, h), ell)
    g = np.diff(z)[1000:-1000] / h  # away from the dead ends
    assert g.std() == pytest.approx(sigma * np.sqrt(h / (4 * ell**3)), rel=0.06)
    assert np.diff(z0).std() / h > 1.3


def test_smoothing_keeps_one_height_per_junction_and_linear_roads(grid: RoadNetwork) -> None:
    sm = smooth_elevations(grid, 50.0)
    t = sm.turns
    np.testing.assert_array_equal(sm.z_to_m[t[:, 0]], sm.z_from_m[t[:, 1]])  # the potential still telescopes
    np.testing.assert_allclose(horizontal_length_m(sm), horizontal_length_m(grid), rtol=1e-9)
    assert "50 m" in sm.meta["elevation_smoothing"]
    # a road whose elevation is linear in distance stays linear: z - ell^2 z'' = z0 has z = z0 (inner junctions;
    # an end junction sees one neighbour only and moves towards it)
    n = 6
    z0 = 3.0 * np.arange(n)
    z = smooth_junction_elevations(np.arange(n - 1), np.arange(1, n), z0, np.full(n - 1, 40.0), 50.0)
    assert np.all(np.diff(z) > 0) and np.diff(z).max() < 3.0
    assert z.mean() == pytest.approx(z0.mean())  # the weighted mean is kept (equal weights inside)


def _net(rises: list[float], run: float = 100.0) -> RoadNetwork:
    k = len(rises)
    return RoadNetwork(
        name="steep",
        edge_ids=np.array([f"e{i}" for i in range(k)]),
        from_node=np.array([f"n{i}" for i in range(k)]),
        to_node=np.array([f"n{i + 1}" for i in range(k)]),
        length_m=np.hypot(run, np.array(rises)),
        speed_mps=np.full(k, 10.0),
        z_from_m=np.zeros(k),
        z_to_m=np.array(rises),
        geometry=[np.zeros((2, 2))] * k,
        turns=np.array([[i, i + 1] for i in range(k - 1)], dtype=np.int64).reshape(-1, 2),
    )


def test_steep_edges_and_warning() -> None:
    net = _net([10.0, 30.0, -40.0, 25.0])
    np.testing.assert_allclose(grade(net), [0.1, 0.3, -0.4, 0.25])
    rows = steep_edges(net, 0.25)  # strictly above: e3 (exactly 25 %) is not listed
    assert [r["edge"] for r in rows] == ["e2", "e1"]
    assert rows[0]["grade"] == pytest.approx(-0.4) and rows[0]["length_m"] == pytest.approx(100.0)
    assert rows[0]["rise_m"] == pytest.approx(-40.0) and not rows[0]["structure"]
    with pytest.warns(UserWarning, match=r"2 edge\(s\) steeper than 25 %.*e2 \(-40\.0 %, 100\.0 m\), e1 \(\+30\.0 %"):
        warn_steep(net)
    many = _net([50.0 + i for i in range(8)])
    with pytest.warns(UserWarning) as rec:
        warn_steep(many)
    assert len(rec) == 1 and "\n" not in str(rec[0].message) and str(rec[0].message).endswith(" ...")
    assert str(rec[0].message).count("%,") == 5  # capped list


HILL_NET = """<?xml version="1.0" encoding="UTF-8"?>
<net version="1.20">
    <location netOffset="0.00,0.00" convBoundary="0.00,0.00,300.00,0.00" origBoundary="0.00,0.00,300.00,0.00"
              projParameter="!"/>
    <edge id="gentle" from="J0" to="J1" priority="2">
        <lane id="gentle_0" index="0" speed="13.89" length="100.00" shape="0.00,0.00 100.00,0.00"/>
    </edge>
    <edge id="wall" from="J1" to="J2" priority="2">
        <lane id="wall_0" index="0" speed="13.89" length="20.00" shape="100.00,0.00 120.00,0.00"/>
    </edge>
    <edge id="wall_back" from="J2" to="J1" priority="2">
        <lane id="wall_back_0" index="0" speed="13.89" length="20.00" shape="120.00,0.00 100.00,0.00"/>
    </edge>
    <edge id="gentle_back" from="J1" to="J0" priority="2">
        <lane id="gentle_back_0" index="0" speed="13.89" length="100.00" shape="100.00,0.00 0.00,0.00"/>
    </edge>
    <junction id="J0" type="dead_end" x="0.00" y="0.00" z="0.00" incLanes="" intLanes="" shape=""/>
    <junction id="J1" type="priority" x="100.00" y="0.00" z="5.00" incLanes="gentle_0" intLanes="" shape=""/>
    <junction id="J2" type="dead_end" x="120.00" y="0.00" z="15.00" incLanes="wall_0" intLanes="" shape=""/>
    <connection from="gentle" to="wall" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="wall" to="wall_back" fromLane="0" toLane="0" dir="t" state="M"/>
    <connection from="wall_back" to="gentle_back" fromLane="0" toLane="0" dir="s" state="M"/>
    <connection from="gentle_back" to="gentle" fromLane="0" toLane="0" dir="t" state="M"/>
</net>
"""


def test_cli_info_lists_steep_edges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evroute.cli import main

    p = tmp_path / "wall.net.xml"
    p.write_text(HILL_NET)
    with pytest.warns(UserWarning, match=r"2 edge\(s\) steeper than 25 %.*wall \(\+50\.0 %, 20\.0 m\)"):
        assert main(["info", "--network", str(p)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^edges_steeper_than_25pct +2$", out, re.M)
    assert "steep: wall  grade +50.0 %  run 20.0 m  rise +10.0 m" in out
    assert "steep: wall_back  grade -50.0 %  run 20.0 m  rise -10.0 m" in out
    with pytest.warns(UserWarning):
        assert main(["info", "--network", str(p), "--steep-grade", "4"]) == 0
    out = capsys.readouterr().out
    assert "steep: gentle  grade +5.0 %" in out and out.index("steep: wall") < out.index("steep: gentle")
    assert main(["info", "--network", str(p), "--steep-grade", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "evroute: error: --steep-grade must be a positive percentage; got -1.0"


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not os.environ.get("EVROUTE_DATA"), reason="needs EVROUTE_DATA with monaco.osm")
def test_monaco_steepest_edges_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Smoothed, Monaco keeps two edges above 25 %: way 779's 21 m altitude step (docs/inclines.md gives the reason)."""
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path))
    with pytest.warns(UserWarning, match="steeper than 25 %"):
        net = load_network("monaco")
    rows = steep_edges(net, 0.25)
    assert {r["edge"] for r in rows} <= {"779#2", "-779#2"}
    with pytest.warns(UserWarning, match=r"33 edge\(s\) steeper than 25 %.*: -1932#2 \(\+125\.8 %"):
        raw = load_network("monaco", smooth_m=0.0)
    assert np.abs(grade(raw)).max() > 1.0  # way 1932's 22 m drop over 17 m
    assert np.abs(grade(net)).max() < 0.35
