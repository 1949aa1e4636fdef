"""Reference maxima of the time-varying problems: the documented optima are found at the times they occur."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.bo.functions import get_function
from evroute.bo.timevarying.problems import get_problem


def _time_of(fname: str, z: float) -> float:
    """Query time (s) at which the time coordinate of ``fname`` (its last input) equals ``z``."""
    bf = get_function(fname)
    return float((z - bf.lower[-1]) / (bf.upper[-1] - bf.lower[-1]) * 600.0)


def test_schwefel_reference_is_the_separable_optimum() -> None:
    p, bf = get_problem("schwefel"), get_function("schwefel4")
    x_opt = bf.x_min[0]
    t_star = _time_of("schwefel4", x_opt[-1])  # here the static global optimum is reached: reward 0
    assert p.best_reward([t_star])[0] == pytest.approx(-bf.f_min, abs=1e-6)
    ts = np.array([0.0, 37.0, 150.0, t_star, 444.4, 600.0])
    ref = p.best_reward(ts)
    # separable: max over space = -(f at the spatial optimum), for every value of the time coordinate
    z_t = bf.lower[-1] + (bf.upper[-1] - bf.lower[-1]) * ts / 600.0
    z = np.column_stack([np.tile(x_opt[:-1], (ts.size, 1)), z_t])
    np.testing.assert_allclose(ref, -bf(z), rtol=0, atol=1e-9)
    # a dense random search never beats it
    x = np.random.default_rng(0).random((20000, p.dim))
    for t, r in zip(ts, ref, strict=True):
        assert np.max(p.reward(x, t)) <= r + 1e-9


def test_eggholder_reference_finds_the_documented_optimum() -> None:
    p, bf = get_problem("eggholder"), get_function("eggholder")
    t_star = _time_of("eggholder", bf.x_min[0, 1])
    assert p.best_reward([t_star])[0] == pytest.approx(-bf.f_min, rel=1e-9)
    ts = np.linspace(0.0, 600.0, 13)
    ref = p.best_reward(ts)
    x = np.linspace(0.0, 1.0, 200001)[:, None]  # brute force over the single spatial input
    brute = np.array([np.max(p.reward(x, np.full(x.shape[0], t))) for t in ts])
    assert np.all(ref >= brute - 1e-9 * np.abs(brute))


def test_reference_maxima_safeguard_never_negative() -> None:
    p = get_problem("hartmann3")
    _, maximisers = p.maximiser_path(n_grid=11, n_random=256, n_starts=1)
    rng = np.random.default_rng(3)
    t = rng.uniform(0.0, 600.0, 300)
    x = np.vstack([rng.random((200, p.dim)), maximisers[rng.integers(0, 11, 100)] + 0.01])
    x = np.clip(x, 0.0, 1.0)
    ref, _ = p.reference_maxima(x, t)
    assert np.all(ref - p.reward(x, t) >= -1e-12)
