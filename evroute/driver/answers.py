"""Route answers for a driver: energy +- sd, travel time, arrival state of charge with a 90 % interval, and the
probability of arriving with at least the reserve.

With the battery charged to ``c0`` (fraction of the capacity ``C``, Wh) and a trip energy ``E ~ N(mu, s^2)``
(:meth:`evroute.driver.belief.RouteBelief.route_moments`: the joint posterior of the route plus one drive's
observation noise), the arrival state of charge is ``c1 = c0 - E / C ~ N(c0 - mu / C, (s / C)^2)``::

    90 % interval   c0 - (mu +- 1.645 s) / C
    P(c1 >= r)      Phi((c0 - r) C - mu) / s)

A battery cannot be charged above ``max_soc`` (``c_max``): energy recovered into a full battery is lost (the
battery management cuts regeneration off).  Along the route the expected charge is followed edge by edge,
``c_k = min(c_max, c_{k-1} - mu_k / C)`` (the edges' posterior means ``mu_k``); the energy that does not fit,
``L`` (Wh, :attr:`RouteAnswer.lost_wh`), is drawn from the arrival charge (``c0 - (mu + L) / C``; the route's
energy stays the model's ``mu``), and the arrival charge and its interval are clipped at ``c_max``
(:attr:`RouteAnswer.capped` says when either happened).

Assumptions: the energy is Gaussian (the models' posterior and noise are), or, for a model learned from trip logs, a
mixture of Gaussians over the posterior of its whole-trip noise and trip effect (the interval is then the mixture's
central 90 % interval and ``P(c1 >= r)`` its probability, :meth:`~evroute.driver.belief.RouteBelief.trip_cdf`);
the battery's usable window is
``[min_soc, max_soc]`` of the vehicle profile, so the start charge must lie in it, the reserve must be at least
``min_soc``, and the start charge must not be below the reserve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri  # not scipy.stats: its import costs ~0.6 s

from evroute.driver.belief import RouteBelief
from evroute.energy import VehicleProfile
from evroute.errors import ParameterError

#: two-sided 90 % interval: the 5 % and 95 % quantiles of a Gaussian are mean -+ Z90 sd
Z90 = float(ndtri(0.95))


@dataclass(frozen=True)
class BatteryState:
    """Start charge and reserve as fractions of the battery capacity (Wh).

    Attributes:
        capacity_wh: battery capacity ``C`` (Wh).
        charge: start state of charge ``c0`` in ``[min_soc, max_soc]``.
        reserve: the state of charge the driver wants to keep on arrival (``>= min_soc``).
        max_charge: the highest charge the battery holds (``max_soc``): the cap of the arrival charge.
    """

    capacity_wh: float
    charge: float
    reserve: float
    max_charge: float = 1.0

    @classmethod
    def from_vehicle(cls, vehicle: VehicleProfile, charge: float | None = None, reserve: float | None = None):
        """``charge`` default ``max_soc`` (a full battery), ``reserve`` default ``min_soc``; both checked."""
        c0 = vehicle.max_soc if charge is None else float(charge)
        r = vehicle.min_soc if reserve is None else float(reserve)
        if not vehicle.min_soc <= c0 <= vehicle.max_soc:
            raise ParameterError(
                f"charge {100 * c0:g} % is outside the usable window {100 * vehicle.min_soc:g}-"
                f"{100 * vehicle.max_soc:g} % of vehicle {vehicle.name!r}"
            )
        if not vehicle.min_soc <= r <= vehicle.max_soc:
            raise ParameterError(
                f"reserve {100 * r:g} % is outside the usable window {100 * vehicle.min_soc:g}-"
                f"{100 * vehicle.max_soc:g} % of vehicle {vehicle.name!r}"
            )
        if c0 < r:
            raise ParameterError(f"charge {100 * c0:g} % is below the reserve {100 * r:g} %: no trip keeps the reserve")
        return cls(float(vehicle.battery_capacity_wh), c0, r, float(vehicle.max_soc))

    @property
    def budget_wh(self) -> float:
        """Energy the trip may use while keeping the reserve: ``(c0 - r) C`` (Wh; negative if ``c0 < r``)."""
        return (self.charge - self.reserve) * self.capacity_wh


@dataclass(frozen=True)
class RouteAnswer:
    """What a driver is told about one route (energies in Wh, states of charge as fractions)."""

    name: str
    edges: np.ndarray
    length_m: float
    time_s: float
    energy_wh: float  # posterior mean of the trip energy
    energy_sd_wh: float  # sd of the expected energy f(R) (the model's uncertainty)
    trip_sd_wh: float  # sd of one drive's energy: the model's uncertainty plus the observation noise
    arrival_soc: float  # expected arrival state of charge
    arrival_soc_lo: float  # 5 % quantile
    arrival_soc_hi: float  # 95 % quantile
    p_reserve: float  # P(arrival state of charge >= reserve)
    capped: bool = False  # the battery was expected full on the way (energy lost) or the interval hit max_charge
    lost_wh: float = 0.0  # expected energy recovered into a full battery, hence lost (Wh)

    def to_dict(self, edge_ids: np.ndarray | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "route": self.name,
            "length_m": self.length_m,
            "time_s": self.time_s,
            "energy_wh": self.energy_wh,
            "energy_sd_wh": self.energy_sd_wh,
            "trip_sd_wh": self.trip_sd_wh,
            "arrival_soc": self.arrival_soc,
            "arrival_soc_90": [self.arrival_soc_lo, self.arrival_soc_hi],
            "p_arrival_above_reserve": self.p_reserve,
            "arrival_soc_capped": self.capped,
            "lost_to_full_battery_wh": self.lost_wh,
            "n_edges": len(self.edges),
        }
        if edge_ids is not None:
            out["edges"] = np.asarray(edge_ids)[self.edges].tolist()
        return out


def arrival(
    mean_wh: float, sd_wh: float, battery: BatteryState, error: tuple[float, Any] | None = None
) -> tuple[float, float, float, float]:
    """``(expected arrival SoC, 5 % quantile, 95 % quantile, P(arrival >= reserve))`` for a trip energy
    ``N(mean_wh, sd_wh^2)`` (module doc), each state of charge clipped at ``battery.max_charge``.  ``error``: ``(half,
    cdf)`` of a trip energy that is not normal -- the half-width (Wh) of its central 90 % interval and ``cdf(x)`` =
    ``P(E - mean <= x)`` -- (:meth:`~evroute.driver.belief.RouteBelief.trip_half_width`, ``trip_cdf``: the mixture of
    a model learned from trip logs)."""
    c = battery.capacity_wh
    mu = battery.charge - mean_wh / c
    half = Z90 * sd_wh / c if error is None else error[0] / c
    if error is not None:
        p = float(error[1](battery.budget_wh - mean_wh))
    elif sd_wh > 0:
        p = float(ndtr((battery.budget_wh - mean_wh) / sd_wh))
    else:
        p = float(mean_wh <= battery.budget_wh)
    top = battery.max_charge
    return min(mu, top), min(mu - half, top), min(mu + half, top), p


def full_battery_loss_wh(edge_mean_wh: np.ndarray, battery: BatteryState) -> float:
    """Energy (Wh) recovered along a route into an already full battery, hence lost: the expected charge followed
    edge by edge from ``battery.charge`` (``(k,)`` edge means, Wh, in driving order) and clipped at
    ``max_charge`` (module doc)."""
    room = (battery.max_charge - battery.charge) * battery.capacity_wh  # Wh the battery can still take
    lost, used = 0.0, 0.0  # used: energy drawn so far, net of what was stored
    for e in np.asarray(edge_mean_wh, dtype=np.float64).tolist():
        used += e
        if used < -room:  # more recovered than fits
            lost += -room - used
            used = -room
    return lost


def answer_route(
    name: str,
    edges: np.ndarray,
    belief: RouteBelief,
    network: Any,
    battery: BatteryState,
    edge_time_s: np.ndarray | None = None,
) -> RouteAnswer:
    """The :class:`RouteAnswer` of route ``edges`` (line-graph indices) on ``network`` (the line graph's
    :class:`~evroute.network.road_network.RoadNetwork`); travel time from ``edge_time_s`` (``(E,)`` s, the prior's
    expected times, :func:`evroute.energy.edge_prior`), else at the speed limits.  Energy recovered into a full
    battery is lost (:func:`full_battery_loss_wh`): it lowers the arrival charge."""
    e = np.asarray(edges, dtype=np.int64)
    mean, var_f = belief.route_moments(e, trip=False)
    lost = full_battery_loss_wh(belief.mean[e], battery)
    sd_trip = float(np.sqrt(var_f + belief.trip_var(e)))
    error = None
    if getattr(belief, "predictive", None) is not None:  # learned from trip logs: a mixture over (k, tau^2)
        error = (belief.trip_half_width(e, 0.9), lambda x: belief.trip_cdf(e, x))
    soc, lo, hi, p = arrival(mean + lost, sd_trip, battery, error)
    times = network.length_m[e] / network.speed_mps[e] if edge_time_s is None else np.asarray(edge_time_s)[e]
    return RouteAnswer(
        name=name,
        edges=e,
        length_m=float(network.length_m[e].sum()),
        time_s=float(times.sum()),
        energy_wh=mean,
        energy_sd_wh=float(np.sqrt(var_f)),
        trip_sd_wh=sd_trip,
        arrival_soc=soc,
        arrival_soc_lo=lo,
        arrival_soc_hi=hi,
        p_reserve=p,
        capped=bool(lost > 0 or hi >= battery.max_charge),
        lost_wh=lost,
    )


__all__ = ["Z90", "BatteryState", "RouteAnswer", "answer_route", "arrival", "full_battery_loss_wh"]
