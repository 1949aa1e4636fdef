"""The ten time-varying benchmark problems of the BOLT paper (Table 2), as rewards to maximise.

Each problem has ``d`` spatial inputs, normalised to ``[0, 1]^d``, and time ``t`` in seconds on ``[0, time_span]``
(600 s).  A query at ``(x, t)`` returns ``reward(x, t) + N(0, noise_var)`` and costs ``cost`` seconds (Table 2).

* Eight synthetic functions from :mod:`evroute.bo.functions` in ``d + 1`` dimensions: the first ``d`` coordinates are
  space, mapped linearly from the unit cube to the function's standard box, the last one is time, mapped linearly from
  ``[0, time_span]`` to its interval.  ``reward = -f`` (the functions are in minimisation form).
* ``temperature`` -- **synthetic stand-in** for the Intel Berkeley lab data (not available here): 46 sensors in a
  40 m x 30 m lab with a daily cycle, a sun-driven gradient rotating east to west, a server room and a kitchen heat
  source, per-sensor offsets and smooth fluctuations; interpolated in space by Gaussian (Nadaraya-Watson) weights;
  24 h map to the 600 s horizon.  Reward = temperature (deg C): find the hottest location.
* ``wlan`` -- **synthetic stand-in** for the paper's WLAN simulator: 6 access points in a 100 m x 100 m area and 27
  users on smooth random trajectories, each served by its nearest access point; ``x`` sets the 6 transmit powers in
  ``[10^0.1, 10^2.5]`` mW (linear map); log-distance path loss (exponent 3.5), noise floor -90 dBm, bandwidth 1 MHz;
  reward = sum over users of the Shannon capacity ``W log2(1 + SINR)`` in Mbit/s.

The regret of a query is ``max_x reward(x, t) - reward(x_t, t)``; :meth:`TVProblem.best_reward` computes the maximum
from a precomputed path of maximisers on a 2-second time grid (random search plus L-BFGS-B polishing, warm-started from
the neighbouring grid times), evaluated at the exact query time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize

from evroute.bo.base import BoxDomain, FloatArray
from evroute.bo.functions import get_function
from evroute.errors import ParameterError

__all__ = ["PROBLEM_LABELS", "PROBLEMS", "TVProblem", "get_problem"]

RewardFn = Callable[[FloatArray, FloatArray], FloatArray]


@dataclass(eq=False)
class TVProblem:
    """A time-varying maximisation problem on ``[0, 1]^dim x [0, time_span]``.

    Attributes:
        name: registry key; label: display name (``"Hartmann(3)"``, dimension = d + 1 as in the paper).
        dim: number of spatial inputs ``d``.
        fn: reward, ``(n, d)`` unit-cube points and ``(n,)`` times (s) -> ``(n,)``.
        noise_var: observation-noise variance ``sigma0^2``; cost: seconds per evaluation ``c``.
        nu_t: temporal Matérn smoothness the algorithms use (the paper: 3/2, WLAN 1/2).
        stand_in: True for the synthetic stand-ins of real-data problems.
    """

    name: str
    label: str
    dim: int
    fn: RewardFn
    noise_var: float
    cost: float
    nu_t: float = 1.5
    time_span: float = 600.0
    stand_in: bool = False
    _path: tuple[FloatArray, FloatArray] | None = field(default=None, repr=False)

    @property
    def domain(self) -> BoxDomain:
        """The spatial search space ``[0, 1]^dim``."""
        return BoxDomain.unit(self.dim)

    def reward(self, x: ArrayLike, t: ArrayLike) -> FloatArray:
        """Noise-free reward at ``(n, d)`` points (or one ``(d,)``) and times ``(n,)`` (or a scalar) -> ``(n,)``."""
        xs = np.atleast_2d(np.asarray(x, dtype=float))
        if xs.shape[1] != self.dim:
            raise ParameterError(f"{self.name} takes points of dimension {self.dim}, got shape {np.shape(x)}")
        ts = np.broadcast_to(np.asarray(t, dtype=float), (xs.shape[0],))
        return np.asarray(self.fn(xs, ts), dtype=float)

    def observe(self, x: ArrayLike, t: float, rng: np.random.Generator) -> float:
        """One noisy observation ``reward(x, t) + N(0, noise_var)``."""
        return float(self.reward(x, t)[0] + np.sqrt(self.noise_var) * rng.standard_normal())

    # ------------------------------------------------------------------ optimum
    def maximiser_path(self, n_grid: int = 301, n_random: int = 2048, seed: int = 0) -> tuple[FloatArray, FloatArray]:
        """Maximisers on ``n_grid`` equally spaced times: ``(G,)`` times and ``(G, d)`` points (cached)."""
        if self._path is not None and self._path[0].size == n_grid:
            return self._path
        rng = np.random.default_rng(seed)
        times = np.linspace(0.0, self.time_span, int(n_grid))
        cand = rng.random((int(n_random), self.dim))
        d = self.dim
        xs = np.zeros((times.size, d))
        prev: FloatArray | None = None
        for g, tg in enumerate(times):
            pool = cand if prev is None else np.vstack([cand, prev[None, :]])
            vals = self.reward(pool, tg)
            starts = pool[np.argsort(-vals)[:2]]
            if prev is not None:
                starts = np.vstack([prev[None, :], starts])
            best, best_v = starts[0], -np.inf
            for s in starts:
                res = minimize(lambda z, tg=tg: -self.reward(z, tg)[0], s, method="L-BFGS-B", bounds=[(0, 1)] * d)
                if -res.fun > best_v:
                    best, best_v = np.clip(res.x, 0, 1), -res.fun
            xs[g] = prev = best
        self._path = (times, xs)
        return self._path

    def set_maximiser_path(self, times: ArrayLike, xs: ArrayLike) -> None:
        """Install a precomputed path (e.g. loaded from disk)."""
        self._path = (np.asarray(times, dtype=float), np.asarray(xs, dtype=float).reshape(-1, self.dim))

    def best_reward(self, t: ArrayLike) -> FloatArray:
        """``max_x reward(x, t)`` at times ``(n,)``: best of the path's maximisers at the neighbouring grid times."""
        times, xs = self._path if self._path is not None else self.maximiser_path()
        tq = np.atleast_1d(np.asarray(t, dtype=float))
        g = np.clip(np.searchsorted(times, tq), 1, times.size - 1)
        cands = [self.reward(xs[np.clip(g + k, 0, times.size - 1)], tq) for k in (-2, -1, 0, 1)]
        return np.max(np.vstack(cands), axis=0)

    def regret(self, x: ArrayLike, t: ArrayLike) -> FloatArray:
        """Instantaneous regret ``max_x' reward(x', t) - reward(x, t)`` at ``(n, d)`` points and ``(n,)`` times."""
        return self.best_reward(t) - self.reward(x, t)


