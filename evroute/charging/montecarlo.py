"""Plans driven in worlds sampled from the posterior: the realised stranding rate and charging time.

A world draws every edge's expected energy from the model's posterior (jointly for the exact GP, independently for
BI; an edge driven twice keeps its draw) and every traversal's noise with the trip-level effect,
``n_t = s_t (sqrt(rho) z + sqrt(1 - rho) eps_t) + beta m_t`` with ``z`` and ``beta ~ N(0, tau^2)`` one draw per trip
(:mod:`evroute.charging.legs`).  This
samples the edges, not the legs' Gaussian the planner uses, so it also checks the legs' moments.

Driving a plan in a world: leave with ``c0``; on arrival at a stop with charge ``A`` leave with ``max(A, t_k)``
after ``T(A -> t_k)`` of charging; the world strands the plan if any arrival (stop or destination) is below the
reserve.
"""

from __future__ import annotations

import numpy as np

from evroute.charging.search import Plan, PlanProblem
from evroute.driver.belief import RouteBelief
from evroute.kernels.linalg import jittered_cholesky


def sample_leg_energies(
    problem: PlanProblem, belief: RouteBelief, legs: list[int], n: int, rng: np.random.Generator
) -> np.ndarray:
    """``(n, m)`` energies (Wh) of the plan's ``m`` legs in ``n`` worlds (module doc; detours at their mean)."""
    t = problem.t
    parts = [t.driven(k) for k in legs]
    trav = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    uniq, inv = np.unique(trav, return_inverse=True)
    if belief.joint:
        chol = jittered_cholesky(belief.cov(uniq))
        f = belief.mean[uniq] + rng.standard_normal((n, len(uniq))) @ chol.T
    else:
        f = belief.mean[uniq] + rng.standard_normal((n, len(uniq))) * np.sqrt(belief.var[uniq])
    s = np.sqrt(belief.noise_var[trav])
    rho = t.trip_rho
    z = rng.standard_normal((n, 1))
    noise = s * (np.sqrt(rho) * z + np.sqrt(1.0 - rho) * rng.standard_normal((n, len(trav))))
    if belief.trip_rel_var > 0:  # the trip-level effect: one beta per world scales every edge's reduced mean
        noise = noise + np.sqrt(belief.trip_rel_var) * rng.standard_normal((n, 1)) * belief.effect_mean[trav]
    x = f[:, inv] + noise
    member = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    out = np.zeros((n, len(parts)))
    np.add.at(out.T, member, x.T)
    out += _detour_wh(problem, legs)[None, :]
    return out


def _detour_wh(problem: PlanProblem, legs: list[int]) -> np.ndarray:
    sites = problem.t.sites
    k = np.asarray(legs, dtype=np.int64)
    return sites.detour_wh[problem.t.src[k]] + sites.detour_wh[problem.t.dst[k]]


def drive(plan: Plan, problem: PlanProblem, energies: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drive ``plan`` in worlds with leg ``energies`` (``(n, m)`` Wh): ``(stranded (n,) bool, charging time (n,) s,
    arrival charge at the destination (n,))`` (module doc)."""
    t, s = problem.t, problem.s
    n = energies.shape[0]
    charge = np.full(n, s.charge)
    stranded = np.zeros(n, dtype=bool)
    charging = np.zeros(n)
    for k, leg in enumerate(plan.legs):
        charge = charge - energies[:, k] / s.capacity_wh
        stranded |= charge < s.reserve - 1e-12
        if k < len(plan.targets):
            target = plan.targets[k]
            timer = problem.timer[int(t.dst[leg])]
            charging += timer.time(charge, target)
            charge = np.maximum(charge, target)
    return stranded, charging, charge


__all__ = ["drive", "sample_leg_energies"]
