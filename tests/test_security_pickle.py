"""Issue 32 (part A): no pickle anywhere a file a user can hand over is read; checkpoints and cache entries are data,
checked on load (:mod:`evroute.network.datatree`, :mod:`evroute.experiments.checkpoint`).

At f62f65a resuming a folder unpickled ``seed_*/checkpoint.pkl`` (the payloads below created their marker file) and
the compute cache unpickled its ``.pkl`` entries, whose manifest a tamperer could rewrite.
"""

from __future__ import annotations

import ast
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evroute.experiments.checkpoint as runner  # where the runner's checkpoint functions live
from evroute.cli import main
from evroute.errors import DataError
from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
from evroute.experiments.checkpoint import CHECKPOINT_NAME, check_like
from evroute.network import datafile as dt
from evroute.network.datatree import DataTreeError

PACKAGE = Path(__file__).resolve().parent.parent / "evroute"
ARGS = ["run", "--network", "synthetic:200:1", "--horizon", "9", "--seeds", "1", "--no-progress"]


class Payload:
    """Unpickling it creates ``marker`` (what a hostile checkpoint did at f62f65a, with a command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def _cfg(**kw):
    base = {"network": "synthetic:200:1", "route": "A", "model": "bi", "policy": "ts", "horizon": 9, "seeds": (0,)}
    return ExperimentConfig(**{**base, **kw})


def _interrupted(cfg, out: Path, at: int, monkeypatch) -> Path:
    """``out`` with seed 0 stopped right after its checkpoint of round ``at`` (as a kill there would leave it)."""
    real = runner.save_checkpoint

    def save_then_die(path, bandit, binding):
        real(path, bandit, binding)
        if bandit.t == at:
            raise KeyboardInterrupt

    monkeypatch.setattr(runner, "save_checkpoint", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, out, progress=False, checkpoint_every=3)
    monkeypatch.setattr(runner, "save_checkpoint", real)
    assert (out / "seed_0" / CHECKPOINT_NAME).exists()
    return out


def _rounds(d: Path) -> pd.DataFrame:
    return load_rounds(d).drop(columns=["posterior_ms", "index_ms", "oracle_ms", "update_ms"])


# --------------------------------------------------------------------------------------------- resuming still exact
@pytest.mark.slow
@pytest.mark.parametrize(
    "kw",
    [
        {"model": "bi", "policy": "ts"},
        {"model": "bi", "policy": "ucb", "arms": "turn"},
        {"model": "kr", "policy": "ts"},
        {"model": "gp-exact", "policy": "bucb", "arms": "turn"},
        {"model": "routeset", "policy": "ts"},
        {"model": "gp", "policy": "ts"},
    ],
    ids=lambda kw: "-".join(kw.values()),
)
def test_resumed_from_a_data_checkpoint_equals_uninterrupted(tmp_path, monkeypatch, kw):
    cfg = _cfg(**kw)
    run_experiment(cfg, tmp_path / "full", progress=False, checkpoint_every=3)
    out = _interrupted(cfg, tmp_path / "resumed", 6, monkeypatch)
    with zipfile.ZipFile(out / "seed_0" / CHECKPOINT_NAME) as z:  # plain .npy members only
        assert all(n.endswith(".npy") for n in z.namelist())
    run_experiment(cfg, out, progress=False, checkpoint_every=3)
    pd.testing.assert_frame_equal(_rounds(tmp_path / "full"), _rounds(out))


# --------------------------------------------------------------------------------------------- hostile checkpoints
def _resume_fails(out: Path, capsys) -> str:
    (out / "seed_0" / "summary.json").unlink(missing_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    capsys.readouterr()
    assert main([*ARGS, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("evroute: error: "), err
    return err


@pytest.fixture
def finished(tmp_path, capsys) -> Path:
    out = tmp_path / "run"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("name", ["checkpoint.pkl", CHECKPOINT_NAME])
def test_a_pickle_planted_as_checkpoint_never_runs(finished, tmp_path, capsys, name):
    marker = tmp_path / "pwned"
    (finished / "seed_0" / name).write_bytes(pickle.dumps({"t": 3, "model": Payload(marker)}))
    err = _resume_fails(finished, capsys)
    assert not marker.exists()
    assert str(finished / "seed_0" / name) in err and "delete" in err
    if name == "checkpoint.pkl":
        assert "old-format (pickle) checkpoint" in err


def test_an_npz_holding_a_pickled_object_array_never_runs(finished, tmp_path, capsys):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    np.savez(buf, __tree__=np.array([Payload(marker)], dtype=object), allow_pickle=True)
    (finished / "seed_0" / CHECKPOINT_NAME).write_bytes(buf.getvalue())
    err = _resume_fails(finished, capsys)
    assert not marker.exists() and "holds Python objects" in err


@pytest.mark.parametrize(
    "node",
    [
        {"$": "obj", "cls": "subprocess:Popen", "state": {}, "id": 0},
        {"$": "fn", "name": "os:system", "id": 0},
        {"$": "obj", "cls": "builtins:open", "state": None, "id": 0},
    ],
)
def test_a_data_checkpoint_cannot_name_a_class_or_function_the_run_does_not_use(finished, capsys, node):
    header = {"format": "evroute-checkpoint", "version": 1, "t": 3}
    (finished / "seed_0" / CHECKPOINT_NAME).write_bytes(dt.tree_bytes(None, header))
    # the tree is replaced by one naming the hostile callable
    data = dict(dt.read_npz(finished / "seed_0" / CHECKPOINT_NAME))
    data["__tree__"] = np.frombuffer(json.dumps({"$": "dict", "v": [["model", node]], "id": 1}).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **data)
    (finished / "seed_0" / CHECKPOINT_NAME).write_bytes(buf.getvalue())
    err = _resume_fails(finished, capsys)
    assert "is not one this run uses" in err


def _edit_checkpoint(path: Path, edit) -> None:
    arrays = dict(dt.read_npz(path))
    header = json.loads(arrays["__header__"].tobytes())
    tree = json.loads(arrays["__tree__"].tobytes())
    header, tree = edit(header, tree, arrays)
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    arrays["__tree__"] = np.frombuffer(json.dumps(tree).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    path.write_bytes(buf.getvalue())


def _longest(arrays):
    return max((k for k in arrays if k.startswith("a")), key=lambda k: arrays[k].size)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda h, t, a: ({**h, "network_hash": "0" * 64}, t), "another network"),
        (lambda h, t, a: ({**h, "config_sha256": "0" * 64}, t), "another config"),
        (lambda h, t, a: ({**h, "seed": 7}, t), "seed 7"),
        (lambda h, t, a: (a.__setitem__(_longest(a), a[_longest(a)][:-1]) or h, t), "expected"),  # wrong length
        (lambda h, t, a: (a.__setitem__(_longest(a), a[_longest(a)].astype(np.float32)) or h, t), "float32"),
        (lambda h, t, a: ({**h, "t": 10**6}, t), "round"),
    ],
    ids=["network", "config", "seed", "shape", "dtype", "round"],
)
def test_a_checkpoint_of_another_run_or_shape_is_one_line(tmp_path, monkeypatch, capsys, edit, why):
    cfg = ExperimentConfig.from_dict({**_cfg().to_dict()})
    out = _interrupted(cfg, tmp_path / "run", 6, monkeypatch)
    _edit_checkpoint(out / "seed_0" / CHECKPOINT_NAME, edit)
    with pytest.raises(DataError, match=why) as exc:
        run_experiment(cfg, out, progress=False, checkpoint_every=3)
    assert "\n" not in str(exc.value) and "checkpoint" in str(exc.value)


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("meta.json", "[]", "not a JSON object"),
        ("meta.json", '{"network_hash": 5}', "network_hash is not 64 hex digits"),
        ("config.json", "[" * 100000 + "]" * 100000, "nested too deeply"),
        ("config.json", "{'x': 1}", "not JSON"),
        ("seed_0/summary.json", "[]", "not a JSON object"),
        ("seed_0/summary.json", "{}", "not the summary of seed 0 after 9 rounds"),
        ("seed_0/summary.json", '{"seed": 0, "rounds": 9, "final_cumulative_regret_wh": NaN, "optimal_wh": 1}', "NaN"),
        ("seed_0/rounds.csv", None, "row 2: expected_wh 'lots' is not a number"),
    ],
)
def test_malformed_run_folder_files_are_one_line(tmp_path, monkeypatch, capsys, name, text, why):
    out = tmp_path / "run"
    if name == "seed_0/rounds.csv":  # a resumable folder whose kept rows were edited
        out = _interrupted(_cfg(), out, 6, monkeypatch)
        csv = (out / name).read_text().splitlines()
        cols = csv[0].split(",")
        row = csv[2].split(",")
        row[cols.index("expected_wh")] = "lots"
        csv[2] = ",".join(row)
        (out / name).write_text("\n".join(csv) + "\n")
        capsys.readouterr()
        assert main([*ARGS, "--out", str(out)]) == 2
        err = capsys.readouterr().err
    else:
        assert main([*ARGS, "--out", str(out)]) == 0
        (out / name).write_text(text)
        if name != "seed_0/summary.json":
            (out / "seed_0" / "summary.json").unlink()
        err = _resume_fails(out, capsys) if name != "seed_0/summary.json" else _summary_fails(out, capsys)
    assert err.count("\n") == 1 and why in err and str(out / name) in err


def _summary_fails(out: Path, capsys) -> str:
    (out / "summary.json").unlink(missing_ok=True)
    capsys.readouterr()
    assert main([*ARGS, "--out", str(out)]) == 2
    return capsys.readouterr().err


def test_check_like_accepts_grown_histories_and_refuses_fixed_lengths():
    ref = {"hist": np.zeros(0), "fixed": np.zeros(5), "grid": np.zeros((3, 0))}
    check_like({"hist": np.zeros(40), "fixed": np.ones(5), "grid": np.zeros((3, 9))}, ref)
    with pytest.raises(ValueError, match="axis 0"):
        check_like({"fixed": np.zeros(6)}, ref)
    with pytest.raises(ValueError, match="axis 0"):
        check_like({"grid": np.zeros((4, 9))}, ref)
    with pytest.raises(ValueError, match="int64"):
        check_like({"hist": np.zeros(3, dtype=np.int64)}, ref)


# ------------------------------------------------------------------------------------------------ compute cache
def test_a_pickle_planted_as_cache_entry_never_runs_and_is_rebuilt(tmp_path, monkeypatch):
    from evroute.network.cachefiles import manifest_path
    from evroute.network.computecache import cached_compute, entry_path

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))
    inputs = {"x": 1}
    value = {"a": np.arange(4.0), "b": "text", "c": 2.5}
    cached_compute("demo", inputs, lambda: value, what="demo value", blas=False)
    entry = entry_path("demo", inputs, blas=False)
    assert entry.suffix == ".npz"
    marker = tmp_path / "pwned"
    entry.write_bytes(pickle.dumps(Payload(marker)))
    man = json.loads(manifest_path(entry).read_text())
    import hashlib

    man["sha256"] = hashlib.sha256(entry.read_bytes()).hexdigest()  # the tamperer rewrites the manifest too
    man["blake2b"] = hashlib.blake2b(entry.read_bytes()).hexdigest()
    manifest_path(entry).write_text(json.dumps(man))
    with pytest.warns(UserWarning, match="not written with this user's cache key"):
        got = cached_compute("demo", inputs, lambda: value, what="demo value", blas=False)
    assert not marker.exists()
    np.testing.assert_array_equal(got["a"], value["a"])
    assert got["b"] == "text" and got["c"] == 2.5


def test_an_edited_array_with_a_rewritten_manifest_is_rebuilt(tmp_path, monkeypatch):
    """The audit's silent change: an edited ``.npy`` entry whose manifest checksum was rewritten."""
    import hashlib

    from evroute.network.cachefiles import manifest_path
    from evroute.network.computecache import cached_compute, entry_path

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))
    truth = np.arange(6.0)
    cached_compute("demo", {"y": 2}, lambda: truth, what="demo array", array=True, blas=False)
    entry = entry_path("demo", {"y": 2}, array=True, blas=False)
    np.save(entry, truth * 100)
    man = json.loads(manifest_path(entry).read_text())
    man["sha256"] = hashlib.sha256(entry.read_bytes()).hexdigest()
    man["blake2b"] = hashlib.blake2b(entry.read_bytes()).hexdigest()
    manifest_path(entry).write_text(json.dumps(man))
    with pytest.warns(UserWarning, match="cache key"):
        got = cached_compute("demo", {"y": 2}, lambda: truth, what="demo array", array=True, blas=False)
    np.testing.assert_array_equal(got, truth)


