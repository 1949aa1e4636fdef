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

The regret of a query is ``max_x reward(x, t) - reward(x_t, t)`` (the "reference maximum" minus the reward).
:meth:`TVProblem.best_reward` computes the maximum at the exact query times:

* problems with a closed-form moving maximiser (``optimum``; Schwefel: separable, so every spatial coordinate stays at
  the static optimum 420.968747 whatever the time coordinate) evaluate it there;
* one-dimensional problems (Eggholder) use a dense grid at each query time (4097 points, then 4097 more around the best
  cell), which is exact to about 1e-9 relative;
* the others use a precomputed path of maximisers on a 2-second time grid: at each grid time the best of a 4096-point
  scrambled Sobol design, the closed-form/static candidates and the neighbouring maximisers seed a multi-start L-BFGS-B
  (``n_starts`` starts), followed by a backward sweep warm-started from the next grid time; at a query time the best
  of the maximisers of the four neighbouring grid times is taken.

:meth:`TVProblem.reference_maxima` adds a last safeguard: where a queried point beats the reference, L-BFGS-B is
polished from that point and the better value is kept, so no regret is negative (the count is reported).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.stats import qmc

from evroute.bo.base import BoxDomain, FloatArray
from evroute.bo.functions import get_function
from evroute.errors import ParameterError

__all__ = ["PROBLEM_LABELS", "PROBLEMS", "REFERENCE_VERSION", "TVProblem", "get_problem"]

