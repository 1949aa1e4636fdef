"""Convert OpenStreetMap XML to a SUMO ``.net.xml`` with SUMO's ``netconvert``.

The default option set (:data:`NETCONVERT_OPTIONS`) keeps the roads passenger cars may use, joins
clustered junctions into one, reads node ``ele`` tags as elevation and removes geometry-only nodes.
Bridges and tunnels (ways tagged ``bridge``, ``tunnel`` or a non-zero ``layer``) keep their tags as edge
params and are never joined with the roads before and after them (``--geometry.remove`` alone merges a tunnel
with its approach roads into one edge carrying the tunnel's tags, so its portals vanish and the DEM is read on the
terrain above): their edges are listed in ``--geometry.remove.keep-edges.input-file`` (:func:`structure_way_edges`).
Posted speeds are resolved by :mod:`evroute.network.speeds` (tags, zone values, defaults by road class and
urban/rural context) and handed to netconvert as plain numbers in a copy of the input
(:func:`~evroute.network.speeds.write_resolved_osm`), so netconvert's own defaults (100 km/h on an untagged
primary road) never apply.  With netconvert 1.28 it reproduces the reference counts of the project's data files
(Monaco: 2,687 passenger edges / 6,618 turns, 2,675 / 6,606 with netconvert's own speed defaults, whose equal
speeds let it join more consecutive ways; Luxembourg: 5,695 / 16,172).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evroute.errors import DataError

#: Options always passed to netconvert (besides input/output and the optional ones below).
NETCONVERT_OPTIONS: tuple[str, ...] = (
    "--keep-edges.by-vclass",
    "passenger",
    "--geometry.remove",
    "true",
    # bridge/tunnel tags as edge <param>s: their elevations are interpolated, not draped (evroute.network.elevation)
    "--osm.all-attributes",
    "true",
    "--osm.extra-attributes",
    "bridge,tunnel,layer",
)


def structure_way_edges(osm_path: str | os.PathLike[str]) -> list[str]:
    """Netconvert edge ids that the bridge/tunnel/layer ways of an OSM XML file (plain or ``.gz``) can get.

    Netconvert names the edges of way ``W`` ``W`` / ``-W`` (reverse direction) or, split at junctions,
    ``W#k`` / ``-W#k`` with ``k`` below the number of its nodes; all are listed (unknown ids are ignored).
    An unreadable file gives ``[]`` (netconvert then reports the error).
    """
    import xml.etree.ElementTree as ET

    from defusedxml.ElementTree import iterparse

    from evroute.network.elevation import is_structure
    from evroute.network.xmlguard import open_limited

    p = Path(osm_path)
    ids: list[str] = []
    try:
        with open_limited(p) as fh:  # plain, gzip or bzip2, within the decompression limits
            for _, el in iterparse(fh, events=("end",), forbid_dtd=True):
                if el.tag == "way":
                    tags = {t.get("k", ""): t.get("v", "") for t in el.iter("tag")}
                    if "highway" in tags and is_structure(tags):
                        wid, n = el.get("id", ""), len(el.findall("nd"))
                        for base in (wid, f"-{wid}"):
                            ids += [base, *(f"{base}#{k}" for k in range(max(n - 1, 1)))]
                    el.clear()
                elif el.tag in ("node", "relation"):
                    el.clear()
    except (ET.ParseError, OSError, EOFError, ValueError, DataError):  # defusedxml's refusals are ValueErrors
        return []
    return ids


def sumo_wheel_home() -> Path | None:
    """Folder of the ``sumo`` package of the eclipse-sumo wheel, found *without importing it*.

    Importing ``sumo`` points ``PROJ_DATA``/``PROJ_LIB`` of the whole process at SUMO's own PROJ database,
    which breaks rasterio/pyproj CRS handling afterwards; so the package is only located, never imported.
    """
    try:
        spec = importlib.util.find_spec("sumo")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def netconvert_binary() -> Path:
    """Path of the ``netconvert`` executable: from the eclipse-sumo wheel, ``$SUMO_HOME/bin`` or ``PATH``.

    Raises:
        DataError: if netconvert cannot be found.
    """
    candidates: list[Path] = []
    wheel = sumo_wheel_home()
    if wheel is not None:
        candidates.append(wheel / "bin" / "netconvert")
    if os.environ.get("SUMO_HOME"):
        candidates.append(Path(os.environ["SUMO_HOME"]) / "bin" / "netconvert")
    for c in candidates:
        for exe in (c, c.with_suffix(".exe")):
            if exe.is_file() and os.access(exe, os.X_OK):
                return exe
    found = shutil.which("netconvert")
    if found:
        return Path(found)
    raise DataError("netconvert not found: install eclipse-sumo (pip install eclipse-sumo) or put SUMO's bin on PATH")


def netconvert_version() -> str:
    """Version of the eclipse-sumo wheel (or ``"unknown"``), recorded with every converted network."""
    import importlib.metadata as md

    for dist in ("eclipse-sumo", "sumolib"):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return "unknown"


def netconvert_options(
    *,
    elevation: bool = True,
    join_junctions: bool = True,
    extra_args: Sequence[str] = (),
    keep_edges_file: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The netconvert command-line options (without input and output files) used by :func:`osm_to_sumo`.

    ``keep_edges_file``: file of edge ids ``--geometry.remove`` must leave alone (the bridges and tunnels).
    """
    opts = list(NETCONVERT_OPTIONS)
    if keep_edges_file is not None:
        opts += ["--geometry.remove.keep-edges.input-file", str(keep_edges_file)]
    opts += ["--osm.elevation", "true" if elevation else "false"]
    if join_junctions:
        opts += ["--junctions.join", "true"]
    opts += [str(a) for a in extra_args]
    return opts


