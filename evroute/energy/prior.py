"""The per-edge prior of a road network: energy (Wh) and expected time (s), by name (:data:`PRIORS`).

* ``"eq8"``: the reference paper's model, every edge at its speed limit (:func:`evroute.energy.eq8.network_energy_wh`,
  time ``l / v``);
* ``"profile"`` (the default): every edge driven as a speed profile (:mod:`evroute.energy.profile`) at the speed
  limit capped by the vehicle's top speed, with what happens at the junction it ends at.

Junctions (:meth:`RoadNetwork.junction_arms <evroute.network.road_network.RoadNetwork.junction_arms>`, module
:mod:`evroute.network.junctions`, parameters :class:`~evroute.network.junctions.JunctionModel`): each legal turn out of
an edge is an *arm* with the probability ``p`` that a car stops at the junction (a red light, a stop sign, a dead end),
its mean standstill ``w`` when it does (at a red light the rest of the red minus the time the car spends braking to the
stop line, :func:`evroute.network.junctions.red_standstill_s`), and the speed ``u`` at which it passes otherwise (the
turn speed of the turn's angle, a yield speed on a minor approach). An arm is two branches: the stop ``0 -> v_c -> 0``
plus ``w`` with the auxiliaries on, and the pass ``u -> v_c -> u`` (``u`` capped at ``v_c``), both driven on the edge as
speed profiles (:func:`evroute.energy.profile.profile_energy`). A branch charges the braking into the junction at the
edge's end *and* the accelerating away from it (on the next edge) to the edge, so each edge's kinetic energy telescopes
to zero, each edge's energy keeps ``E - k dz >= 0`` (:func:`evroute.energy.eq8.elevation_potential_wh`: losses are
positive, the recovered energy is at most ``eta-`` times the work), and a route pays one slow-down per junction. An
edge's energy and time are the mean over its arms (equal weights: turn counts are unknown) of ``p`` times the stop
branch plus ``1 - p`` times the pass branch; the next edge's cruise speed is taken as the edge's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evroute.energy.eq8 import network_energy_wh
from evroute.energy.profile import PHASE_BLOCK, DrivingStyle, profile_energy
from evroute.energy.vehicle import VehicleProfile
from evroute.errors import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from evroute.network.junctions import JunctionModel

#: the prior models by name; the first is the default
PRIORS: tuple[str, ...] = ("profile", "eq8")


@dataclass(frozen=True)
class EdgePrior:
    """Per-edge prior of a network: ``energy_wh`` ``(E,)`` (Wh) and ``time_s`` ``(E,)`` expected time (s).

    ``stop_s`` ``(E,)`` is the part of ``time_s`` that stopping at the junction costs (s: the expected standstill and
    the braking to rest and accelerating from it, beyond passing the junction at its pass speed); ``cruise_s`` ``(E,)``
    the time at the edge's cruise speed with no junction at all (s, ``length / min(speed, top speed)``).  The rest,
    ``time_s - cruise_s - stop_s``, is slowing down for turns and yields.  Eq. 8 has neither (zeros, ``time_s``).
    """

    energy_wh: np.ndarray
    time_s: np.ndarray
    prior: str
    stop_s: np.ndarray
    cruise_s: np.ndarray


def edge_prior(
    network,  # RoadNetwork (energy is below network: a plain argument)
    vehicle: VehicleProfile | None = None,
    prior: str = PRIORS[0],
    *,
    style: DrivingStyle | None = None,
    junctions: JunctionModel | None = None,
) -> EdgePrior:
    """The per-edge prior of ``network`` for ``vehicle`` by model name (module doc), vectorised over edges."""
    v = vehicle or VehicleProfile()
    if prior not in PRIORS:
        raise ParameterError(f"unknown prior {prior!r} (use {' or '.join(PRIORS)})")
    length = np.asarray(network.length_m, dtype=np.float64)
    if prior == "eq8":
        time = length / network.speed_mps
        return EdgePrior(network_energy_wh(network, v), time, prior, np.zeros_like(time), time)
    all_arms = network.junction_arms(junctions)
    v_c = np.minimum(np.asarray(network.speed_mps, dtype=np.float64), v.top_speed_mps)
    incline = np.asarray(network.incline, dtype=np.float64)
    n_arms = len(all_arms.edge)
    arm_wh, arm_s, arm_stop_s = np.empty(n_arms), np.empty(n_arms), np.empty(n_arms)
    # the arms' speed profiles in blocks (about 30 arrays per arm: a few GB at 5 M edges in one pass), then one sum
    # per edge over all its arms, as in one pass (bit for bit: each arm's numbers do not depend on the block)
    for first in range(0, n_arms, PRIOR_BLOCK):
        rows = slice(first, first + PRIOR_BLOCK)
        arms = all_arms.take(rows)
        e = arms.edge
        ve, le, ie = v_c[e], length[e], incline[e]
        stop = profile_energy(le, 0.0, ve, 0.0, ie, v, style)
        u = np.minimum(ve, arms.pass_mps)
        go = profile_energy(le, u, ve, u, ie, v, style)
        p = arms.p_stop
        # at a red light the braking time counts toward the wait (red_standstill_s, evroute.network.junctions)
        t_b = stop.peak_mps / (2.0 * (style or DrivingStyle()).deceleration_mps2)
        w = arms.standstill_s(t_b)
        arm_wh[rows] = p * (stop.battery_wh + w * v.aux_w / 3600.0) + (1.0 - p) * go.battery_wh
        arm_s[rows] = p * (stop.time_s + w) + (1.0 - p) * go.time_s
        arm_stop_s[rows] = stop.time_s + w - go.time_s  # what a stop adds (s), times p below
    e, n = all_arms.edge, len(length)
    energy = np.bincount(e, weights=all_arms.weight * arm_wh, minlength=n)
    time = np.bincount(e, weights=all_arms.weight * arm_s, minlength=n)
    stop_s = np.bincount(e, weights=all_arms.weight * all_arms.p_stop * arm_stop_s, minlength=n)
    return EdgePrior(energy, time, prior, stop_s, length / v_c)


#: arms of :func:`edge_prior` computed at once: a multiple of :data:`evroute.energy.profile.PHASE_BLOCK`, so that the
#: speed profiles' quadrature takes the same path for every arm as in one pass (bit for bit the one-pass prior)
PRIOR_BLOCK = 16 * PHASE_BLOCK


__all__ = ["PRIORS", "EdgePrior", "edge_prior"]
