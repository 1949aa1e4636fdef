"""Tests of the OSM loader (osmnx) and of DEM reading/sampling on hand-made files."""

from __future__ import annotations

import bz2
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from evroute.errors import DataError, ParameterError
from evroute.network import Dem, drape, load_osm, load_sumo_net, read_dem

FIXTURES = Path(__file__).parent / "fixtures"
TINY_OSM = FIXTURES / "tiny.osm.xml"


def _gc_m(lon1, lat1, lon2, lat2, r=6_371_009.0):
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return 2 * r * np.arcsin(np.sqrt(a))


def _attr(net, name):
    return dict(zip(net.edge_ids.tolist(), getattr(net, name).tolist(), strict=True))


@pytest.fixture(scope="module")
def tiny():
    return load_osm(TINY_OSM)


def test_tiny_osm_edges(tiny):
    assert tiny.name == "tiny"
    assert set(tiny.edge_ids.tolist()) == {"1-2-0", "2-1-0", "2-3-0", "3-2-0", "4-2-0", "2-5-0", "3-6-0", "6-3-0"}
    length = _attr(tiny, "length_m")
    # slope length: great-circle horizontal length and the rise between the junctions' ele tags
    assert length["1-2-0"] == pytest.approx(np.hypot(_gc_m(6.1000, 49.6, 6.1010, 49.6), 110.5 - 100.0), rel=1e-6)
    assert length["4-2-0"] == pytest.approx(np.hypot(_gc_m(6.1010, 49.6010, 6.1010, 49.6), 110.5 - 130.0), rel=1e-6)
    kmh = {k: round(v * 3.6, 6) for k, v in _attr(tiny, "speed_limit_mps").items()}
    assert kmh["1-2-0"] == 50 and kmh["3-2-0"] == 50  # maxspeed tag
    assert kmh["4-2-0"] == 70 and kmh["2-5-0"] == 70
    assert kmh["3-6-0"] == 50 and kmh["6-3-0"] == 50  # unclassified without maxspeed: class default (either context)
    # free-flow speed: a primary road posted above 64 km/h is a rural single carriageway (factor 0.85), the rest 1
    ff = {k: round(v * 3.6, 6) for k, v in _attr(tiny, "speed_mps").items()}
    assert ff["4-2-0"] == pytest.approx(70 * 0.85) and ff["1-2-0"] == 50 and ff["3-6-0"] == 50


def test_tiny_osm_elevation_from_ele_tags(tiny):
    zf, zt = _attr(tiny, "z_from_m"), _attr(tiny, "z_to_m")
    assert (zf["1-2-0"], zt["1-2-0"]) == (100.0, 110.5)
    assert (zf["2-3-0"], zt["2-3-0"]) == (110.5, 120.0)  # "120 m"
    assert (zf["4-2-0"], zt["2-5-0"]) == (130.0, 105.0)
    assert zt["3-6-0"] == 90.0
    assert tiny.meta["elevation"] == "ele tags"


def test_tiny_osm_turns(tiny):
    turns = {(tiny.edge_ids[a], tiny.edge_ids[b]) for a, b in tiny.turns.tolist()}
    expected = {
        ("2-1-0", "1-2-0"),  # U-turn at the dead end A
        ("1-2-0", "2-3-0"),
        ("1-2-0", "2-5-0"),
        ("3-2-0", "2-1-0"),
        ("3-2-0", "2-5-0"),
        ("4-2-0", "2-1-0"),
        ("4-2-0", "2-3-0"),
        ("4-2-0", "2-5-0"),
        ("2-3-0", "3-6-0"),
        ("6-3-0", "3-2-0"),
        ("3-6-0", "6-3-0"),  # U-turn at the dead end F
    }
    assert turns == expected


def test_geometry_is_lonlat(tiny):
    g = tiny.geometry[tiny.index_of("2-5-0")]
    np.testing.assert_allclose(g, [[6.1010, 49.6000], [6.1010, 49.5990]])


def test_bz2_and_network_type_all(tmp_path, tiny):
    p = tmp_path / "tiny.osm.bz2"
    p.write_bytes(bz2.compress(TINY_OSM.read_bytes()))
    net = load_osm(p)
    assert sorted(net.edge_ids.tolist()) == sorted(tiny.edge_ids.tolist())
    allnet = load_osm(TINY_OSM, network_type="all")
    assert {"3-4-0", "4-3-0"} <= set(allnet.edge_ids.tolist())  # the footway


