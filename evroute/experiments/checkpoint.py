"""Run checkpoints as data: ``OUT/seed_<s>/checkpoint.npz``, never a pickle, checked against the run before use.

A checkpoint is the learner's :meth:`state` (round, cumulative regret, model, policy, random generator states) in the
data-only format of :mod:`evroute.network.datatree`, with a header binding it to its run: the SHA-256 of the
run's ``config.json`` content, the network hash (:func:`evroute.models.store.network_hash`), the seed and the round.

Loading (:func:`restore_checkpoint`) builds on the learner the runner has just made from the folder's config:

* only the classes and functions that learner is made of (plus those its model declares it makes later,
  ``checkpoint_classes()``) can be named by the file; nothing is imported, no code of the file runs;
* the header must name this format, config, network and seed;
* the state must have the learner's shape (:func:`check_like`): the same keys and classes where both have an
  object (or members their class declares), arrays of the same dtype and number of dimensions, of the same length
  along every axis that is not empty in a new learner (histories start empty and grow), the round in
  ``[0, horizon]`` and a finite regret;
* the random generator states must be accepted by numpy.

Any failure is one :class:`~evroute.errors.DataError` line naming the file and telling how to rerun.  A checkpoint of
the old pickle format (``checkpoint.pkl``) is never opened: it is refused with the same advice.

What this does not defend against: a checkpoint edited *within* that shape (other numbers in the arrays) loads, and
changes the resumed seed's results -- only its own; no code runs.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError
from evroute.io import atomic_write_bytes

__all__ = ["CHECKPOINT_NAME", "LEGACY_NAME", "check_like", "restore_checkpoint", "run_binding", "save_checkpoint"]

CHECKPOINT_NAME = "checkpoint.npz"
LEGACY_NAME = "checkpoint.pkl"
FORMAT = "evroute-checkpoint"
FORMAT_VERSION = 1


def run_binding(config: dict[str, Any], network_hash: str, seed: int) -> dict[str, Any]:
    """What a checkpoint is bound to: the config's SHA-256 (canonical JSON), the network hash and the seed."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return {"config_sha256": hashlib.sha256(text.encode()).hexdigest(), "network_hash": network_hash, "seed": seed}


def save_checkpoint(path: Path, bandit: Any, binding: dict[str, Any]) -> Path:
    """Write ``bandit.state()`` to ``path`` atomically (see the module docstring)."""
    from evroute.network.datafile import tree_bytes

    header = {"format": FORMAT, "version": FORMAT_VERSION, **binding, "t": int(bandit.t)}
    return atomic_write_bytes(path, tree_bytes(bandit.state(), header))


def _rerun(path: Path) -> str:
    return f"delete {path} to run seed {path.parent.name.removeprefix('seed_')} again from its start"


def check_like(got: Any, ref: Any, where: str = "state") -> None:  # noqa: C901, PLR0912 - one branch per kind
    """Raise :class:`ValueError` naming the first place where ``got`` does not have the shape of ``ref`` (a new
    learner's state; see the module docstring).  ``None`` on either side matches anything (lazy members)."""
    import scipy.sparse as sp

    if got is None or ref is None:
        return
    torch = _torch()
    if isinstance(ref, np.ndarray) or (torch is not None and isinstance(ref, torch.Tensor)):
        if type(got) is not type(ref):
            raise ValueError(f"{where}: a {type(got).__name__} where a {type(ref).__name__} belongs")
        if got.dtype != ref.dtype or got.ndim != ref.ndim:
            raise ValueError(f"{where}: {got.dtype} with {got.ndim} dimensions, expected {ref.dtype} with {ref.ndim}")
        for axis, (g, r) in enumerate(zip(got.shape, ref.shape, strict=True)):
            if r != 0 and g != r:
                raise ValueError(f"{where}: length {g} along axis {axis}, expected {r}")
        return
    if sp.issparse(ref):
        if not sp.issparse(got) or got.format != ref.format or got.shape != ref.shape or got.dtype != ref.dtype:
            raise ValueError(f"{where}: not a {ref.format} matrix of shape {ref.shape}")
        return
    if isinstance(ref, bool | int | float | str | np.generic):
        numbers = (int, float, np.integer, np.floating)
        if isinstance(ref, bool) != isinstance(got, bool) or not (
            type(got) is type(ref) or (isinstance(ref, numbers) and isinstance(got, numbers))
        ):
            raise ValueError(f"{where}: a {type(got).__name__} where a {type(ref).__name__} belongs")
        return
    if isinstance(ref, dict):
        if not isinstance(got, dict):
            raise ValueError(f"{where}: not a mapping")
        for k in ref.keys() & got.keys():
            check_like(got[k], ref[k], f"{where}[{k!r}]")
        return
    if isinstance(ref, list | tuple):
        if not isinstance(got, list | tuple):
            raise ValueError(f"{where}: not a sequence")
        for i, (g, r) in enumerate(zip(got, ref, strict=False)):
            check_like(g, r, f"{where}[{i}]")
        return
    if isinstance(ref, np.random.Generator) or callable(ref) and not hasattr(ref, "__getstate__"):
        return
    if type(got) is not type(ref):
        raise ValueError(f"{where}: a {type(got).__name__} where a {type(ref).__name__} belongs")
    gs, rs = _state(got), _state(ref)
    if isinstance(rs, dict) and isinstance(gs, dict):
        declared = {k for c in type(ref).__mro__ for k in c.__dict__.get("__annotations__", {})}
        extra = sorted(set(gs) - set(rs) - declared, key=str)  # a member the class declares may be set later
        if extra:
            raise ValueError(f"{where}: unknown member {extra[0]!r} of {type(ref).__name__}")
        for k in rs.keys() & gs.keys():
            check_like(gs[k], rs[k], f"{where}.{k}")


