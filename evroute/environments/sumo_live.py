"""Live environment: every round's route is driven by an EV through a running SUMO simulation (``--env sumo-live``).

The world is the replay's scenario (:mod:`evroute.environments.sumo_replay`): the same network, background demand
(daily profile, ``peak_per_hour``, ``hours``, ``demand_seed``, or ``route_file``), vehicle profile, energy model and
SUMO seed.  The background day is simulated once and its state saved at ``rounds_per_day`` departure times
(:func:`evroute.sumo.live.live_snapshots`, cached).  Then, in round ``t``:

* **clock**: the EV departs at ``hours[0] + k * (hours[1] - hours[0]) / rounds_per_day`` hours with
  ``k = (t - 1) mod rounds_per_day`` (rounded down to a whole simulation step): the clock advances by
  ``(hours[1] - hours[0]) / rounds_per_day`` hours per round (172.8 s with the defaults, a 24 h window and 500
  rounds per day) and wraps to the next day, exactly the replay's clock (the bandit sets ``t`` through
  :meth:`SumoLiveEnvironment.advance`; for a learner that never calls it, each trip moves the clock one round);
* **drive**: SUMO is started in-process (``libsumo``) from the saved state of that time, with the rest of the
  background demand; one EV of the vehicle profile (battery device, speed factor drawn like SUMO's for a
  passenger car from the run's seeded noise stream) drives ``[pred, route..., succ]`` (a predecessor and a
  successor edge make every route edge a complete traversal, like the replay's recorded traversals; the EV comes
  in and leaves straight on where the net allows, :meth:`evroute.sumo.live.LiveSimulation.end_edges`, and drives
  on over a run-out where the successor is shorter than one step's distance,
  :meth:`evroute.sumo.live.LiveSimulation.runout`); SUMO is stepped until the EV arrives and closed
  (:meth:`evroute.sumo.live.LiveSimulation.drive`);
* **observation**: the *reduced* energy of each route edge, as the replay's: the energy SUMO's battery device
  measured on it (each step's energy split over the lanes covered in it in proportion to distance,
  :mod:`evroute.sumo.attribution`; the junction after an edge counts to the edge) minus its change of kinetic and
  potential energy (:mod:`evroute.sumo.record`); the battery energies are in
  :attr:`evroute.sumo.live.LiveTrip.route_energy_wh` of :attr:`SumoLiveEnvironment.last_trip`;
* **a failed trip** (the EV teleported, not arrived within ``max_trip_s`` simulated seconds, or its traversals not
  matching the route): the route is driven again from the next saved state (one clock step later), up to
  ``max_attempts`` trips; if all fail, :class:`~evroute.sumo.binaries.SumoError` names the route and times.
  :meth:`SumoLiveEnvironment.describe` counts trips and failures.

**Regret reference.**  A live round has no true expected energy of its own: the expectation over traffic of an
edge's energy could only be estimated by driving it many times.  The truth (``true_mean_wh``), the exact optimum and
therefore the regret are the replay environment's of the same scenario (the mean of the recorded day's traversals
of each edge's reduced energies, by time-of-day bin when ``bin_hours > 0``; one Dijkstra): regret in ``sumo-live``
measures the learner against the replay's means.  ``docs/results/sumo_live_routes.md`` measures how well those means
predict what the EV meets live.  The models' prior and noise variance are the replay's too.

Each trip starts from a saved state and does not change later ones, so a round depends only on the route, the
round's clock time and the speed factor: the same seed gives the same rounds, and a killed run resumes exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.arms import ArmSpace
from evroute.energy import VehicleProfile
from evroute.environments.base import EnergyEnvironment, config_from_params
from evroute.environments.sumo_replay import SumoReplayConfig, SumoReplayEnvironment
from evroute.errors import ParameterError, check_positive
from evroute.linegraph import LineGraph
from evroute.oracle import Route


@dataclass(frozen=True)
class SumoLiveConfig(SumoReplayConfig):
    """Parameters: the replay's (scenario, prior, clock) and the live trips' limits.

    ``max_trip_s``: simulated seconds after its departure time by which the EV must have arrived;
    ``max_attempts``: trips per round before giving up (a failed trip is driven again one clock step later).
    """

    max_trip_s: float = 3600.0
    max_attempts: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("max_trip_s", self.max_trip_s)
        if int(self.max_attempts) < 1:
            raise ParameterError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.clock_step_s < self.step_length:
            raise ParameterError(
                f"rounds_per_day={self.rounds_per_day} gives departures {self.clock_step_s:g} s "
                f"apart, less than one simulation step ({self.step_length:g} s)"
            )

    @property
    def clock_step_s(self) -> float:
        """Simulated seconds the clock advances per round."""
        return (self.window[1] - self.window[0]) * 3600.0 / int(self.rounds_per_day)

    def departure_times_s(self) -> np.ndarray:
        """``(rounds_per_day,)`` departure times (s since midnight), rounded down to whole simulation steps."""
        k = np.arange(int(self.rounds_per_day))
        raw = self.window[0] * 3600.0 + k * self.clock_step_s
        return np.floor(raw / self.step_length + 1e-9) * self.step_length

    def slot_of_round(self, t: int) -> int:
        """Index of round ``t``'s departure time (1-based rounds; the clock wraps every ``rounds_per_day``)."""
        return (int(t) - 1) % int(self.rounds_per_day)

    def replay_config(self) -> SumoReplayConfig:
        """The replay environment's parameters (the regret reference)."""
        d = asdict(self)
        for k in ("max_trip_s", "max_attempts"):
            d.pop(k)
        return SumoReplayConfig(**d)


