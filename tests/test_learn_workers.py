"""``evroute learn --workers N``: the per-log work on a process pool gives the serial run's model bit for bit, resumes
the same way, reports a bad log with the serial path's message and exit status, and keeps a bounded number of logs
in flight, in input order."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from evroute.errors import DataError, ParameterError
from evroute.experiments.trip_workers import LogWorkers, ordered_results

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "data" / "sumo-tiny" / "grid.net.xml"
LOGS = ROOT / "data" / "trip-log-sumo"
CSV_LOGS = sorted(str(p) for p in LOGS.glob("trip_*.csv"))
FCD = [str(LOGS / "fcd.xml"), "--battery", str(LOGS / "battery.xml")]


def _learn(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evroute", "learn", *args], capture_output=True, text=True)


def _base(model: Path, workers: int) -> list[str]:
    return ["--network", str(GRID), "--model-file", str(model), "--vehicle", "sumo_ev", "--workers", str(workers)]


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _summary(stdout: str) -> str:
    """The run's summary line without its CPU seconds (which differ from run to run)."""
    return stdout.strip().splitlines()[-1].split("; CPU s")[0]


@pytest.mark.slow
def test_two_workers_give_the_serial_model_bit_for_bit_and_resume_alike(tmp_path):
    # CSV logs and a SUMO FCD file (one log, eight vehicles): all of the shipped SUMO-generated logs
    out = {}
    for w in (1, 2):
        res = _learn([*CSV_LOGS, *FCD, *_base(tmp_path / f"all{w}.npz", w)])
        assert res.returncode == 0, res.stderr
        out[w] = res.stdout
    assert _summary(out[1]) == _summary(out[2])
    assert "learned 9 log(s)" in out[1] and "594 readings" in out[1] and "154 over the trips" in out[1]
    assert (tmp_path / "all1.npz").read_bytes() == (tmp_path / "all2.npz").read_bytes()
    a1 = _arrays(tmp_path / "all1.npz")
    assert int(a1["lin_readings"]) == 594 and len(a1["lin_val"]) > 0
    # resumed (five logs, then all: the five are skipped), with a save after every log, serial and on 2 workers
    for w in (1, 2):
        model = tmp_path / f"resume{w}.npz"
        assert _learn([*CSV_LOGS[:5], *_base(model, w)]).returncode == 0
        res = _learn([*CSV_LOGS, *_base(model, w), "--save-every", "1"])
        assert res.returncode == 0, res.stderr
        assert "learned 3 log(s) (5 already in the model)" in res.stdout
    assert (tmp_path / "resume1.npz").read_bytes() == (tmp_path / "resume2.npz").read_bytes()


@pytest.mark.slow
def test_a_bad_log_is_reported_as_in_the_serial_path_and_nothing_is_written(tmp_path):
    bad = tmp_path / "broken.csv"
    text = (LOGS / "trip_1.csv").read_text().splitlines()
    text[0] = text[0].replace("speed_kmh", "velocity")  # not a log of this schema
    bad.write_text("\n".join(text) + "\n")
    logs = [*CSV_LOGS[:3], str(bad), *CSV_LOGS[3:]]  # the bad log in the middle: later ones are read ahead
    err = {}
    for w in (1, 3):
        model = tmp_path / f"m{w}.npz"
        res = _learn([*logs, *_base(model, w)])
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert not model.exists()
        err[w] = res.stderr
    assert err[1] == err[3]
    assert err[1].startswith(f"evroute: error: {bad}: missing column(s) 'speed_kmh'") and err[1].count("\n") == 1


@pytest.mark.slow
def test_a_bad_row_is_dropped_with_one_warning_and_the_batch_learned_alike_on_workers(tmp_path):
    """One bad row (a speed that is not a number; at f62f65a: exit 2 for the whole batch) is dropped with one
    warning line naming the file, the reason and the line, serial and on 3 workers alike; every log is learned."""
    bad = tmp_path / "broken.csv"
    text = (LOGS / "trip_1.csv").read_text().splitlines()
    text[2] = "1,fast," + text[2].split(",", 2)[2]
    bad.write_text("\n".join(text) + "\n")
    logs = [*CSV_LOGS[:3], str(bad), *CSV_LOGS[3:]]
    out = {}
    for w in (1, 3):
        model = tmp_path / f"m{w}.npz"
        res = _learn([*logs, *_base(model, w)])
        assert res.returncode == 0, res.stderr
        warn = [line for line in res.stderr.splitlines() if line.startswith("evroute: warning:")]
        assert warn == [
            f"evroute: warning: {bad}: dropped 1 of {len(text) - 1} rows: column 'speed_kmh' not a number "
            "(1, first at line 3)"
        ]
        assert f"learned {len(logs)} log(s)" in res.stdout
        out[w] = model.read_bytes()
    assert out[1] == out[3]


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0"])
def test_workers_below_one_is_a_one_line_error(tmp_path, workers):
    model = tmp_path / "m.npz"
    res = _learn([CSV_LOGS[0], "--network", str(GRID), "--model-file", str(model), "--workers", workers])
    assert res.returncode == 2
    assert res.stderr == f"evroute: error: --workers must be >= 1, got {workers}\n"
    assert not model.exists()


def test_log_workers_rejects_a_count_below_one():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ParameterError, match="--workers must be an integer >= 1"):
            LogWorkers(None, bad)


class _LateFuture(Future):
    """A future that completes when its result is asked for (a job still running when its turn comes)."""

    def __init__(self, value: int, order: list[int]) -> None:
        super().__init__()
        self.value, self.order = value, order

    def result(self, timeout: float | None = None) -> int:
        if not self.done():
            self.order.append(self.value)
            self.set_result(10 * self.value)
        return super().result(timeout)


class _Submitter:
    """Fake ``submit``: odd items finish at once, even ones only when their result is asked for (so jobs finish out
    of input order); records how many were submitted and not yet consumed at each submit."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.futures: list[Future[int]] = []
        self.outstanding: list[int] = []
        self.finished: list[int] = []
        self.taken = 0
        self.fail_at = fail_at

    def __call__(self, item: int) -> Future[int]:
        f: Future[int] = _LateFuture(item, self.finished)
        self.futures.append(f)
        self.outstanding.append(len(self.futures) - self.taken)
        if item == self.fail_at:
            f.set_exception(DataError(f"log {item} is bad"))
            self.finished.append(item)
        elif item % 2:
            f.set_result(10 * item)
            self.finished.append(item)
        return f


def test_ordered_results_keep_input_order_and_a_bounded_number_in_flight():
    sub = _Submitter()
    got = []
    for r in ordered_results(sub, iter(range(20)), in_flight=4):
        got.append(r)
        sub.taken += 1
    assert sub.finished != sorted(sub.finished)  # the jobs finished out of order ...
    assert got == [10 * i for i in range(20)]  # ... the results come in input order
    assert max(sub.outstanding) == 4  # never more than in_flight submitted and not yet consumed
    assert len(sub.futures) == 20  # each item submitted once


def test_ordered_results_raise_the_first_failure_in_input_order_and_cancel_the_rest():
    sub = _Submitter(fail_at=6)
    got = []
    with pytest.raises(DataError, match="log 6 is bad"):
        for r in ordered_results(sub, iter(range(100)), in_flight=3):
            got.append(r)
            sub.taken += 1
    assert got == [0, 10, 20, 30, 40, 50]  # everything before the bad log, nothing after it
    assert len(sub.futures) == 9  # submitted lazily: the bad log and the two behind it, not the 100
    assert [f.cancelled() for f in sub.futures[7:]] == [False, True]  # item 7 had finished; item 8 is cancelled
