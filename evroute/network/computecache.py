"""Content-addressed cache of expensive deterministic computations (environment draws, regret references, graph Grams).

An entry's key is the SHA-256 of a JSON object describing *everything* the value depends on: checksums of the input
arrays (:func:`array_digest`), parameters, seeds, the code version constant of the computation, the numpy/scipy
versions and the BLAS thread counts of the computing process (another count sums in another order and changes the
last bits).  Same inputs, same key, same value: a cached value equals a recomputed one bit for bit.

Entries live in ``compute_cache_dir()/<kind>/<key><suffix>`` and are handled by :func:`evroute.network.cachefiles
.cached`: checksummed and authenticated (a truncated, corrupted or edited entry, or one whose manifest was rewritten
without this user's cache key, is removed and rebuilt with one warning), built under a file lock (concurrent
processes of a sweep compute an entry once; the others wait and load it) and moved into place atomically.

Entries are data, never pickles: one array as ``.npy``, anything else (dicts of arrays, numbers and strings) in the
data-only ``.npz`` format of :mod:`evroute.network.datatree`, which can name no class or function, read with
``allow_pickle=False``.  A caller may pass ``check``, the schema of its value (keys, dtypes, shapes, ranges); an
entry that cannot be read or fails its check is removed and rebuilt with one warning.

Opt-out: ``EVROUTE_COMPUTE_CACHE=off`` (or ``0``, ``no``, ``false``) computes everything afresh and writes nothing;
``EVROUTE_COMPUTE_CACHE=<folder>`` moves the cache.  Default folder: ``$EVROUTE_CACHE/compute`` when
``EVROUTE_CACHE`` is set, else the user cache folder's ``compute``.  Old entries are never removed automatically
(delete the folder to reclaim the space; a Luxembourg graph Gram is 255 MB).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "array_digest",
    "blas_thread_counts",
    "cache_enabled",
    "cached_compute",
    "compute_cache_dir",
    "entry_path",
    "key_of",
]

T = TypeVar("T")
_OFF = {"off", "0", "no", "false", "none"}


def cache_enabled() -> bool:
    """Whether the compute cache is on (``EVROUTE_COMPUTE_CACHE`` is not ``off``/``0``/``no``/``false``)."""
    return os.environ.get("EVROUTE_COMPUTE_CACHE", "").strip().lower() not in _OFF


def compute_cache_dir() -> Path:
    """The cache folder (see the module docstring)."""
    given = os.environ.get("EVROUTE_COMPUTE_CACHE", "").strip()
    if given and given.lower() not in _OFF:
        return Path(given).expanduser()
    if os.environ.get("EVROUTE_CACHE"):
        return Path(os.environ["EVROUTE_CACHE"]).expanduser() / "compute"
    import platformdirs  # the user cache folder of evroute, as evroute.network.registry's

    return platformdirs.user_cache_path("evroute", appauthor=False) / "compute"


def array_digest(*arrays: Any) -> str:
    """Hex SHA-256 of arrays' dtypes, shapes and bytes (``None`` hashes as a marker)."""
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"<none>")
            continue
        arr = np.ascontiguousarray(a)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def blas_thread_counts() -> list[int]:
    """Sorted thread counts of the BLAS libraries this process has loaded (part of every key: see the module
    docstring)."""
    from threadpoolctl import ThreadpoolController

    return sorted(int(lib.num_threads) for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas")


def _versions() -> dict[str, str]:
    import scipy

    return {"numpy": np.__version__, "scipy": scipy.__version__}


def key_of(inputs: dict[str, Any]) -> str:
    """Hex SHA-256 of the canonical JSON of ``inputs`` (the entry's name)."""
    text = json.dumps(inputs, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def full_inputs(kind: str, inputs: dict[str, Any], *, blas: bool = True) -> dict[str, Any]:
    """``inputs`` with the kind, library versions and (``blas``) BLAS thread counts added (what the key is made of)."""
    out = {"kind": kind, **inputs, "libraries": _versions()}
    if blas:
        out["blas_threads"] = blas_thread_counts()
    return out


def entry_path(kind: str, inputs: dict[str, Any], *, array: bool = False, blas: bool = True) -> Path:
    """Where the entry of ``inputs`` lives (``compute_cache_dir()/<kind>/<key>.npy|.npz``)."""
    return compute_cache_dir() / kind / f"{key_of(full_inputs(kind, inputs, blas=blas))}{'.npy' if array else '.npz'}"


#: Header of a data entry (:func:`save_tree`).
ENTRY_HEADER = {"format": "evroute-cache-entry", "version": 1}


def save_tree(value: Any, path: Path) -> None:
    """Write a data entry: ``value`` (dicts, lists, arrays, numbers, strings) in the :mod:`~evroute.network.datatree`
    format."""
    from evroute.network.datafile import tree_bytes

    with open(path, "wb") as fh:
        fh.write(tree_bytes(value, ENTRY_HEADER))


def load_tree(path: Path) -> Any:
    """The value of a data entry; :class:`~evroute.network.datatree.DataTreeError` when it is not one (no class or
    function can be named by the file)."""
    from evroute.network.datafile import read_tree
    from evroute.network.datatree import DataTreeError

    header, value = read_tree(path)
    if header != ENTRY_HEADER:
        raise DataTreeError("not a compute-cache entry")
    return value


def _save_npy(value: np.ndarray, path: Path) -> None:
    with open(path, "wb") as fh:
        np.save(fh, np.asarray(value), allow_pickle=False)


def _load_npy(path: Path) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def _mmap_npy(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r", allow_pickle=False)


def cached_compute(
    kind: str,
    inputs: dict[str, Any],
    compute: Callable[[], T],
    *,
    what: str,
    array: bool = False,
    blas: bool = True,
    check: Callable[[Any], None] | None = None,
    mmap: bool = False,
) -> T:
    """``compute()``, or its cached value for the same ``inputs`` (see the module docstring).

    Args:
        kind: the computation's name (a sub-folder), e.g. ``"reference"``.
        inputs: JSON-able description of everything the value depends on besides the library versions and BLAS
            thread counts (added here): array checksums (:func:`array_digest`), parameters, code version constants.
        compute: makes the value (called at most once, and not at all when a verified entry exists).
        what: words for the rebuild warning, e.g. ``"regret reference"``.
        array: the value is one numpy array (stored as ``.npy``); else a data tree (``.npz``); never a pickle.
        blas: the value depends on BLAS reductions (dense linear algebra): the BLAS thread counts join the key.
        check: raises :class:`ValueError` (or :class:`TypeError`, :class:`KeyError`) when a loaded value does not
            have the value's schema; such an entry is removed and rebuilt with one warning.
        mmap: with ``array``, a verified entry is memory-mapped read-only instead of copied into memory (a large
            array whose reader touches only parts of it: the pages its checksum just read are in the page cache).

    Returns:
        The value: computed in this call, or loaded from a verified entry (equal to a recomputed one).
    """
    if not cache_enabled():
        return compute()
    from evroute.network.cachefiles import cached

    full = full_inputs(kind, inputs, blas=blas)
    entry = entry_path(kind, inputs, array=array, blas=blas)
    save: Callable[[Any, Path], None] = _save_npy if array else save_tree
    load: Callable[[Path], Any] = (_mmap_npy if mmap else _load_npy) if array else load_tree
    made: list[Any] = []

    def build(path: Path) -> None:
        value = compute()
        tmp = path.with_name(f".{path.name}.pid{os.getpid()}-.tmp")
        try:
            save(value, tmp)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        made.append(value)

    try:
        cached(entry, full, build, what)
    except OSError:  # a read-only or full cache folder: compute without caching
        return made[0] if made else compute()
    if made:
        return made[0]
    try:
        value = load(entry)
        if check is not None:
            check(value)
        return value
    except (ValueError, TypeError, KeyError, EOFError) as exc:  # DataTreeError is a ValueError
        from evroute.network.cachefiles import discard

        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        warnings.warn(f"cached {what} {entry} not used ({msg}): rebuilding it", UserWarning, stacklevel=2)
        discard(entry)
        return cached_compute(kind, inputs, compute, what=what, array=array, blas=blas, check=check, mmap=mmap)
    except OSError:  # removed after the check
        return compute()