def test_a_data_entry_failing_its_schema_is_rebuilt(tmp_path, monkeypatch):
    from evroute.network.cachefiles import write_manifest
    from evroute.network.computecache import cached_compute, entry_path, full_inputs, save_tree

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))

    def check(v):
        if set(v) != {"n"} or not isinstance(v["n"], int) or v["n"] < 0:
            raise ValueError("n is a non-negative int")

    entry = entry_path("demo", {"z": 3}, blas=False)
    entry.parent.mkdir(parents=True)
    save_tree({"n": -5}, entry)  # well-formed data, signed with the key, but outside the schema
    write_manifest(entry, full_inputs("demo", {"z": 3}, blas=False))
    with pytest.warns(UserWarning, match="n is a non-negative int"):
        assert cached_compute("demo", {"z": 3}, lambda: {"n": 4}, what="demo", blas=False, check=check) == {"n": 4}


def test_crafted_npz_headers_cannot_exhaust_memory(tmp_path):
    p = tmp_path / "big.npz"
    with zipfile.ZipFile(p, "w") as z:  # a header announcing 10^12 float64 and no data
        with z.open("a0.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    with pytest.raises(DataTreeError, match="more than"):
        dt.read_npz(p, max_bytes=1 << 20)


# ------------------------------------------------------------------------------------------------- grep-clean
UNSAFE_CALLS = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("pickle", "Unpickler"),
    ("cloudpickle", "load"),
    ("cloudpickle", "loads"),
    ("dill", "load"),
    ("dill", "loads"),
    ("joblib", "load"),
    ("torch", "load"),
    ("pd", "read_pickle"),
    ("pandas", "read_pickle"),
    ("shelve", "open"),
    ("marshal", "loads"),
    ("marshal", "load"),
}


