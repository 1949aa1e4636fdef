"""Issue 32 (part A): no XML file with a DTD or entity declaration reaches a parser or a SUMO tool, and no
decompression bomb gets past the configured limits (:mod:`evroute.network.xmlguard`).

Every case here failed at f62f65a: the external-DTD file loaded with exit 0 and the secret in the cached network, the
billion-laughs file hung netconvert, and the bombs decompressed without a limit.
"""

from __future__ import annotations

import bz2
import gzip
import subprocess
import tracemalloc
import zlib
from pathlib import Path

import pytest

from evroute.cli import main
from evroute.errors import DataError, ParameterError
from evroute.network.xmlguard import Limits, check_xml_file, decompress_to, decompression_limits, open_limited

SECRET = "s3cr3t-marker-root:x:0:0"

#: a tiny drivable OSM map: two ways between three nodes (the bridge tag copies an entity into a way param)
BODY = """<osm version="0.6">
 <node id="1" lat="49.6000" lon="6.1000"/>
 <node id="2" lat="49.6010" lon="6.1000"/>
 <node id="3" lat="49.6010" lon="6.1015"/>
 <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="primary"/><tag k="bridge" v="{value}"/></way>
 <way id="11"><nd ref="2"/><nd ref="3"/><tag k="highway" v="primary"/></way>
</osm>
"""


