"""The front door of every XML file evroute or its tools (netconvert, sumo, sumolib, osmnx) read: no DTD, no bomb.

:func:`check_xml_file` streams a file (plain, gzip or bzip2, recognised by its first bytes, not its name: SUMO's
zlib reader inflates a gzip file whatever it is called) through the decompression limits below and refuses it with
one line, **before** any parser sees it, when

* it declares a document type or an entity (``<!DOCTYPE`` / ``<!ENTITY`` anywhere in the file, any case): that is
  how external DTDs and entities (``file:///etc/passwd`` copied into a tag, which netconvert's Xerces parser
  resolves) and entity expansion bombs ("billion laughs") get in.  OSM and SUMO files never need one;
* its encoding is not ASCII-compatible (UTF-16/32, EBCDIC) or its XML declaration names another encoding than UTF-8,
  ASCII, ISO-8859-x or windows-125x: in those the byte scan could not see a declaration, so they are refused;
* it does not start with ``<`` (after a UTF-8 byte-order mark and whitespace): not XML, or compressed by a method
  evroute does not decompress itself (xz, zstd, ...);
* it decompresses to more than the size limit, or to more than the ratio limit times the compressed bytes read.

**Limits** (:func:`decompression_limits`), read from the environment on every call:

* ``EVROUTE_MAX_DECOMPRESSED``: most bytes one compressed file may expand to (default :data:`DEFAULT_MAX_BYTES`,
  8 GiB; a number of bytes with an optional ``K``/``M``/``G``/``T`` binary suffix, e.g. ``512M``);
* ``EVROUTE_MAX_RATIO``: most decompressed bytes per compressed byte (default :data:`DEFAULT_MAX_RATIO`, 200; OSM
  XML compresses 10-30 fold), checked once :data:`RATIO_GRACE_BYTES` have come out.

The scan reads 1 MiB at a time, so its memory is bounded whatever the file; it stops at the first byte past a
limit.  A scan result is remembered per file (path, size, modification time, inode) for the process, so a file read
by several tools is scanned once.  :func:`decompress_to` writes the checked content to a file (netconvert reads
neither bzip2 nor, with the limits applied, gzip itself); a refused file leaves nothing behind.
"""

from __future__ import annotations

import bz2
import gzip
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, cast

from evroute.errors import DataError, ParameterError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_RATIO",
    "Limits",
    "check_xml_file",
    "decompress_to",
    "decompression_limits",
    "open_limited",
]

