"""The per-edge prior of a road network: energy (Wh) and expected time (s), by name (:data:`PRIORS`).

* ``"eq8"``: the reference paper's model, every edge at its speed limit (:func:`evroute.energy.eq8.network_energy_wh`,
  time ``l / v``);
* ``"profile"`` (the default): every edge driven as a speed profile (:mod:`evroute.energy.profile`) at the speed
  limit capped by the vehicle's top speed, with what happens at the junction it ends at.

Junction model (:class:`JunctionModel`, from the network's topology and speeds, the same for every loader).  The
junction ``n`` at an edge's end is a *dead end* (no other neighbour), a *pass-through* (two neighbour junctions: a
bend or a change of road attributes) or an *intersection* (three or more).  At an intersection the edge is a
*minor* approach when another edge entering ``n`` has a higher speed limit (it yields), else a *major* one.  Each
case is a mixture of three junction speeds ``u``: stop (``u = 0``), yield (``u`` = the yield speed) and pass (``u =
v_c``):

==============  ============================  =========================================
case            stop                          otherwise
==============  ============================  =========================================
dead end        1                             -
pass-through    0                             pass
minor           ``minor_stop_probability``    yield
major           ``major_stop_probability``    pass
==============  ============================  =========================================

A stop or a yield at the end of edge ``e`` means braking from ``v_c`` to ``u`` at the end of ``e`` and accelerating
back from ``u`` to a cruise speed on the next edge.  The prior charges both to ``e``: the branch is the profile
``u -> v_c -> u`` on ``e`` (:func:`evroute.energy.profile.profile_energy`), so each edge's kinetic energy telescopes
to zero, each edge's energy keeps ``E - k dz >= 0`` (:func:`evroute.energy.eq8.elevation_potential_wh`: losses are
positive, the recovered energy is at most ``eta-`` times the work), and a route pays one stop-and-go per junction it
stops at.  A stop also waits ``stop_wait_s`` with the auxiliaries on.  The next edge's cruise speed is taken as
``e``'s; turning movements are not modelled (a turn at a pass-through or major junction is driven at ``v_c``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evroute.energy.eq8 import network_energy_wh
from evroute.energy.profile import DrivingStyle, profile_energy
from evroute.energy.vehicle import VehicleProfile
from evroute.errors import ParameterError, check_positive, check_range

#: the prior models by name; the first is the default
PRIORS: tuple[str, ...] = ("profile", "eq8")


@dataclass(frozen=True)
class JunctionModel:
    """What an edge's end junction does to its speed (module doc).  Assumed values, none fitted:

    Attributes:
        minor_stop_probability: a minor approach stops (stop signs, red lights, crossing traffic) with this
            probability and otherwise yields (0.5, assumed).
        major_stop_probability: a major approach stops with this probability (0.2: a red light at signalised
            junctions, where about half the arrivals stop (HCM 2010, g/C ~ 0.5), on about 40 % of major
            intersections (assumed)).
        yield_speed_kmh: speed through a junction when yielding without stopping (20 km/h, assumed).
        stop_wait_s: mean standstill of a stop (15 s: half a 30 s red, the mean wait of a random arrival on red).
    """

    minor_stop_probability: float = 0.5
    major_stop_probability: float = 0.2
    yield_speed_kmh: float = 20.0
    stop_wait_s: float = 15.0

    def __post_init__(self) -> None:
        check_range("minor_stop_probability", self.minor_stop_probability, 0.0, 1.0, low_open=False)
        check_range("major_stop_probability", self.major_stop_probability, 0.0, 1.0, low_open=False)
        check_positive("yield_speed_kmh", self.yield_speed_kmh)
        check_positive("stop_wait_s", self.stop_wait_s, allow_zero=True)


@dataclass(frozen=True)
class EdgePrior:
    """Per-edge prior of a network: ``energy_wh`` ``(E,)`` (Wh) and ``time_s`` ``(E,)`` expected time (s)."""

    energy_wh: np.ndarray
    time_s: np.ndarray
    prior: str


def junction_cases(from_node: np.ndarray, to_node: np.ndarray, speed_mps: np.ndarray) -> np.ndarray:
    """``(E,)`` case of each edge's end junction: 0 dead end, 1 pass-through, 2 minor, 3 major (module doc).

    Args:
        from_node, to_node: ``(E,)`` junction ids of each edge's start and end.
        speed_mps: ``(E,)`` speed limits (m/s): the approach with the highest one is major.
    """
    _, idx = np.unique(np.concatenate([np.asarray(from_node), np.asarray(to_node)]), return_inverse=True)
    n_e = len(speed_mps)
    fi, ti = idx[:n_e], idx[n_e:]
    n_nodes = int(idx.max()) + 1
    pairs = np.unique(np.sort(np.column_stack([fi, ti]), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    degree = np.bincount(pairs.ravel(), minlength=n_nodes)  # distinct neighbour junctions
    max_in = np.zeros(n_nodes)
    np.maximum.at(max_in, ti, np.asarray(speed_mps, dtype=np.float64))
    d = degree[ti]
    minor = speed_mps < max_in[ti] - 0.1
    return np.where(d <= 1, 0, np.where(d == 2, 1, np.where(minor, 2, 3))).astype(np.int64)


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
        return EdgePrior(network_energy_wh(network, v), length / network.speed_mps, prior)
    jm = junctions or JunctionModel()
    v_c = np.minimum(np.asarray(network.speed_mps, dtype=np.float64), v.top_speed_mps)
    case = junction_cases(network.from_node, network.to_node, network.speed_mps)
    p_stop = np.choose(case, [1.0, 0.0, jm.minor_stop_probability, jm.major_stop_probability])
    p_yield = np.where(case == 2, 1.0 - p_stop, 0.0)
    p_pass = 1.0 - p_stop - p_yield
    u_yield = np.minimum(v_c, jm.yield_speed_kmh / 3.6)
    energy = np.zeros_like(length)
    time = p_stop * jm.stop_wait_s
    incline = network.incline
    for p, u in ((p_stop, np.zeros_like(v_c)), (p_yield, u_yield), (p_pass, v_c)):
        keep = p > 0
        if not keep.any():
            continue
        res = profile_energy(length[keep], u[keep], v_c[keep], u[keep], incline[keep], v, style)
        energy[keep] += p[keep] * res.battery_wh
        time[keep] += p[keep] * res.time_s
    energy += p_stop * jm.stop_wait_s * v.aux_w / 3600.0
    return EdgePrior(energy, time, prior)


__all__ = ["PRIORS", "EdgePrior", "JunctionModel", "edge_prior", "junction_cases"]