#: Version of the reference-maximum search; cached maximiser paths of another version are recomputed.
REFERENCE_VERSION = 2

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
        optimum: closed-form maximiser, ``(n,)`` times -> ``(n, d)`` unit-cube points, where one is known.
        static_optimum: the (untransformed) function's known optimum in unit-cube coordinates, used as a start.
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
    optimum: Callable[[FloatArray], FloatArray] | None = field(default=None, repr=False)
    static_optimum: FloatArray | None = field(default=None, repr=False)
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
    def _polish(self, x0: FloatArray, t: float) -> tuple[FloatArray, float]:
        res = minimize(lambda z: -self.reward(z, t)[0], x0, method="L-BFGS-B", bounds=[(0.0, 1.0)] * self.dim)
        x = np.clip(res.x, 0.0, 1.0)
        return x, float(self.reward(x, t)[0])

    def maximiser_path(
        self, n_grid: int = 301, n_random: int = 4096, seed: int = 0, n_starts: int = 4
    ) -> tuple[FloatArray, FloatArray]:
        """Maximisers on ``n_grid`` equally spaced times: ``(G,)`` times and ``(G, d)`` points (cached).

        At each grid time: ``n_starts`` L-BFGS-B starts from the best points of a scrambled Sobol design of
        ``n_random`` points (distinct design points only), plus the previous grid time's maximiser, the static optimum
        and the closed-form maximiser where known; then a backward sweep polishes from the next grid time's maximiser.
        """
        if self._path is not None and self._path[0].size == n_grid:
            return self._path
        times = np.linspace(0.0, self.time_span, int(n_grid))
        m = int(np.ceil(np.log2(max(int(n_random), 2))))
        cand = qmc.Sobol(self.dim, scramble=True, seed=seed).random_base2(m)
        extra = [] if self.static_optimum is None else [np.asarray(self.static_optimum, dtype=float)]
        xs = np.zeros((times.size, self.dim))
        vs = np.full(times.size, -np.inf)
        prev: FloatArray | None = None
        for g, tg in enumerate(times):
            vals = self.reward(cand, tg)
            starts = [cand[i] for i in np.argsort(-vals)[: int(n_starts)]] + extra
            if prev is not None:
                starts.append(prev)
            if self.optimum is not None:
                starts.append(self.optimum(np.array([tg]))[0])
            for s in starts:
                x, v = self._polish(s, tg)
                if v > vs[g]:
                    xs[g], vs[g] = x, v
            prev = xs[g]
        for g in range(times.size - 2, -1, -1):  # backward sweep: a maximum that appears later is tracked back
            x, v = self._polish(xs[g + 1], times[g])
            if v > vs[g]:
                xs[g], vs[g] = x, v
        self._path = (times, xs)
        return self._path

    def set_maximiser_path(self, times: ArrayLike, xs: ArrayLike) -> None:
        """Install a precomputed path (e.g. loaded from disk)."""
        self._path = (np.asarray(times, dtype=float), np.asarray(xs, dtype=float).reshape(-1, self.dim))

    def _grid_maximum_1d(self, tq: FloatArray, n: int = 4097) -> FloatArray:
        """Exact-to-grid maximum for one spatial input: dense grid, then a second dense grid around the best cell."""
        out = np.empty(tq.size)
        grid = np.linspace(0.0, 1.0, n)
        for k, t in enumerate(tq):
            v = self.reward(grid[:, None], np.full(n, t))
            i = int(np.argmax(v))
            fine = np.linspace(grid[max(i - 1, 0)], grid[min(i + 1, n - 1)], n)
            out[k] = max(float(v[i]), float(np.max(self.reward(fine[:, None], np.full(n, t)))))
        return out

    def best_reward(self, t: ArrayLike) -> FloatArray:
        """``max_x reward(x, t)`` at times ``(n,)`` (closed form, 1-D dense grid, or the maximiser path)."""
        tq = np.atleast_1d(np.asarray(t, dtype=float))
        if self.optimum is not None:
            return self.reward(self.optimum(tq), tq)
        if self.dim == 1:
            return self._grid_maximum_1d(tq)
        times, xs = self._path if self._path is not None else self.maximiser_path()
        g = np.clip(np.searchsorted(times, tq), 1, times.size - 1)
        cands = [self.reward(xs[np.clip(g + k, 0, times.size - 1)], tq) for k in (-2, -1, 0, 1)]
        return np.max(np.vstack(cands), axis=0)

    def reference_maxima(self, x: ArrayLike, t: ArrayLike) -> tuple[FloatArray, int]:
        """Reference maxima at query times ``(n,)`` for queried points ``(n, d)``, and how many needed the safeguard.

        :meth:`best_reward`, raised where a queried point beats it to the value of an L-BFGS-B polish started there
        (a queried point is a lower bound on the maximum; polishing only improves it).
        """
        xs = np.atleast_2d(np.asarray(x, dtype=float))
        tq = np.broadcast_to(np.asarray(t, dtype=float), (xs.shape[0],)).copy()
        ref = self.best_reward(tq)
        got = self.reward(xs, tq)
        bad = np.flatnonzero(got > ref)
        for i in bad:
            ref[i] = max(float(got[i]), self._polish(xs[i], float(tq[i]))[1])
        return ref, int(bad.size)

    def regret(self, x: ArrayLike, t: ArrayLike) -> FloatArray:
        """Instantaneous regret ``max_x' reward(x', t) - reward(x, t)`` at ``(n, d)`` points and ``(n,)`` times."""
        return self.reference_maxima(x, t)[0] - self.reward(x, t)


# ---------------------------------------------------------------------------------------------- synthetic functions
def _from_benchmark(name: str, label: str, fname: str, noise_var: float, cost: float) -> TVProblem:
    bf = get_function(fname)
    d = bf.dim - 1
    lo, hi = bf.lower, bf.upper
    span = 600.0

    def fn(x: FloatArray, t: FloatArray) -> FloatArray:
        z = np.column_stack([lo[:d] + x * (hi[:d] - lo[:d]), lo[d] + (hi[d] - lo[d]) * t / span])
        return -np.asarray(bf(z), dtype=float)

    static = (np.asarray(bf.x_min, dtype=float)[0, :d] - lo[:d]) / (hi[:d] - lo[:d])
    optimum = None
    if fname.startswith("schwefel"):
        # separable: max over space does not depend on the time coordinate; every spatial coordinate at 420.968747
        x_star = np.clip(static, 0.0, 1.0)

        def optimum(t: FloatArray, x_star: FloatArray = x_star) -> FloatArray:
            return np.broadcast_to(x_star, (np.size(t), d)).copy()

    return TVProblem(name, label, d, fn, noise_var, cost, time_span=span, optimum=optimum, static_optimum=static)


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
