"""Risk-aware routing: the route of least expected energy whose arrival charge keeps the reserve with probability
at least ``1 - delta``.

With the trip energy ``E(R) ~ N(mu(R), s(R)^2)`` (:meth:`evroute.driver.belief.RouteBelief.route_moments`) and the
energy budget ``B = (c0 - r) C`` (:class:`evroute.driver.answers.BatteryState`)::

    P(c0 C - E(R) >= r C) >= 1 - delta   <=>   mu(R) + z s(R) <= B,   z = Phi^-1(1 - delta)

(``delta < 0.5``, so ``z > 0``).  The problem is: minimise ``mu(R)`` subject to ``mu(R) + z s(R) <= B``.

Search.  ``s(R)^2 = 1^T Sigma_RR 1 + noise`` is not a sum of edge terms under the exact GP's correlated posterior,
so no label-setting search applies.  But the objective ``mu`` IS additive: routes are listed in increasing ``mu``
(:class:`evroute.driver.paths.PathEnumerator`, Yen's k shortest simple paths) and

* the first listed route that satisfies the constraint is optimal (every later route has a larger or equal mean);
* since ``s >= 0``, a route with ``mu > B`` cannot satisfy it, so the listing is bounded by ``B``: when it ends, no
  route is feasible (a certificate of infeasibility).

Under the ``quantile`` objective (minimise ``mu + z s``) the same listing is stopped when the listed mean exceeds
the best ``mu + z s`` found, again because ``s >= 0``.  Either way the answer is exact when the listing ends or stops
by its bound within ``max_paths`` routes; otherwise the best route found is returned with ``certified=False``.
If the posterior means hold a negative cycle (possible after learning on flat roads), the listing uses clipped
costs (:func:`evroute.driver.paths.reweight`) and the answer is not certified either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from evroute.driver.answers import BatteryState
from evroute.driver.belief import RouteBelief
from evroute.driver.paths import PathEnumerator
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph

OBJECTIVES = ("chance", "quantile")


@dataclass(frozen=True)
class RiskRoute:
    """Result of :func:`risk_aware_route`.

    Attributes:
        edges: ``(k,)`` the route (line-graph indices); the feasible route of least mean, or, if none is feasible,
            the listed route most likely to keep the reserve.
        mean_wh, sd_wh: its trip energy mean and standard deviation (Wh).
        feasible: whether it satisfies ``P(arrival >= reserve) >= 1 - delta`` (always True for ``quantile``).
        certified: whether the search proved the answer optimal (or proved that no route is feasible).
        paths: routes listed; spur_searches: Dijkstra runs.
    """

    edges: np.ndarray
    mean_wh: float
    sd_wh: float
    feasible: bool
    certified: bool
    paths: int
    spur_searches: int


def risk_aware_route(
    lg: LineGraph,
    belief: RouteBelief,
    start: int,
    goal: int,
    battery: BatteryState,
    delta: float = 0.05,
    *,
    objective: str = "chance",
    max_paths: int = 2000,
    h0: np.ndarray | None = None,
) -> RiskRoute:
    """The risk-aware route (module doc).

    Args:
        delta: allowed probability of arriving below the reserve, in ``(0, 0.5)``.
        objective: ``"chance"`` (least mean subject to the chance constraint) or ``"quantile"`` (least
            ``mu + z s``, the ``1 - delta`` quantile of the trip energy).
        max_paths: most routes listed before giving up the certificate.
        h0: first reweighting for the listing (:func:`evroute.driver.paths.potential_h`).
    """
    if not 0 < delta < 0.5:
        raise ParameterError(f"delta must be in (0, 0.5), got {delta}")
    if objective not in OBJECTIVES:
        raise ParameterError(f"unknown risk objective {objective!r} (use {' or '.join(OBJECTIVES)})")
    z = float(norm.ppf(1.0 - delta))
    budget = battery.budget_wh
    enum = PathEnumerator(lg, belief.mean, h0)
    if objective == "chance":
        enum.bound = budget
    best: tuple[float, np.ndarray, float, float] | None = None  # (score, route, mean, sd): lower is better
    n = 0
    for _, route in enum.paths(start, goal):
        n += 1
        mean, var = belief.route_moments(route)
        sd = float(np.sqrt(var))
        if objective == "chance":
            if mean + z * sd <= budget:
                return RiskRoute(route, mean, sd, True, enum.exact, n, enum.spur_searches)
            score = -(budget - mean) / sd if sd > 0 else np.inf  # lower = likelier to keep the reserve
        else:
            score = mean + z * sd
            enum.bound = min(enum.bound, score)
        if best is None or score < best[0]:
            best = (score, route, mean, sd)
        if n >= max_paths:
            break
    else:  # the listing ended: exhausted within the bound
        if best is None:  # even the cheapest route's mean exceeds the budget
            _, first = next(PathEnumerator(lg, belief.mean, h0).paths(start, goal))
            m, v = belief.route_moments(first)
            return RiskRoute(first, m, float(np.sqrt(v)), False, enum.exact, 1, 1)
        return RiskRoute(best[1], best[2], best[3], objective == "quantile", enum.exact, n, enum.spur_searches)
    assert best is not None
    return RiskRoute(best[1], best[2], best[3], objective == "quantile", False, n, enum.spur_searches)


__all__ = ["OBJECTIVES", "RiskRoute", "risk_aware_route"]