def _without_ele(tmp_path: Path, keep: tuple[str, ...] = ()) -> Path:
    text = TINY_OSM.read_text()
    for nid in "123456":
        if nid not in keep:
            text = re.sub(rf'(<node id="{nid}"[^>]*>)<tag k="ele" v="[^"]*"/></node>', r"\1</node>", text)
    p = tmp_path / "noele.osm"
    p.write_text(text)
    return p


def test_no_elevation_warns_flat(tmp_path):
    with pytest.warns(UserWarning, match="flat"):
        net = load_osm(_without_ele(tmp_path))
    assert np.all(net.z_from_m == 0) and np.all(net.z_to_m == 0)
    assert net.meta["elevation"] == "flat"


def test_partial_ele_filled_from_nearest(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = load_osm(_without_ele(tmp_path, keep=("1", "6")))
    zf = _attr(net, "z_from_m")
    assert zf["1-2-0"] == 100.0 and zf["6-3-0"] == 90.0
    assert zf["2-3-0"] == 100.0  # B is nearest to A
    assert zf["3-2-0"] == 90.0  # C is nearest to F
    assert "nearest" in net.meta["elevation"]


def _write_tif(path: Path, z: np.ndarray, transform, crs: str, nodata=None) -> None:
    import rasterio

    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        height=z.shape[0],
        width=z.shape[1],
        count=1,
        dtype="float32",
        crs=crs,
        transform=transform,
        nodata=nodata,
    ) as dst:
        dst.write(z.astype("float32"), 1)


def _lonlat_tif(tmp_path: Path) -> Path:
    from rasterio.transform import Affine

    # 4x4 pixels of 0.001 deg; pixel centres at lon 6.0995 + 0.001*c, lat 49.6015 - 0.001*r
    z = np.array([[0, 10, 20, 30], [40, 50, 60, 70], [80, 90, 100, 110], [120, 130, 140, 150]], dtype=float)
    p = tmp_path / "dem.tif"
    _write_tif(p, z, Affine(0.001, 0.0, 6.099, 0.0, -0.001, 49.602), "EPSG:4326", nodata=-9999)
    return p


def test_geotiff_bilinear(tmp_path):
    d = read_dem(_lonlat_tif(tmp_path))
    assert d.shape == (4, 4)
    assert d.sample(6.0995, 49.6015) == pytest.approx(0.0)  # centre of pixel (0, 0)
    assert d.sample(6.1005, 49.6005) == pytest.approx(50.0)  # centre of pixel (1, 1)
    # a quarter of the way right and half-way down from centre (0, 0): 0.25*10 + 0.5*40 = 22.5
    assert d.sample(6.09975, 49.6010) == pytest.approx(22.5, abs=1e-3)
    got = d.sample(np.array([6.1000, 6.1020]), np.array([49.6000, 49.5990]))
    # (col 0.5, row 1.5) -> 65; (col 2.5, row 2.5) -> 125 (the grid is linear: z = 10 col + 40 row)
    np.testing.assert_allclose(got, [65.0, 125.0], atol=1e-3)
    with pytest.raises(DataError, match="outside the raster"):
        d.sample(6.2, 49.6)


def test_geotiff_projected_crs(tmp_path):
    from pyproj import Transformer
    from rasterio.transform import Affine

    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True)
    x0, y0 = to_utm.transform(6.1, 49.6)
    rows, cols = np.mgrid[0:20, 0:20]
    z = 2.0 * cols + 0.5 * rows  # per pixel of 10 m
    p = tmp_path / "utm.tif"
    _write_tif(p, z, Affine(10.0, 0.0, x0 - 100, 0.0, -10.0, y0 + 100), "EPSG:32632")
    d = read_dem(p)
    lon, lat = 6.1003, 49.5996
    x, y = to_utm.transform(lon, lat)
    col = (x - (x0 - 100)) / 10 - 0.5
    row = ((y0 + 100) - y) / 10 - 0.5
    assert d.sample(lon, lat) == pytest.approx(2.0 * col + 0.5 * row, abs=1e-3)


