"""Caches that heal: checksummed cache entries and the clean-up of temporary files left by interrupted runs.

**Entries.**  Every cached artefact (a file or a folder) has a manifest next to it, ``<entry>.manifest.json``:
the SHA-256 of the entry's content (a folder: of its files' relative paths and contents), the inputs that made
it (a JSON object: input checksums, parameters, program versions) and an HMAC-SHA256 of the entry's name, content
digest and inputs under this user's **cache key** (:func:`cache_key`).  :func:`cached` returns an entry only when
its manifest matches all three; an entry that is missing its manifest, truncated, corrupted, edited, made from other
inputs, or whose manifest was written without the key (rewritten by someone else, copied from another machine) is
removed and rebuilt with one :class:`UserWarning` line, never used.

What the key defends: someone who can write the cache folder but cannot read the key file (a shared or restored
cache folder, a cache archive handed over) cannot make an entry that is used.  What it cannot defend: anyone who can
read the key file (the user's own account) can forge entries; keep it private (it is created ``0600``).

A build runs under a lock (:mod:`filelock`, ``<entry>.lock``), so concurrent processes build an entry once and never
read one half-written; the entry is moved into place before its manifest is written, so a run killed in between
leaves an entry without a manifest, which the next run rebuilds.

**Temporary files.**  Temporary files and folders carry the id of the process that made them
(:func:`temp_prefix`: ``...pid<PID>-...``).  :func:`clean_stale_temps` removes those of processes that no longer
run (a live process's are kept, whoever it is), and legacy names without a pid once they are a day old; it runs
under a lock on the folder so that two cleaners do not race.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

MANIFEST_SUFFIX = ".manifest.json"
#: Version of the manifest format (2: authenticated with the cache key).
MANIFEST_VERSION = 2
#: Bytes of a new cache key.
KEY_BYTES = 32
#: Age (s) after which a temporary entry without a pid in its name (made by an older evroute) is removed.
LEGACY_TEMP_AGE_S = 24 * 3600.0
_PID = re.compile(r"pid(\d+)[-.]")
#: Names of temporary entries in a cache folder / the system temp folder that evroute made (with or without pid).
_CACHE_TEMP = re.compile(r"^\.(demand-|live-|evroute-|.+\.tmp)")
_SYSTEM_TEMP = re.compile(r"^evroute-(sumo|live|day)-")


def temp_prefix(kind: str) -> str:
    """Prefix for a temporary file/folder of this process, e.g. ``".demand-pid4242-"`` for ``".demand-"``."""
    return f"{kind}pid{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def _is_stale(path: Path, now: float) -> bool:
    m = _PID.search(path.name)
    if m:
        return not _pid_alive(int(m.group(1)))
    try:
        return now - path.lstat().st_mtime > LEGACY_TEMP_AGE_S
    except OSError:
        return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clean_stale_temps(folders: Iterable[str | os.PathLike[str]] | None = None) -> list[Path]:
    """Remove the temporary files/folders that interrupted evroute runs left in ``folders``.

    Args:
        folders: cache folders to clean (default: the network cache and its ``sumo`` folder); the system temp
            folder (``evroute-sumo-*``, ``evroute-live-*``, ``evroute-day-*``) is always cleaned.

    Returns:
        The paths removed.  An entry whose pid is alive is kept; one without a pid only once older than
        :data:`LEGACY_TEMP_AGE_S`.
    """
    from filelock import FileLock, Timeout

    if folders is None:
        from evroute.paths import net_cache_dir

        folders = [net_cache_dir(), net_cache_dir() / "sumo"]
    now = time.time()
    removed: list[Path] = []
    targets = [(Path(f), _CACHE_TEMP) for f in folders] + [(Path(tempfile.gettempdir()), _SYSTEM_TEMP)]
    for folder, pattern in targets:
        if not folder.is_dir():
            continue
        try:
            lock = FileLock(str(folder / ".evroute-clean.lock"), timeout=0)
            lock.acquire()
        except (Timeout, OSError):  # another process is cleaning, or the folder is read-only
            continue
        try:
            for p in folder.iterdir():
                if pattern.match(p.name) and not p.name.endswith(".lock") and _is_stale(p, now):
                    _remove(p)
                    removed.append(p)
        except OSError:
            pass
        finally:
            lock.release()
    return removed


def content_sha256(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    """Hex SHA-256 (or another :mod:`hashlib` ``algorithm``) of a file's bytes, or of a folder's files (sorted
    relative paths and contents)."""
    p = Path(path)
    h = hashlib.new(algorithm)
    files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            h.update(str(f.relative_to(p)).encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def cache_key_path() -> Path:
    """The cache key file: ``$EVROUTE_CACHE_KEY_FILE``, else ``cache.key`` in the user config folder of evroute
    (:mod:`platformdirs`; outside every cache folder, so that whoever can write a cache cannot read the key)."""
    if os.environ.get("EVROUTE_CACHE_KEY_FILE"):
        return Path(os.environ["EVROUTE_CACHE_KEY_FILE"]).expanduser()
    import platformdirs

    return platformdirs.user_config_path("evroute", appauthor=False) / "cache.key"


_KEYS: dict[Path, bytes] = {}


def cache_key() -> bytes:
    """This user's secret cache key (:data:`KEY_BYTES` random bytes), created ``0600`` on first use.  When the file
    cannot be read or created, a key of this process only is used (its entries are rebuilt by the next process)."""
    path = cache_key_path()
    if path in _KEYS:
        return _KEYS[path]
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    except OSError:
        key = secrets.token_bytes(KEY_BYTES)
        _KEYS[path] = key
        return key
    if len(key) < KEY_BYTES:
        key = secrets.token_bytes(KEY_BYTES)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
            # a hard link appears whole or not at all: a process racing this one never reads a half-written key
            os.link(tmp, path)
        except FileExistsError:  # another process made it meanwhile: its key, whole (or a short file, as it is)
            key = path.read_bytes() or key
        except OSError:
            pass  # a read-only config folder (or no hard links): this process's key
        finally:
            tmp.unlink(missing_ok=True)
    _KEYS[path] = key
    return key


def _mac(entry: Path, sha: str, inputs: Any) -> str:
    text = json.dumps([entry.name, sha, inputs], sort_keys=True, separators=(",", ":"))
    return hmac.new(cache_key(), text.encode(), hashlib.sha256).hexdigest()


def manifest_path(entry: str | os.PathLike[str]) -> Path:
    """``<entry>.manifest.json``."""
    e = Path(entry)
    return e.with_name(e.name + MANIFEST_SUFFIX)


def _canonical(inputs: dict[str, Any]) -> Any:
    return json.loads(json.dumps(inputs, sort_keys=True, default=str))


#: The content digest new manifests are checked by: BLAKE2b, a cryptographic hash about twice as fast as SHA-256 on
#: CPUs without SHA instructions (a served GP's 255 MB kernel: ~0.5 s instead of ~1.2 s at every start).  Manifests
#: also keep the SHA-256 digest and its MAC, which evroute before 0.x read, so both read the same cache; a manifest
#: with only SHA-256 (written before) is checked by it.
DIGEST = "blake2b"


def _entry_sha256(entry: Path, companions: Iterable[str | os.PathLike[str]], algorithm: str = "sha256") -> str:
    digests = [content_sha256(entry, algorithm), *(content_sha256(c, algorithm) for c in companions)]
    return digests[0] if len(digests) == 1 else hashlib.new(algorithm, "\0".join(digests).encode()).hexdigest()


def write_manifest(
    entry: str | os.PathLike[str], inputs: dict[str, Any], companions: Iterable[str | os.PathLike[str]] = ()
) -> Path:
    """Record the checksum of ``entry`` (and of its ``companions``, files written with it) and the ``inputs`` that
    made it; returns the manifest path."""
    from evroute.io import atomic_write_json

    e = Path(entry)
    sha = _entry_sha256(e, companions)
    fast = _entry_sha256(e, companions, DIGEST)
    canon = _canonical(inputs)
    return atomic_write_json(
        manifest_path(entry),
        {
            "version": MANIFEST_VERSION,
            "sha256": sha,
            "inputs": canon,
            "hmac": _mac(e, sha, canon),
            DIGEST: fast,
            f"hmac_{DIGEST}": _mac(e, f"{DIGEST}:{fast}", canon),
        },
    )


def check_entry(
    entry: str | os.PathLike[str], inputs: dict[str, Any], companions: Iterable[str | os.PathLike[str]] = ()
) -> str | None:
    """``None`` when ``entry`` (and its ``companions``) exist and match the manifest and ``inputs``; else why the
    entry cannot be used."""
    e = Path(entry)
    paths = [Path(c) for c in companions]
    if not e.exists():
        return "missing"
    if not all(c.exists() for c in paths):
        return "a file written with it is missing"
    try:
        man = json.loads(manifest_path(e).read_text())
    except FileNotFoundError:
        return "it has no checksum record"
    except (OSError, ValueError):
        return "its checksum record is unreadable"
    if not isinstance(man, dict) or man.get("version") != MANIFEST_VERSION:
        return "its checksum record is of another version"
    if man.get("inputs") != _canonical(inputs):
        return "it was made from other inputs"
    fast = DIGEST in man  # written by this version: checked by the faster digest (see DIGEST)
    algorithm, field, mac_field = (DIGEST, DIGEST, f"hmac_{DIGEST}") if fast else ("sha256", "sha256", "hmac")
    try:
        digest = _entry_sha256(e, companions, algorithm)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if digest != man.get(field):
        return "its content does not match its checksum (truncated, corrupted or edited)"
    signed = f"{DIGEST}:{digest}" if fast else digest
    if not hmac.compare_digest(str(man.get(mac_field, "")), _mac(e, signed, man["inputs"])):
        return "its checksum record was not written with this user's cache key (rewritten, or made elsewhere)"
    return None


def _add_fast_digest(entry: Path, inputs: dict[str, Any], companions: Iterable[str | os.PathLike[str]]) -> None:
    """Rewrite a verified manifest that has only the SHA-256 digest (written before :data:`DIGEST`) with both, so
    the next check reads the faster one; a read-only cache keeps the old manifest."""
    try:
        if DIGEST in json.loads(manifest_path(entry).read_text()):
            return
        write_manifest(entry, inputs, companions)
    except (OSError, ValueError):
        pass


def discard(entry: str | os.PathLike[str], companions: Iterable[str | os.PathLike[str]] = ()) -> None:
    """Remove a cache entry, its companions and its manifest."""
    manifest_path(entry).unlink(missing_ok=True)
    for p in (Path(entry), *map(Path, companions)):
        if p.exists() or p.is_symlink():
            _remove(p)


def cached(
    entry: str | os.PathLike[str],
    inputs: dict[str, Any],
    build: Callable[[Path], object],
    what: str,
    companions: Iterable[str | os.PathLike[str]] = (),
) -> Path:
    """The verified cache entry ``entry``, built by ``build(entry)`` when it is absent or fails its checks.

    Args:
        entry: path of the cached file or folder.
        inputs: JSON-able description of everything the entry is made from (checksums, parameters, versions).
        build: writes ``entry`` (atomically: a temporary name moved into place); raises on failure.
        what: words for the warning, e.g. ``"converted network"``.
        companions: further files ``build`` writes with the entry (checked and discarded with it).

    Returns:
        ``entry``.  A present entry that fails :func:`check_entry` is removed and rebuilt with one
        :class:`UserWarning`.
    """
    from filelock import FileLock

    e = Path(entry)
    companions = [Path(c) for c in companions]
    if check_entry(e, inputs, companions) is None:
        _add_fast_digest(e, inputs, companions)
        return e
    e.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(e.with_name(e.name + ".lock"))):
        why = check_entry(e, inputs, companions)  # another process may have built it meanwhile
        if why is None:
            return e
        if why != "missing":
            warnings.warn(f"cached {what} {e} not used, {why}: rebuilding it", UserWarning, stacklevel=3)
        discard(e, companions)
        build(e)
        write_manifest(e, inputs, companions)
    return e
