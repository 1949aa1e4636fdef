"""``evroute data fetch`` goes through pooch (http downloads, checksum, atomic move) with platformdirs' cache folder."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pooch

import evroute.network.registry as registry
from evroute.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "tiny.osm.xml"


def test_default_folders_come_from_platformdirs(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.delenv("EVROUTE_DATA", raising=False)
    monkeypatch.delenv("EVROUTE_CACHE", raising=False)
    monkeypatch.setattr(platformdirs, "user_cache_path", lambda app, appauthor=None: tmp_path / "pd" / app)
    assert registry.default_data_dir() == tmp_path / "pd" / "evroute" / "data"
    assert registry.net_cache_dir() == tmp_path / "pd" / "evroute" / "nets"


def test_http_fetch_uses_pooch_and_verifies_the_checksum(tmp_path, monkeypatch, capsys):
    payload = FIXTURE.read_bytes()
    digest = hashlib.sha256(payload).hexdigest()
    monkeypatch.setitem(registry.DATASETS, "monaco", dataclasses.replace(registry.DATASETS["monaco"], sha256=digest))
    seen = []

    class FakeHTTP:  # stands in for the network; pooch still does the checksum and the move into place
        def __init__(self, **kw):
            seen.append(kw)

        def __call__(self, url, output_file, _pooch):
            seen.append(url)
            Path(output_file).write_bytes(payload)

    monkeypatch.setattr(pooch, "HTTPDownloader", FakeHTTP)
    retrieved = []
    real_retrieve = pooch.retrieve

    def retrieve(*a, **kw):
        retrieved.append(kw["known_hash"])
        return real_retrieve(*a, **kw)

    monkeypatch.setattr(pooch, "retrieve", retrieve)
    old = os.umask(0o022)
    try:
        assert main(["data", "fetch", "monaco", "--cache-dir", str(tmp_path / "d")]) == 0
    finally:
        os.umask(old)
    got = tmp_path / "d" / "monaco.osm"
    assert got.read_bytes() == payload and got.stat().st_mode & 0o777 == 0o644
    assert retrieved == [f"sha256:{digest}"] and registry.DATASETS["monaco"].url in seen
    assert sorted(p.name for p in got.parent.iterdir()) == ["monaco.osm"]
    # a tampered download: one-line error, nothing left behind
    got.unlink()
    payload = payload + b"<!-- changed -->"
    assert main(["data", "fetch", "monaco", "--cache-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checksum mismatch" in err
    assert list(got.parent.iterdir()) == []
