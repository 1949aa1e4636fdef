"""Results folders that survive being killed at any moment.

* **Atomic claim**: a results folder is staged next to its target (``.NAME.claim-PID`` holding ``config.json`` and
  ``meta.json``) and renamed into place, so a visible results folder always holds its config.
* **Advisory lock** (:mod:`filelock`): ``OUT/.lock`` is held while a run writes into ``OUT``; a second run into
  the same folder stops with a one-line error instead of mixing its rows with the first one's.
* **Temp files**: atomic writes killed half-way leave ``.*.tmp`` files; they are removed when the folder is next
  locked (nobody else can be writing then), as are claim folders of processes that no longer exist.
* **CSV tail**: :func:`read_rounds` keeps only complete, consecutive rows, so a row cut anywhere (even inside its
  round number) is dropped on resume.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evroute.errors import DataError, ParameterError
from evroute.experiments.config import ExperimentConfig
from evroute.io import umask_mode
from evroute.models.store import network_hash

LOCK_NAME = ".lock"
_held: dict[Path, list[Any]] = {}  # path -> [FileLock, depth]: reentrant within one process


@contextlib.contextmanager
def output_lock(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the advisory lock of results folder ``out`` (reentrant in one process); cleans stale temp files."""
    from filelock import FileLock, Timeout

    path = Path(out).resolve()
    if path in _held:
        _held[path][1] += 1
        try:
            yield path
        finally:
            _held[path][1] -= 1
        return
    lock = FileLock(str(path / LOCK_NAME), timeout=0, mode=umask_mode(0o666))
    try:
        lock.acquire()
    except Timeout:
        raise ParameterError(f"results directory {out} is in use by another evroute run") from None
    _held[path] = [lock, 1]
    try:
        remove_temp_files(path)
        yield path
    finally:
        del _held[path]
        lock.release()


#: Folder every default results path lies in (relative to the working directory).
RESULTS_ROOT = Path("results")


