"""Tests of the named-network front door, the data directory and dataset download; real-data checks."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import evroute.network.registry as registry
from evroute.errors import DataError, ParameterError, UnknownNetworkError
from evroute.network import DATASETS, default_data_dir, fetch_dataset, load_network
from evroute.network._graph import largest_scc_edges

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = os.environ.get("EVROUTE_DATA")


# ---------------------------------------------------------------------------------------------- specs
def test_synthetic_specs():
    net = load_network("synthetic")
    assert net.name == "synthetic:1000:0"
    assert load_network("synthetic:300").name == "synthetic:300:0"
    a, b = load_network("synthetic:300:7"), load_network("Synthetic:300:7")
    assert a.name == "synthetic:300:7" and np.array_equal(a.length_m, b.length_m)


@pytest.mark.parametrize("spec", ["synthetic:abc", "synthetic:300:x", "synthetic:1:2:3", "synthetic:5"])
def test_bad_synthetic_specs(spec):
    with pytest.raises(ParameterError):
        load_network(spec)


def test_unknown_name_lists_valid_names():
    with pytest.raises(UnknownNetworkError) as exc:
        load_network("paris")
    msg = str(exc.value)
    assert "'paris'" in msg and "monaco" in msg and "luxembourg" in msg and "synthetic" in msg
    assert "\n" not in msg


@pytest.mark.slow
def test_paths(tmp_path):
    net = load_network(FIXTURES / "tiny.net.xml")
    assert net.n_edges == 5 and net.meta["loader"] == "sumo"
    osm = load_network(str(FIXTURES / "tiny.osm.xml"))  # default OSM loader: netconvert
    assert osm.n_edges == 8 and osm.meta["loader"] == "sumo" and osm.meta["osm_loader"] == "netconvert"
    osm = load_network(str(FIXTURES / "tiny.osm.xml"), loader="osmnx")
    assert osm.n_edges == 8 and osm.meta["loader"] == "osm" and osm.meta["osm_loader"] == "osmnx"
    with pytest.raises(ParameterError, match="unknown OSM loader"):
        load_network(str(FIXTURES / "tiny.osm.xml"), loader="overpass")
    with pytest.raises(DataError, match="not found"):
        load_network(tmp_path / "gone.net.xml")
    with pytest.raises(DataError, match="not found"):
        load_network(tmp_path / "gone.osm.bz2")
    other = tmp_path / "roads.csv"
    other.write_text("a,b\n")
    with pytest.raises(DataError, match="unsupported network file"):
        load_network(other)


def test_missing_named_data_file(tmp_path):
    with pytest.raises(DataError) as exc:
        load_network("monaco", data_dir=tmp_path)
    msg = str(exc.value)
    assert "monaco.osm" in msg and "EVROUTE_DATA" in msg and "evroute data fetch monaco" in msg


def test_data_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv("EVROUTE_DATA", str(tmp_path / "env"))
    assert default_data_dir() == tmp_path / "env"
    assert default_data_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("EVROUTE_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "evroute" / "data"


# ---------------------------------------------------------------------------------------------- fetch
@pytest.fixture
def fake_dataset(tmp_path, monkeypatch):
    """A small upstream file standing in for monaco.osm, with its checksum patched into the table."""
    src = tmp_path / "upstream" / "network.osm"
    src.parent.mkdir()
    src.write_bytes((FIXTURES / "tiny.osm.xml").read_bytes())
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    monkeypatch.setitem(registry.DATASETS, "monaco", dataclasses.replace(DATASETS["monaco"], sha256=digest))
    return src


def test_dataset_table_pins_upstream():
    assert DATASETS["monaco"].url == (
        "https://raw.githubusercontent.com/lcodeca/MoSTScenario/"
        "b29b2f65f1096a9c69a601ec62a724815cb4a43f/tools/data/network.osm"
    )
    assert DATASETS["luxembourg"].sha256.startswith("933f7080")


def test_fetch_from_file_url_then_skip(tmp_path, fake_dataset, monkeypatch):
    dest_dir = tmp_path / "data"
    got = fetch_dataset("monaco", dest_dir, url=fake_dataset.as_uri())
    assert got == dest_dir / "monaco.osm"
    assert got.read_bytes() == fake_dataset.read_bytes()

    def no_download(url, dest, timeout_s=120.0):
        raise AssertionError("must not download a verified file again")

    monkeypatch.setattr(registry, "_download", no_download)
    assert fetch_dataset("monaco", dest_dir) == got
    assert sorted(p.name for p in dest_dir.iterdir()) == ["monaco.osm"]


def test_fetch_uses_pinned_url(tmp_path, fake_dataset, monkeypatch):
    seen = []

    def fake_download(url, dest, timeout_s=120.0):
        seen.append(url)
        Path(dest).write_bytes(fake_dataset.read_bytes())

    monkeypatch.setattr(registry, "_download", fake_download)
    monkeypatch.setenv("EVROUTE_DATA", str(tmp_path / "envdata"))
    got = fetch_dataset("monaco")
    assert seen == [DATASETS["monaco"].url]
    assert got == tmp_path / "envdata" / "monaco.osm"


def test_fetch_checksum_mismatch_leaves_nothing(tmp_path, fake_dataset):
    tampered = tmp_path / "tampered.osm"
    tampered.write_bytes(fake_dataset.read_bytes() + b"\n<!-- changed -->")
    dest_dir = tmp_path / "data"
    with pytest.raises(DataError, match="checksum mismatch for monaco"):
        fetch_dataset("monaco", dest_dir, url=tampered.as_uri())
    assert not dest_dir.exists()  # the folder the failed fetch created is gone too (issue 25)
    # a corrupt file already present is replaced by a verified download
    dest_dir.mkdir()
    (dest_dir / "monaco.osm").write_text("corrupt")
    fetch_dataset("monaco", dest_dir, url=fake_dataset.as_uri())
    assert (dest_dir / "monaco.osm").read_bytes() == fake_dataset.read_bytes()


def test_fetch_network_failure(tmp_path, monkeypatch):
    import urllib.error

    def offline(url, dest, timeout_s=120.0):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(registry, "_download", offline)
    with pytest.raises(DataError, match="cannot download luxembourg .*name resolution") as exc:
        fetch_dataset("luxembourg", tmp_path)
    assert "\n" not in str(exc.value)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DataError, match="cannot download"):
        fetch_dataset("luxembourg", tmp_path / "d", url=(tmp_path / "missing.osm").as_uri())
    with pytest.raises(UnknownNetworkError, match="valid names: monaco, luxembourg"):
        fetch_dataset("atlantis", tmp_path)


# ------------------------------------------------------------------------------------------ real data
def _need(name: str) -> Path:
    if not SHARED:
        pytest.skip("EVROUTE_DATA is not set (point it at the folder with monaco.osm / luxembourg.osm)")
    p = Path(SHARED) / f"{name}.osm"
    if not p.is_file():
        pytest.skip(f"{p} is missing")
    return p


@pytest.fixture(scope="module")
def net_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("evroute-nets")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_CACHE", str(cache))
        yield cache


@pytest.fixture(scope="module")
def monaco(net_cache):
    _need("monaco")
    return load_network("monaco")


@pytest.fixture(scope="module")
def luxembourg(net_cache):
    _need("luxembourg")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        net = load_network("luxembourg")
    return net, [str(w.message) for w in rec]


@pytest.mark.slow
@pytest.mark.realdata
def test_monaco_counts_and_elevation(monaco):
    # (2675, 6606) and (2107, 5427) before issue 34: with speeds resolved by evroute.network.speeds netconvert no
    # longer joins consecutive ways whose limits differ (urban and rural defaults), so 12 more edges
    assert (monaco.n_edges, monaco.n_turns) == (2687, 6618)
    lcc = largest_scc_edges(monaco.n_edges, monaco.turns)
    sub = monaco.subnetwork(lcc)
    assert (sub.n_edges, sub.n_turns) == (2117, 5437)
    z = np.concatenate([monaco.z_from_m, monaco.z_to_m])
    assert 0 <= z.min() < 5 and 550 < z.max() <= 616
    assert monaco.meta["crs"] == "EPSG:4326"
    lon, lat = np.concatenate(monaco.geometry).mean(axis=0)
    assert 7.38 < lon < 7.48 and 43.72 < lat < 43.78


@pytest.mark.slow
@pytest.mark.realdata
def test_monaco_conversion_is_cached(monaco, net_cache, monkeypatch):
    assert len(list(net_cache.glob("monaco-*.net.xml.gz"))) == 1

    def fail(*a, **k):
        raise AssertionError("netconvert must not run again")

    monkeypatch.setattr(registry, "osm_to_sumo", fail)
    again = load_network("monaco")
    assert np.array_equal(again.edge_ids, monaco.edge_ids)


@pytest.mark.slow
@pytest.mark.realdata
def test_luxembourg_counts_flat_warning_and_paper_ids(luxembourg):
    net, messages = luxembourg
    assert (net.n_edges, net.n_turns) == (5695, 16172)
    sub = net.subnetwork(largest_scc_edges(net.n_edges, net.turns))
    assert (sub.n_edges, sub.n_turns) == (5644, 16087)
    assert any("luxembourg" in m and "flat" in m for m in messages)
    assert np.all(net.z_from_m == 0) and "flat" in net.meta["warning"]
    ids = set(net.edge_ids.tolist())
    assert "--32646#1" in ids  # goal edge of the paper's Luxembourg route A
    assert {"-31118#0", "-30436#0", "-30946"} <= ids  # the other paper ids' ways, split differently


@pytest.mark.slow
@pytest.mark.realdata
def test_luxembourg_with_dem(net_cache, tmp_path):
    import rasterio
    from rasterio.transform import Affine

    _need("luxembourg")
    z = np.add.outer(np.linspace(400.0, 200.0, 60), np.linspace(0.0, 100.0, 80))  # rows north -> south
    tif = tmp_path / "lux.tif"
    with rasterio.open(
        tif,
        "w",
        driver="GTiff",
        height=60,
        width=80,
        count=1,
        dtype="float64",
        crs="EPSG:4326",
        transform=Affine(0.005, 0.0, 5.95, 0.0, -0.005, 49.75),
    ) as dst:
        dst.write(z, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net = load_network("luxembourg", dem=tif)
    z_all = np.concatenate([net.z_from_m, net.z_to_m])
    assert 200 < z_all.min() < z_all.max() < 500
    assert np.abs(net.incline).max() > 0


@pytest.mark.realdata
def test_fetch_verifies_real_checksums(tmp_path):
    for name in ("monaco", "luxembourg"):
        src = _need(name)
        got = fetch_dataset(name, tmp_path, url=src.as_uri())
        assert hashlib.sha256(got.read_bytes()).hexdigest() == DATASETS[name].sha256


@pytest.mark.slow
@pytest.mark.realdata
def test_monaco_osm_loader(net_cache):
    from evroute.network import load_osm

    net = load_osm(_need("monaco"))
    assert net.meta["elevation"] == "ele tags"
    assert 2500 < net.n_edges < 3500
    assert len(largest_scc_edges(net.n_edges, net.turns)) > 0.9 * net.n_edges
