"""Summary statistics over seeds: mean, standard error, paired differences with a t-interval, "k of n" counts.

The one convention used by every table, figure and summary of evroute and of ``studies/``:

* the **standard error** of ``n`` values is the sample standard deviation with Bessel's correction (``ddof = 1``)
  divided by ``sqrt(n)``;
* with **n = 1** it is undefined and is **NaN** (never 0: one seed says nothing about the spread between seeds);
  with n = 0 the mean is NaN too;
* tables print a NaN standard error as the mean alone (:func:`format_mean_se`), JSON stores it as ``null``
  (:func:`json_float`), figures draw no band where it is NaN;
* a **paired difference** ``A - B`` is taken seed by seed over the seeds both ran (seed ``s`` draws the same
  environment for every method, so the difference removes the environment-to-environment spread); its 95 %
  interval is the Student-t interval ``mean +- t_{0.975, n-1} s.e.`` (NaN for n < 2), and "A is lower in k of n
  seeds" counts the strictly negative differences.

This module sits below every other evroute layer (it imports NumPy and SciPy only), so models, the BO stack,
experiments, the CLI and the studies all use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PairedDifference",
    "format_mean_se",
    "holm_adjust",
    "json_float",
    "k_of_n",
    "mean_se",
    "mean_se_along",
    "paired_differences",
    "standard_error",
    "t_interval",
    "t_test_pvalue",
]


def _as_array(values: Iterable[float]) -> np.ndarray:
    return np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64).ravel()


def standard_error(values: Iterable[float]) -> float:
    """Standard error of the mean of ``values`` (``std(ddof=1) / sqrt(n)``); NaN for n < 2 (module convention)."""
    x = _as_array(values)
    if x.size < 2:
        return math.nan
    return float(np.std(x, ddof=1) / math.sqrt(x.size))


def mean_se(values: Iterable[float]) -> tuple[float, float]:
    """``(mean, standard error)`` of ``values``: ``(nan, nan)`` for n = 0, ``(value, nan)`` for n = 1."""
    x = _as_array(values)
    if x.size == 0:
        return math.nan, math.nan
    return float(np.mean(x)), standard_error(x)


def mean_se_along(values: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and count over ``axis`` of an array with NaN for missing entries.

    For curves over seeds: ``values`` of shape ``(rounds, seeds)`` with NaN where a seed has no value; returns three
    arrays of shape ``(rounds,)``: the mean of the present values (NaN where none), their standard error (NaN where
    fewer than two) and their number.
    """
    y = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(y)
    n = present.sum(axis=axis)
    filled = np.where(present, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=axis) / n
        dev = np.where(present, y - np.expand_dims(mean, axis), 0.0)
        var = (dev**2).sum(axis=axis) / (n - 1)
        se = np.sqrt(var / n)
    mean = np.where(n > 0, mean, np.nan)
    se = np.where(n > 1, se, np.nan)
    return mean, se, n


def t_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """Two-sided Student-t confidence interval of the mean at ``level``: ``mean +- t_{(1+level)/2, n-1} s.e.``.

    ``(nan, nan)`` for n < 2 (no standard error).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    from scipy.stats import t

    m, se = mean_se(values)
    n = _as_array(values).size
    if n < 2:
        return math.nan, math.nan
    half = float(t.ppf(0.5 + level / 2.0, n - 1)) * se
    return m - half, m + half


def t_test_pvalue(differences: Iterable[float]) -> float:
    """Two-sided p-value of the one-sample Student t-test of mean 0 (a paired t-test on differences ``A - B``).

    ``t = mean / s.e.`` with ``n - 1`` degrees of freedom, ``p = 2 P(T_{n-1} > |t|)``; NaN for n < 2; 1 when every
    difference is 0 and 0 when they are all equal and nonzero (a zero standard error).
    """
    from scipy.stats import t

    d = _as_array(differences)
    if d.size < 2:
        return math.nan
    m, se = mean_se(d)
    if se == 0.0:
        return 1.0 if m == 0.0 else 0.0
    return float(2.0 * t.sf(abs(m / se), d.size - 1))


def holm_adjust(pvalues: Iterable[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order (family-wise error control over the whole list).

    With the ``m`` p-values sorted increasingly ``p_(1) <= ... <= p_(m)``, the adjusted value of the ``i``-th is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a hypothesis is rejected at family-wise level ``alpha`` when its
    adjusted p-value is ``<= alpha``.  NaN entries (undefined tests) stay NaN and do not count in ``m``.
    """
    p = _as_array(pvalues)
    out = np.full(p.shape, math.nan)
    idx = [i for i in np.argsort(p, kind="stable") if not math.isnan(p[i])]
    m = len(idx)
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * float(p[i])))
        out[i] = running
    return [float(v) for v in out]


def k_of_n(differences: Iterable[float]) -> tuple[int, int]:
    """``(k, n)``: how many of the ``n`` differences ``A - B`` are strictly negative (A lower in k of n seeds)."""
    d = _as_array(differences)
    return int(np.sum(d < 0)), int(d.size)


@dataclass(frozen=True)
class PairedDifference:
    """Per-seed differences ``A - B`` over the seeds both ran, and their summary (units of the inputs)."""

    seeds: tuple[int, ...]
    diffs: tuple[float, ...]
    mean: float
    se: float
    low: float
    high: float
    level: float

    @property
    def n(self) -> int:
        return len(self.diffs)

    @property
    def k_lower(self) -> int:
        """Number of seeds where ``A < B`` (strictly)."""
        return k_of_n(self.diffs)[0]

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies strictly on one side of 0 (False when it is undefined)."""
        return bool(self.high < 0.0 or self.low > 0.0)


def paired_differences(
    a: Mapping[int, float], b: Mapping[int, float], level: float = 0.95, *, seeds: Iterable[int] | None = None
) -> PairedDifference:
    """Paired differences ``a[s] - b[s]`` over the seeds in both (or in ``seeds``, each must be in both), sorted.

    ``a`` and ``b`` map seed -> value (e.g. final cumulative regret in Wh); the interval is :func:`t_interval`.
    """
    common = sorted(set(a) & set(b)) if seeds is None else sorted(seeds)
    d = [float(a[s]) - float(b[s]) for s in common]
    m, se = mean_se(d)
    low, high = t_interval(d, level)
    return PairedDifference(tuple(common), tuple(d), m, se, low, high, level)


def format_mean_se(
    mean: float | None, se: float | None, digits: int = 1, sep: str = " +- ", *, signed: bool = False
) -> str:
    """``"m +- se"`` with ``digits`` decimals; the mean alone when ``se`` is NaN/None; ``"--"`` when the mean is NaN."""
    if mean is None or math.isnan(mean):
        return "--"
    sign = "+" if signed else ""
    head = f"{mean:{sign}.{digits}f}"
    if se is None or math.isnan(se):
        return head
    return f"{head}{sep}{se:.{digits}f}"


def json_float(x: float | None) -> float | None:
    """``x`` for a JSON file: ``None`` (``null``) for NaN (JSON has no NaN), else ``float(x)``."""
    return None if x is None or math.isnan(x) else float(x)
