"""Each benchmark function attains its documented minimum, and nothing in its domain goes below it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from evroute.bo.functions import FUNCTION_NAMES, BenchmarkFunction, get_function
from evroute.errors import ParameterError

CASES = [
    *[(n, None) for n in FUNCTION_NAMES],
    ("rosenbrock", 4),
    ("sphere", 6),
    ("ackley", 4),
    ("griewank", 6),
    ("schwefel", 4),
    ("powell", 8),
    ("shekel", 5),
    ("shekel", 7),
]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def fn(request: pytest.FixtureRequest) -> BenchmarkFunction:
    name, dim = request.param
    return get_function(name, dim)


def test_attains_documented_minimum(fn: BenchmarkFunction) -> None:
    vals = fn(fn.x_min)
    assert isinstance(vals, np.ndarray) and vals.shape == (fn.x_min.shape[0],)
    np.testing.assert_allclose(vals, fn.f_min, atol=1e-6 * max(1.0, abs(fn.f_min)))
    assert np.all(fn.x_min >= fn.lower) and np.all(fn.x_min <= fn.upper)
    assert fn.regret(fn.x_min[0]) == pytest.approx(0.0, abs=1e-6 * max(1.0, abs(fn.f_min)))
    assert fn.objective(fn.x_min[0]) == pytest.approx(fn.f_max_objective, abs=1e-6 * max(1.0, abs(fn.f_min)))


@pytest.mark.slow
def test_minimum_is_global(fn: BenchmarkFunction) -> None:
    """Dense random search plus local polishing of the best samples never beats the documented minimum."""
    rng = np.random.default_rng(0)
    x = fn.domain.sample(20000, rng)
    v = fn(x)
    assert np.all(v >= fn.f_min - 1e-9)
    tol = 1e-7 * max(1.0, abs(fn.f_min))
    for i in np.argsort(v)[:5]:
        res = minimize(lambda z: float(fn(z)), x[i], method="L-BFGS-B", bounds=fn.domain.bounds)
        assert res.fun >= fn.f_min - tol
    # the documented minimiser is a local minimum: small perturbations do not decrease f
    pert = fn.x_min[0] + 1e-4 * (fn.upper - fn.lower) * rng.standard_normal((200, fn.dim))
    pert = np.clip(pert, fn.lower, fn.upper)
    assert np.all(fn(pert) >= fn.f_min - tol)


def test_single_point_and_batch_agree() -> None:
    f = get_function("hartmann6")
    x = np.random.default_rng(1).random((5, 6))
    batch = f(x)
    assert isinstance(batch, np.ndarray)
    assert [f(row) for row in x] == pytest.approx(batch.tolist())
    assert isinstance(f(x[0]), float)


def test_hand_values() -> None:
    assert get_function("forrester")(np.array([0.5])) == pytest.approx(1.0 * np.sin(2.0))
    assert get_function("sphere", 3)(np.array([1.0, 2.0, 3.0])) == pytest.approx(14.0)
    assert get_function("rosenbrock", 2)(np.array([0.0, 0.0])) == pytest.approx(1.0)
    assert get_function("goldstein_price")(np.array([0.0, 0.0])) == pytest.approx(600.0)
    assert get_function("powell", 4)(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(1 + 10)
    assert get_function("griewank", 1)(np.array([0.0])) == pytest.approx(0.0)


def test_name_parsing_and_errors() -> None:
    assert get_function("ackley4").dim == 4
    assert get_function("Six-Hump-Camel").name == "six_hump_camel"
    assert get_function("shekel7").name == "shekel7"
    with pytest.raises(ParameterError):
        get_function("nope")
    with pytest.raises(ParameterError):
        get_function("powell", 3)
    with pytest.raises(ParameterError):
        get_function("branin", 3)
    with pytest.raises(ParameterError):
        get_function("hartmann3")(np.zeros(2))
