"""Atomic file writes: a file is either absent, or complete (temp file in the same folder + ``os.replace``).

Files get the mode the user's umask gives a normal ``open`` (``0666 & ~umask``), not ``mkstemp``'s 0600.  A failed
write (full disk, read-only folder) removes its temp file and leaves the target as it was.
"""

from __future__ import annotations

import errno
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

    An :class:`OSError` (full disk, read-only folder) names ``path``, never the internal temp file.  A ``path`` that
    is a device, FIFO or socket (``/dev/null``, ``/dev/full``) is refused, not replaced by a regular file (which a
    command run as root would otherwise do)."""
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():  # a device, FIFO or socket: never replaced by a file
        raise OSError(errno.EPERM, "not a regular file (a device, pipe or socket is never replaced)", str(p))
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
    """Strict JSON (:func:`dumps_strict`: a non-finite number is written ``null``, never ``NaN``)."""
    return atomic_write_text(path, dumps_strict(obj, indent=2, sort_keys=True, default=str) + "\n")


def parse_json(text: str | bytes, what: str) -> Any:
    """``json.loads(text)`` for JSON a user handed over: malformed JSON, JSON nested too deeply for the parser (a
    ``RecursionError`` at about 1,000 levels on CPython) and bytes that are not UTF-8 are one-line
    :class:`~evroute.errors.DataError` naming ``what`` (e.g. the file), never a traceback."""
    from evroute.errors import DataError

    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(f"{what}: JSON nested too deeply to read") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{what}: not valid JSON ({' '.join(str(exc).split())[:100]})") from None


def json_safe(obj: Any) -> Any:
    """``obj`` with every non-finite float (``nan``, ``inf``, also numpy floats) replaced by ``None`` and numpy
    scalars / arrays made plain Python, so that ``json.dumps(..., allow_nan=False)`` writes strict JSON (``null``,
    never ``NaN`` / ``Infinity``, which JSON does not have)."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps_strict(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`json_safe` ``(obj)`` with ``allow_nan=False``: strict JSON (non-finite -> ``null``)."""
    return json.dumps(json_safe(obj), allow_nan=False, **kwargs)


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The advisory lock file of ``path``: ``<lock folder>/<sha256 of path's absolute, resolved name>.lock``, the lock
    folder ``$EVROUTE_LOCKS``, else ``locks`` in the user cache (``$XDG_CACHE_HOME/evroute``), so no lock file lands
    beside a user's model or figures.  Processes of one user on one machine share it (two users, or two machines on
    a network share, are not serialized).  The file stays after release (deleting a lock file races with a process
    about to lock it); it holds no data."""
    import hashlib

    root = os.environ.get("EVROUTE_LOCKS", "").strip()
    if root:
        folder = Path(root).expanduser()
    else:
        import platformdirs

        folder = platformdirs.user_cache_path("evroute", appauthor=False) / "locks"
    digest = hashlib.sha256(str(Path(path).expanduser().resolve()).encode()).hexdigest()[:32]
    return folder / f"{digest}.lock"


def file_lock(path: str | os.PathLike[str], *, what: str = "") -> Any:
    """A context manager holding the advisory lock of ``path`` (:func:`lock_path`, :mod:`filelock`) while a command
    reads, changes and writes ``path``: two commands that write the same file (two ``evroute learn --model m.npz``, two
    ``--save-vehicle`` or ``plot`` runs) run one after the other, the second reading what the first wrote.  When
    another process holds the lock, one line ``evroute: waiting for <what> (locked by another evroute command)`` goes
    to stderr and the call blocks until the lock is free."""
    import contextlib
    import sys

    from filelock import FileLock, Timeout

    @contextlib.contextmanager
    def held() -> Any:
        target = Path(path)
        if not target.parent.is_dir():  # the write would fail: say so now, not after the wait
            raise OSError(errno.ENOENT, "No such file or directory", str(target.parent))
        lf = lock_path(target)
        lf.parent.mkdir(parents=True, exist_ok=True)
        with open(lf, "a"):  # a lock folder that is not writable: that OSError now, not a wait forever
            pass
        lock = FileLock(str(lf), mode=umask_mode(0o666))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            print(f"evroute: waiting for {what or path} (locked by another evroute command)", file=sys.stderr)
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    return held()
