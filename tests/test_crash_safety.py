"""Crash safety of results folders: SIGKILL at random moments then resume, locks, torn CSV rows, file modes,
stale temp files, pool workers dying with their parent."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from evroute.cli import main
from evroute.experiments import ExperimentConfig, run_experiment
from evroute.experiments.output import output_lock, read_rounds
from evroute.experiments.runner import RECORD_FIELDS

NET = "synthetic:300:2"
TIMING = ["posterior_ms", "index_ms", "oracle_ms", "update_ms"]
RUN = [sys.executable, "-m", "evroute", "run", "--network", NET, "--horizon", "60", "--seeds", "2"]


def _rounds(out: Path) -> pd.DataFrame:
    frames = []
    for d in sorted(out.glob("seed_*")):
        df = pd.read_csv(d / "rounds.csv").drop(columns=TIMING)
        df.insert(0, "seed", d.name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _kill_when(out: Path, ready, extra_s: float, env: dict) -> None:
    """Start the run into ``out``, SIGKILL it ``extra_s`` after ``ready(out)`` first holds (polled every 0.5 ms),
    or when it exits; then check the folder is absent or claimed with its config (never half-created)."""
    proc = subprocess.Popen([*RUN, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while proc.poll() is None and not ready(out) and time.time() < deadline:
        time.sleep(0.0005)
    time.sleep(extra_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists() or (out / "config.json").is_file()


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_equals_uninterrupted(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    full = tmp_path / "full"
    t0 = time.perf_counter()
    subprocess.run([*RUN, "--out", str(full)], check=True, env=env, capture_output=True, timeout=600)
    t_full = time.perf_counter() - t0
    rng = random.Random(0)
    outs = []
    # the first 50 ms of the results folder's life: at first sight of the folder, and a random moment within 50 ms
    for k, extra in enumerate([0.0, rng.uniform(0.0, 0.05)]):
        out = tmp_path / f"claim{k}"
        _kill_when(out, Path.exists, extra, env)
        outs.append(out)
    # one folder killed again and again: when seed files appear, then at random moments of the whole run
    out = tmp_path / "killed"
    _kill_when(out, lambda o: (o / "seed_0" / "rounds.csv").exists(), 0.0, env)
    _kill_when(out, lambda o: (o / "seed_0" / "checkpoint.npz").exists(), rng.uniform(0.0, 0.05), env)
    _kill_when(out, lambda o: (o / "seed_1" / "rounds.csv").exists(), 0.0, env)
    for _ in range(4):
        _kill_when(out, lambda o: True, rng.uniform(0.0, t_full), env)
    outs.append(out)
    for o in outs:
        res = subprocess.run([*RUN, "--out", str(o)], env=env, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        pd.testing.assert_frame_equal(_rounds(full), _rounds(o))
        assert _summary(full) == _summary(o)
        leftovers = [p.name for p in o.rglob(".*") if p.name != ".lock"]
        assert leftovers == [], leftovers
    assert [p.name for p in tmp_path.glob(".*")] == []  # no staged claim folder left


@pytest.mark.slow
def test_second_run_into_a_locked_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    cfg = ExperimentConfig(network=NET, horizon=3)
    run_experiment(cfg, out, progress=False)
    with output_lock(out):
        pass  # reentrant and released
    lock_holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from evroute.experiments.output import output_lock\n"
            f"with output_lock({str(out)!r}):\n    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert lock_holder.stdout.readline().strip() == "held"
        code = main(["run", "--network", NET, "--horizon", "3", "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and "in use by another evroute run" in err
    finally:
        lock_holder.kill()
        lock_holder.wait()
    assert main(["run", "--network", NET, "--horizon", "3", "--out", str(out), "--no-progress"]) == 0


def test_torn_csv_tail_is_dropped(tmp_path):
    header = ",".join(RECORD_FIELDS) + "\n"
    row = lambda r: ",".join([str(r)] + ["1"] * (len(RECORD_FIELDS) - 1)) + "\n"  # noqa: E731
    p = tmp_path / "rounds.csv"
    rows = "".join(row(r) for r in range(1, 12))
    p.write_text(header + rows + "1")  # row 12 cut inside its round number: "1" of "12"
    assert [r["round"] for r in read_rounds(p, RECORD_FIELDS, 100)] == [str(r) for r in range(1, 12)]
    p.write_text(header + rows + "12,1,1")  # cut mid-row
    assert len(read_rounds(p, RECORD_FIELDS, 100)) == 11
    p.write_text(header + rows + "1,1,1\n")  # a complete line with too few fields
    assert len(read_rounds(p, RECORD_FIELDS, 100)) == 11
    assert len(read_rounds(p, RECORD_FIELDS, 5)) == 5
    p.write_text(header + row(1) + row(3))  # a gap
    assert len(read_rounds(p, RECORD_FIELDS, 100)) == 1


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        out = tmp_path / "o"
        run_experiment(ExperimentConfig(network=NET, horizon=3), out, progress=False)
    finally:
        os.umask(old)
    files = [out / "config.json", out / "meta.json", out / "summary.json", out / "seed_0" / "rounds.csv"]
    for f in files:
        assert f.stat().st_mode & 0o777 == 0o666 & ~umask, f
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask


def test_stale_temp_files_are_removed_on_resume(tmp_path):
    out = tmp_path / "o"
    cfg = ExperimentConfig(network=NET, horizon=3)
    run_experiment(cfg, out, progress=False)
    (out / ".summary.json.abc.tmp").write_text("x")
    (out / "seed_0" / ".rounds.csv.abc.tmp").write_text("x")
    run_experiment(cfg, out, progress=False)
    assert not list(out.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["starting", "running"])
def test_pool_workers_die_with_their_parent(tmp_path, moment):
    """Kill the sweep's parent while its workers start (they must not pick up the queued jobs) or run seeds."""
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps({"base": {"network": NET, "horizon": 100000, "seeds": [0, 1, 2, 3]}, "grid": {"policy": ["ts"]}})
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "evroute", "sweep", str(grid), "--out", str(tmp_path / "sw"), "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 180
    workers: list = []

    def is_worker(c) -> bool:
        try:
            return "spawn_main" in " ".join(c.cmdline())
        except psutil.Error:  # exited (or a zombie) between the listing and the look
            return False

    while time.time() < deadline:
        workers = [c for c in parent.children(recursive=True) if is_worker(c)]
        if moment == "starting" and workers:
            break
        if len(workers) >= 2 and list((tmp_path / "sw").glob("*/seed_*/rounds.csv")):
            break
        time.sleep(0.002 if moment == "starting" else 0.2)
    assert workers
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive, [p.pid for p in alive]
    time.sleep(1.0)
    n_rows = {p: p.read_text().count("\n") for p in (tmp_path / "sw").glob("*/seed_*/rounds.csv")}
    time.sleep(1.5)  # nobody writes any more
    assert n_rows == {p: p.read_text().count("\n") for p in (tmp_path / "sw").glob("*/seed_*/rounds.csv")}
