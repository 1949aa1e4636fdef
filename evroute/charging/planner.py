"""One call from a trip to its charging plan: sites, legs, problem, search (what ``evroute plan`` and a service
call).  :func:`plan_trip` returns the :class:`~evroute.charging.search.PlanProblem` with the plan, so callers can
build answers (:mod:`evroute.charging.answers`) or drive it in sampled worlds (:mod:`evroute.charging.montecarlo`).
"""

from __future__ import annotations

from typing import Any

from evroute.charging.chargers import Chargers
from evroute.charging.curves import ChargingCurve, charging_curve
from evroute.charging.legs import build_legs, make_sites
from evroute.charging.search import Plan, PlanProblem, PlanSettings, plan_search
from evroute.driver.belief import RouteBelief
from evroute.linegraph import LineGraph


def plan_trip(
    lg: LineGraph,
    belief: RouteBelief,
    vehicle: Any,
    origin: int,
    dest: int,
    chargers: Chargers,
    settings: PlanSettings,
    *,
    trip_rho: float = 0.0,
    curve: ChargingCurve | None = None,
) -> tuple[PlanProblem, Plan]:
    """The plan from ``origin`` to ``dest`` (line-graph indices) through the snapped ``chargers``.

    Args:
        vehicle: the :class:`~evroute.energy.VehicleProfile` (its potential for the energy search and the blend,
            its charging curve unless ``curve`` is given).
        settings: battery, risk and search settings.
        trip_rho: trip-level correlation of traversal noise (:mod:`evroute.charging.legs`).
    """
    from evroute.driver.paths import potential_h
    from evroute.energy import elevation_potential_wh

    net = lg.network
    sites = make_sites(lg, belief, origin, dest, chargers)
    table = build_legs(
        lg, belief, sites, elevation_potential_wh(net, vehicle), trip_rho=trip_rho, h0=potential_h(net, vehicle)
    )
    problem = PlanProblem(table, curve or charging_curve(vehicle), settings)
    return problem, plan_search(problem)


__all__ = ["plan_trip"]
