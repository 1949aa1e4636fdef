"""KR-UCB explores (BOKE paper App. A.2, Alg. 5) on the BOKE protocol's Rosenbrock-4 (3d-point LHS, 120 rounds)."""

from __future__ import annotations

import numpy as np
import pytest

from evroute.bo import KRUCB, get_function, run_policy


def _run(alpha: float, seed: int) -> tuple[KRUCB, int]:
    fn = get_function("rosenbrock", 4)
    init = fn.domain.latin_hypercube(3 * fn.dim, np.random.default_rng([7, seed]))
    pol = KRUCB(fn.domain, alpha=alpha, seed=seed)
    run_policy(pol, lambda x: float(fn.objective(x)), 120, f_max=fn.f_max_objective, initial=init, seed=seed + 100)
    return pol, init.shape[0]


def _new_points(pol: KRUCB, n0: int) -> int:
    return int(np.unique(pol.X, axis=0).shape[0]) - n0


@pytest.mark.slow
def test_krucb_queries_new_points_on_rosenbrock4() -> None:
    for seed in (0, 1):
        pol, n0 = _run(0.8, seed)
        t = pol.n_obs  # 132
        # Alg. 5 line 3: widen when t^alpha >= #distinct, re-query while t^alpha < #distinct, so the number of
        # distinct points tracks t^alpha: floor((t - 1)^0.8) <= #distinct <= ceil(t^0.8) + 1
        distinct = n0 + _new_points(pol, n0)
        assert np.floor((t - 1) ** 0.8) <= distinct <= np.ceil(t**0.8) + 1, (seed, distinct)
        assert _new_points(pol, n0) >= 30


def test_krucb_alpha_half_only_requeries_the_design() -> None:
    # the old default: (3 d)^{1/0.5} = 144 > 132 observations, so Alg. 5 never widens (the audit's finding)
    pol, n0 = _run(0.5, 0)
    assert _new_points(pol, n0) == 0
