"""Atomic file writes: a file is either absent, or complete (temp file in the same folder + ``os.replace``).

Files get the mode the user's umask gives a normal ``open`` (``0666 & ~umask``), not ``mkstemp``'s 0600.  A failed
write (full disk, read-only folder) removes its temp file and leaves the target as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def umask_mode(mode: int = 0o666) -> int:
    """``mode & ~umask``: the permissions ``open``/``mkdir`` would give a new file or folder."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mode & ~mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path.

    An :class:`OSError` (full disk, read-only folder) names ``path``, never the internal temp file."""
    p = Path(path)
    try:
        return _atomic_write_bytes(p, data)
    except OSError as exc:
        if exc.filename is not None and Path(exc.filename) in (p.parent, *p.parent.parents):
            raise  # a folder on the way is missing or not a folder: that folder is the news
        raise OSError(exc.errno, exc.strerror or str(exc), str(p)) from None


def _atomic_write_bytes(p: Path, data: bytes) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.pid{os.getpid()}-", suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
