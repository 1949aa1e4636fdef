"""Clocks for time-varying BO experiments: real time (as in the paper) or simulated (no sleeping).

An experiment loop reads :meth:`Clock.now` (seconds since the start), wraps the policy's work in
:meth:`Clock.compute` and pays the evaluation cost ``c`` with :meth:`Clock.evaluate`:

* :class:`RealTimeClock` -- ``now`` is the wall clock, ``compute`` does nothing (the wall clock runs anyway) and
  ``evaluate(c)`` sleeps ``c`` seconds.  This is the paper's protocol; on a busy machine the policy gets slower, so
  results depend on the load.
* :class:`SimulatedClock` -- ``now`` is a counter; ``compute`` adds the *measured* compute time of the block times
  ``compute_scale``, ``evaluate(c)`` adds ``c`` without sleeping.  The timer is the process CPU time by default, so
  other processes on the machine do not slow the simulated policy down (pin BLAS to one thread for this to equal the
  single-core compute time); ``timer="wall"`` measures elapsed time instead.  ``compute_scale > 1`` emulates a machine
  that many times slower (or a costlier implementation): a run of horizon ``H`` then uses at most ``H / compute_scale``
  seconds of CPU.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from evroute.errors import ParameterError, check_positive

__all__ = ["Clock", "RealTimeClock", "SimulatedClock", "make_clock"]


class Clock(ABC):
    """Source of the current time (seconds since the clock was created)."""

    @abstractmethod
    def now(self) -> float:
        """Seconds elapsed since the start."""

    @abstractmethod
    @contextmanager
    def compute(self) -> Iterator[None]:
        """Context manager around policy computation (ask, tell)."""

    @abstractmethod
    def evaluate(self, cost: float) -> None:
        """Pay the evaluation cost ``cost`` seconds of one objective call."""


class RealTimeClock(Clock):
    """Wall clock (``time.perf_counter``); evaluations sleep their cost."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self._start

    @contextmanager
    def compute(self) -> Iterator[None]:
        yield

    def evaluate(self, cost: float) -> None:
        time.sleep(check_positive("cost", cost, allow_zero=True))


class SimulatedClock(Clock):
    """Simulated time advanced by measured compute time (times ``compute_scale``) and evaluation costs.

    Args:
        compute_scale: factor applied to measured compute time (>= 0; 0 makes compute free).
        timer: ``"cpu"`` (process CPU time, default) or ``"wall"`` (``perf_counter``).
    """

    def __init__(self, compute_scale: float = 1.0, timer: Literal["cpu", "wall"] = "cpu") -> None:
        self.compute_scale = check_positive("compute_scale", compute_scale, allow_zero=True)
        if timer not in ("cpu", "wall"):
            raise ParameterError(f"timer must be 'cpu' or 'wall', got {timer!r}")
        self._timer = time.process_time if timer == "cpu" else time.perf_counter
        self._now = 0.0
        self.compute_seconds = 0.0  # total measured (unscaled) compute

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self._now += check_positive("seconds", seconds, allow_zero=True)

    @contextmanager
    def compute(self) -> Iterator[None]:
        start = self._timer()
        try:
            yield
        finally:
            spent = max(self._timer() - start, 0.0)
            self.compute_seconds += spent
            self._now += self.compute_scale * spent

    def evaluate(self, cost: float) -> None:
        self.advance(cost)


def make_clock(mode: str, *, compute_scale: float = 1.0) -> Clock:
    """``"real"``: :class:`RealTimeClock` (``compute_scale`` must be 1); ``"simulated"``: :class:`SimulatedClock`."""
    if mode == "real":
        if compute_scale != 1.0:
            raise ParameterError("compute_scale applies to the simulated clock only")
        return RealTimeClock()
    if mode == "simulated":
        return SimulatedClock(compute_scale)
    raise ParameterError(f"clock mode must be 'real' or 'simulated', got {mode!r}")
