"""Hostile input to every command: model files validated on load (keys, dtypes, shapes, ranges, network binding),
no traceback for absurd flags or deeply nested JSON, strict JSON out, warnings as one line (issue 32).

Each case here was a traceback or a silently wrong answer at f62f65a (the audit's list); now each is one line
``evroute: error: ...`` with exit status 2 and nothing written, or a one-line ``evroute: warning: ...``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evroute.cli import main
from evroute.energy import VehicleProfile
from evroute.errors import DataError
from evroute.experiments.runner import load_linegraph
from evroute.models.store import load_model, prior_model, save_model

NET = "synthetic:300:2"
OTHER = "synthetic:400:2"


def _observed(kind: str, net: str = NET):
    lg = load_linegraph(net)
    m = (
        prior_model(kind, lg, VehicleProfile(), learn_hyper=False)
        if kind == "gp-exact"
        else prior_model(kind, lg, VehicleProfile())
    )
    rng = np.random.default_rng(0)
    e = rng.integers(0, lg.n_nodes, 60)
    m.update(e, m.posterior().mean[e] + rng.normal(0, 2, 60))
    return m, lg


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    out = {}
    for kind in ("bi", "gp-exact"):
        m, lg = _observed(kind)
        out[kind] = save_model(d / f"{kind}.npz", m, lg, vehicle=VehicleProfile())
        m2, lg2 = _observed(kind, OTHER)
        out[f"{kind}-other"] = save_model(d / f"{kind}-other.npz", m2, lg2, vehicle=VehicleProfile())
    return out


def _parts(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    with np.load(path) as z:
        arrays = dict(z)
    return json.loads(str(arrays.pop("header"))), arrays


def _write(path: Path, header: Any, arrays: dict[str, Any]) -> Path:
    buf = io.BytesIO()
    np.savez(buf, header=np.array(json.dumps(header)), **arrays)
    path.write_bytes(buf.getvalue())
    return path


def _mutated(src: Path, dst: Path, fn: Callable[[dict[str, Any], dict[str, np.ndarray]], Any]) -> Path:
    header, arrays = _parts(src)
    new = fn(header, arrays)
    return _write(dst, header if new is None else new, arrays)


def _set(d: dict[str, Any], key: str, value: Any) -> None:
    d[key] = value


def _drop(d: dict[str, Any], key: str) -> None:
    del d[key]


#: (name, kind of the source model, mutation of (header, arrays)) -- each a traceback or a silent error at f62f65a
MUTATIONS: list[tuple[str, str, Callable[[dict[str, Any], dict[str, np.ndarray]], Any]]] = [
    ("header-is-list", "bi", lambda h, a: [h]),
    ("header-is-string", "bi", lambda h, a: "evroute-model"),
    ("short-array", "bi", lambda h, a: _set(a, "prior_var", a["prior_var"][:-1])),
    ("2d-array", "bi", lambda h, a: _set(a, "total", a["total"][:, None])),
    ("string-array", "bi", lambda h, a: _set(a, "prior_mean_wh", a["prior_mean_wh"].astype(str))),
    ("nan-array", "bi", lambda h, a: a["prior_mean_wh"].__setitem__(3, np.nan)),
    ("inf-variance", "bi", lambda h, a: a["noise_var"].__setitem__(0, np.inf)),
    ("zero-variance", "bi", lambda h, a: a["prior_var"].__setitem__(0, 0.0)),
    ("negative-count", "bi", lambda h, a: a["count"].__setitem__(int(np.argmax(a["count"])), -5)),
    ("fractional-count", "bi", lambda h, a: _set(a, "count", a["count"] + 0.5)),
    ("missing-array", "bi", lambda h, a: _drop(a, "total")),
    ("extra-array", "bi", lambda h, a: _set(a, "evil", np.zeros(3))),
    ("observations-lie", "bi", lambda h, a: _set(h, "observations", h["observations"] + 7)),
    ("vehicle-unknown-key", "bi", lambda h, a: _set(h["vehicle"], "warp_drive", 1)),
    ("vehicle-negative-mass", "bi", lambda h, a: _set(h["vehicle"], "mass_kg", -1.0)),
    ("network-not-object", "bi", lambda h, a: _set(h, "network", "x")),
    ("n-edges-absurd", "bi", lambda h, a: _set(h["network"], "n_edges", 10**15)),
    ("meta-logs-list", "bi", lambda h, a: _set(h["meta"], "logs", [1, 2])),
    ("gp-unknown-config-key", "gp-exact", lambda h, a: _set(h["hyperparameters"]["config"], "evil", 1)),
    ("gp-config-bad-type", "gp-exact", lambda h, a: _set(h["hyperparameters"]["config"], "fit_iters", "many")),
    ("gp-negative-noise", "gp-exact", lambda h, a: _set(h["hyperparameters"], "noise_var", -1.0)),
    ("gp-edge-out-of-range", "gp-exact", lambda h, a: a["edges"].__setitem__(0, 10**6)),
    ("gp-edge-twice", "gp-exact", lambda h, a: a["edges"].__setitem__(1, a["edges"][0])),
    ("gp-lengthscale-length", "gp-exact", lambda h, a: _set(a, "lengthscale_f", np.ones(7))),
    ("gp-bool-prior-var", "gp-exact", lambda h, a: _set(h["hyperparameters"], "prior_var", True)),
]


@pytest.mark.parametrize(("name", "kind", "mutate"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_bad_model_file_is_one_line_on_route(tmp_path, monkeypatch, capsys, models, name, kind, mutate) -> None:
    monkeypatch.chdir(tmp_path)  # "x.json" is looked for where it would be written, not in the caller's folder
    bad = _mutated(models[kind], tmp_path / f"{name}.npz", mutate)
    lg = load_linegraph(NET)
    a, b = (str(x) for x in lg.network.edge_ids[[0, 10]])
    assert (
        main(["route", "--network", NET, "--from", a, "--to", b, "--model-file", str(bad), "--geojson", "x.json"]) == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"evroute: error: {bad}") or f"model {bad}" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not Path("x.json").exists()


@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_other_networks_arrays_with_this_networks_hash(tmp_path, models, kind) -> None:
    """The header of this network's model over the arrays of another network's model: refused (shapes), not a
    broadcast error."""
    header, _ = _parts(models[kind])
    _, arrays = _parts(models[f"{kind}-other"])
    bad = _write(tmp_path / "swap.npz", header, arrays)
    with pytest.raises(DataError, match=r"swap\.npz: "):
        load_model(bad, load_linegraph(NET))


@pytest.mark.parametrize(
    ("name", "content"),
    [("empty", b""), ("truncated", None), ("text", b"not a zip"), ("deep-json", "deep")],
)
def test_unreadable_model_file_on_route_reach_learn(tmp_path, capsys, models, name, content) -> None:
    path = tmp_path / f"{name}.npz"
    if content is None:
        path.write_bytes(models["bi"].read_bytes()[:300])
    elif content == "deep":
        header, arrays = _parts(models["bi"])
        buf = io.BytesIO()
        extra: dict[str, Any] = dict(arrays)
        np.savez(buf, header=np.array("[" * 100_000 + "]" * 100_000), **extra)
        path.write_bytes(buf.getvalue())
    else:
        path.write_bytes(content)
    lg = load_linegraph(NET)
    a, b = (str(x) for x in lg.network.edge_ids[[0, 10]])
    log = tmp_path / "trip.csv"
    log.write_text("time,speed_kmh,altitude_m,soc_pct,lat,lon\n0,10,0,80,0,0\n1,10,0,80,0,0.0001\n")
    for argv in (
        ["route", "--network", NET, "--from", a, "--to", b, "--model-file", str(path)],
        ["reach", "--network", NET, "--from", a, "--charge", "50%", "--model-file", str(path)],
        ["learn", str(log), "--network", NET, "--model-file", str(path)],
        ["model", "show", str(path)],
    ):
        before = path.read_bytes()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("evroute: error:") and str(path) in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert path.read_bytes() == before  # learn did not replace the bad file


def test_valid_model_still_loads_with_the_same_posterior(models) -> None:
    """The schema accepts what save_model writes (no false refusal), counts and totals unchanged."""
    m, lg = _observed("bi")
    back: Any
    back, header = load_model(models["bi"], lg)
    assert header["observations"] == 60
    assert np.array_equal(back.count, m.count) and np.array_equal(back.total, m.total)


# --- tracebacks on absurd flags and deeply nested JSON ----------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            ["learn", "LOG", "--network", NET, "--model-file", "m.npz", "--workers", "100000000000"],
            "--workers must be at",
        ),
        (["demo", "--horizon", "2", "--workers", "100000000000", "--out", "d"], "--workers: must be at most 1024"),
        (["run", "--network", NET, "--horizon", "2", "--workers", "100000000000"], "--workers: must be at most"),
        (["sweep", "GRID", "--out", "s", "--workers", "100000000000"], "--workers: must be at most 1024"),
        (["run", "--config", "DEEP", "--horizon", "2", "--out", "r"], "nested too deeply"),
        (["sweep", "DEEP", "--out", "s"], "nested too deeply"),
        (["learn", "LOG", "--vehicle", "DEEP"], "nested too deeply"),
        (["route", "--network", NET, "--from", "a", "--to", "b", "--vehicle", "DEEP"], "nested too deeply"),
        (["run", "--network", NET, "--model-param", f"x={DEEP}", "--out", "r"], "--model-param x: value nested"),
        (["route", "--network", NET, "--from", "a", "--to", "b", "--charge", "80"], "for 80 percent write 80%"),
        (["plot", "RESULTS", "--prefix", "../../X"], "--prefix must be a file-name prefix without a folder"),
    ],
)
def test_hostile_flags_and_files_are_one_line(tmp_path, monkeypatch, capsys, argv, match) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "grid.json").write_text(json.dumps({"base": {"network": NET, "horizon": 2}, "grid": {"seeds": [[0]]}}))
    (tmp_path / "log.csv").write_text("time,speed_kmh,altitude_m,soc_pct,lat,lon\n0,1,0,80,0,0\n1,1,0,79,0,0\n")
    results = tmp_path / "res"
    results.mkdir()
    (results / "config.json").write_text("{}")
    subst = {"LOG": "log.csv", "DEEP": "deep.json", "GRID": "grid.json", "RESULTS": str(results)}
    argv = [subst.get(a, a) for a in argv]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code: int | str | None
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's one-line error for a flag's value
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("evroute: error:") and match in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written
    assert not (tmp_path.parent / "X").exists()


def test_disk_full_without_a_file_name_names_the_cache_folders(monkeypatch, capsys) -> None:
    """ENOSPC raised where the system gives no file name (a write to an open handle): the line still says where
    evroute writes."""
    import errno

    import evroute.cli.network as cli_network
    from evroute.network.computecache import compute_cache_dir

    def full(args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli_network, "_cmd_info", full)  # the handler `info` registers (read by build_parser)
    assert main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evroute: error: disk full: No space left on device") and str(compute_cache_dir()) in err
    assert len(err.strip().splitlines()) == 1


# --- warnings as one line, strict JSON out ----------------------------------------------------------------------------


def test_every_warning_is_one_clean_line(tmp_path) -> None:
    """A warning raised inside any command (evroute's own, a library's UserWarning or RuntimeWarning) prints as
    ``evroute: warning: <text>`` on one line: no category, no file, no source line (a real process: pytest records
    warnings instead of printing them); a deprecation notice keeps Python's format; the formatter is restored."""
    import subprocess
    import sys

    script = """
import sys, warnings
import evroute.cli as cli
import evroute.cli.network as cli_network
def noisy(args):
    warnings.warn("cached network x.net.xml not used\\n(bad header): rebuilding it", UserWarning, stacklevel=1)
    warnings.warn(RuntimeWarning("invalid value encountered in divide"), stacklevel=1)
    print("done")
    return 0
cli_network._cmd_info = noisy
before = warnings.formatwarning
code = cli.main(["info"])
assert warnings.formatwarning is before
sys.exit(code)
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "done\n"
    assert res.stderr.splitlines() == [
        "evroute: warning: cached network x.net.xml not used (bad header): rebuilding it",
        "evroute: warning: invalid value encountered in divide",
    ]


def test_recorded_warnings_still_reach_a_caller_of_main(monkeypatch) -> None:
    """``pytest.warns`` (or any ``catch_warnings(record=True)``) around :func:`evroute.cli.main` still records."""
    import warnings

    import evroute.cli.network as cli_network

    def noisy(args: Any) -> int:
        warnings.warn("something odd", UserWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(cli_network, "_cmd_info", noisy)
    with pytest.warns(UserWarning, match="something odd"):
        assert main(["info"]) == 0


def _reject_constant(c: str) -> None:
    raise ValueError(f"non-standard JSON constant {c}")


def test_learn_json_is_strict_json(tmp_path, capsys) -> None:
    """A trip whose gauge never moves has measured energy 0, so its error % is undefined: ``null``, not ``NaN``
    (which ``json.loads(..., parse_constant=...)`` refuses, as every strict JSON reader does)."""
    log = tmp_path / "flat.csv"
    rows = ["time,speed_kmh,altitude_m,soc_pct,lat,lon"] + [f"{t},36,0,80,50,{10 + t * 1.4e-4:.6f}" for t in range(60)]
    log.write_text("\n".join(rows) + "\n")
    assert main(["learn", str(log), "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=_reject_constant)
    trip = out["trips"][0]
    assert trip["measured_wh"] == 0 and trip["error_pct"] is None and trip["predicted_wh"] > 0


def test_json_files_written_are_strict(tmp_path) -> None:
    from evroute.io import atomic_write_json, dumps_strict

    obj = {"a": float("nan"), "b": [np.float64("inf"), 1.5], "c": np.array([1.0, -np.inf]), "d": (np.int64(3),)}
    atomic_write_json(tmp_path / "x.json", obj)
    back = json.loads((tmp_path / "x.json").read_text(), parse_constant=_reject_constant)
    assert back == {"a": None, "b": [None, 1.5], "c": [1.0, None], "d": [3]}
    assert json.loads(dumps_strict(obj), parse_constant=_reject_constant) == back


# --- plot: a garbage rounds row, a prefix with a folder -----------------------------------------------------------


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "r"
    assert main(["run", "--network", NET, "--horizon", "4", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.slow
def test_plot_drops_a_garbage_last_row_with_a_warning(tmp_path, capsys, run_folder) -> None:
    import shutil

    from evroute.experiments import load_rounds
    from evroute.viz import usable_rounds

    folder = tmp_path / "r"
    shutil.copytree(run_folder, folder)
    rounds_csv = folder / "seed_0" / "rounds.csv"
    good = rounds_csv.read_text()
    last = good.splitlines()[-1].split(",")
    last[0] = "5"
    last[-6] = "1e300"  # a cumulative regret that is not the running sum (a torn or edited row)
    rounds_csv.write_text(good + ",".join(last) + "\n" + "garbage,,x\n")
    from evroute.errors import DataWarning

    with pytest.warns(DataWarning) as rec:
        assert main(["plot", str(folder), "--no-html", "--into", str(tmp_path / "fig")]) == 0
    assert [str(w.message) for w in rec if w.category is DataWarning] == [
        f"{rounds_csv}: 2 of 6 rows dropped (not the next round, a non-finite regret, a "
        "cumulative regret that is not the running sum, or no route)"
    ]
    kept = usable_rounds(load_rounds(run_folder), run_folder)
    assert kept["round"].tolist() == [1, 2, 3, 4]
    assert (tmp_path / "fig" / "regret.png").is_file()


def test_an_output_that_is_a_pipe_or_device_is_refused_not_replaced(tmp_path, capsys) -> None:
    """``--save-vehicle`` (or any output) naming a FIFO or a device: one line, the special file left as it was (at
    f62f65a the atomic write replaced it by a regular file -- as root, ``/dev/full`` or ``/dev/null`` too)."""
    import os
    import stat

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    log = tmp_path / "log.csv"
    log.write_text("time,speed_kmh,altitude_m,soc_pct,lat,lon\n0,1,0,80,0,0\n1,1,0,79,0,0\n")
    assert main(["learn", str(log), "--save-vehicle", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evroute: error: not a regular file") and str(fifo) in err and err.count("\n") == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_lock_in_a_folder_that_cannot_hold_it_is_an_error_not_a_wait(tmp_path) -> None:
    from evroute.io import file_lock

    with pytest.raises(OSError) as exc, file_lock(tmp_path / "missing" / "m.npz"):
        pass
    assert str(tmp_path / "missing") in str(exc.value)