@pytest.mark.slow
def test_no_module_of_the_package_unpickles_anything():
    """Grep-clean, by syntax tree: no ``pickle.load(s)``-like call, no ``np.load(..., allow_pickle=True)``, no
    ``from pickle import load``, and no ``atomic_pickle`` left."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                base = node.func.value
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                if (name, node.func.attr) in UNSAFE_CALLS:
                    found.append(f"{where} {name}.{node.func.attr}")
                if node.func.attr == "load" and any(
                    k.arg == "allow_pickle" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                    for k in node.keywords
                ):
                    found.append(f"{where} load(allow_pickle=...)")
            if isinstance(node, ast.ImportFrom) and node.module in ("pickle", "cloudpickle", "dill", "_pickle"):
                found.append(f"{where} from {node.module} import ...")
            if isinstance(node, ast.Name) and node.id == "atomic_pickle":
                found.append(f"{where} atomic_pickle")
    assert not found, found
    assert "pickle.load" not in (PACKAGE / "experiments" / "runner.py").read_text()


def test_entries_signed_with_another_users_key_are_rebuilt_and_the_key_is_private(tmp_path, monkeypatch):
    """A cache folder copied from elsewhere (another key) is rebuilt, never used; the key file is created 0600."""
    from evroute.network.cachefiles import cache_key_path
    from evroute.network.computecache import cached_compute

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "cc"))
    monkeypatch.setenv("EVROUTE_CACHE_KEY_FILE", str(tmp_path / "alice" / "cache.key"))
    cached_compute("demo", {"k": 1}, lambda: {"v": np.ones(3)}, what="demo", blas=False)
    assert cache_key_path().stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("EVROUTE_CACHE_KEY_FILE", str(tmp_path / "bob" / "cache.key"))
    with pytest.warns(UserWarning, match="cache key"):
        got = cached_compute("demo", {"k": 1}, lambda: {"v": np.zeros(3)}, what="demo", blas=False)
    np.testing.assert_array_equal(got["v"], np.zeros(3))  # bob's own value, not alice's entry
    assert (tmp_path / "alice" / "cache.key").read_bytes() != (tmp_path / "bob" / "cache.key").read_bytes()
