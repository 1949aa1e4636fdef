"""Junction and turn delays: what the junction at the end of an edge does to a car driving each legal turn.

Every legal turn ``(e1, e2)`` of a :class:`~evroute.network.road_network.RoadNetwork` (its ``turns``) crosses the
junction where ``e1`` ends.  This module gives each turn an *arm* (:func:`junction_arms`): the probability that a
car stops there, its mean standstill when it does, and the speed at which it passes when it does not.  The energy
layer turns an arm into speed profiles (:func:`evroute.energy.prior.edge_prior`: braking into the junction and
accelerating away are kinematics of the vehicle, charged there); nothing here is fitted to any SUMO run.

**Control of a turn** (:data:`KINDS`), from what the network holds:

* SUMO networks (``meta["turn_controls"]``, written by :func:`evroute.network.sumo.load_sumo_net` with
  :func:`sumo_turn_controls`): the connection's link state (``M`` major and ``O`` unsignalled: *free*; ``m``
  minor, ``=`` right-before-left, ``o`` blinking: *yield*; ``s`` stop sign, ``w`` all-way stop: *stop*) or, where a
  traffic light controls it, *signal* with the cycle ``C`` and green time ``g`` of its link in the net's
  fixed-time program (``G`` / ``g`` phases; HCM 2010's effective green is the displayed green when the start-up
  lost time equals the use of the amber, both about 2 s, HCM 2010 Ch. 31).
* Other networks (OSM through osmnx, hand-built, synthetic): the junction's OSM ``highway`` tag
  (``meta["junction_tags"]``: ``traffic_signals`` a *signal* with :attr:`JunctionModel.default_cycle_s` /
  :attr:`~JunctionModel.default_green_s`, ``stop``, ``give_way`` a *yield*); else the right-of-way rules of
  :func:`priority_yields`, netconvert's guesses (every turn of a right-before-left junction, a minor approach of a
  priority junction and a left turn across the oncoming major road *yield*), the others are *free*.
* Turn angles: from the edges' end segments; a SUMO network's from its lane shapes (:func:`lane_headings`).

**Delays** (:class:`JunctionModel` holds the parameters; none fitted):

* *signal*: a car arriving at random in the cycle waits the HCM uniform delay (:func:`hcm_uniform_delay_s`, HCM
  2010 Eq. 18-19, Webster 1958's first term) ``d1 = 0.5 C (1 - g/C)^2 / (1 - min(1, X) g/C)``, and stops with the
  probability ``(1 - g/C) / (1 - min(1, X) g/C)`` (:func:`signal_stop_probability`: at ``X = 0`` the share of the
  cycle that is red), so its mean wait given a stop is ``d1 / p_stop`` (``r / 2`` at ``X = 0``); the time it spends
  braking to the stop line counts toward that wait (:func:`red_standstill_s`).  ``X`` (the
  degree of saturation, :attr:`JunctionModel.saturation`) is 0 by default: the prior is a free-flow prior.
* *stop*: every car stops and stands :attr:`JunctionModel.stop_wait_s` (HCM 2010 Eq. 19-64 with no conflicting
  flow: the control delay ``3600 / c + 5`` with ``c = 3600 / t_f`` is the follow-up headway ``t_f`` (3.3 s,
  HCM 2010 Exhibit 19-11, minor-street right turn and through movement base values 3.3-4.0 s) plus the 5 s of
  deceleration and acceleration, which the energy layer's kinematics charge).
* *yield*: a car slows to :attr:`JunctionModel.yield_speed_kmh` and stops with
  :attr:`JunctionModel.minor_stop_probability` (0: no crossing traffic in free flow).
* every turn is driven at most at the turn speed (:func:`turn_speed_mps`) of its deflection angle: a circular
  path of radius ``r = R90 / tan(theta / 2)`` (tangent to both roads, ``R90`` the path radius of a right-angle
  turn) at the lateral acceleration ``a_lat``, ``v = sqrt(a_lat r)``.
* an edge without a legal turn (a dead end) gets one arm that stops without waiting.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from evroute.errors import check_positive, check_range
from evroute.network.headings import lane_headings, turn_deflection_rad
from evroute.network.rightofway import NETCONVERT_PRIORITY, priority_yields

if TYPE_CHECKING:  # pragma: no cover
    from evroute.network.road_network import RoadNetwork

#: control of a turn by code: 0 free (major road, unsignalled), 1 yield, 2 stop, 3 signal
KINDS: tuple[str, ...] = ("free", "yield", "stop", "signal")
FREE, YIELD, STOP, SIGNAL = range(4)

#: SUMO link states (the ``state`` of a ``<connection>`` not under a traffic light) by control code
SUMO_LINK_STATES: dict[str, int] = {"M": FREE, "O": FREE, "Z": FREE, "m": YIELD, "=": YIELD, "o": YIELD}
SUMO_LINK_STATES.update({"s": STOP, "w": STOP})


@dataclass(frozen=True)
class JunctionModel:
    """Parameters of the junction delays (module doc); assumed values from the cited sources, none fitted.

    Attributes:
        lateral_accel_mps2: lateral acceleration drivers accept in a junction turn (3.0 m/s^2: AASHTO's side
            friction factor of about 0.3 for low-speed intersection curves, ``f g``; AASHTO, *A Policy on
            Geometric Design of Highways and Streets*, 2011, Ch. 9).
        turn_radius_90_m: path radius of a right-angle turn (12 m: between a right turn round a 5-9 m kerb radius
            and a left turn across the junction, assumed).
        yield_speed_kmh: speed through a junction when yielding without stopping (20 km/h, assumed).
        minor_stop_probability: share of yielding cars that must stop for crossing traffic (0: free flow).
        stop_wait_s: standstill at a stop sign (3.3 s: HCM 2010's follow-up headway, module doc).
        saturation: the degree of saturation ``X`` of signalised approaches (0: free flow).
        default_cycle_s, default_green_s: the fixed-time program assumed where a signal has none in the network
            (90 s and 42 s: netconvert's default program of a two-phase junction, ``--tls.cycle.time`` 90 s with
            3 s ambers).
        through_share: share of an approach's traffic that goes straight on where the junction has a through
            movement (0.8: 10 % left and 10 % right turns, HCM 2010's default turning percentages, Ch. 18).
    """

    lateral_accel_mps2: float = 3.0
    turn_radius_90_m: float = 12.0
    yield_speed_kmh: float = 20.0
    minor_stop_probability: float = 0.0
    stop_wait_s: float = 3.3
    saturation: float = 0.0
    default_cycle_s: float = 90.0
    default_green_s: float = 42.0
    through_share: float = 0.8

    def __post_init__(self) -> None:
        check_positive("lateral_accel_mps2", self.lateral_accel_mps2)
        check_positive("turn_radius_90_m", self.turn_radius_90_m)
        check_positive("yield_speed_kmh", self.yield_speed_kmh)
        check_range("minor_stop_probability", self.minor_stop_probability, 0.0, 1.0, low_open=False)
        check_positive("stop_wait_s", self.stop_wait_s, allow_zero=True)
        check_positive("saturation", self.saturation, allow_zero=True)
        check_positive("default_cycle_s", self.default_cycle_s)
        check_range("default_green_s", self.default_green_s, 0.0, self.default_cycle_s, low_open=False)
        check_range("through_share", self.through_share, 0.0, 1.0, low_open=False)


@dataclass(frozen=True)
class JunctionArms:
    """One arm per legal turn (and one per dead-end edge), all ``(A,)``.

    Attributes:
        edge: index of the edge the arm leaves from (the junction at its end).
        weight: share of the edge's traffic taking the arm, summing to 1 over each edge's arms
            (:func:`arm_weights`): a U-turn back to where the edge came from gets none unless it is the edge's only
            arm; where one arm is within 45 degrees of straight on (the straightest), it takes
            :attr:`JunctionModel.through_share` and the other arms share the rest equally; otherwise all arms share
            equally (no turn counts are known).
        kind: control code (:data:`KINDS`; a dead end is a ``stop``).
        p_stop: probability that a car stops at the junction.
        wait_s: mean standstill given a stop (s).
        pass_mps: highest speed through the junction when not stopping (m/s, ``inf`` where nothing limits it).
        red_wait: whether the standstill is the rest of a red light (a random arrival: uniform on ``[0, 2 wait_s]``),
            which a car braking to the stop line spends partly braking (:func:`red_standstill_s`); else (a stop sign)
            the standstill comes on top of the braking.
    """

    edge: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    p_stop: np.ndarray
    wait_s: np.ndarray
    pass_mps: np.ndarray
    red_wait: np.ndarray

    def take(self, rows: slice) -> JunctionArms:
        """The arms ``rows`` (a slice: views of every array)."""
        return dataclasses.replace(self, **{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)})

    def standstill_s(self, braking_delay_s: ArrayLike) -> np.ndarray:
        """``(A,)`` mean standstill given a stop (s) of a car whose braking to the stop line delays it by
        ``braking_delay_s`` (``(A,)`` or scalar, s): :func:`red_standstill_s` at red lights, ``wait_s`` elsewhere."""
        return np.where(self.red_wait, red_standstill_s(self.wait_s, braking_delay_s), self.wait_s)


def hcm_uniform_delay_s(cycle_s: ArrayLike, green_s: ArrayLike, saturation: ArrayLike = 0.0) -> np.ndarray:
    """HCM 2010 uniform signal delay (s per car), Eq. 18-19: ``0.5 C (1 - g/C)^2 / (1 - min(1, X) g/C)``.

    Args:
        cycle_s: cycle length ``C`` (s, > 0), any shape.
        green_s: effective green ``g`` (s, ``0 <= g <= C``).
        saturation: degree of saturation ``X`` (>= 0; 0 for a car alone: the mean wait ``r^2 / (2 C)`` of a random
            arrival, ``r = C - g`` the red).
    """
    c, g, x = (np.asarray(a, dtype=np.float64) for a in (cycle_s, green_s, saturation))
    share = g / c
    denom = 1.0 - np.minimum(1.0, x) * share
    red = 1.0 - share
    # always green (g = C) never delays, whatever X (the formula is 0 / 0 there at X >= 1)
    return np.where(red > 0, 0.5 * c * red**2 / np.where(red > 0, denom, 1.0), 0.0)


def signal_stop_probability(cycle_s: ArrayLike, green_s: ArrayLike, saturation: ArrayLike = 0.0) -> np.ndarray:
    """Probability that a car stops at a signal (module doc): ``(1 - g/C) / (1 - min(1, X) g/C)``, at most 1."""
    c, g, x = (np.asarray(a, dtype=np.float64) for a in (cycle_s, green_s, saturation))
    share = g / c
    red = 1.0 - share
    denom = np.where(red > 0, 1.0 - np.minimum(1.0, x) * share, 1.0)
    return np.where(red > 0, np.minimum(1.0, red / denom), 0.0)


def red_standstill_s(wait_s: ArrayLike, braking_delay_s: ArrayLike) -> np.ndarray:
    """Mean standstill (s) of a car stopping at a red light whose remaining red ``R`` at the moment the car would
    have passed at cruise speed is uniform on ``[0, 2 w]`` (``w = wait_s``, the HCM mean wait given a stop; exact
    at ``X = 0``): braking from ``v`` to rest at ``b`` reaches the stop line ``t_b = v / (2 b)`` later than cruising
    would (``braking_delay_s``), so the car stands ``max(R - t_b, 0)``; the mean is ``(2 w - t_b)^2 / (4 w)`` when
    ``2 w > t_b``, else 0.  The braking and accelerating themselves are in the speed profile."""
    w, tb = (np.asarray(a, dtype=np.float64) for a in (wait_s, braking_delay_s))
    red = 2.0 * w
    return np.where(red > tb, (red - tb) ** 2 / (2.0 * np.where(red > 0, red, 1.0)), 0.0)


def turn_speed_mps(deflection_rad: ArrayLike, lateral_accel_mps2: float, turn_radius_90_m: float) -> np.ndarray:
    """Speed (m/s) of a turn by its deflection ``theta`` (rad, ``[0, pi]``): ``sqrt(a_lat R90 / tan(theta / 2))``,
    the circular path tangent to both roads with radius ``R90`` at a right angle; ``inf`` when straight, 0 for a
    U-turn (``theta = pi``: the car turns round from standstill)."""
    th = np.clip(np.asarray(deflection_rad, dtype=np.float64), 0.0, np.pi)
    with np.errstate(divide="ignore"):
        radius = turn_radius_90_m / np.tan(th / 2.0)
    radius = np.where(th >= np.pi - 1e-9, 0.0, radius)
    return np.sqrt(lateral_accel_mps2 * np.maximum(radius, 0.0))


def sumo_turn_controls(net: Any, edge_ids: set[str]) -> dict[str, dict[str, list[float]]]:
    """``{from edge: {to edge: [kind, cycle_s, green_s]}}`` of a ``sumolib`` net read with its programs, for the
    turns between ``edge_ids`` (module doc; ``cycle_s = green_s = 0`` unless signalled).  A turn with several lane
    connections takes the most permissive one (the lowest code; under a signal the longest green)."""
    green: dict[tuple[str, int], tuple[float, float]] = {}
    for tls in net.getTrafficLights():
        programs = list(tls.getPrograms().values())
        if not programs:
            continue
        phases = programs[0].getPhases()
        cycle = float(sum(p.duration for p in phases))
        if cycle <= 0:
            continue
        for idx in range(max((len(p.state) for p in phases), default=0)):
            g = float(sum(p.duration for p in phases if len(p.state) > idx and p.state[idx] in "Gg"))
            green[(tls.getID(), idx)] = (cycle, g)
    out: dict[str, dict[str, list[float]]] = {}
    for e in net.getEdges(withInternal=False):
        fid = e.getID()
        if fid not in edge_ids:
            continue
        for to, conns in e.getOutgoing().items():
            tid = to.getID()
            if tid not in edge_ids:
                continue
            best: list[float] | None = None
            for c in conns:
                prog = green.get((c.getTLSID(), c.getTLLinkIndex())) if c.getTLSID() else None
                arm = [float(SIGNAL), *prog] if prog else [float(SUMO_LINK_STATES.get(c.getState(), FREE)), 0.0, 0.0]
                if best is None or arm[0] < best[0] or (arm[0] == best[0] == SIGNAL and arm[2] > best[2]):
                    best = arm
            if best is not None:
                out.setdefault(fid, {})[tid] = best
    return out


def turn_controls(network: RoadNetwork, model: JunctionModel | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(C,)`` control code of each legal turn and ``(C, 2)`` its signal's cycle and green (s; 0 unless
    signalled), from the network's ``meta["turn_controls"]`` where it has an entry, else inferred (module doc)."""
    jm = model or JunctionModel()
    t = network.turns
    kind = np.full(len(t), FREE, dtype=np.int64)
    prog = np.zeros((len(t), 2))
    listed = network.meta.get("turn_controls") or {}
    todo = np.ones(len(t), dtype=bool)  # turns the network lists no control for
    if listed:
        ids = network.edge_ids
        for k, (a, b) in enumerate(t.tolist()):
            entry = listed.get(ids[a], {}).get(ids[b])
            if entry is not None:
                todo[k] = False
                kind[k], prog[k] = int(entry[0]), entry[1:3]
    if todo.any():
        tags = network.meta.get("junction_tags") or {}
        tag = np.zeros(len(t), dtype=np.int8)  # the tag of each turn's junction: 0 none, 1 signals, 2 stop, 3 give way
        if tags:
            _, to_idx, junctions = network.junction_codes()
            codes = {"traffic_signals": 1, "stop": 2, "give_way": 3}
            per_junction = np.array([codes.get(str(tags.get(j)), 0) for j in junctions.tolist()], dtype=np.int8)
            tag = per_junction[to_idx[t[:, 0]]]
        signal, stop = todo & (tag == 1), todo & (tag == 2)
        yld = todo & ~signal & ~stop & ((tag == 3) | priority_yields(network))
        kind[signal], prog[signal] = SIGNAL, (jm.default_cycle_s, jm.default_green_s)
        kind[stop] = STOP
        kind[yld] = YIELD
    return kind, prog


def arm_weights(
    n_edges: int, edge: np.ndarray, deflection_rad: np.ndarray, uturn: np.ndarray, model: JunctionModel
) -> np.ndarray:
    """``(A,)`` share of each edge's traffic taking each of its arms (:attr:`JunctionArms.weight`).

    Args:
        n_edges: number of edges ``E``.
        edge: ``(A,)`` edge index of each arm.
        deflection_rad: ``(A,)`` the arm's turn angle (rad).
        uturn: ``(T,)`` whether each of the first ``T <= A`` arms is a U-turn (the rest are not).
        model: :attr:`JunctionModel.through_share`.
    """
    n_arms = len(edge)
    ordinary = np.ones(n_arms, dtype=bool)
    ordinary[: len(uturn)] = ~uturn
    n_on = np.bincount(edge, weights=ordinary, minlength=n_edges)
    # the straightest ordinary arm of each edge, a through movement if within 45 degrees of straight on
    key = np.where(ordinary, deflection_rad, np.inf)
    order = np.lexsort((key, edge))
    first = np.zeros(n_arms, dtype=bool)
    first[order[np.r_[True, edge[order][1:] != edge[order][:-1]]]] = True
    through = first & ordinary & (deflection_rad <= np.pi / 4) & (n_on[edge] > 1)
    has_through = np.bincount(edge, weights=through, minlength=n_edges) > 0
    share = model.through_share
    w = np.where(ordinary, 1.0 / np.maximum(n_on[edge], 1), 0.0)
    others = np.maximum(n_on[edge] - 1, 1)
    w = np.where(has_through[edge] & ordinary, np.where(through, share, (1.0 - share) / others), w)
    n_all = np.bincount(edge, minlength=n_edges)
    return np.where(n_on[edge] > 0, w, 1.0 / n_all[edge])


def junction_arms(network: RoadNetwork, model: JunctionModel | None = None) -> JunctionArms:
    """The arms of every legal turn of ``network`` and of every dead-end edge (module doc)."""
    jm = model or JunctionModel()
    t = network.turns
    kind, prog = turn_controls(network, jm)
    theta = turn_deflection_rad(network)
    v_turn = turn_speed_mps(theta, jm.lateral_accel_mps2, jm.turn_radius_90_m)
    from_idx, to_idx, _ = network.junction_codes()
    uturn = to_idx[t[:, 1]] == from_idx[t[:, 0]]  # back to the junction it came from (codes: no string arrays)
    p_stop = np.zeros(len(t))
    wait = np.zeros(len(t))
    u = v_turn.copy()
    sig = kind == SIGNAL
    cyc, grn = prog[sig, 0], prog[sig, 1]
    p_stop[sig] = signal_stop_probability(cyc, grn, jm.saturation)
    with np.errstate(divide="ignore", invalid="ignore"):
        wait[sig] = np.where(p_stop[sig] > 0, hcm_uniform_delay_s(cyc, grn, jm.saturation) / p_stop[sig], 0.0)
    p_stop[kind == STOP] = 1.0
    wait[kind == STOP] = jm.stop_wait_s
    yld = kind == YIELD
    p_stop[yld] = jm.minor_stop_probability
    wait[yld] = jm.stop_wait_s
    u[yld] = np.minimum(u[yld], jm.yield_speed_kmh / 3.6)
    dead = np.flatnonzero(np.bincount(t[:, 0], minlength=network.n_edges) == 0)  # edges without a turn out
    edge = np.concatenate([t[:, 0], dead])
    return JunctionArms(
        edge=edge,
        weight=arm_weights(network.n_edges, edge, np.concatenate([theta, np.zeros(len(dead))]), uturn, jm),
        kind=np.concatenate([kind, np.full(len(dead), STOP)]),
        p_stop=np.concatenate([p_stop, np.ones(len(dead))]),
        wait_s=np.concatenate([wait, np.zeros(len(dead))]),
        pass_mps=np.concatenate([u, np.zeros(len(dead))]),
        red_wait=np.concatenate([sig, np.zeros(len(dead), dtype=bool)]),
    )


__all__ = [
    "KINDS",
    "SUMO_LINK_STATES",
    "JunctionArms",
    "JunctionModel",
    "NETCONVERT_PRIORITY",
    "arm_weights",
    "priority_yields",
    "hcm_uniform_delay_s",
    "junction_arms",
    "lane_headings",
    "red_standstill_s",
    "signal_stop_probability",
    "sumo_turn_controls",
    "turn_controls",
    "turn_deflection_rad",
    "turn_speed_mps",
]
