"""OpenStreetMap ``.osm.pbf`` input: convert to OSM XML with pyosmium (``osmium`` on PyPI), which both loaders read.

netconvert and osmnx read OSM XML only, so a ``.osm.pbf`` file is converted once (libosmium, C++ speed) and the
XML is cached next to the converted networks, keyed by the PBF's SHA-256.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evroute.errors import DataError

PBF_SUFFIX = ".osm.pbf"


def pbf_to_osm(pbf_path: str | os.PathLike[str], out_path: str | os.PathLike[str]) -> Path:
    """Write the nodes, ways and relations of ``pbf_path`` to the OSM XML file ``out_path`` (atomically).

    Raises:
        DataError: if the input is missing or is not a readable OSM PBF file.
    """
    import osmium

    src, out = Path(pbf_path), Path(out_path)
    if not src.is_file():
        raise DataError(f"OSM PBF file not found: {src}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        from evroute.network.cachefiles import temp_prefix

        fd, name = tempfile.mkstemp(prefix=temp_prefix(f".{out.name}."), suffix=".tmp.osm", dir=out.parent)
    except OSError as exc:
        raise DataError(f"cannot write {out}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        writer = osmium.SimpleWriter(str(tmp), overwrite=True)
        try:
            osmium.apply(str(src), writer)
        except (RuntimeError, OSError, ValueError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise DataError(f"malformed OSM PBF file {src}: {msg}") from None
        finally:
            writer.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