def safe_name(text: str, max_len: int = 60) -> str:
    """``text`` as one safe path component: runs of characters other than letters, digits, ``_``, ``-``, ``.``
    become ``_``, leading dots and underscores go (no hidden files, no ``..``); never empty."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).lstrip("._")[:max_len].rstrip("._")
    return name or "x"


def network_label(network: str) -> str:
    """A short, readable label of a ``--network`` value: ``synthetic:500:0`` -> ``synthetic_500_0``; a path
    -> its file name without the network suffixes (``/data/x.osm.gz`` -> ``x``), plus 8 hex digits of the path's
    SHA-1 when it has folders, so that two ``x.osm.gz`` in different folders get different folders."""
    import hashlib

    p = Path(network)
    if len(p.parts) <= 1 and not network.lower().endswith((".xml", ".xml.gz", ".osm", ".gz", ".bz2", ".pbf")):
        return safe_name(network)
    stem = re.sub(r"(\.(net|osm|xml|gz|bz2|pbf))+$", "", p.name, flags=re.IGNORECASE)
    tag = "" if len(p.parts) <= 1 else "-" + hashlib.sha1(network.encode()).hexdigest()[:8]
    return safe_name(stem) + tag


def default_results_dir(network: str, route: str | None, model: str, policy: str) -> Path:
    """``results/<network>-<route>-<model>-<policy>``, each part a :func:`safe_name`: always one folder directly
    inside ``results/`` whatever the network path (issue 25: ``--network ../../x.osm.gz`` wrote outside it)."""
    parts = [network_label(network), safe_name(route or "custom"), safe_name(model), safe_name(policy)]
    return RESULTS_ROOT / "-".join(parts)


def remove_temp_files(folder: Path) -> int:
    """Delete the ``.*.tmp`` files atomic writes left in ``folder`` and its ``seed_*`` folders; returns the count."""
    n = 0
    for pattern in (".*.tmp", "seed_*/.*.tmp"):
        for p in folder.glob(pattern):
            p.unlink(missing_ok=True)
            n += 1
    return n


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_claims(out: Path) -> None:
    for d in out.parent.glob(f".{out.name}.claim-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def claim(out: Path, write: Callable[[Path], None], *, overwrite: bool = False) -> bool:
    """Create results folder ``out`` atomically: ``write(staging)`` fills a staged folder that is renamed to ``out``.

    Returns ``False`` (and writes nothing) when ``out`` already exists as a non-empty folder, unless ``overwrite``,
    which removes it first (under its lock).  Raises :class:`ParameterError` when ``out`` is a file.
    """
    if out.exists() and not out.is_dir():
        raise ParameterError(f"results directory {out} exists and is a file")
    if not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    elif not out.parent.is_dir():
        raise ParameterError(f"cannot create results directory {out}: {out.parent} is not a directory")
    _remove_stale_claims(out)
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            return False
        with output_lock(out):
            for p in out.iterdir():
                if p.name != LOCK_NAME:
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
    staging = out.parent / f".{out.name}.claim-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        try:
            write(staging)
        except OSError as exc:  # name the results folder, not the staging folder
            name = str(exc.filename or "")
            name = str(out / Path(name).relative_to(staging)) if name.startswith(str(staging)) else name or str(out)
            raise OSError(exc.errno, exc.strerror or str(exc), name) from None
        os.chmod(staging, umask_mode(0o777))
        try:
            if out.is_dir() and not any(p.name != LOCK_NAME for p in out.iterdir()):
                (out / LOCK_NAME).unlink(missing_ok=True)
                out.rmdir()
            os.rename(staging, out)
        except OSError:
            if out.is_dir() and any(out.iterdir()):  # another run claimed it first
                return False
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def read_rounds(path: Path, fields: list[str], upto: int) -> list[dict[str, str]]:
    """The complete rows ``1..k`` (``k <= upto``) at the head of ``rounds.csv``; a torn or out-of-order tail is
    dropped.  A row is complete when it ends in a newline and has every field; rounds must run 1, 2, 3, ..."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise DataError(f"{path} is corrupt; remove the seed folder or pass --overwrite") from None
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\n").split(",") != fields:
        return []
    complete = [ln for ln in lines[1:] if ln.endswith("\n")]
    rows: list[dict[str, str]] = []
    for row in csv.DictReader(io.StringIO("".join(complete)), fieldnames=fields):
        if None in row or any(v is None for v in row.values()) or row["round"] != str(len(rows) + 1):
            break
        if len(rows) >= upto:
            break
        rows.append(row)
    return rows


def check_same_network(lg: Any, out: Path) -> None:
    """A resumed folder must have been made on the same network content: the same config can load another network
    when the data or the loader changed (e.g. OSM elevations smoothed along the roads), and its seeds would then mix
    two networks.  Folders from before the hash existed are compared by their network statistics."""
    try:
        meta = json.loads((out / "meta.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return  # a folder claimed without meta (older layouts): nothing to compare
    old_hash = meta.get("network_hash")
    if old_hash is not None:
        same = old_hash == network_hash(lg)
    else:
        same = meta.get("network") == json.loads(json.dumps(lg.network.summary(), default=str))
    if not same:
        raise ParameterError(
            f"results directory {out} was made on different network data (the files or the loader changed since); "
            "use another --out or pass --overwrite"
        )


def check_same_experiment(cfg: ExperimentConfig, out: Path) -> None:
    cfg_path = out / "config.json"
    if not cfg_path.is_file():
        raise ParameterError(f"results directory {out} exists and is not an evroute results directory")
    try:
        old = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise DataError(f"{cfg_path} is corrupt; remove the directory or pass --overwrite") from None
    if not isinstance(old, dict):
        raise DataError(f"{cfg_path} is corrupt; remove the directory or pass --overwrite")
    old.setdefault("potential", "none")  # folders written before the option existed used Algorithm 2 as is
    old.setdefault("regret_reference", "auto")
    # folders written before environments were named used the paper's (drifting when drift keys were given)
    old.setdefault("env", "drifting" if "drift" in old.get("environment", {}) else "paper")
    # folders written before the option existed loaded OSM paths with osmnx, named networks with netconvert
    old.setdefault("loader", "osmnx" if ".osm" in str(old.get("network", "")).lower() else "netconvert")
    if old != json.loads(json.dumps(cfg.to_dict())):
        raise ParameterError(f"results directory {out} holds a different experiment; use another --out")
