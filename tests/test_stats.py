"""evroute.stats: hand-computed values, the n = 1 convention, and the paired t-interval against SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from evroute.stats import (
    format_mean_se,
    holm_adjust,
    json_float,
    k_of_n,
    mean_se,
    mean_se_along,
    paired_differences,
    standard_error,
    t_interval,
    t_test_pvalue,
)


def test_mean_se_hand_computed() -> None:
    # 2, 4, 9: mean 5, deviations -3 -1 4, sum of squares 26, variance 26 / 2 = 13, s.e. sqrt(13 / 3)
    m, se = mean_se([2.0, 4.0, 9.0])
    assert m == 5.0
    assert se == pytest.approx(math.sqrt(13.0 / 3.0), rel=1e-15)
    # two values a, b: s.e. = |a - b| / 2
    assert standard_error([1.0, 4.0]) == pytest.approx(1.5, rel=1e-15)


def test_n_one_and_zero_convention() -> None:
    assert mean_se([7.5])[0] == 7.5
    assert math.isnan(mean_se([7.5])[1])
    assert math.isnan(standard_error([7.5]))
    m, se = mean_se([])
    assert math.isnan(m) and math.isnan(se)
    lo, hi = t_interval([3.0])
    assert math.isnan(lo) and math.isnan(hi)
    p = paired_differences({0: 5.0}, {0: 2.0})
    assert p.n == 1 and p.mean == 3.0 and math.isnan(p.se) and not p.excludes_zero
    assert format_mean_se(7.5, math.nan) == "7.5"
    assert format_mean_se(math.nan, math.nan) == "--"
    assert format_mean_se(7.5, None) == "7.5"
    assert json_float(math.nan) is None and json_float(2.0) == 2.0


def test_t_interval_hand_computed() -> None:
    # 1, 2, 3: mean 2, sd 1, s.e. 1/sqrt(3).  With 2 degrees of freedom the t CDF has the closed form
    # F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so the quantile at 1/2 + a/2 is t = a sqrt(2 / (1 - a^2)) (4.303 at a = 0.95).
    def t2(a: float) -> float:
        return a * math.sqrt(2.0 / (1.0 - a * a))

    lo, hi = t_interval([1.0, 2.0, 3.0])
    half = t2(0.95) / math.sqrt(3.0)
    assert lo == pytest.approx(2.0 - half, rel=1e-12)
    assert hi == pytest.approx(2.0 + half, rel=1e-12)
    lo, hi = t_interval([1.0, 2.0, 3.0], level=0.9)
    assert hi - 2.0 == pytest.approx(t2(0.9) / math.sqrt(3.0), rel=1e-12)
    with pytest.raises(ValueError):
        t_interval([1.0, 2.0], level=1.0)


def test_paired_differences_hand_computed() -> None:
    a = {0: 10.0, 1: 20.0, 2: 30.0, 3: 99.0}  # seed 3 only in a: left out
    b = {0: 12.0, 1: 17.0, 2: 31.0, 5: 0.0}
    p = paired_differences(a, b)
    assert p.seeds == (0, 1, 2)
    assert p.diffs == (-2.0, 3.0, -1.0)
    assert p.mean == 0.0
    # deviations -2, 3, -1: sum of squares 14, variance 7, s.e. sqrt(7 / 3)
    assert p.se == pytest.approx(math.sqrt(7.0 / 3.0), rel=1e-15)
    assert p.k_lower == 2 and p.n == 3
    assert not p.excludes_zero
    assert k_of_n([-1.0, 0.0, 2.0, -3.0]) == (2, 4)  # a tie is not "lower"


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)),
        min_size=2,
        max_size=30,
    ).filter(lambda xs: np.ptp([x - y for x, y in xs]) > 1e-6)
)
def test_paired_interval_matches_scipy(pairs: list[tuple[float, float]]) -> None:
    a = {s: x for s, (x, _) in enumerate(pairs)}
    b = {s: y for s, (_, y) in enumerate(pairs)}
    p = paired_differences(a, b)
    ref = sps.ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).confidence_interval(0.95)
    scale = max(1.0, max(abs(v) for v in p.diffs))
    # both compute mean +- t * sd / sqrt(n) in float64 from the same differences: agreement to round-off of the inputs
    assert p.low == pytest.approx(ref.low, rel=1e-9, abs=1e-9 * scale)
    assert p.high == pytest.approx(ref.high, rel=1e-9, abs=1e-9 * scale)
    assert p.excludes_zero == (sps.ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).pvalue < 0.05)


def test_mean_se_along_with_missing_values() -> None:
    y = np.array([[1.0, 3.0, np.nan], [2.0, np.nan, np.nan], [np.nan, np.nan, np.nan], [0.0, 4.0, 8.0]])
    mean, se, n = mean_se_along(y, axis=1)
    assert n.tolist() == [2, 1, 0, 3]
    assert mean[0] == 2.0 and mean[1] == 2.0 and math.isnan(mean[2]) and mean[3] == 4.0
    assert se[0] == pytest.approx(1.0, rel=1e-15)  # |1 - 3| / 2
    assert math.isnan(se[1]) and math.isnan(se[2])
    assert se[3] == pytest.approx(math.sqrt(16.0 / 3.0), rel=1e-15)  # variance 32 / 2 = 16
    for i in (0, 3):
        row = y[i][~np.isnan(y[i])]
        assert se[i] == pytest.approx(standard_error(row), rel=1e-15)


def test_format_mean_se() -> None:
    assert format_mean_se(1234.56, 7.891) == "1234.6 +- 7.9"
    assert format_mean_se(-3.0, 0.25, 2, " ± ") == "-3.00 ± 0.25"
    assert format_mean_se(3.0, 0.25, 1, signed=True) == "+3.0 +- 0.2"


def test_t_test_pvalue_hand_computed() -> None:
    # differences 1, 3: mean 2, s.e. 1, t = 2 with 1 degree of freedom (Cauchy): P(T > t) = 1/2 - arctan(t) / pi
    assert t_test_pvalue([1.0, 3.0]) == pytest.approx(1.0 - 2.0 * math.atan(2.0) / math.pi, rel=1e-12)
    assert math.isnan(t_test_pvalue([1.0]))
    assert t_test_pvalue([0.0, 0.0, 0.0]) == 1.0
    assert t_test_pvalue([2.0, 2.0]) == 0.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=30).filter(lambda v: np.std(v) > 1e-6))
def test_t_test_pvalue_matches_scipy(values: list[float]) -> None:
    assert t_test_pvalue(values) == pytest.approx(sps.ttest_1samp(values, 0.0).pvalue, rel=1e-9, abs=1e-300)


def test_holm_adjust_hand_computed() -> None:
    # sorted 0.01, 0.03, 0.04, 0.2 (m = 4): 4 * 0.01 = 0.04, 3 * 0.03 = 0.09, max(0.09, 2 * 0.04) = 0.09, 0.2
    assert holm_adjust([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2], rel=1e-12)
    # NaN stays NaN and does not count: m = 2
    out = holm_adjust([0.02, math.nan, 0.5])
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.5)
    # capped at 1 and monotone in the sorted order
    assert holm_adjust([0.6, 0.7]) == [1.0, 1.0]
    assert holm_adjust([]) == []
