"""Benchmark functions for Bayesian optimisation, with domains and known global minima.

Every function is written in its usual **minimisation** form (Surjanovic & Bingham's "Virtual Library of Simulation
Experiments" conventions).  Policies in :mod:`evroute.bo` maximise, so use :meth:`BenchmarkFunction.objective`
(``-f``) as the reward and :meth:`BenchmarkFunction.regret` (``f(x) - f_min >= 0``) to score a query.

Functions accept a single point ``(d,)`` (returning a float) or a batch ``(n, d)`` (returning ``(n,)``).
Dimension-parametrised functions (Rosenbrock, Sphere, Ackley, Griewank, Schwefel, Powell) take ``dim``; Shekel takes
``m`` (5, 7 or 10 terms).  Use :func:`get_function` to build one by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evroute.bo.base import BoxDomain, FloatArray
from evroute.errors import ParameterError

__all__ = [
    "FUNCTION_NAMES",
    "BenchmarkFunction",
    "ackley",
    "branin",
    "eggholder",
    "forrester",
    "get_function",
    "goldstein_price",
    "griewank",
    "hartmann3",
    "hartmann6",
    "powell",
    "rosenbrock",
    "schwefel",
    "shekel",
    "six_hump_camel",
    "sphere",
]


@dataclass(frozen=True, eq=False)
class BenchmarkFunction:
    """A test function with its box domain and known global minimum.

    Attributes:
        name: short name, e.g. ``"hartmann3"`` or ``"ackley4"``.
        lower: ``(d,)`` lower bounds of the standard domain.
        upper: ``(d,)`` upper bounds.
        f_min: the global minimum value.
        x_min: ``(k, d)`` the known global minimisers (all of them when there are finitely many).
        fn: vectorised implementation, ``(n, d) -> (n,)``.
    """

    name: str
    lower: FloatArray
    upper: FloatArray
    f_min: float
    x_min: FloatArray
    fn: Callable[[FloatArray], FloatArray]

    @property
    def dim(self) -> int:
        """Input dimension ``d``."""
        return int(self.lower.size)

    @property
    def domain(self) -> BoxDomain:
        """The standard domain as a :class:`BoxDomain`."""
        return BoxDomain(self.lower, self.upper)

    @property
    def f_max_objective(self) -> float:
        """Maximum of :meth:`objective` (``-f_min``)."""
        return -self.f_min

    def __call__(self, x: ArrayLike) -> FloatArray | float:
        arr = np.asarray(x, dtype=float)
        single = arr.ndim == 1
        batch = np.atleast_2d(arr)
        if batch.ndim != 2 or batch.shape[1] != self.dim:
            raise ParameterError(f"{self.name} takes points of dimension {self.dim}, got shape {arr.shape}")
        out = np.asarray(self.fn(batch), dtype=float)
        return float(out[0]) if single else out

    def objective(self, x: ArrayLike) -> FloatArray | float:
        """The reward to maximise, ``-f(x)``."""
        v = self(x)
        return -v

    def regret(self, x: ArrayLike) -> FloatArray | float:
        """Instantaneous regret ``f(x) - f_min`` (non-negative up to rounding)."""
        return self(x) - self.f_min

    def __repr__(self) -> str:
        return f"BenchmarkFunction({self.name!r}, dim={self.dim}, f_min={self.f_min})"


def _make(
    name: str, lower: ArrayLike, upper: ArrayLike, f_min: float, x_min: ArrayLike, fn: Callable
) -> BenchmarkFunction:
    lo = np.asarray(lower, dtype=float).reshape(-1)
    hi = np.asarray(upper, dtype=float).reshape(-1)
    return BenchmarkFunction(name, lo, hi, float(f_min), np.atleast_2d(np.asarray(x_min, dtype=float)), fn)


def _check_dim(name: str, dim: int, minimum: int = 1, multiple: int = 1) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < minimum or dim % multiple:
        extra = f" and a multiple of {multiple}" if multiple > 1 else ""
        raise ParameterError(f"{name} dim must be an int >= {minimum}{extra}, got {dim!r}")
    return int(dim)


# ---------------------------------------------------------------------------------------------- 1-D and 2-D functions
def forrester() -> BenchmarkFunction:
    """Forrester et al. (2008): ``(6x - 2)^2 sin(12x - 4)`` on ``[0, 1]``; min -6.020740 at 0.757249."""
    return _make(
        "forrester",
        [0.0],
        [1.0],
        -6.020740055767083,
        [[0.757248757275939]],
        lambda x: (6 * x[:, 0] - 2) ** 2 * np.sin(12 * x[:, 0] - 4),
    )


def branin() -> BenchmarkFunction:
    """Branin-Hoo on ``[-5, 10] x [0, 15]``; min 5/(4 pi) = 0.397887 at three points."""
    b, c, t = 5.1 / (4 * np.pi**2), 5 / np.pi, 1 / (8 * np.pi)

    def fn(x: FloatArray) -> FloatArray:
        return (x[:, 1] - b * x[:, 0] ** 2 + c * x[:, 0] - 6) ** 2 + 10 * (1 - t) * np.cos(x[:, 0]) + 10

    x_min = [[-np.pi, 12.275], [np.pi, 2.275], [3 * np.pi, 2.475]]
    return _make("branin", [-5.0, 0.0], [10.0, 15.0], 5 / (4 * np.pi), x_min, fn)


def goldstein_price() -> BenchmarkFunction:
    """Goldstein-Price on ``[-2, 2]^2``; min 3 at (0, -1)."""

    def fn(x: FloatArray) -> FloatArray:
        x1, x2 = x[:, 0], x[:, 1]
        a = 1 + (x1 + x2 + 1) ** 2 * (19 - 14 * x1 + 3 * x1**2 - 14 * x2 + 6 * x1 * x2 + 3 * x2**2)
        b = 30 + (2 * x1 - 3 * x2) ** 2 * (18 - 32 * x1 + 12 * x1**2 + 48 * x2 - 36 * x1 * x2 + 27 * x2**2)
        return a * b

    return _make("goldstein_price", [-2.0, -2.0], [2.0, 2.0], 3.0, [[0.0, -1.0]], fn)


def six_hump_camel() -> BenchmarkFunction:
    """Six-Hump Camel on ``[-3, 3] x [-2, 2]``; min -1.031628 at +-(0.089842, -0.712656)."""

    def fn(x: FloatArray) -> FloatArray:
        x1, x2 = x[:, 0], x[:, 1]
        return (4 - 2.1 * x1**2 + x1**4 / 3) * x1**2 + x1 * x2 + (-4 + 4 * x2**2) * x2**2

    xm = np.array([0.08984200893527233, -0.712656403019058])
    return _make("six_hump_camel", [-3.0, -2.0], [3.0, 2.0], -1.0316284534898774, [xm, -xm], fn)


def eggholder() -> BenchmarkFunction:
    """Eggholder on ``[-512, 512]^2``; min -959.640663 at (512, 404.231805)."""

    def fn(x: FloatArray) -> FloatArray:
        x1, x2 = x[:, 0], x[:, 1]
        return -(x2 + 47) * np.sin(np.sqrt(np.abs(x2 + x1 / 2 + 47))) - x1 * np.sin(np.sqrt(np.abs(x1 - (x2 + 47))))

    return _make("eggholder", [-512.0, -512.0], [512.0, 512.0], -959.6406627208509, [[512.0, 404.23180482889796]], fn)


# ---------------------------------------------------------------------------------------------- Hartmann and Shekel
_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
_H6_A = np.array(
    [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
)
_H6_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])


def _hartmann(a_mat: FloatArray, p_mat: FloatArray) -> Callable[[FloatArray], FloatArray]:
    def fn(x: FloatArray) -> FloatArray:
        inner = np.sum(a_mat[None] * (x[:, None, :] - p_mat[None]) ** 2, axis=2)  # (n, 4)
        return -(np.exp(-inner) @ _H_ALPHA)

    return fn


def hartmann3() -> BenchmarkFunction:
    """Hartmann-3 on ``[0, 1]^3``; min -3.862780 at (0.114589, 0.555649, 0.852547)."""
    x_min = [[0.11458888122541287, 0.5556488954739371, 0.8525469842172746]]
    return _make("hartmann3", np.zeros(3), np.ones(3), -3.862779787332663, x_min, _hartmann(_H3_A, _H3_P))


def hartmann6() -> BenchmarkFunction:
    """Hartmann-6 on ``[0, 1]^6``; min -3.322368 at (0.201690, 0.150011, 0.476874, 0.275332, 0.311652, 0.657301)."""
    x_min = [
        [
            0.20168950909365746,
            0.15001069354111374,
            0.4768739729250998,
            0.2753324275220782,
            0.3116516172395686,
            0.6573005345536702,
        ]
    ]
    return _make("hartmann6", np.zeros(6), np.ones(6), -3.3223680114155147, x_min, _hartmann(_H6_A, _H6_P))


_SHEKEL_C = np.array(
    [
        [4, 1, 8, 6, 3, 2, 5, 8, 6, 7],
        [4, 1, 8, 6, 7, 9, 3, 1, 2, 3.6],
        [4, 1, 8, 6, 3, 2, 5, 8, 6, 7],
        [4, 1, 8, 6, 7, 9, 3, 1, 2, 3.6],
    ],
    dtype=float,
)
_SHEKEL_BETA = 0.1 * np.array([1, 2, 2, 4, 4, 6, 3, 7, 5, 5], dtype=float)
_SHEKEL_OPT = {
    5: (-10.153199679058229, [4.000037152376549, 4.000133278657566, 4.000037151057555, 4.000133277090425]),
    7: (-10.402915336777745, [4.000572818167059, 3.9996062070672305, 4.000572821117356, 3.999606210400273]),
    10: (-10.53644315348353, [4.000746866658956, 3.9995094808675886, 4.000746866997999, 3.9995094822423836]),
}


def shekel(m: int = 10) -> BenchmarkFunction:
    """Shekel with ``m`` in {5, 7, 10} terms on ``[0, 10]^4``; min about -10.15 / -10.40 / -10.54 near (4, 4, 4, 4)."""
    if m not in _SHEKEL_OPT:
        raise ParameterError(f"shekel m must be 5, 7 or 10, got {m!r}")
    c, beta = _SHEKEL_C[:, :m], _SHEKEL_BETA[:m]

    def fn(x: FloatArray) -> FloatArray:
        sq = np.sum((x[:, :, None] - c[None]) ** 2, axis=1)  # (n, m)
        return -np.sum(1.0 / (sq + beta), axis=1)

    f_min, x_min = _SHEKEL_OPT[m]
    return _make(f"shekel{m}", np.zeros(4), np.full(4, 10.0), f_min, [x_min], fn)


# ---------------------------------------------------------------------------------------------- d-dimensional functions
def rosenbrock(dim: int = 2, lower: float = -5.0, upper: float = 10.0) -> BenchmarkFunction:
    """Rosenbrock ``sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`` on ``[lower, upper]^dim`` (default [-5, 10]); min 0."""
    d = _check_dim("rosenbrock", dim, minimum=2)
    if not lower < 1.0 < upper:
        raise ParameterError(f"rosenbrock bounds must contain 1, got [{lower}, {upper}]")

    def fn(x: FloatArray) -> FloatArray:
        return np.sum(100 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1 - x[:, :-1]) ** 2, axis=1)

    return _make(f"rosenbrock{d}", np.full(d, lower), np.full(d, upper), 0.0, np.ones((1, d)), fn)


def sphere(dim: int = 2) -> BenchmarkFunction:
    """Sphere ``sum x_i^2`` on ``[-5.12, 5.12]^dim``; min 0 at 0."""
    d = _check_dim("sphere", dim)
    return _make(f"sphere{d}", np.full(d, -5.12), np.full(d, 5.12), 0.0, np.zeros((1, d)), lambda x: np.sum(x**2, 1))


def ackley(dim: int = 2, a: float = 20.0, b: float = 0.2, c: float = 2 * np.pi) -> BenchmarkFunction:
    """Ackley on ``[-32.768, 32.768]^dim``; min 0 at 0."""
    d = _check_dim("ackley", dim)

    def fn(x: FloatArray) -> FloatArray:
        r = np.sqrt(np.mean(x**2, axis=1))
        return -a * np.exp(-b * r) - np.exp(np.mean(np.cos(c * x), axis=1)) + a + np.e

    return _make(f"ackley{d}", np.full(d, -32.768), np.full(d, 32.768), 0.0, np.zeros((1, d)), fn)


def griewank(dim: int = 2) -> BenchmarkFunction:
    """Griewank ``sum x_i^2 / 4000 - prod cos(x_i / sqrt(i)) + 1`` on ``[-600, 600]^dim``; min 0 at 0."""
    d = _check_dim("griewank", dim)
    root = np.sqrt(np.arange(1, d + 1))

    def fn(x: FloatArray) -> FloatArray:
        return np.sum(x**2, axis=1) / 4000 - np.prod(np.cos(x / root), axis=1) + 1

    return _make(f"griewank{d}", np.full(d, -600.0), np.full(d, 600.0), 0.0, np.zeros((1, d)), fn)


_SCHWEFEL_CONST = 418.9828872724338  # = max_x x sin(sqrt|x|) on [-500, 500], so that the minimum is 0
_SCHWEFEL_XOPT = 420.96874657644923


def schwefel(dim: int = 2) -> BenchmarkFunction:
    """Schwefel ``418.98289 d - sum x_i sin(sqrt|x_i|)`` on ``[-500, 500]^dim``; min 0 at (420.968747, ...)."""
    d = _check_dim("schwefel", dim)

    def fn(x: FloatArray) -> FloatArray:
        return _SCHWEFEL_CONST * d - np.sum(x * np.sin(np.sqrt(np.abs(x))), axis=1)

    return _make(f"schwefel{d}", np.full(d, -500.0), np.full(d, 500.0), 0.0, np.full((1, d), _SCHWEFEL_XOPT), fn)


def powell(dim: int = 4) -> BenchmarkFunction:
    """Powell (``dim`` a multiple of 4) on ``[-4, 5]^dim``; min 0 at 0."""
    d = _check_dim("powell", dim, minimum=4, multiple=4)

    def fn(x: FloatArray) -> FloatArray:
        a, b, c, e = x[:, 0::4], x[:, 1::4], x[:, 2::4], x[:, 3::4]
        return np.sum((a + 10 * b) ** 2 + 5 * (c - e) ** 2 + (b - 2 * c) ** 4 + 10 * (a - e) ** 4, axis=1)

    return _make(f"powell{d}", np.full(d, -4.0), np.full(d, 5.0), 0.0, np.zeros((1, d)), fn)


_FIXED: dict[str, Callable[[], BenchmarkFunction]] = {
    "forrester": forrester,
    "branin": branin,
    "goldstein_price": goldstein_price,
    "six_hump_camel": six_hump_camel,
    "eggholder": eggholder,
    "hartmann3": hartmann3,
    "hartmann6": hartmann6,
}
_BY_DIM: dict[str, Callable[[int], BenchmarkFunction]] = {
    "rosenbrock": rosenbrock,
    "sphere": sphere,
    "ackley": ackley,
    "griewank": griewank,
    "schwefel": schwefel,
    "powell": powell,
}
FUNCTION_NAMES: tuple[str, ...] = (*_FIXED, "shekel", *_BY_DIM)


def get_function(name: str, dim: int | None = None) -> BenchmarkFunction:
    """Build a benchmark function by name.

    Args:
        name: one of :data:`FUNCTION_NAMES`; a trailing integer is read as ``dim`` (``"ackley4"``), or as ``m`` for
            Shekel (``"shekel10"``).
        dim: dimension of a dimension-parametrised function (or ``m`` of Shekel); defaults: 2 (Powell: 4, Shekel: 10).
    """
    key = str(name).lower().replace("-", "_")
    stripped = key.rstrip("0123456789")
    if stripped != key and stripped in (*_BY_DIM, "shekel"):
        if dim is not None and int(key[len(stripped) :]) != dim:
            raise ParameterError(f"name {name!r} disagrees with dim={dim}")
        key, dim = stripped, int(key[len(stripped) :])
    if key in _FIXED:
        if dim is not None and dim != _FIXED[key]().dim:
            raise ParameterError(f"{key} has fixed dimension {_FIXED[key]().dim}, got dim={dim}")
        return _FIXED[key]()
    if key == "shekel":
        return shekel(10 if dim is None else dim)
    if key in _BY_DIM:
        return _BY_DIM[key](dim if dim is not None else (4 if key == "powell" else 2))
    raise ParameterError(f"unknown benchmark function {name!r}; known: {', '.join(FUNCTION_NAMES)}")
