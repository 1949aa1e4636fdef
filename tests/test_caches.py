"""Caches that heal: a damaged or mismatching cache entry is rebuilt with one warning, never used and never a dead
end; temporary files of interrupted runs are cleaned on the next start, those of live processes kept."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evroute.errors import DataError
from evroute.network.registry import load_network

FIXTURES = Path(__file__).parent / "fixtures"
TINY_OSM = FIXTURES / "tiny.osm.xml"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "nets"
    monkeypatch.setenv("EVROUTE_CACHE", str(folder))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "systmp"))  # the system temp folder of this test
    (tmp_path / "systmp").mkdir()
    return folder


def _load(**kw: Any):  # noqa: ANN202 - RoadNetwork
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        net = load_network(str(TINY_OSM), **kw)
    return net, [str(w.message) for w in rec if "cached" in str(w.message)]


def _entry(cache: Path) -> Path:
    (entry,) = cache.glob("tiny-*.net.xml.gz")
    return entry


def _same(a, b) -> None:  # noqa: ANN001
    assert a.edge_ids.tolist() == b.edge_ids.tolist()
    np.testing.assert_array_equal(a.speed_mps, b.speed_mps)
    np.testing.assert_array_equal(a.length_m, b.length_m)


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _corrupt(p: Path) -> None:
    b = bytearray(p.read_bytes())
    b[len(b) // 2 : len(b) // 2 + 16] = b"\x00" * 16
    p.write_bytes(bytes(b))


def _edit_speeds(p: Path) -> None:
    """A valid gzip whose XML has every 13.89 m/s lane at 33.33 m/s: it parses, so only a checksum can tell."""
    xml = gzip.decompress(p.read_bytes()).decode()
    assert 'speed="13.89"' in xml
    p.write_bytes(gzip.compress(xml.replace('speed="13.89"', 'speed="33.33"').encode()))


@pytest.mark.parametrize(
    ("damage", "why"),
    [(_truncate, "does not match"), (_corrupt, "does not match"), (_edit_speeds, "does not match")],
    ids=["truncated", "corrupted", "edited"],
)
def test_damaged_network_cache_is_rebuilt_with_one_warning(cache: Path, damage, why: str) -> None:  # noqa: ANN001
    ref, warned = _load()
    assert warned == []
    entry = _entry(cache)
    damage(entry)
    net, warned = _load()
    assert len(warned) == 1 and why in warned[0] and str(entry) in warned[0] and "rebuilding" in warned[0]
    _same(net, ref)  # never the damaged content
    net, warned = _load()
    assert warned == []  # healed: no warning the next time


def test_mismatching_or_missing_manifest_is_rebuilt(cache: Path) -> None:
    from evroute.network.cachefiles import manifest_path

    ref, _ = _load()
    entry = _entry(cache)
    man = manifest_path(entry)
    record = json.loads(man.read_text())
    record["inputs"]["netconvert"] = "0.0.1"  # made by another netconvert
    man.write_text(json.dumps(record))
    net, warned = _load()
    assert len(warned) == 1 and "other inputs" in warned[0]
    _same(net, ref)
    man.unlink()  # e.g. killed between moving the entry into place and writing its manifest
    net, warned = _load()
    assert len(warned) == 1 and "no checksum record" in warned[0]
    _same(net, ref)
    assert json.loads(man.read_text())["inputs"]["netconvert"] != "0.0.1"


BIG_OSM_NODES = 40  # a 40 x 40 grid of streets: netconvert runs long enough to be killed mid-write


def _grid_osm(path: Path, n: int = BIG_OSM_NODES) -> Path:
    nodes = [
        f'<node id="{i * n + j + 1}" lat="{49.6 + 0.001 * i:.4f}" lon="{6.1 + 0.0015 * j:.4f}">'
        f'<tag k="ele" v="{i + j}"/></node>'
        for i in range(n)
        for j in range(n)
    ]
    ways, w = [], 1
    for i in range(n):
        refs = "".join(f'<nd ref="{i * n + j + 1}"/>' for j in range(n))
        ways.append(f'<way id="{w}">{refs}<tag k="highway" v="residential"/></way>')
        refs = "".join(f'<nd ref="{j * n + i + 1}"/>' for j in range(n))
        ways.append(f'<way id="{w + 1}">{refs}<tag k="highway" v="residential"/></way>')
        w += 2
    path.write_text('<?xml version="1.0"?>\n<osm version="0.6">\n' + "\n".join(nodes + ways) + "\n</osm>\n")
    return path


@pytest.mark.slow
def test_run_killed_mid_conversion_leaves_nothing_the_next_run_trusts(cache: Path, tmp_path: Path) -> None:
    """SIGKILL a loader (and its netconvert) while netconvert writes; the next run cleans up and converts."""
    osm = _grid_osm(tmp_path / "grid.osm")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVROUTE_CACHE": str(cache), "TMPDIR": str(tmp_path / "systmp")}
    code = "import sys; from evroute.network.registry import load_network; load_network(sys.argv[1])"
    proc = subprocess.Popen([sys.executable, "-c", code, str(osm)], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(cache.glob(".grid-*.tmp.net.xml.gz")):  # netconvert's output, being written
            assert proc.poll() is None, "the loader finished before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    left = [p.name for p in cache.iterdir() if p.name.startswith(".grid-")]
    assert left  # the killed run left its temporary output behind
    assert not list(cache.glob("grid-*.net.xml.gz"))  # but no entry
    net = load_network(str(osm))
    # two directions of n - 1 blocks on 2 n streets, less the 4 corners' 2 x 2 edges netconvert joins into 2 x 1
    assert net.n_edges == 4 * BIG_OSM_NODES * (BIG_OSM_NODES - 1) - 8
    assert not [p for p in cache.iterdir() if p.name.startswith(".grid-")]  # the killed run's temp file: gone
    (entry,) = cache.glob("grid-*.net.xml.gz")
    assert entry.with_name(entry.name + ".manifest.json").is_file()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temps_are_cleaned_and_live_ones_kept(cache: Path, tmp_path: Path) -> None:
    systmp = tmp_path / "systmp"
    sumo = cache / "sumo"
    sumo.mkdir(parents=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = _dead_pid()
        stale = [
            cache / f".tiny-abc.net.xml.gz.pid{dead}-x1.tmp.net.xml.gz",
            sumo / f".demand-pid{dead}-x2",
            sumo / f".live-pid{dead}-x3",
            systmp / f"evroute-sumo-pid{dead}-x4",
            systmp / f"evroute-live-pid{dead}-x5",
            sumo / ".demand-legacy1",  # no pid (older evroute), two days old
            cache / ".monaco-1234.net.xml.gz.legacy2.tmp.net.xml.gz",
        ]
        kept = [
            sumo / f".demand-pid{live.pid}-y1",  # another process, still running
            systmp / f"evroute-sumo-pid{live.pid}-y2",
            systmp / f"evroute-live-pid{os.getpid()}-y3",  # this process
            sumo / ".demand-legacy3",  # no pid, fresh: may belong to a running older evroute
            systmp / "someone-elses-pid1-dir",  # not evroute's
            cache / "tiny-keep.net.xml.gz",  # a cache entry, not a temp file
        ]
        for p in stale + kept:
            if "demand" in p.name or "live" in p.name or "sumo-" in p.name or "dir" in p.name:
                p.mkdir()
                (p / "routes.rou.xml").write_text("<routes/>")
            else:
                p.write_bytes(b"\x1f\x8b partial")
        two_days_ago = time.time() - 2 * 86400
        for p in (sumo / ".demand-legacy1", cache / ".monaco-1234.net.xml.gz.legacy2.tmp.net.xml.gz"):
            os.utime(p, (two_days_ago, two_days_ago))
        _load()  # the next start: loading a network cleans the network cache, its sumo folder and the temp folder
        assert [p.name for p in stale if p.exists()] == []
        assert [p.name for p in kept if not p.exists()] == []
    finally:
        live.kill()
        live.wait()
    from evroute.network.cachefiles import clean_stale_temps

    gone = sorted(p.name for p in clean_stale_temps([sumo]))  # its process is dead now: its temps go too
    assert gone == [f".demand-pid{live.pid}-y1", f"evroute-sumo-pid{live.pid}-y2"]


@pytest.mark.slow
def test_concurrent_first_loads_build_once(cache: Path, tmp_path: Path) -> None:
    """Three processes load the same network into an empty cache at once: all succeed, one entry, no temp left."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVROUTE_CACHE": str(cache), "TMPDIR": str(tmp_path / "systmp")}
    code = (
        "import sys, warnings; warnings.simplefilter('error', UserWarning);"
        "from evroute.network.registry import load_network; print(load_network(sys.argv[1]).n_edges)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(TINY_OSM)], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0] and len(set(outs)) == 1  # no "rebuilding" warning either
    assert len(list(cache.glob("tiny-*.net.xml.gz"))) == 1
    assert not [p for p in cache.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")]


@pytest.mark.slow
def test_damaged_demand_is_regenerated(tmp_path: Path) -> None:
    from evroute.network.netconvert import osm_to_sumo
    from evroute.sumo.scenario import background_demand

    net = osm_to_sumo(TINY_OSM, tmp_path / "tiny.net.xml")
    kw: dict[str, Any] = {
        "peak_per_hour": 360.0,
        "hours": (8, 9),
        "seed": 1,
        "min_distance_m": 0,
        "cache_dir": tmp_path / "sumo",
    }
    a = background_demand(net, **kw)
    good = a.read_text()
    a.write_text(good.replace('depart="', 'depart="1', 1))  # edited: still valid XML
    with pytest.warns(UserWarning, match=r"cached demand .* not used, its content does not match"):
        b = background_demand(net, **kw)

    def vehicles(text: str) -> list[str]:  # the header comment carries the generation time
        return [ln for ln in text.splitlines() if "<vehicle" in ln or "<route" in ln]

    assert b == a and vehicles(b.read_text()) == vehicles(good) and len(vehicles(good)) > 10  # seeded: the same


def test_damaged_download_in_the_cache_is_fetched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import shutil

    from evroute.network import registry

    good = TINY_OSM.read_bytes()
    ds = registry.Dataset(
        "tinyset", "tiny.osm", "owner/repo", "0" * 40, "tiny.osm", hashlib.sha256(good).hexdigest(), True
    )
    monkeypatch.setitem(registry.DATASETS, "tinyset", ds)
    monkeypatch.delenv("EVROUTE_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(registry, "_download", lambda url, dest, timeout_s=120.0: shutil.copy(TINY_OSM, dest))
    p = registry.default_data_dir() / "tiny.osm"
    assert str(p).startswith(str(tmp_path))
    p.parent.mkdir(parents=True)
    p.write_bytes(good[: len(good) // 2])  # a truncated download
    with pytest.warns(UserWarning, match="does not match its pinned checksum"):
        got = registry.dataset_path("tinyset")
    assert got == p and p.read_bytes() == good
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert registry.dataset_path("tinyset") == p  # healed
    p.write_bytes(good.replace(b"residential", b"motorway"))  # edited, offline now
    monkeypatch.setattr(registry, "_download", lambda *a, **k: (_ for _ in ()).throw(OSError("network is down")))
    with pytest.warns(UserWarning), pytest.raises(DataError, match="is damaged and could not be downloaded again"):
        registry.dataset_path("tinyset")


def test_folder_entries_and_companion_files_heal(tmp_path: Path) -> None:
    """The shapes of the SUMO caches: a folder of states (live) and a data file with its metadata (replay day)."""
    from evroute.network.cachefiles import cached

    builds: list[str] = []

    def states(dest: Path) -> None:
        builds.append("states")
        tmp = tmp_path / ".live-tmp"
        tmp.mkdir()
        for k in range(3):
            (tmp / f"state_{k:05d}.xml.gz").write_bytes(gzip.compress(f"<state t='{k}'/>".encode()))
        os.replace(tmp, dest)

    folder = tmp_path / "net-live-abc"
    inputs = {"kind": "live-snapshots", "times": [0, 60, 120]}
    assert cached(folder, inputs, states, "SUMO states") == folder and builds == ["states"]
    assert cached(folder, inputs, states, "SUMO states") == folder and builds == ["states"]  # verified, not rebuilt
    (folder / "state_00001.xml.gz").write_bytes(b"")  # one state truncated
    with pytest.warns(UserWarning, match=r"cached SUMO states .*net-live-abc not used, its content does not match"):
        cached(folder, inputs, states, "SUMO states")
    assert builds == ["states", "states"] and gzip.decompress((folder / "state_00001.xml.gz").read_bytes())
    (folder / "state_00002.xml.gz").unlink()  # one state missing
    with pytest.warns(UserWarning, match="does not match"):
        cached(folder, inputs, states, "SUMO states")
    assert len(builds) == 3 and (folder / "state_00002.xml.gz").is_file()

    data, meta = tmp_path / "net-day-abc.parquet", tmp_path / "net-day-abc.json"

    def day(dest: Path) -> None:
        builds.append("day")
        meta.write_text(json.dumps({"traversals": 3}))
        dest.write_bytes(b"PAR1 three traversals PAR1")

    cached(data, {"kind": "replay-day"}, day, "recorded day", companions=[meta])
    meta.write_text(json.dumps({"traversals": 4}))  # the metadata edited, the data untouched
    with pytest.warns(UserWarning, match="recorded day .* does not match"):
        cached(data, {"kind": "replay-day"}, day, "recorded day", companions=[meta])
    assert json.loads(meta.read_text()) == {"traversals": 3} and builds.count("day") == 2
    meta.unlink()
    with pytest.warns(UserWarning, match="a file written with it is missing"):
        cached(data, {"kind": "replay-day"}, day, "recorded day", companions=[meta])
    assert meta.is_file() and builds.count("day") == 3
