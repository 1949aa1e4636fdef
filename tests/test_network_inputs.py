"""Network inputs: one default OSM loader for names and paths, turn restrictions, .osm.pbf files, DEM tiles."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from evroute.cli import main
from evroute.errors import DataError, ParameterError
from evroute.network import drape, load_network, merge_dems, pbf_to_osm, read_dem
from evroute.network.registry import DATASETS

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "tiny.osm.xml"
CROSS = FIXTURES / "cross_restriction.osm.xml"
SHARED = os.environ.get("EVROUTE_DATA")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVROUTE_CACHE", str(tmp_path / "cache"))


def _same(a, b) -> None:
    assert a.edge_ids.tolist() == b.edge_ids.tolist()
    assert a.turns.tolist() == b.turns.tolist()
    np.testing.assert_allclose(a.length_m, b.length_m)
    np.testing.assert_allclose(a.z_from_m, b.z_from_m)
    np.testing.assert_allclose(a.speed_mps, b.speed_mps)


def _turns(net) -> set[tuple[str, str]]:
    return {(net.edge_ids[a], net.edge_ids[b]) for a, b in net.turns}


# ------------------------------------------------------------------------------------------------- loaders
def test_turn_restriction_honoured_by_default_loader_only():
    net = load_network(CROSS)  # default: netconvert
    assert net.meta["osm_loader"] == "netconvert"
    # SUMO ids: way 1 drawn S->C, way 3 drawn W->C, so C->W is "-3"; no left turn from 1 into -3
    assert ("1", "-3") not in _turns(net)
    assert {("1", "2"), ("1", "4"), ("-2", "-3")} <= _turns(net)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = load_network(CROSS, loader="osmnx")
    assert ("102-100-0", "100-104-0") in _turns(raw)  # osmnx ignores the restriction (documented)


def test_name_and_path_give_the_same_network(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(CROSS, data / "monaco.osm")  # any OSM file under a dataset's file name
    for loader in ("netconvert", "osmnx"):
        by_name = load_network("monaco", data_dir=data, loader=loader)
        by_path = load_network(data / "monaco.osm", loader=loader)
        assert by_name.name == by_path.name == "monaco"
        _same(by_name, by_path)
    assert load_network("monaco", data_dir=data).edge_ids.tolist() != by_name.edge_ids.tolist()


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.skipif(not SHARED or not (Path(SHARED or ".") / "monaco.osm").is_file(), reason="needs EVROUTE_DATA")
def test_monaco_name_and_path_agree(monkeypatch):
    monkeypatch.delenv("EVROUTE_CACHE")  # reuse the user's converted-network cache
    a = load_network("monaco")
    b = load_network(Path(SHARED) / DATASETS["monaco"].filename)
    _same(a, b)
    # 2675 / 6606 before issue 34: netconvert no longer joins consecutive ways whose resolved speeds differ
    assert a.n_edges == 2687 and a.n_turns == 6618


# ------------------------------------------------------------------------------------------------- pbf
def _to_pbf(src: Path, dest: Path) -> Path:
    import osmium

    with osmium.SimpleWriter(str(dest), overwrite=True) as w:
        for obj in osmium.FileProcessor(str(src), osmium.osm.NODE | osmium.osm.WAY | osmium.osm.RELATION):
            w.add(obj)
    return dest


def test_pbf_input_equals_xml(tmp_path):
    pbf = _to_pbf(CROSS, tmp_path / "cross.osm.pbf")
    assert pbf.read_bytes()[:64].find(b"OSMHeader") >= 0  # really a PBF file
    for loader in ("netconvert", "osmnx"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same(load_network(pbf, loader=loader), load_network(CROSS, loader=loader))
    assert ("1", "-3") not in _turns(load_network(pbf))  # the restriction relation survives the conversion
    tiny = _to_pbf(TINY, tmp_path / "tiny.osm.pbf")
    _same(load_network(tiny, loader="osmnx"), load_network(TINY, loader="osmnx"))  # ele tags survive too


def test_pbf_errors(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_network(tmp_path / "gone.osm.pbf")
    bad = tmp_path / "bad.osm.pbf"
    bad.write_bytes(b"\x00\x00\x00\x0dnot a pbf file at all")
    with pytest.raises(DataError, match="malformed OSM PBF"):
        load_network(bad)
    with pytest.raises(DataError, match="not found"):
        pbf_to_osm(tmp_path / "none.osm.pbf", tmp_path / "x.osm")
    assert not list(tmp_path.glob(".*"))  # no temp file left


# ------------------------------------------------------------------------------------------------- DEM tiles
RES = 0.0005


def _plane(lon, lat):
    return 1000.0 * (lon - 6.0) + 400.0 * (lat - 49.5) + 100.0


def _tile(
    path: Path, lon0: float, lon1: float, lat0: float, lat1: float, crs: str = "EPSG:4326", res: float = RES
) -> Path:
    import rasterio
    from rasterio.transform import Affine

    cols, rows = round((lon1 - lon0) / res), round((lat1 - lat0) / res)
    cx = lon0 + res * (np.arange(cols) + 0.5)
    cy = lat1 - res * (np.arange(rows) + 0.5)
    z = _plane(cx[None, :], cy[:, None])
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        height=rows,
        width=cols,
        count=1,
        dtype="float64",
        crs=crs,
        transform=Affine(res, 0, lon0, 0, -res, lat1),
        nodata=-9999,
    ) as dst:
        dst.write(z, 1)
    return path


@pytest.fixture
def tiles(tmp_path):
    net = load_network("synthetic:150:1")
    pts = np.concatenate(net.geometry)
    (w, s), (e, n) = pts.min(axis=0) - 0.002, pts.max(axis=0) + 0.002
    mid = round((w + e) / 2 / RES) * RES
    w, e = mid - round((mid - w) / RES) * RES, mid + round((e - mid) / RES) * RES
    return net, _tile(tmp_path / "west.tif", w, mid, s, n), _tile(tmp_path / "east.tif", mid, e, s, n), mid


def test_several_dem_tiles_are_mosaicked(tiles):
    net, west, east, mid = tiles
    d = merge_dems([west, east])
    assert "west.tif" in d.source and "east.tif" in d.source
    _, x, y, _ = net.junction_positions()
    lon = np.array([x.min(), mid - 1e-5, mid, mid + 2e-4, x.max()])
    lat = np.full(5, y.mean())
    np.testing.assert_allclose(d.sample(lon, lat), _plane(lon, lat), atol=1e-6)  # bilinear is exact on a plane
    with pytest.raises(DataError, match="outside the raster"):
        read_dem(west).sample(x.max(), lat[0])  # one tile alone does not cover the east
    draped = drape(net, [str(west), str(east)])
    ids, x, y, z = draped.junction_positions()
    np.testing.assert_allclose(z, _plane(x, y), atol=1e-6)
    assert (x < mid).any() and (x > mid).any()  # the network really spans both tiles
    assert read_dem([west]).shape == read_dem(west).shape


def test_srtm_tiles_are_mosaicked(tmp_path):
    side = 1201
    r, c = np.mgrid[0:side, 0:side]
    for name, offset in (("N49E005.hgt", 0), ("N49E006.hgt", 2 * (side - 1))):
        # z = row + 2 * (column counted from 5 deg E): one linear field over both tiles, equal on the shared edge
        (r + 2 * c + offset).astype(">i2").tofile(tmp_path / name)
    west, east = read_dem(tmp_path / "N49E005.hgt"), read_dem(tmp_path / "N49E006.hgt")
    both = read_dem([tmp_path / "N49E005.hgt", tmp_path / "N49E006.hgt"])
    assert both.shape == (side, 2 * side - 1)
    lon = np.array([5.3, 5.9991, 6.0, 6.0004, 6.7])
    lat = np.array([49.2, 49.5, 49.5, 49.4, 49.9])
    expected = (50 - lat) * (side - 1) + 2 * (lon - 5) * (side - 1)
    np.testing.assert_allclose(both.sample(lon, lat), expected, atol=1e-6)
    np.testing.assert_allclose(both.sample(lon[:2], lat[:2]), west.sample(lon[:2], lat[:2]))
    np.testing.assert_allclose(both.sample(lon[3:], lat[3:]), east.sample(lon[3:], lat[3:]))


def test_dem_tile_errors(tiles, tmp_path):
    net, west, east, mid = tiles
    utm = _tile(tmp_path / "utm.tif", 300000, 300100, 5500000, 5500100, crs="EPSG:32632", res=10.0)
    with pytest.raises(DataError, match="different CRSs"):
        merge_dems([west, utm])
    with pytest.raises(DataError, match="not found"):
        merge_dems([west, tmp_path / "gone.tif"])
    with pytest.raises(DataError, match="no DEM file"):
        read_dem([])


def test_cli_dem_repeated(tiles, capsys):
    net, west, east, mid = tiles
    assert main(["info", "--network", "synthetic:150:1", "--dem", str(west), "--dem", str(east)]) == 0
    out = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines() if not line.startswith(" "))
    # the draped plane, smoothed along the roads (evroute.network.inclines) as every DEM-draped network is
    z = np.concatenate([(d := load_network("synthetic:150:1", dem=[str(west), str(east)])).z_from_m, d.z_to_m])
    assert float(out["elevation_min_m"]) == pytest.approx(z.min(), rel=1e-3)
    assert float(out["elevation_max_m"]) == pytest.approx(z.max(), rel=1e-3)
    _, x, y, _ = net.junction_positions()
    assert abs(z.min() - _plane(x, y).min()) < 1.0  # smoothing a plane moves only the network's edge junctions
    assert main(["info", "--network", "synthetic:150:1", "--dem", str(west)]) == 2
    assert "outside the raster" in capsys.readouterr().err


def test_cli_run_with_dem_tiles_resumes(tiles, tmp_path, capsys):
    import json

    net, west, east, mid = tiles
    argv = [
        "run",
        "--network",
        "synthetic:150:1",
        "--dem",
        str(west),
        "--dem",
        str(east),
        "--horizon",
        "3",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    assert main(argv) == 0
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["dem"] == [str(west), str(east)] and cfg["loader"] == "netconvert"
    first = capsys.readouterr().out
    assert main(argv) == 0  # same command again: the folder holds the same experiment, nothing to redo
    assert capsys.readouterr().out == first


def test_cli_loader_flag(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["info", "--network", str(CROSS), "--loader", "osmnx"]) == 0
        turns_osmnx = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())["turns"]
        assert main(["info", "--network", str(CROSS)]) == 0
        turns_nc = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())["turns"]
    assert int(turns_osmnx) == 16 and int(turns_nc) != 16  # osmnx: 3 turns per arriving edge + 4 dead-end U-turns
    with pytest.raises(SystemExit):
        main(["info", "--network", str(CROSS), "--loader", "overpass"])
    with pytest.raises(ParameterError, match="loader must be"):
        from evroute.experiments import ExperimentConfig

        ExperimentConfig(loader="overpass")