def _torch() -> Any:
    import sys

    return sys.modules.get("torch")


def _state(o: Any) -> Any:
    try:
        return o.__getstate__()
    except (TypeError, AttributeError):
        return None


def _object_table(bandit: Any) -> dict[str, Any]:
    from evroute.network.datatree import object_table

    state = bandit.state()
    extra = [c for v in state.values() if hasattr(v, "checkpoint_classes") for c in v.checkpoint_classes()]
    return object_table(state, extra=extra)


def restore_checkpoint(path: Path, bandit: Any, binding: dict[str, Any], horizon: int) -> None:
    """Load the checkpoint at ``path`` into ``bandit`` (just made from the run's config) after the checks of the
    module docstring; :class:`DataError` (one line) when any fails.  A legacy ``checkpoint.pkl`` is refused unread."""
    from evroute.network.datafile import read_tree
    from evroute.network.datatree import DataTreeError

    if path.name == LEGACY_NAME:
        raise DataError(
            f"{path} is an old-format (pickle) checkpoint, which evroute no longer loads (it could run code): "
            + _rerun(path)
        )
    ref = bandit.state()
    try:
        header, state = read_tree(path, _object_table(bandit))
        _check_header(header, binding)
        if not isinstance(state, dict) or set(state) != set(ref):
            raise ValueError(f"the state's keys are not {sorted(ref)}")
        check_like(state, ref)
        t, regret = state["t"], state["cumulative_regret"]
        if not isinstance(t, int) or not 0 <= t <= horizon or header.get("t") != t:
            raise ValueError(f"round {t!r} is not in [0, {horizon}] or not the header's")
        if not isinstance(regret, int | float) or not math.isfinite(regret):
            raise ValueError(f"cumulative regret {regret!r} is not a finite number")
        bandit.load_state(state)
    except (DataTreeError, ValueError, TypeError, KeyError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"checkpoint {path} refused ({msg}): {_rerun(path)}") from None


def _check_header(header: dict[str, Any], binding: dict[str, Any]) -> None:
    if header.get("format") != FORMAT or header.get("version") != FORMAT_VERSION:
        raise ValueError(f"not a version-{FORMAT_VERSION} {FORMAT} file")
    for key, what in (("config_sha256", "another config"), ("network_hash", "another network"), ("seed", "seed")):
        if header.get(key) != binding[key]:
            raise ValueError(f"it was made for {what}" + (f" {header.get(key)!r}" if key == "seed" else ""))


# ------------------------------------------------------------------------------------------ run folder files
def _corrupt(path: Path, why: str) -> DataError:
    return DataError(f"{path} is corrupt ({why}); remove the results directory or pass --overwrite")


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a run folder's ``config.json``, ``meta.json``, ``summary.json``); one-line
    :class:`DataError` when it is unreadable, not JSON (``NaN`` included), nested too deeply or not an object."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise _corrupt(path, "nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _corrupt(path, f"not JSON: {str(exc).splitlines()[0][:80]}") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(obj, dict):
        raise _corrupt(path, "not a JSON object")
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_run_meta(out: Path) -> None:
    """``OUT/config.json`` must be a JSON object and ``OUT/meta.json`` (when present: older folders lack it) one whose
    ``network_hash`` is 64 hex digits and ``network`` an object; one-line :class:`DataError` otherwise."""
    import re

    if (out / "config.json").is_file():
        read_json_object(out / "config.json")
    if not (out / "meta.json").exists():
        return
    meta = read_json_object(out / "meta.json")
    h = meta.get("network_hash")
    if h is not None and not (isinstance(h, str) and re.fullmatch(r"[0-9a-f]{64}", h)):
        raise _corrupt(out / "meta.json", "network_hash is not 64 hex digits")
    if not isinstance(meta.get("network", {}), dict):
        raise _corrupt(out / "meta.json", "network is not an object")


def read_seed_summary(path: Path, seed: int, horizon: int) -> dict[str, Any]:
    """A finished seed's ``summary.json``, checked: this seed, ``horizon`` rounds, finite regret and optimum, a
    ``regret_reference`` object with a boolean ``exact``; one-line :class:`DataError` otherwise."""
    s = read_json_object(path)

    def number(key: str) -> bool:
        v = s.get(key)
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)

    if s.get("seed") != seed or s.get("rounds") != horizon:
        raise _corrupt(path, f"not the summary of seed {seed} after {horizon} rounds")
    if not number("final_cumulative_regret_wh") or not number("optimal_wh"):
        raise _corrupt(path, "its regret and optimum are not finite numbers")
    ref = s.get("regret_reference", {"exact": False})
    if not isinstance(ref, dict) or not isinstance(ref.get("exact"), bool):
        raise _corrupt(path, "regret_reference is not an object with a boolean 'exact'")
    return s


def check_rounds(rows: list[dict[str, str]], path: Path) -> None:
    """The rows a resumed seed keeps from ``rounds.csv``: every field but ``route`` a number (``round`` and
    ``route_edges`` integers, the energies finite); one-line :class:`DataError` naming the first bad row."""
    for i, row in enumerate(rows, start=1):
        for key, text in row.items():
            if key == "route":
                continue
            try:
                v = int(text) if key in ("round", "route_edges") else float(text)
            except (TypeError, ValueError):
                raise _corrupt(path, f"row {i}: {key} {str(text)[:20]!r} is not a number") from None
            if key.endswith("_wh") and not math.isfinite(v):
                raise _corrupt(path, f"row {i}: {key} is not finite")