def _xxe_osm(tmp_path: Path) -> Path:
    """The audit's file: an external DTD declaring the OSM elements and an entity copying a local file."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    dtd = tmp_path / "evil.dtd"
    dtd.write_text(
        "<!ELEMENT osm ANY><!ELEMENT node ANY><!ELEMENT way ANY><!ELEMENT nd ANY><!ELEMENT tag ANY>\n"
        "<!ATTLIST osm version CDATA #IMPLIED><!ATTLIST node id CDATA #IMPLIED lat CDATA #IMPLIED lon CDATA #IMPLIED>\n"
        "<!ATTLIST way id CDATA #IMPLIED><!ATTLIST nd ref CDATA #IMPLIED>\n"
        "<!ATTLIST tag k CDATA #IMPLIED v CDATA #IMPLIED>\n"
        f'<!ENTITY % f SYSTEM "file://{secret}"><!ENTITY % e "<!ENTITY v \'%f;\'>">%e;\n'  # v: the file's text
    )
    osm = tmp_path / "evil.osm"
    osm.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE osm SYSTEM "{dtd}">\n' + BODY.format(value="&v;")
    )
    return osm


def _laughs(levels: int = 9) -> str:
    ents = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, levels + 1)]
    return '<?xml version="1.0"?>\n<!DOCTYPE osm [\n' + "\n".join(ents) + "\n]>\n" + BODY.format(value=f"&lol{levels};")


def _files_text(folder: Path) -> str:
    out = []
    for p in folder.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            out.append(
                gzip.decompress(data).decode(errors="replace") if data[:2] == b"\x1f\x8b" else data.decode("latin-1")
            )
    return "\n".join(out)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    c = tmp_path / "cache"
    monkeypatch.setenv("EVROUTE_CACHE", str(c))
    return c


def test_external_dtd_osm_is_refused_before_netconvert_runs(tmp_path, cache, monkeypatch, capsys):
    osm = _xxe_osm(tmp_path)
    ran: list[object] = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a) or real_run(*a, **k))
    assert main(["run", "--network", str(osm), "--horizon", "1", "--seeds", "1", "--no-progress",
                 "--out", str(tmp_path / "out")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("evroute: error: ")
    assert str(osm) in err and "DOCTYPE" in err and "refused" in err
    assert not ran  # netconvert never started
    assert SECRET not in _files_text(cache) if cache.exists() else True
    assert not (tmp_path / "out").exists()


def test_external_dtd_refused_by_convert_and_the_osmnx_loader(tmp_path, cache, capsys):
    osm = _xxe_osm(tmp_path)
    out = tmp_path / "net.net.xml"
    assert main(["data", "convert", str(osm), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DOCTYPE" in err and "refused" in err
    assert not out.exists() and not list(tmp_path.glob(".*tmp*"))
    from evroute.network.osm import load_osm

    with pytest.raises(DataError, match="DOCTYPE"):
        load_osm(osm)


def test_billion_laughs_is_refused_not_hanging(tmp_path, cache):
    from evroute.network.netconvert import osm_to_sumo

    osm = tmp_path / "laughs.osm"
    osm.write_text(_laughs())
    # at f62f65a netconvert expands the entities until the timeout: the message would be "timed out"
    with pytest.raises(DataError, match=r"DOCTYPE / ENTITY declaration.*refused"):
        osm_to_sumo(osm, tmp_path / "x.net.xml", timeout_s=20)
    assert not (tmp_path / "x.net.xml").exists()


@pytest.mark.parametrize("name", ["evil.osm.gz", "evil.osm.bz2", "gzip-named-plain.osm"])
def test_compressed_doctype_is_seen_through_the_compression(tmp_path, cache, name):
    """A declaration inside a compressed file (named by its suffix or not: SUMO inflates gzip whatever its name)."""
    text = _laughs().encode()
    data = bz2.compress(text) if name.endswith(".bz2") else gzip.compress(text)
    p = tmp_path / name
    p.write_bytes(data)
    from evroute.network.registry import load_network

    with pytest.raises(DataError, match="DOCTYPE"):
        load_network(p if name.endswith((".gz", ".bz2")) else p)


@pytest.mark.parametrize(
    "head",
    [
        '<!DOCTYPE net [<!ENTITY x "y">]>\n',  # internal subset
        '<!doctype net SYSTEM "http://example.invalid/x.dtd">\n',  # other case, remote DTD
        '<!-- a comment first -->\n<!DOCTYPE net SYSTEM "/etc/passwd">\n',
    ],
)
def test_sumo_net_with_a_doctype_is_refused_before_sumolib(tmp_path, head, capsys):
    net = tmp_path / "x.net.xml"
    net.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + head + '<net version="1.20"></net>\n')
    assert main(["run", "--network", str(net), "--horizon", "1", "--seeds", "1", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DOCTYPE" in err and str(net) in err


def test_route_fcd_and_gpx_files_with_a_doctype_are_refused(tmp_path):
    from evroute.sumo.scenario import check_route_file
    from evroute.traces.formats import read_sumo_fcd, read_trace_gpx

    dtd = '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'
    rou = tmp_path / "r.rou.xml"
    rou.write_text(dtd + '<routes><vehicle id="a" depart="0"><route edges="&e;"/></vehicle></routes>\n')
    with pytest.raises(DataError, match="DOCTYPE"):
        check_route_file(rou)
    fcd, bat = tmp_path / "fcd.xml", tmp_path / "bat.xml"
    fcd.write_text(dtd + '<fcd-export><timestep time="0"><vehicle id="&e;" x="1" y="2"/></timestep></fcd-export>\n')
    bat.write_text('<battery-export><timestep time="0"></timestep></battery-export>\n')
    with pytest.raises(DataError, match="DOCTYPE"):
        read_sumo_fcd(fcd, bat)
    gpx = tmp_path / "t.gpx"
    gpx.write_text(dtd + '<gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="2"><name>&e;</name></trkpt>'
                   "</trkseg></trk></gpx>\n")  # fmt: skip
    with pytest.raises(DataError, match="DOCTYPE"):
        read_trace_gpx(gpx)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ('<?xml version="1.0"?><!DOCTYPE osm [<!ENTITY a "b">]><osm/>'.encode("utf-16"), "UTF-16"),
        (b'<?xml version="1.0" encoding="UTF-16"?><osm/>', "encoding 'UTF-16'"),
        (b"\xfd7zXZ\x00 not xml", "not an XML file"),
        (b"", "empty"),
    ],
)
def test_encodings_that_would_hide_a_declaration_are_refused(tmp_path, data, why):
    p = tmp_path / "x.osm"
    p.write_bytes(data)
    with pytest.raises(DataError, match=why):
        check_xml_file(p)


def test_real_files_pass_unchanged(tmp_path):
    p = tmp_path / "ok.osm.gz"
    p.write_bytes(gzip.compress(('<?xml version="1.0" encoding="UTF-8"?>\n' + BODY.format(value="yes")).encode()))
    assert check_xml_file(p) == p
    out = decompress_to(p, tmp_path / "ok.osm")
    assert out.read_text().endswith("</osm>\n")


# ------------------------------------------------------------------------------------------- decompression bombs
BOMB_MB = 40


def _bomb(path: Path) -> Path:
    """``BOMB_MB`` MB of whitespace inside an <osm> element, compressed (gzip or bzip2 by the suffix): ~40 kB."""
    blank = b" " * (1 << 20)
    c = bz2.BZ2Compressor(9) if path.suffix == ".bz2" else zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip
    parts = [c.compress(b"<osm>")] + [c.compress(blank) for _ in range(BOMB_MB)] + [c.compress(b"</osm>"), c.flush()]
    path.write_bytes(b"".join(parts))
    assert path.stat().st_size < (BOMB_MB << 20) / 200  # a real bomb: over 200-fold
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bomb.osm.gz", "bomb.osm.bz2"])
def test_osm_bomb_stops_at_the_size_limit_in_bounded_memory(tmp_path, cache, monkeypatch, capsys, name):
    bomb = _bomb(tmp_path / name)
    monkeypatch.setenv("EVROUTE_MAX_DECOMPRESSED", "4M")
    monkeypatch.setenv("EVROUTE_MAX_RATIO", "100000")  # only the size limit
    assert decompression_limits() == Limits(4 << 20, 100000.0)
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"more than 4\.0 MiB, the limit \(EVROUTE_MAX_DECOMPRESSED\)") as exc:
            from evroute.network.netconvert import osm_to_sumo

            osm_to_sumo(bomb, cache / "x.net.xml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(bomb) in str(exc.value)
    with open_limited(bomb) as reader, pytest.raises(DataError):
        while reader.read():
            pass
    assert reader.out == (4 << 20) + 1  # stopped one byte past the limit (40 MB would come out at f62f65a)
    # the scan holds one 1 MiB chunk (plus the window); 40 MB would be read at f62f65a
    assert peak < 8 << 20, peak
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == []  # nothing left behind
    capsys.readouterr()
    assert main(["data", "convert", str(bomb), str(tmp_path / "y.net.xml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "EVROUTE_MAX_DECOMPRESSED" in err and str(bomb) in err


def test_bomb_stops_at_the_ratio_limit(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "bomb.net.xml.gz")
    monkeypatch.setenv("EVROUTE_MAX_RATIO", "50")
    with pytest.raises(DataError, match=r"more than 50-fold, the limit \(EVROUTE_MAX_RATIO\)"):
        check_xml_file(bomb)


def test_net_bomb_is_refused_by_the_sumo_loader(tmp_path, monkeypatch, capsys):
    bomb = _bomb(tmp_path / "bomb.net.xml.gz")
    monkeypatch.setenv("EVROUTE_MAX_DECOMPRESSED", "2M")
    monkeypatch.setenv("EVROUTE_MAX_RATIO", "100000")
    assert main(["run", "--network", str(bomb), "--horizon", "1", "--seeds", "1", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2.0 MiB" in err and "EVROUTE_MAX_DECOMPRESSED" in err


@pytest.mark.parametrize(("var", "value"), [("EVROUTE_MAX_DECOMPRESSED", "lots"), ("EVROUTE_MAX_RATIO", "0.5")])
def test_malformed_limits_are_one_line_errors(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ParameterError, match=var):
        decompression_limits()