def _netconvert_env(exe: Path) -> dict[str, str]:
    """Environment for a netconvert child process: SUMO_HOME and, for the wheel's binary, its PROJ database."""
    env = dict(os.environ)
    home = exe.parent.parent
    env.setdefault("SUMO_HOME", str(home))
    proj = home / "data" / "proj"
    if proj.is_dir():  # the wheel's netconvert needs the PROJ database it was built with
        env["PROJ_DATA"] = env["PROJ_LIB"] = str(proj)
    return env


def error_line(output: str) -> str:
    """The line of a SUMO tool's ``output`` (stderr and stdout) that names the failure, for one-line errors."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    if errors:  # the first error names the cause; later ones are consequences ("No nodes loaded.")
        return errors[0]
    return lines[-1] if lines else "no output"


def _complete_net(path: Path) -> bool:
    """Whether a SUMO network file is whole: its XML ends with ``</net>`` (a gzip file must also decompress, within
    the decompression limits)."""
    from evroute.network.xmlguard import open_limited

    try:
        if path.suffix == ".gz":
            tail = b""
            with open_limited(path) as fh:
                while chunk := fh.read(1 << 20):
                    tail = (tail + chunk)[-64:]
        else:
            with path.open("rb") as fh:
                fh.seek(max(0, path.stat().st_size - 64))
                tail = fh.read()
    except (OSError, EOFError, DataError):
        return False
    return tail.rstrip().endswith(b"</net>")


def _speed_resolved_copy(src: Path, folder: Path) -> Path | None:
    """A temporary copy of OSM XML ``src`` in ``folder`` whose drivable ways carry their resolved posted speeds
    (:func:`evroute.network.speeds.write_resolved_osm`; the caller deletes it), or None for a file that does not
    parse (netconvert then names the problem on the original)."""
    import xml.etree.ElementTree as ET

    from evroute.network.cachefiles import temp_prefix
    from evroute.network.speeds import write_resolved_osm

    fd, name = tempfile.mkstemp(prefix=temp_prefix(".evroute-speeds-"), suffix=".osm", dir=folder)
    os.close(fd)
    try:
        write_resolved_osm(src, name)
    except (ET.ParseError, OSError, EOFError, ValueError):
        Path(name).unlink(missing_ok=True)
        return None
    return Path(name)


def osm_to_sumo(
    osm_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    elevation: bool = True,
    join_junctions: bool = True,
    extra_args: Sequence[str] = (),
    timeout_s: float = 900.0,
) -> Path:
    """Convert an OSM XML file (``.osm``, ``.osm.gz`` or ``.osm.bz2``) to a SUMO network file.

    The output (``.net.xml``, or gzip-compressed when ``out_path`` ends in ``.gz``) is written to a
    temporary file next to ``out_path`` and moved into place only when netconvert succeeds.

    Args:
        osm_path: OpenStreetMap XML input.
        out_path: SUMO network to write.
        elevation: read node ``ele`` tags as junction/shape z (``--osm.elevation``).
        join_junctions: join junction clusters (``--junctions.join``).
        extra_args: further netconvert options, appended last (they override the defaults).
        timeout_s: give up after this many seconds.

    Returns:
        ``out_path`` as a :class:`~pathlib.Path`.

    Raises:
        DataError: if the input is missing, netconvert is missing, or netconvert fails (with its first error line).
    """
    src = Path(osm_path)
    out = Path(out_path)
    if not src.is_file():
        raise DataError(f"OSM file not found: {src}")
    exe = netconvert_binary()
    out.parent.mkdir(parents=True, exist_ok=True)
    from evroute.network.cachefiles import temp_prefix

    fd, tmp_name = tempfile.mkstemp(
        prefix=temp_prefix(f".{out.name}."), suffix=".tmp" + "".join(out.suffixes[-3:]), dir=out.parent
    )
    os.close(fd)
    tmp_out = Path(tmp_name)
    tmp_in: Path | None = None
    keep_file: Path | None = None
    resolved: Path | None = None
    try:
        from evroute.network.xmlguard import check_xml_file, decompress_to, is_compressed

        if is_compressed(src):  # netconvert reads no bzip2, and would inflate gzip without any limit
            fd, name = tempfile.mkstemp(prefix=temp_prefix(".evroute-"), suffix=".osm", dir=out.parent)
            os.close(fd)
            tmp_in = Path(name)
            decompress_to(src, tmp_in, "OpenStreetMap file")  # checked (no DTD, limits) as it is written
        else:
            check_xml_file(src, "OpenStreetMap file")  # no DOCTYPE / ENTITY ever reaches netconvert's Xerces
        resolved = _speed_resolved_copy(tmp_in or src, out.parent)
        keep = structure_way_edges(tmp_in or src)
        if keep:
            fd, name = tempfile.mkstemp(prefix=temp_prefix(".evroute-keep-"), suffix=".txt", dir=out.parent)
            with os.fdopen(fd, "w") as fh:
                fh.write("\n".join(keep) + "\n")
            keep_file = Path(name)
        opts = netconvert_options(
            elevation=elevation, join_junctions=join_junctions, extra_args=extra_args, keep_edges_file=keep_file
        )
        cmd = [
            str(exe),
            "--osm-files",
            str(resolved or tmp_in or src),
            *opts,
            "-o",
            str(tmp_out),
            "--xml-validation",  # never fetch or read a schema an input names (the output does not depend on it)
            "never",
        ]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, env=_netconvert_env(exe), check=False
            )
        except subprocess.TimeoutExpired:
            raise DataError(f"netconvert timed out after {timeout_s:g} s converting {src}") from None
        except OSError as exc:
            raise DataError(f"cannot run netconvert {exe}: {exc}") from None
        if proc.returncode != 0 or not tmp_out.is_file() or tmp_out.stat().st_size == 0:
            line = error_line(proc.stderr + "\n" + proc.stdout)
            raise DataError(f"netconvert failed on {src}: {line}")
        if not _complete_net(tmp_out):  # e.g. a full disk: never move a truncated network into place
            raise DataError(f"netconvert wrote an incomplete network for {src} (disk full?); nothing was written")
        from evroute.io import umask_mode

        os.chmod(tmp_out, umask_mode())  # mkstemp creates 0600 files
        os.replace(tmp_out, out)
    finally:
        tmp_out.unlink(missing_ok=True)
        for tmp in (tmp_in, keep_file, resolved):
            if tmp is not None:
                tmp.unlink(missing_ok=True)
    return out
