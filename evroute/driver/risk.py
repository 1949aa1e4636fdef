"""Risk-aware routing: the route of least expected energy whose arrival charge keeps the reserve with probability
at least ``1 - delta``.

With the trip energy ``E(R) ~ N(mu(R), s(R)^2)`` (:meth:`evroute.driver.belief.RouteBelief.route_moments`) and the
energy budget ``B = (c0 - r) C`` (:class:`evroute.driver.answers.BatteryState`)::

    P(c0 C - E(R) >= r C) >= 1 - delta   <=>   mu(R) + z s(R) <= B,   z = Phi^-1(1 - delta)

(``delta < 0.5``, so ``z > 0``).  The problem is: minimise ``mu(R)`` subject to ``mu(R) + z s(R) <= B``.

Search.  ``s(R)^2 = 1^T Sigma_RR 1 + noise`` is not a sum of edge terms under the exact GP's correlated posterior,
so no label-setting search applies.  Routes are listed in increasing order of an additive cost
(:class:`evroute.driver.paths.PathEnumerator`, Yen's k shortest simple paths) with a bound that no feasible route
exceeds:

* if the least-mean route (one Dijkstra) satisfies the constraint, it is optimal;
* else, a lower bound on the variance that IS additive makes the search finite: ``s(R)^2 >= C(R) = sum_{e in R}
  c_e`` with ``c_e = s_e^2`` (one drive's noise is independent of the posterior) or, for independent BI,
  ``c_e = var_e + s_e^2`` (then ``C = s^2``).  A feasible route has ``C(R) <= C_max = ((B - mu_min) / z)^2``
  (``mu_min`` the least mean of any route) and ``C(R) >= C_min`` (one Dijkstra on ``c``).  On ``[C_min, C_max]``
  the concave ``sqrt`` lies above its chord ``a + b C``, so every feasible route has the ADDITIVE cost
  ``sum_e (m_e + z b c_e) <= B - z a``: routes are listed in increasing order of that cost, bounded by ``B - z a``,
  and the least-mean feasible route among them is optimal once the listing ends (``C_max < C_min``: none is).

Under the ``quantile`` objective (minimise ``mu + z s``) routes are listed by mean and the listing is stopped when
the listed mean exceeds the best ``mu + z s`` found minus ``z sqrt(C_min)``.  Either way the answer is exact when
the listing ends within ``max_paths`` routes; otherwise the best route found is returned with ``certified=False``.
If posterior means fall below the elevation potential (noisy data on flat roads), the listing clips those reduced
costs at 0 (:func:`evroute.driver.paths.reweight`; Bellman-Ford instead with ``exact_reweight``) and the answer is not
certified either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri  # not scipy.stats: its import costs ~0.6 s

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
    exact_reweight: bool = False,
    least_route: tuple[float, np.ndarray, bool] | None = None,
) -> RiskRoute:
    """The risk-aware route (module doc).

    Args:
        delta: allowed probability of arriving below the reserve, in ``(0, 0.5)``.
        objective: ``"chance"`` (least mean subject to the chance constraint) or ``"quantile"`` (least
            ``mu + z s``, the ``1 - delta`` quantile of the trip energy).
        max_paths: most routes listed before giving up the certificate.
        h0: first reweighting for the listing (:func:`evroute.driver.paths.potential_h`).
        exact_reweight: when means below the potential leave negative arcs, reweight by Bellman-Ford (seconds on a
            city) instead of clipping them (the answer is then not certified).
        least_route: ``(mu_min, route, exact)``, the least-mean route's listing cost (Wh), its ``(k,)`` indices and
            whether its reduced costs were exact, when the caller already searched it with the same reweighting
            (``h0``, clipped, as :meth:`evroute.driver.query.QueryContext.least_mean_route` does): the chance
            search then starts from it instead of searching it again.  Ignored with ``exact_reweight``.
    """
    if not 0 < delta < 0.5:
        raise ParameterError(f"delta must be in (0, 0.5), got {delta}")
    if objective not in OBJECTIVES:
        raise ParameterError(f"unknown risk objective {objective!r} (use {' or '.join(OBJECTIVES)})")
    z = float(ndtri(1.0 - delta))
    budget = battery.budget_wh
    from evroute.oracle import RouteOracle

    floor = belief.noise_var if belief.joint else belief.noise_var + belief.var
    if least_route is not None and not exact_reweight:
        mu_min, first, least_exact = float(least_route[0]), np.asarray(least_route[1], dtype=np.int64), least_route[2]
        searches = 0
    else:
        least = PathEnumerator(lg, belief.mean, h0, exact=exact_reweight)
        mu_min, first = next(least.paths(start, goal))
        least_exact, searches = least.exact, least.spur_searches
    m0, v0 = belief.route_moments(first)
    if objective == "chance" and m0 + z * np.sqrt(v0) <= budget:  # the least-mean route keeps the reserve: optimal
        return RiskRoute(first, m0, float(np.sqrt(v0)), True, least_exact, 1, searches)
    c_min = max(RouteOracle(lg).shortest_route(floor, start, goal).cost, 0.0)
    if objective == "chance":
        c_max = ((budget - mu_min) / z) ** 2 if budget > mu_min else -1.0
        if c_max < c_min:  # every route has mu >= mu_min and s^2 >= c_min: none is feasible
            return RiskRoute(first, m0, float(np.sqrt(v0)), False, least_exact, 1, searches)
        # chord of sqrt on [c_min, c_max]: sqrt(C) >= a + b C there, so feasible => sum(mu + z b c) <= B - z a
        b = (np.sqrt(c_max) - np.sqrt(c_min)) / (c_max - c_min) if c_max - c_min > 1e-12 * max(1.0, c_max) else 0.0
        a = np.sqrt(c_min) - b * c_min
        enum = PathEnumerator(lg, belief.mean + z * b * floor, h0, exact=exact_reweight)
        enum.bound = budget - z * a
    else:
        enum = PathEnumerator(lg, belief.mean, h0, exact=exact_reweight)
        s_lb = float(np.sqrt(c_min))
    feasible: tuple[float, np.ndarray, float] | None = None  # (mean, route, sd) of the best feasible route
    likeliest: tuple[float, np.ndarray, float, float] | None = None  # (score, route, mean, sd): lower is better
    n, certified = 0, False
    for _, route in enum.paths(start, goal):
        n += 1
        mean, var = belief.route_moments(route)
        sd = float(np.sqrt(var))
        if objective == "chance":
            if mean + z * sd <= budget and (feasible is None or mean < feasible[0]):
                feasible = (mean, route, sd)
            score = -(budget - mean) / sd if sd > 0 else np.inf  # lower = likelier to keep the reserve
        else:
            score = mean + z * sd
            enum.bound = min(enum.bound, score - z * s_lb)
        if likeliest is None or score < likeliest[0]:
            likeliest = (score, route, mean, sd)
        if n >= max_paths:
            break
    else:  # the listing ended within its bound
        certified = enum.exact and least_exact
    if feasible is not None:
        return RiskRoute(feasible[1], feasible[0], feasible[2], True, certified, n, enum.spur_searches)
    if likeliest is None:
        return RiskRoute(first, m0, float(np.sqrt(v0)), False, certified, n, enum.spur_searches)
    _, route, mean, sd = likeliest
    return RiskRoute(route, mean, sd, objective == "quantile", certified, n, enum.spur_searches)


__all__ = ["OBJECTIVES", "RiskRoute", "risk_aware_route"]
