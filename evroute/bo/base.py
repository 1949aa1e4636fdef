"""Domains and the ask/tell :class:`Policy` interface shared by every single-arm BO / bandit policy.

A *policy* picks one point at a time from a :class:`Domain` and learns from the value observed there:

>>> import numpy as np
>>> from evroute.bo import BoxDomain, IGPUCB  # doctest: +SKIP
>>> policy = IGPUCB(BoxDomain([0.0], [1.0]), seed=0)  # doctest: +SKIP
>>> x = policy.ask()                # (d,) array, a point of the domain  # doctest: +SKIP
>>> policy.tell(x, float(np.sin(x[0])))  # doctest: +SKIP

Conventions (stable; the time-varying policies of :mod:`evroute.bo` build on them):

* Policies **maximise**.  Benchmark functions in :mod:`evroute.bo.functions` are written in the usual minimisation
  form; use :meth:`~evroute.bo.functions.BenchmarkFunction.objective` (the negated function) as the reward.
* ``ask(t=None)`` returns a ``(d,)`` float array that lies in the domain; on a :class:`FiniteDomain` it is a copy of
  one row of ``domain.points``.  ``t`` is the current time for time-varying policies and is ignored by static ones.
* ``tell(x, y, t=None)`` records one observation; ``x`` need not come from ``ask`` (initial designs, replays), but it
  must lie in the domain.  ``t`` is an optional time stamp, stored in :attr:`Policy.times`.
* Every random choice draws from ``policy.rng`` (a :class:`numpy.random.Generator` built from ``seed``), so two
  policies built with the same seed and told the same data make the same choices.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evroute.errors import ParameterError

FloatArray = NDArray[np.float64]
SeedLike = int | np.random.Generator | None

__all__ = ["BoxDomain", "Domain", "FiniteDomain", "FloatArray", "Policy", "SeedLike", "as_generator"]


def as_generator(seed: SeedLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``seed`` (an int, a Generator (returned as is) or None)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
        raise ParameterError(f"seed must be a non-negative int, a numpy Generator or None, got {seed!r}")
    return np.random.default_rng(seed)


class Domain(ABC):
    """A compact search space of dimension :attr:`dim`."""

    dim: int

    @abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        """Draw ``n`` points uniformly at random; returns ``(n, dim)``."""

    @abstractmethod
    def contains(self, x: FloatArray) -> bool:
        """Whether the ``(dim,)`` point ``x`` belongs to the domain."""

    def validate(self, x: ArrayLike) -> FloatArray:
        """Return ``x`` as a ``(dim,)`` float array, raising :class:`ParameterError` if it is not in the domain."""
        arr = np.asarray(x, dtype=float).reshape(-1)
        if arr.shape != (self.dim,):
            raise ParameterError(f"point must have {self.dim} coordinates, got shape {np.shape(x)}")
        if not np.all(np.isfinite(arr)):
            raise ParameterError(f"point must be finite, got {arr.tolist()}")
        if not self.contains(arr):
            raise ParameterError(f"point {arr.tolist()} is not in the domain")
        return arr


class BoxDomain(Domain):
    """The box ``[lower_1, upper_1] x ... x [lower_d, upper_d]``.

    Args:
        lower: ``(d,)`` lower bounds.
        upper: ``(d,)`` upper bounds, each strictly greater than its lower bound.
    """

    def __init__(self, lower: ArrayLike, upper: ArrayLike) -> None:
        lo = np.atleast_1d(np.asarray(lower, dtype=float))
        hi = np.atleast_1d(np.asarray(upper, dtype=float))
        if lo.ndim != 1 or lo.shape != hi.shape or lo.size == 0:
            raise ParameterError(f"lower and upper must be equal-length 1-D, got {lo.shape} and {hi.shape}")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
            raise ParameterError(f"box bounds must be finite with upper > lower, got {lo.tolist()}, {hi.tolist()}")
        self.lower: FloatArray = lo
        self.upper: FloatArray = hi
        self.dim = int(lo.size)

    @classmethod
    def unit(cls, dim: int) -> BoxDomain:
        """The unit cube ``[0, 1]^dim``."""
        if int(dim) < 1:
            raise ParameterError(f"dim must be >= 1, got {dim!r}")
        return cls(np.zeros(int(dim)), np.ones(int(dim)))

    @property
    def bounds(self) -> FloatArray:
        """``(d, 2)`` array of ``[lower, upper]`` rows (the format of :func:`scipy.optimize.minimize`)."""
        return np.column_stack([self.lower, self.upper])

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        return self.from_unit(rng.random((int(n), self.dim)))

    def latin_hypercube(self, n: int, rng: np.random.Generator) -> FloatArray:
        """A random Latin-hypercube design of ``n`` points; returns ``(n, dim)``."""
        n = int(n)
        if n < 1:
            raise ParameterError(f"n must be >= 1, got {n}")
        u = (rng.permuted(np.tile(np.arange(n), (self.dim, 1)), axis=1).T + rng.random((n, self.dim))) / n
        return self.from_unit(u)

    def contains(self, x: FloatArray) -> bool:
        tol = 1e-9 * (self.upper - self.lower)
        return bool(np.all(x >= self.lower - tol) and np.all(x <= self.upper + tol))

    def to_unit(self, x: ArrayLike) -> FloatArray:
        """Map ``(..., d)`` points of the box to the unit cube."""
        return (np.asarray(x, dtype=float) - self.lower) / (self.upper - self.lower)

    def from_unit(self, u: ArrayLike) -> FloatArray:
        """Map ``(..., d)`` points of the unit cube to the box."""
        return self.lower + np.asarray(u, dtype=float) * (self.upper - self.lower)

    def clip(self, x: ArrayLike) -> FloatArray:
        """Project ``(..., d)`` points onto the box."""
        return np.clip(np.asarray(x, dtype=float), self.lower, self.upper)

    def __repr__(self) -> str:
        return f"BoxDomain(lower={self.lower.tolist()}, upper={self.upper.tolist()})"


class FiniteDomain(Domain):
    """A finite set of ``N`` arms, each a point of ``R^d``.

    Args:
        points: ``(N, d)`` (or ``(N,)`` for ``d = 1``) arm coordinates; rows must be distinct.
    """

    def __init__(self, points: ArrayLike) -> None:
        pts = np.asarray(points, dtype=float)
        if pts.ndim == 1:
            pts = pts[:, None]
        if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] == 0:
            raise ParameterError(f"points must be a non-empty (N, d) array, got shape {np.shape(points)}")
        if not np.all(np.isfinite(pts)):
            raise ParameterError("points must be finite")
        self.points: FloatArray = pts
        self.dim = int(pts.shape[1])
        self._index = {row.tobytes(): i for i, row in enumerate(pts)}
        if len(self._index) != pts.shape[0]:
            raise ParameterError("points must be distinct")

    @property
    def n_arms(self) -> int:
        """Number of arms ``N``."""
        return int(self.points.shape[0])

    def index_of(self, x: ArrayLike) -> int:
        """Row index of the arm ``x`` (exact match, else the nearest arm within 1e-9), or :class:`ParameterError`."""
        arr = np.asarray(x, dtype=float).reshape(-1)
        i = self._index.get(arr.tobytes())
        if i is not None:
            return i
        if arr.shape != (self.dim,):
            raise ParameterError(f"arm must have {self.dim} coordinates, got shape {np.shape(x)}")
        d = np.max(np.abs(self.points - arr), axis=1)
        j = int(np.argmin(d))
        if d[j] > 1e-9 * max(1.0, float(np.max(np.abs(arr)))):
            raise ParameterError(f"point {arr.tolist()} is not one of the {self.n_arms} arms")
        return j

    def sample(self, n: int, rng: np.random.Generator) -> FloatArray:
        return self.points[rng.integers(0, self.n_arms, size=int(n))].copy()

    def contains(self, x: FloatArray) -> bool:
        try:
            self.index_of(x)
        except ParameterError:
            return False
        return True

    def __repr__(self) -> str:
        return f"FiniteDomain(n_arms={self.n_arms}, dim={self.dim})"


class Policy(ABC):
    """Ask/tell base class of all single-arm policies (maximisation).

    Subclasses implement :meth:`_ask` and usually :meth:`_update` (called by :meth:`tell` after the observation has
    been stored).  The observation history is available as :attr:`X` ``(n, d)``, :attr:`y` ``(n,)`` and
    :attr:`times` ``(n,)`` (NaN where no time was given).

    Args:
        domain: the search space.
        seed: seed of :attr:`rng`, the only source of randomness of the policy.
    """

    def __init__(self, domain: Domain, *, seed: SeedLike = None) -> None:
        if not isinstance(domain, Domain):
            raise ParameterError(f"domain must be a BoxDomain or FiniteDomain, got {type(domain).__name__}")
        self.domain = domain
        self.rng = as_generator(seed)
        self._xs: list[FloatArray] = []
        self._ys: list[float] = []
        self._ts: list[float] = []

    @property
    def finite_domain(self) -> FiniteDomain:
        """:attr:`domain` as a :class:`FiniteDomain` (``TypeError`` on a box: a call only finite domains allow)."""
        if not isinstance(self.domain, FiniteDomain):
            raise TypeError(f"{type(self).__name__}: {self.domain!r} is not a finite domain")
        return self.domain

    @property
    def box_domain(self) -> BoxDomain:
        """:attr:`domain` as a :class:`BoxDomain` (``TypeError`` on a finite domain: a call only boxes allow)."""
        if not isinstance(self.domain, BoxDomain):
            raise TypeError(f"{type(self).__name__}: {self.domain!r} is not a box domain")
        return self.domain

    # ------------------------------------------------------------------ history
    @property
    def n_obs(self) -> int:
        """Number of observations told so far."""
        return len(self._ys)

    @property
    def X(self) -> FloatArray:  # noqa: N802 - conventional name of the design matrix
        """``(n, d)`` observed points."""
        return np.array(self._xs, dtype=float).reshape(-1, self.domain.dim)

    @property
    def y(self) -> FloatArray:
        """``(n,)`` observed values."""
        return np.array(self._ys, dtype=float)

    @property
    def times(self) -> FloatArray:
        """``(n,)`` time stamps given to :meth:`tell` (NaN where none was given)."""
        return np.array(self._ts, dtype=float)

    # ------------------------------------------------------------------ ask / tell
    def ask(self, t: float | None = None) -> FloatArray:
        """Return the next point to evaluate, a ``(d,)`` array in the domain (``t``: current time, optional)."""
        x = np.asarray(self._ask(t), dtype=float).reshape(self.domain.dim)
        if isinstance(self.domain, BoxDomain):
            x = self.domain.clip(x)
        return x

    def tell(self, x: ArrayLike, y: float, t: float | None = None) -> None:
        """Record the observation ``y`` at the point ``x`` (optionally made at time ``t``)."""
        xv = self.domain.validate(x)
        if isinstance(self.domain, FiniteDomain):
            xv = self.domain.points[self.domain.index_of(xv)].copy()
        yv = float(y)
        if not np.isfinite(yv):
            raise ParameterError(f"observation y must be finite, got {y!r}")
        tv = float("nan") if t is None else float(t)
        self._xs.append(xv)
        self._ys.append(yv)
        self._ts.append(tv)
        self._update(xv, yv, None if t is None else tv)

    def tell_many(self, X: ArrayLike, y: ArrayLike, t: Sequence[float] | None = None) -> None:  # noqa: N803
        """Record several observations, ``X`` ``(n, d)``, ``y`` ``(n,)``, optional times ``(n,)``, in order."""
        xs = np.asarray(X, dtype=float).reshape(-1, self.domain.dim)
        ys = np.asarray(y, dtype=float).reshape(-1)
        if xs.shape[0] != ys.shape[0] or (t is not None and len(t) != ys.shape[0]):
            raise ParameterError(f"X, y (and t) must have equal lengths, got {xs.shape[0]} and {ys.shape[0]}")
        for i in range(ys.shape[0]):
            self.tell(xs[i], ys[i], None if t is None else t[i])

    @abstractmethod
    def _ask(self, t: float | None) -> ArrayLike:
        """Choose the next point (``(d,)``); may use :attr:`rng` and the history."""

    def _update(self, x: FloatArray, y: float, t: float | None) -> None:  # noqa: B027 - optional hook
        """Hook called after each stored observation (default: nothing)."""
