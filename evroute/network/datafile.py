"""One ``.npz`` per data tree (:mod:`evroute.network.datatree`): written by :func:`tree_bytes`, read by
:func:`read_tree`.

:func:`read_npz` reads any ``.npz`` with every member's header checked before its data: only plain ``.npy``
members named as :func:`tree_bytes` names them, no object dtype (``allow_pickle=False``), at most ``max_bytes`` of
arrays in all (default: the decompression limit ``EVROUTE_MAX_DECOMPRESSED`` of :mod:`evroute.network.xmlguard`),
so a crafted archive can neither run code nor exhaust memory.  Errors are
:class:`~evroute.network.datatree.DataTreeError` (one line).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from evroute.network.datatree import DataTreeError, decode, encode

__all__ = ["read_npz", "read_tree", "tree_bytes"]

_MEMBER = re.compile(r"^(__header__|__tree__|a\d+)\.npy$")


def tree_bytes(obj: Any, header: Mapping[str, Any]) -> bytes:
    """The ``.npz`` bytes of ``obj`` with the JSON ``header`` (see the module docstring)."""
    tree, arrays = encode(obj)
    members: dict[str, np.ndarray] = {f"a{i}": a for i, a in enumerate(arrays)}
    members["__header__"] = np.frombuffer(json.dumps(dict(header), allow_nan=False).encode(), dtype=np.uint8)
    members["__tree__"] = np.frombuffer(json.dumps(tree, allow_nan=False).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **members)
    return buf.getvalue()


def read_npz(path: str | Path | IO[bytes], max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` (or of ``.npz`` bytes), every member's header checked before its data is read:
    plain ``.npy`` members with the names of :func:`tree_bytes`, no object dtype, at most ``max_bytes`` in all
    (default: the decompression limit).  Raises :class:`DataTreeError`."""
    if max_bytes is None:
        from evroute.network.xmlguard import decompression_limits

        max_bytes = decompression_limits().max_bytes
    out: dict[str, np.ndarray] = {}
    total = 0
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                m = _MEMBER.match(info.filename)
                if m is None:
                    raise DataTreeError(f"unexpected member {info.filename[:40]!r}")
                with z.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version not in ((1, 0), (2, 0)):
                        raise DataTreeError(f"member {m.group(1)} has .npy format {version}")
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else (np.lib.format.read_array_header_2_0)
                    )
                    shape, _fortran, dtype = read_header(fh)
                    if dtype.hasobject:
                        raise DataTreeError(f"member {m.group(1)} holds Python objects")
                    total += int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
                    if total > max_bytes:
                        raise DataTreeError(f"more than {max_bytes} bytes of arrays (EVROUTE_MAX_DECOMPRESSED)")
                with z.open(info) as fh:
                    out[m.group(1)] = np.lib.format.read_array(fh, allow_pickle=False)
    except DataTreeError:
        raise
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zipfile.LargeZipFile, KeyError) as exc:
        raise DataTreeError(
            f"not a readable data archive ({str(exc).splitlines()[0] if str(exc) else exc!r})"
        ) from None
    return out


def _json_member(arrays: Mapping[str, np.ndarray], name: str) -> Any:
    a = arrays.get(name)
    if a is None or a.dtype != np.uint8 or a.ndim != 1:
        raise DataTreeError(f"no {name.strip('_')} record")
    try:
        return json.loads(a.tobytes().decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataTreeError(f"its {name.strip('_')} record is not JSON ({exc})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_tree(
    path: str | Path | IO[bytes], table: Mapping[str, Any] | None = None, max_bytes: int | None = None
) -> tuple[dict[str, Any], Any]:
    """``(header, object)`` of a file written from :func:`tree_bytes`.  Raises :class:`DataTreeError`."""
    arrays = read_npz(path, max_bytes)
    header = _json_member(arrays, "__header__")
    if not isinstance(header, dict):
        raise DataTreeError("its header is not a JSON object")
    return header, decode(_json_member(arrays, "__tree__"), arrays, table)