def _write_hgt(tmp_path: Path, name: str = "N49E006.hgt") -> Path:
    side = 1201
    r, c = np.mgrid[0:side, 0:side]
    z = (r % 100 + 2 * (c % 50)).astype(">i2")
    z[600, 600] = -32768
    p = tmp_path / name
    z.tofile(p)
    return p


def test_hgt_bilinear_and_void(tmp_path):
    d = read_dem(_write_hgt(tmp_path))
    step = 1.0 / 1200
    # grid point (row 10, col 20) lies at lat 50 - 10*step, lon 6 + 20*step
    assert d.sample(6 + 20 * step, 50 - 10 * step) == pytest.approx(10 + 40)
    # half-way between columns 20 and 21 and a quarter between rows 10 and 11
    assert d.sample(6 + 20.5 * step, 50 - 10.25 * step) == pytest.approx(10.25 + 41.0)
    assert d.sample(6.0, 50.0) == pytest.approx(0.0)  # NW corner sample
    # next to the void sample: its weight is dropped and the valid neighbours renormalised
    v = d.sample(6 + 600.5 * step, 50 - 600 * step)
    assert v == pytest.approx(0 + 2 * 1)  # value of (600, 601)
    with pytest.raises(DataError, match="void"):
        d.sample(6 + 600 * step, 50 - 600 * step)
    with pytest.raises(DataError, match="outside"):
        d.sample(7.5, 49.5)


def test_hgt_errors(tmp_path):
    with pytest.raises(DataError, match="named like"):
        read_dem(_write_hgt(tmp_path, "tile.hgt"))
    bad = tmp_path / "S10W070.hgt"
    np.zeros(100, dtype=">i2").tofile(bad)
    with pytest.raises(DataError, match="not an SRTM tile"):
        read_dem(bad)
    with pytest.raises(DataError, match="not found"):
        read_dem(tmp_path / "N00E000.hgt")
    junk = tmp_path / "junk.tif"
    junk.write_text("not a tiff")
    with pytest.raises(DataError, match="cannot read DEM"):
        read_dem(junk)


def test_hgt_southern_western_tile(tmp_path):
    d = read_dem(_write_hgt(tmp_path, "S10W070.hgt"))
    assert d.sample(-70.0, -9.0) == pytest.approx(0.0)  # NW corner of the tile is (lon -70, lat -9)
    with pytest.raises(DataError):
        d.sample(-70.5, -11.0)


def test_osm_with_dem_for_missing_ele(tmp_path):
    dem = read_dem(_lonlat_tif(tmp_path))
    net = load_osm(_without_ele(tmp_path, keep=("1",)), dem=dem)
    zf = _attr(net, "z_from_m")
    assert zf["1-2-0"] == 100.0  # ele tag wins
    assert zf["2-1-0"] == pytest.approx(dem.sample(6.1010, 49.6000))
    assert zf["4-2-0"] == pytest.approx(dem.sample(6.1010, 49.6010))
    assert "dem:" in net.meta["elevation"]


def test_drape_sumo_net_on_dem(tmp_path):
    z = np.fromfunction(lambda r, c: 100.0 + c - r, (50, 50))
    d = Dem(z=z, transform=(10.0, 0.0, -100.0, 0.0, -10.0, 200.0), crs=None, source="array")
    net = drape(load_sumo_net(FIXTURES / "tiny.net.xml"), d)  # local metres used as raster coordinates
    np.testing.assert_allclose(net.z_from_m[net.index_of("c")], d.sample(100.0, 0.0))
    assert net.z_to_m[net.index_of("a")] == net.z_from_m[net.index_of("b")]  # one height per junction
    assert net.meta["elevation"] == "dem:array"


def test_osm_errors(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_osm(tmp_path / "none.osm")
    bad = tmp_path / "bad.osm"
    bad.write_text("<osm><node id='1'")
    with pytest.raises(DataError, match="malformed OSM file") as exc:
        load_osm(bad)
    assert "\n" not in str(exc.value)
    with pytest.raises(ParameterError, match="network_type"):
        load_osm(TINY_OSM, network_type="boat")
    walk = tmp_path / "walk.osm"
    walk.write_text(re.sub(r'v="(residential|primary|unclassified)"', 'v="footway"', TINY_OSM.read_text()))
    with pytest.raises(DataError, match="no 'drive' roads"):
        load_osm(walk)