class SumoLiveEnvironment(EnergyEnvironment):
    """Drives each round's route in SUMO; truth and optimum from the replay of the same scenario (module doc).

    Attributes (besides the base class's):
        reference: the :class:`~evroute.environments.sumo_replay.SumoReplayEnvironment` of the same scenario.
        sim: the :class:`~evroute.sumo.live.LiveSimulation` the trips are driven in.
        trips, failed_trips: trips driven and trips that failed (and were driven again later).
        last_trip: the last :class:`~evroute.sumo.live.LiveTrip`.
    """

    name = "sumo-live"
    #: observations and truth are reduced energies, like the replay's: the learner subtracts no potential
    reduced_energies = True

    def __init__(self, reference: SumoReplayEnvironment, sim: Any, config: SumoLiveConfig) -> None:
        super().__init__(
            reference.linegraph,
            reference.prior_mean_wh,
            reference.true_mean_wh,
            reference.prior_var,
            reference.noise_var,
            config,
        )
        self.reference = reference
        self.static = reference.static
        self.turn_term = reference.turn_term  # turn arms: the replay's turn truths, a live trip observes each edge
        self.sim = sim
        self.t = 1
        self._driven = False
        self.trips = 0
        self.failed_trips = 0
        self.last_trip: Any = None
        self.failures: list[str] = []

    def advance(self, t: float) -> bool:
        """Move the clock to round ``t``; the truth follows the replay's (changes only with time-of-day bins)."""
        self.t = int(t)
        self._driven = False
        changed = self.reference.advance(t)
        self.true_mean_wh = self.reference.true_mean_wh
        return changed

    def observe(self, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Drive the route (line-graph indices) in SUMO at the round's time: the reduced energy (Wh) of each edge.

        Raises:
            SumoError: ``max_attempts`` trips in a row failed, or SUMO itself failed.
        """
        from evroute.sumo.binaries import SumoError
        from evroute.sumo.live import draw_speed_factor

        e = np.asarray(edges, dtype=np.int64)
        if len(e) == 0:
            raise ParameterError("a live trip needs at least one edge")
        adj = self.linegraph.adjacency
        if np.any(adj[e[:-1], e[1:]] == 0):
            raise ParameterError("the edges of a live trip must be consecutive legal turns")
        ids = self.linegraph.network.edge_ids
        pred, succ = self.sim.end_edges(str(ids[e[0]]), str(ids[e[-1]]))
        driven = [pred, *ids[e].tolist(), succ]
        speed = draw_speed_factor(rng)
        cfg: SumoLiveConfig = self.config
        if self._driven:  # a learner that does not call advance(): each trip is the next round
            self.t += 1
        self._driven = True
        slot = cfg.slot_of_round(self.t)
        tried = []
        for attempt in range(int(cfg.max_attempts)):
            snap = (slot + attempt) % int(cfg.rounds_per_day)
            trip = self.sim.drive(driven, snap, speed_factor=speed)
            self.trips += 1
            self.last_trip = trip
            if trip.ok:
                return np.asarray(trip.route_reduced_wh, dtype=np.float64)
            self.failed_trips += 1
            tried.append(f"{trip.depart_s:g} s: {trip.failure}")
            self.failures.append(f"round {self.t}, depart {trip.depart_s:g} s: {trip.failure}")
        raise SumoError(
            f"the live EV failed {len(tried)} trips on a {len(e)}-edge route from {ids[e[0]]} to "
            f"{ids[e[-1]]} (departures {'; '.join(tried)})"
        )

    def reduced_costs(self) -> np.ndarray:
        """The replay's reduced costs (its means, already reduced), Wh."""
        return self.reference.reduced_costs()

    def optimal_route(self, start: int, goal: int) -> Route:
        """The replay's exact optimum of the same scenario (see the module doc: regret against replay means)."""
        return self.reference.optimal_route(start, goal)

    def arm_truth(self, arms: ArmSpace) -> np.ndarray:
        """The replay's arm truths (turn arms: :meth:`SumoReplayEnvironment.arm_truth`)."""
        return self.reference.arm_truth(arms)

    def describe(self) -> dict[str, Any]:
        ref = {k: v for k, v in self.reference.describe().items() if k != "name"}
        return {
            **ref,
            "name": self.name,
            **self.config.to_dict(),
            "regret_reference": "sumo-replay means",
            "trips": self.trips,
            "failed_trips": self.failed_trips,
            "failures": self.failures[:20],
        }


def parse_params(params: dict[str, Any]) -> SumoLiveConfig:
    """:class:`SumoLiveConfig` from an experiment's ``environment`` dict (:class:`ParameterError` if invalid)."""
    return config_from_params(SumoLiveConfig, params, "sumo-live")


def _scenario(linegraph: LineGraph, cfg: SumoLiveConfig, vehicle: VehicleProfile) -> tuple[Any, list[Any], list[Any]]:
    """The net file, the background route files and the saved states of every departure time (cached)."""
    from pathlib import Path

    from evroute.sumo.live import live_snapshots
    from evroute.sumo.replay import sumo_net_file
    from evroute.sumo.scenario import background_demand

    net = sumo_net_file(linegraph)
    if cfg.route_file is not None:
        demand = Path(cfg.route_file)
    else:
        demand = background_demand(net, peak_per_hour=cfg.peak_per_hour, hours=cfg.window, seed=cfg.demand_seed)
    snaps = live_snapshots(
        net,
        [demand],
        cfg.departure_times_s(),
        vehicle=vehicle,
        model=cfg.model,
        step_length=cfg.step_length,
        seed=cfg.demand_seed,
        begin_s=cfg.window[0] * 3600.0,
    )
    return net, [demand], snaps


def prepare(linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None) -> None:
    """Registry hook run before a run writes anything: SUMO and libsumo, the replay's day, the saved states."""
    from evroute.environments import sumo_replay
    from evroute.sumo.binaries import import_libsumo

    cfg = parse_params(params)
    import_libsumo()
    v = vehicle or VehicleProfile()
    sumo_replay.prepare(linegraph, cfg.replay_config().to_dict(), vehicle=v)
    _scenario(linegraph, cfg, v)


def live_simulation(linegraph: LineGraph, cfg: SumoLiveConfig, vehicle: VehicleProfile | None = None) -> Any:
    """The :class:`~evroute.sumo.live.LiveSimulation` of a scenario (its saved states built or read from the cache),
    without the replay: what driving routes live needs."""
    from evroute.sumo.live import LiveSimulation

    v = vehicle or VehicleProfile()
    net, demand, snaps = _scenario(linegraph, cfg, v)
    return LiveSimulation(
        net,
        demand,
        snaps,
        cfg.departure_times_s(),
        vehicle=v,
        model=cfg.model,
        step_length=cfg.step_length,
        seed=cfg.demand_seed,
        max_trip_s=cfg.max_trip_s,
    )


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> SumoLiveEnvironment:
    """Registry entry: the replay of the scenario (the truth) and the live simulation; ``seed`` is not used (the
    run's noise stream draws each trip's speed factor)."""
    from evroute.environments import sumo_replay

    cfg = parse_params(params)
    v = vehicle or VehicleProfile()
    reference = sumo_replay.build(linegraph, cfg.replay_config().to_dict(), vehicle=v, seed=seed)
    return SumoLiveEnvironment(reference, live_simulation(linegraph, cfg, v), cfg)


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = SumoLiveConfig