# ---------------------------------------------------------------------------------------------- synthetic functions
def _from_benchmark(name: str, label: str, fname: str, noise_var: float, cost: float) -> TVProblem:
    bf = get_function(fname)
    d = bf.dim - 1
    lo, hi = bf.lower, bf.upper
    span = 600.0

    def fn(x: FloatArray, t: FloatArray) -> FloatArray:
        z = np.column_stack([lo[:d] + x * (hi[:d] - lo[:d]), lo[d] + (hi[d] - lo[d]) * t / span])
        return -np.asarray(bf(z), dtype=float)

    return TVProblem(name, label, d, fn, noise_var, cost, time_span=span)


# ---------------------------------------------------------------------------------------------- temperature stand-in
def _temperature(seed: int = 46) -> TVProblem:
    rng = np.random.default_rng(seed)
    pos = rng.random((46, 2))  # sensor positions, unit square ~ 40 m x 30 m lab
    offset = 0.3 * rng.standard_normal(46)
    amp = 0.3 * rng.random((46, 3))
    period = rng.uniform(1.0, 6.0, (46, 3))  # hours
    phase = rng.uniform(0, 2 * np.pi, (46, 3))
    server, kitchen = np.array([0.8, 0.2]), np.array([0.2, 0.7])
    span, bandwidth = 600.0, 0.08

    def sensors(hours: FloatArray) -> FloatArray:  # (n,) hours -> (n, 46) temperatures
        h = hours[:, None]
        daily = 21.0 + 2.5 * np.sin(2 * np.pi * (h - 9.0) / 24.0)
        sun = 1.5 * np.clip(np.sin(np.pi * (h - 6.0) / 12.0), 0.0, None)
        phi = np.pi * np.clip((h - 6.0) / 12.0, 0.0, 1.0)  # sun direction: east (0) at 6 h to west (pi) at 18 h
        gradient = sun * (np.cos(phi) * (pos[:, 0] - 0.5) + np.sin(phi) * (pos[:, 1] - 0.5))
        heat = 2.0 * np.exp(-np.sum((pos - server) ** 2, 1) / 0.02)
        heat = heat + 1.5 * np.exp(-((h - 12.5) ** 2) / 2.0) * np.exp(-np.sum((pos - kitchen) ** 2, 1) / 0.03)
        wiggle = np.sum(amp * np.sin(2 * np.pi * h[:, :, None] / period + phase), axis=2)
        return daily + gradient + heat + offset + wiggle

    def fn(x: FloatArray, t: FloatArray) -> FloatArray:
        w = np.exp(-np.sum((x[:, None, :] - pos[None]) ** 2, axis=2) / (2 * bandwidth**2))
        w = w / np.maximum(np.sum(w, axis=1, keepdims=True), 1e-300)
        return np.sum(w * sensors(24.0 * t / span), axis=1)

    return TVProblem("temperature", "Temperature(3)", 2, fn, 0.16, 1.0, time_span=span, stand_in=True)