#: Default of ``EVROUTE_MAX_DECOMPRESSED``: 8 GiB (Luxembourg's OSM file is 1.9 MB, a whole country's some GB).
DEFAULT_MAX_BYTES = 8 << 30
#: Default of ``EVROUTE_MAX_RATIO``.
DEFAULT_MAX_RATIO = 200.0
#: Output below this many bytes is never refused for its ratio (headers make small files' ratios meaningless).
RATIO_GRACE_BYTES = 1 << 20
CHUNK = 1 << 20
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DECL = re.compile(rb"<!\s*(?:doctype|entity)", re.IGNORECASE)
_ENCODING = re.compile(rb"""^<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_ASCII_COMPATIBLE = re.compile(r"^(utf-?8|(us-)?ascii|iso[-_]?8859-\d+|latin-?\d|windows-125\d|cp125\d)$", re.I)
_OVERLAP = 64  # bytes kept between chunks so that a declaration split across two chunks is still seen
_scanned: dict[tuple[str, int, int, int, Limits], None] = {}


@dataclass(frozen=True)
class Limits:
    """Decompression limits: ``max_bytes`` of output, ``max_ratio`` output bytes per input byte."""

    max_bytes: int
    max_ratio: float


def _parse_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m or float(m.group(1)) <= 0:
        raise ParameterError(f"EVROUTE_MAX_DECOMPRESSED must be a positive size such as 512M or 8G, got {text!r}")
    return int(float(m.group(1)) * _SUFFIX[m.group(2).upper()])


def decompression_limits() -> Limits:
    """The limits in force (see the module docstring); a malformed variable is a :class:`ParameterError`."""
    size = os.environ.get("EVROUTE_MAX_DECOMPRESSED", "").strip()
    ratio_text = os.environ.get("EVROUTE_MAX_RATIO", "").strip()
    try:
        ratio = float(ratio_text) if ratio_text else DEFAULT_MAX_RATIO
    except ValueError:
        ratio = -1.0
    if not ratio >= 1.0 or ratio == float("inf"):
        raise ParameterError(f"EVROUTE_MAX_RATIO must be a finite number >= 1, got {ratio_text!r}")
    return Limits(_parse_bytes(size) if size else DEFAULT_MAX_BYTES, ratio)


def _size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover - the loop returns


class _Counting:
    """A raw file whose reads are counted (the compressed bytes consumed)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh, self.n = fh, 0

    def read(self, size: int = -1) -> bytes:
        data = self.fh.read(size)
        self.n += len(data)
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:  # the owner closes ``fh``
        pass


class LimitedReader:
    """Decompressed bytes of a file, refusing (:class:`DataError`) to produce more than its :class:`Limits` allow."""

    def __init__(self, path: Path, raw: _Counting, stream: gzip.GzipFile | bz2.BZ2File | None, limits: Limits) -> None:
        self.path, self.raw, self.stream, self.limits, self.out = path, raw, stream, limits, 0

    def read(self, size: int = CHUNK) -> bytes:
        if self.stream is None:  # plain file: nothing to limit
            return self.raw.read(size)
        try:  # never more than one byte past the size limit: the bomb stops within it
            data = self.stream.read(max(1, min(size, self.limits.max_bytes + 1 - self.out)))
        except (OSError, EOFError, ValueError) as exc:
            raise DataError(f"{self.path}: cannot decompress ({exc})") from None
        self.out += len(data)
        lim = self.limits
        if self.out > lim.max_bytes:
            raise DataError(
                f"{self.path}: decompresses to more than {_size_text(lim.max_bytes)}, the limit "
                "(EVROUTE_MAX_DECOMPRESSED); refused as a decompression bomb"
            )
        if self.out > RATIO_GRACE_BYTES and self.out > lim.max_ratio * max(self.raw.n, 1):
            raise DataError(
                f"{self.path}: decompresses more than {lim.max_ratio:g}-fold, the limit (EVROUTE_MAX_RATIO); "
                "refused as a decompression bomb"
            )
        return data


def compression(head: bytes) -> str:
    """``"gzip"``, ``"bzip2"`` or ``""`` (plain) from a file's first bytes."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    return ""


@contextmanager
def open_limited(path: str | os.PathLike[str], limits: Limits | None = None) -> Iterator[LimitedReader]:
    """The decompressed content of ``path`` (gzip / bzip2 / plain by its first bytes) under ``limits`` (default
    :func:`decompression_limits`); :class:`DataError` when the file cannot be opened."""
    p = Path(path)
    lim = limits or decompression_limits()
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise DataError(f"cannot read {p}: {exc.strerror or exc}") from None
    with fh:
        kind = compression(fh.read(4))
        fh.seek(0)
        raw = _Counting(fh)
        stream: gzip.GzipFile | bz2.BZ2File | None = None
        if kind == "gzip":
            stream = gzip.GzipFile(fileobj=cast(BinaryIO, raw), mode="rb")
        elif kind == "bzip2":
            stream = bz2.BZ2File(cast(BinaryIO, raw), mode="rb")
        try:
            yield LimitedReader(p, raw, stream, lim)
        finally:
            if stream is not None:
                stream.close()


class _Scanner:
    """Incremental checks of a file's bytes (see the module docstring); ``feed`` raises :class:`DataError`."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what, self.head, self.tail, self.started = path, what, b"", b"", False

    def _refuse(self, why: str) -> DataError:
        return DataError(f"{self.path}: {why}; refused before any XML parser read it ({self.what})")

    def _check_start(self, head: bytes) -> None:
        if head[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00") or head[:2] in (b"\xfe\xff", b"\xff\xfe"):
            raise self._refuse("UTF-16/UTF-32 XML is not accepted (use UTF-8)")
        if b"\x00" in head[:4]:
            raise self._refuse("UTF-16/UTF-32 XML is not accepted (use UTF-8)")
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        if not text.startswith(b"<"):
            raise self._refuse("not an XML file (it does not start with '<'; only plain, gzip and bzip2 are read)")
        m = _ENCODING.match(text)
        if m and not _ASCII_COMPATIBLE.match(m.group(1).decode("ascii")):
            raise self._refuse(f"XML encoding {m.group(1).decode('ascii')!r} is not accepted (use UTF-8)")

    def feed(self, data: bytes) -> None:
        if not self.started:
            self.head += data
            if len(self.head) < 256 and data:
                return
            self._check_start(self.head)
            self.started, data = True, self.head
        window = self.tail + data
        i = window.find(b"<!")  # rare in OSM/SUMO files (comments): a C-speed search, then the exact test
        while i != -1:
            if _DECL.match(window, i):
                raise self._refuse("a DOCTYPE / ENTITY declaration (external DTDs and entities are never loaded)")
            i = window.find(b"<!", i + 2)
        self.tail = window[-_OVERLAP:]

    def finish(self) -> None:
        if not self.started:
            if not self.head.strip():
                raise self._refuse("the file is empty")
            self.feed(b"")


def _stamp(p: Path) -> tuple[str, int, int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def _scan(path: Path, what: str, sink: IO[bytes] | None, limits: Limits | None) -> None:
    scanner = _Scanner(path, what)
    with open_limited(path, limits) as reader:
        while chunk := reader.read(CHUNK):
            scanner.feed(chunk)
            if sink is not None:
                sink.write(chunk)
    scanner.finish()


def check_xml_file(path: str | os.PathLike[str], what: str = "XML file", *, limits: Limits | None = None) -> Path:
    """``path`` after checking it is safe to hand to any XML parser (see the module docstring); returns it.

    Args:
        path: an XML file, plain, gzip or bzip2 compressed.
        what: what the file is, for the error (e.g. ``"OpenStreetMap file"``).
        limits: decompression limits (default :func:`decompression_limits`).

    Raises:
        DataError: one line naming the file and why it was refused (a declaration, an encoding, a limit).
    """
    p = Path(path)
    stamp = _stamp(p)
    lim = limits or decompression_limits()
    key = None if stamp is None else (*stamp, lim)
    if key is not None and key in _scanned:
        return p
    _scan(p, what, None, lim)
    if key is not None:
        _scanned[key] = None
    return p


def decompress_to(
    path: str | os.PathLike[str], dest: str | os.PathLike[str], what: str = "XML file", *, limits: Limits | None = None
) -> Path:
    """Check ``path`` as :func:`check_xml_file` does while writing its decompressed content to ``dest``; on any
    refusal ``dest`` is removed (nothing of a refused file is left) and the :class:`DataError` raised."""
    src, out = Path(path), Path(dest)
    try:
        with out.open("wb") as sink:
            _scan(src, what, sink, limits)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return out


def is_compressed(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is gzip or bzip2 compressed (by its first bytes)."""
    try:
        with open(path, "rb") as fh:
            return compression(fh.read(4)) != ""
    except OSError:
        return False
