"""Clocks, the ten problems, the experiment runner (resume) and the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evroute.bo.timevarying import clock as clock_module
from evroute.bo.timevarying.clock import RealTimeClock, SimulatedClock, make_clock
from evroute.bo.timevarying.problems import PROBLEMS, REFERENCE_VERSION, get_problem
from evroute.errors import ParameterError
from studies.bo.tv_experiment import Protocol, RunSpec, run_path, run_protocol
from studies.bo.tv_report import load_runs, ranking_comparison, summary_table

# Table 2 of the paper: (d + 1, noise variance, cost in seconds)
TABLE2 = {
    "shekel": (4, 0.02, 0.50),
    "hartmann3": (3, 0.05, 1.00),
    "ackley": (4, 0.05, 0.05),
    "griewank": (6, 0.30, 0.05),
    "eggholder": (2, 0.10, 0.05),
    "schwefel": (4, 0.25, 0.05),
    "hartmann6": (6, 0.05, 0.10),
    "powell": (4, 2.50, 1.00),
    "temperature": (3, 0.16, 1.00),
    "wlan": (7, 1.50, 0.10),
}


class FakeTime:
    """Stands in for the ``time`` module of :mod:`evroute.bo.timevarying.clock`: wall and CPU timers that move only
    when told to, and a ``sleep`` that records its argument and advances the wall timer."""

    def __init__(self) -> None:
        self.wall, self.cpu = 1000.0, 50.0
        self.sleeps: list[float] = []

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.cpu

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.wall += seconds

    def work(self, wall: float, cpu: float) -> None:
        """A block of computation that takes ``wall`` elapsed and ``cpu`` CPU seconds."""
        self.wall, self.cpu = self.wall + wall, self.cpu + cpu


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(clock_module, "time", fake)
    return fake


def test_simulated_clock_counts_compute_and_costs_without_sleeping(fake_time: FakeTime) -> None:
    wall = SimulatedClock(compute_scale=2.0, timer="wall")
    with wall.compute():
        fake_time.work(wall=0.02, cpu=0.005)
    wall.evaluate(100.0)
    assert fake_time.sleeps == []  # the evaluation cost is added, not slept
    assert wall.compute_seconds == pytest.approx(0.02, abs=1e-12)
    assert wall.now() == pytest.approx(100.0 + 2.0 * 0.02, abs=1e-12)
    cpu = SimulatedClock(compute_scale=3.0)  # default timer: process CPU time, blind to other processes' load
    with cpu.compute():
        fake_time.work(wall=0.5, cpu=0.01)
    assert cpu.compute_seconds == pytest.approx(0.01, abs=1e-12) and cpu.now() == pytest.approx(0.03, abs=1e-12)
    free = SimulatedClock(compute_scale=0.0)
    with free.compute():
        fake_time.work(wall=0.1, cpu=0.1)
    assert free.now() == 0.0 and free.compute_seconds == pytest.approx(0.1, abs=1e-12)


def test_real_clock_sleeps_and_make_clock_validates(fake_time: FakeTime) -> None:
    clock = RealTimeClock()
    clock.evaluate(0.02)
    assert fake_time.sleeps == [0.02] and clock.now() == pytest.approx(0.02, abs=1e-12)
    fake_time.work(wall=1.5, cpu=0.0)
    assert clock.now() == pytest.approx(1.52, abs=1e-12)  # the wall clock, whatever the process does
    assert isinstance(make_clock("simulated", compute_scale=3.0), SimulatedClock)
    with pytest.raises(ParameterError):
        make_clock("real", compute_scale=3.0)
    with pytest.raises(ParameterError):
        make_clock("sundial")
    with pytest.raises(ParameterError):
        SimulatedClock(compute_scale=-1.0)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_problems_match_table2_and_vary_in_time(name: str) -> None:
    p = get_problem(name)
    dim, noise, cost = TABLE2[name]
    assert (p.dim + 1, p.noise_var, p.cost) == (dim, noise, cost)
    assert p.stand_in == (name in ("temperature", "wlan"))
    x = np.random.default_rng(0).random((64, p.dim))
    r0, r1 = p.reward(x, 0.0), p.reward(x, 300.0)
    assert r0.shape == (64,) and np.all(np.isfinite(r0)) and not np.allclose(r0, r1)
    y = [p.observe(x[0], 10.0, np.random.default_rng(s)) for s in range(400)]
    assert np.var(y) == pytest.approx(noise, rel=0.25)


@pytest.mark.slow
def test_best_reward_bounds_random_points() -> None:
    p = get_problem("hartmann3")
    times, maximisers = p.maximiser_path(n_grid=31, n_random=512)
    x, t = np.random.default_rng(1).random((500, 2)), np.random.default_rng(2).uniform(0, 600, 500)
    assert np.all(p.regret(x, t) >= -1e-9)
    assert np.min(p.regret(maximisers, times)) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_run_protocol_saves_resumes_and_reports(tmp_path: Path) -> None:
    p = get_problem("hartmann3")
    times, xs = p.maximiser_path(n_grid=31, n_random=512)
    (tmp_path / "optima").mkdir()
    np.savez(tmp_path / "optima" / "hartmann3.npz", times=times, xs=xs, version=REFERENCE_VERSION)
    proto = Protocol(horizon=25.0, replications=2, problems=("hartmann3",), algorithms=("r-gp-ucb", "bolt"))
    specs = proto.specs()
    assert specs[0] == RunSpec("hartmann3", "r-gp-ucb", 0, 25.0, "simulated", 1.0)
    paths = run_protocol(specs, tmp_path, progress=False)
    assert all(path.exists() for path in paths)
    stamp = run_path(tmp_path, specs[0]).stat().st_mtime_ns
    run_protocol(specs, tmp_path, progress=False)  # resume: nothing to do
    assert run_path(tmp_path, specs[0]).stat().st_mtime_ns == stamp
    df, logs = load_runs(tmp_path)
    assert len(df) == 4 and set(df["algorithm"]) == {"r-gp-ucb", "bolt"}
    log = logs[("hartmann3", "bolt", 0)]
    assert np.all(np.diff(log["t"]) >= 1.0) and log["t"][-1] < 25.0  # each query costs c = 1 s
    table, means = summary_table(df)
    assert "Hartmann(3)" in table and "Overall" in table
    assert "BOLT best on" in ranking_comparison(means)
    with pytest.raises(ParameterError):
        run_protocol(specs, tmp_path, executor="spark")
