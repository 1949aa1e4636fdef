"""Domains and the ask/tell Policy contract."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.bo.base import BoxDomain, FiniteDomain, Policy, as_generator
from evroute.errors import ParameterError


class _RandomPolicy(Policy):
    def _ask(self, t: float | None) -> np.ndarray:
        return self.domain.sample(1, self.rng)[0]


def test_box_domain_mapping_and_lhs() -> None:
    box = BoxDomain([-1.0, 0.0], [1.0, 10.0])
    u = np.array([[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(box.from_unit(u), [[0.0, 5.0], [-1.0, 10.0]])
    np.testing.assert_allclose(box.to_unit(box.from_unit(u)), u)
    lhs = box.latin_hypercube(10, np.random.default_rng(0))
    # one point per stratum in each coordinate
    for j in range(2):
        strata = np.floor(box.to_unit(lhs)[:, j] * 10).astype(int)
        assert sorted(strata.tolist()) == list(range(10))
    with pytest.raises(ParameterError):
        BoxDomain([0.0], [0.0])
    with pytest.raises(ParameterError):
        box.validate([2.0, 1.0])


def test_finite_domain_index_and_validation() -> None:
    dom = FiniteDomain(np.linspace(0, 1, 5))
    assert dom.dim == 1 and dom.n_arms == 5
    assert dom.index_of([0.75]) == 3
    assert dom.index_of([0.75 + 1e-12]) == 3
    with pytest.raises(ParameterError):
        dom.index_of([0.7])
    with pytest.raises(ParameterError):
        FiniteDomain([[0.0], [0.0]])


def test_policy_history_and_seeding() -> None:
    box = BoxDomain.unit(2)
    a, b = _RandomPolicy(box, seed=3), _RandomPolicy(box, seed=3)
    for step in range(4):
        xa, xb = a.ask(), b.ask()
        np.testing.assert_array_equal(xa, xb)
        a.tell(xa, float(xa.sum()), t=float(step))
        b.tell(xb, float(xb.sum()))
    assert a.n_obs == 4 and a.X.shape == (4, 2) and a.y.shape == (4,)
    np.testing.assert_array_equal(a.times, [0.0, 1.0, 2.0, 3.0])
    assert np.all(np.isnan(b.times))
    with pytest.raises(ParameterError):
        a.tell([0.5, 0.5], float("nan"))
    with pytest.raises(ParameterError):
        a.tell([1.5, 0.5], 1.0)
    with pytest.raises(ParameterError):
        as_generator(-1)
