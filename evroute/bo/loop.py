"""Run a policy against an objective and record regret and per-iteration wall time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evroute.bo.base import FloatArray, Policy, SeedLike, as_generator
from evroute.errors import ParameterError, check_positive

__all__ = ["RunResult", "run_policy"]


@dataclass(frozen=True)
class RunResult:
    """Trace of one run (maximisation), ``T`` = number of policy iterations (initial design excluded).

    Attributes:
        x: ``(T, d)`` queried points.
        y: ``(T,)`` noisy observations.
        f: ``(T,)`` noise-free objective values at the queries.
        regret: ``(T,)`` instantaneous regret ``f_max - f``.
        simple_regret: ``(T,)`` ``f_max - max(best initial value, max_{s <= t} f_s)``.
        seconds: ``(T,)`` wall time of each ``ask`` + ``tell`` (the objective's own cost excluded).
        cpu_seconds: ``(T,)`` CPU time of this process for each ``ask`` + ``tell``.
    """

    x: FloatArray
    y: FloatArray
    f: FloatArray
    regret: FloatArray
    simple_regret: FloatArray
    seconds: FloatArray
    cpu_seconds: FloatArray

    @property
    def cumulative_regret(self) -> FloatArray:
        """``(T,)`` running sum of :attr:`regret`."""
        return np.cumsum(self.regret)


def run_policy(
    policy: Policy,
    objective: Callable[[FloatArray], float],
    n_iter: int,
    *,
    f_max: float,
    noise_std: float = 0.0,
    initial: ArrayLike | None = None,
    seed: SeedLike = None,
) -> RunResult:
    """Tell ``policy`` the ``initial`` design ``(n0, d)``, then run ``n_iter`` ask/tell rounds.

    Args:
        policy: the policy (maximises).
        objective: noise-free reward ``(d,) -> float``.
        n_iter: number of rounds after the initial design.
        f_max: maximum of ``objective`` (for regret).
        noise_std: standard deviation of the additive Gaussian observation noise.
        initial: optional initial design (its observations are noisy too, and count toward the simple regret).
        seed: seed of the noise generator (independent of the policy's own seed).
    """
    if int(n_iter) < 0:
        raise ParameterError(f"n_iter must be >= 0, got {n_iter!r}")
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    rng = as_generator(seed)
    best = -np.inf
    if initial is not None:
        for x0 in np.atleast_2d(np.asarray(initial, dtype=float)):
            f0 = float(objective(x0))
            best = max(best, f0)
            policy.tell(x0, f0 + noise_std * rng.standard_normal())
    n = int(n_iter)
    xs, ys, fs = np.empty((n, policy.domain.dim)), np.empty(n), np.empty(n)
    secs, cpu = np.empty(n), np.empty(n)
    for i in range(n):
        start, start_cpu = time.perf_counter(), time.process_time()
        x = policy.ask()
        t_ask, c_ask = time.perf_counter() - start, time.process_time() - start_cpu
        f = float(objective(x))
        y = f + noise_std * rng.standard_normal()
        start, start_cpu = time.perf_counter(), time.process_time()
        policy.tell(x, y)
        secs[i] = t_ask + time.perf_counter() - start
        cpu[i] = c_ask + time.process_time() - start_cpu
        xs[i], ys[i], fs[i] = x, y, f
    regret = f_max - fs
    simple = f_max - np.maximum(best, np.maximum.accumulate(fs)) if n else np.empty(0)
    return RunResult(xs, ys, fs, regret, simple, secs, cpu)