# ---------------------------------------------------------------------------------------------- WLAN stand-in
def _wlan(seed: int = 7) -> TVProblem:
    rng = np.random.default_rng(seed)
    size, span = 100.0, 600.0
    aps = np.array([[20, 25], [50, 25], [80, 25], [20, 75], [50, 75], [80, 75]], float) + rng.uniform(-8, 8, (6, 2))
    centre = rng.uniform(15, 85, (27, 2))
    amp = rng.uniform(5, 25, (27, 2, 2))
    period = rng.uniform(200, 1200, (27, 2, 2))
    phase = rng.uniform(0, 2 * np.pi, (27, 2, 2))
    p_lo, p_hi = 10**0.1, 10**2.5  # mW
    noise_mw, bandwidth_mhz, exponent = 10 ** (-90 / 10), 1.0, 3.5

    def users(t: FloatArray) -> FloatArray:  # (n,) -> (n, 27, 2) positions in metres
        move = np.sum(amp[None] * np.sin(2 * np.pi * t[:, None, None, None] / period[None] + phase[None]), axis=3)
        return np.clip(centre[None] + move, 0.0, size)

    def fn(x: FloatArray, t: FloatArray) -> FloatArray:
        power = p_lo + x * (p_hi - p_lo)  # (n, 6) mW
        dist = np.linalg.norm(users(t)[:, :, None, :] - aps[None, None], axis=3)  # (n, 27, 6)
        gain = np.maximum(dist, 1.0) ** -exponent
        serving = np.argmin(dist, axis=2)  # (n, 27)
        rx = power[:, None, :] * gain  # (n, 27, 6)
        signal = np.take_along_axis(rx, serving[..., None], axis=2)[..., 0]
        sinr = signal / (noise_mw + np.sum(rx, axis=2) - signal)
        return np.sum(bandwidth_mhz * np.log2(1.0 + sinr), axis=1)

    return TVProblem("wlan", "WLAN(7)", 6, fn, 1.5, 0.1, nu_t=0.5, time_span=span, stand_in=True)


PROBLEMS: dict[str, Callable[[], TVProblem]] = {
    "shekel": lambda: _from_benchmark("shekel", "Shekel(4)", "shekel10", 0.02, 0.50),
    "hartmann3": lambda: _from_benchmark("hartmann3", "Hartmann(3)", "hartmann3", 0.05, 1.00),
    "ackley": lambda: _from_benchmark("ackley", "Ackley(4)", "ackley4", 0.05, 0.05),
    "griewank": lambda: _from_benchmark("griewank", "Griewank(6)", "griewank6", 0.30, 0.05),
    "eggholder": lambda: _from_benchmark("eggholder", "Eggholder(2)", "eggholder", 0.10, 0.05),
    "schwefel": lambda: _from_benchmark("schwefel", "Schwefel(4)", "schwefel4", 0.25, 0.05),
    "hartmann6": lambda: _from_benchmark("hartmann6", "Hartmann(6)", "hartmann6", 0.05, 0.10),
    "powell": lambda: _from_benchmark("powell", "Powell(4)", "powell4", 2.50, 1.00),
    "temperature": _temperature,
    "wlan": _wlan,
}
PROBLEM_LABELS: dict[str, str] = {
    "shekel": "Shekel(4)",
    "hartmann3": "Hartmann(3)",
    "ackley": "Ackley(4)",
    "griewank": "Griewank(6)",
    "eggholder": "Eggholder(2)",
    "schwefel": "Schwefel(4)",
    "hartmann6": "Hartmann(6)",
    "powell": "Powell(4)",
    "temperature": "Temperature(3)",
    "wlan": "WLAN(7)",
}


def get_problem(name: str) -> TVProblem:
    """Build one of :data:`PROBLEMS` by key (case-insensitive)."""
    key = str(name).lower()
    if key not in PROBLEMS:
        raise ParameterError(f"unknown time-varying problem {name!r}; known: {', '.join(PROBLEMS)}")
    return PROBLEMS[key]()
