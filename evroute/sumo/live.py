"""Driving one EV through a running SUMO simulation with background traffic (the ``sumo-live`` environment).

The background day is simulated once with ``sumo`` and its full state (every vehicle, traffic light and random
number generator) is saved at a grid of departure times (:func:`evroute.sumo.snapshots.live_snapshots`, cached by
content hash like the demand).  A trip (:meth:`LiveSimulation.drive`) starts SUMO as a library (``libsumo``, in
this process: there is no child process to leak) from the snapshot of its departure time with the remaining
background demand, inserts one EV of the vehicle profile with SUMO's battery device on the route, steps the
simulation until the EV arrives, and closes SUMO.  Each trip starts from a saved state, so trips do not depend on
each other: the same snapshot, route and speed factor give the same energies, in any order and in any process (a
killed run resumes exactly).

The route is driven as ``[pred, route..., succ]``: a predecessor and a successor edge (legal turns of the net,
straight on where it allows, :meth:`LiveSimulation.end_edges`) are added so that every edge of the route is a
complete traversal, entered at traffic speed through a junction and left through the next one, exactly like the
recorded traversals of the replay (:mod:`evroute.sumo.record`, whose first and last edges are dropped as partial).
The EV's position, lane and battery charge are read every step; each step's energy (the drop of
``device.battery.chargeLevel``, 0.01 Wh resolution, telescoping: the trip's steps sum to the battery's total) is
split over the lanes covered in the step in proportion to distance (:func:`evroute.sumo.attribution.attribute_steps`),
and :func:`evroute.sumo.record.steps_to_traversals` cuts the steps into edge traversals (the junction after an edge
counts to the edge).

**Both ends of a route are complete traversals.**  The first route edge's traversal begins at the interpolated
moment the EV leaves ``pred``: the EV is seen on ``pred`` at least once, in the step it is inserted (at
``departPos=base``; SUMO inserts after the step's moves).  The last route edge's traversal ends at the first step
the EV is seen past it, and SUMO removes an arriving vehicle in the step it reaches its arrival position, unseen
(its battery output has no row for that step either).  A successor shorter than one step's distance is then
entered and driven to its end within one step, and the last route edge is never closed: Monaco's route B leaves its
goal ``843#1`` into the 6.4 m edge ``843#2`` at about 22 m/s, and 51 of the 108 trips of
``docs/results/sumo_bandit.md`` were one traversal short until this was handled.  So the EV drives on after ``succ``
over a *run-out* (:meth:`LiveSimulation.runout`, straight on) until ``succ`` and the run-out are longer than one
step at the highest speed limit there: the first step that ends past the route then ends before the arrival.  A
net that ends sooner (a dead end with no way on) can still leave the last edge open; the trip then fails and says
so (:func:`route_mismatch`).

A trip *fails* when the EV is teleported (SUMO moves a vehicle stuck for ``--time-to-teleport`` s, or after a
collision), has not arrived ``max_trip_s`` simulated seconds after its departure time (including time waiting for
insertion), or when it has not one complete traversal per route edge, in order; :attr:`LiveTrip.ok` is then
``False`` and :attr:`LiveTrip.failure` says why (:attr:`LiveTrip.arrived` whether the EV arrived all the same).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.network.cachefiles import temp_prefix
from evroute.sumo.attribution import LaneGraph, attribute_steps, lane_graph
from evroute.sumo.binaries import SumoError, import_libsumo, sumo_binary
from evroute.sumo.netfile import connection_directions, direction_rank, edge_lengths_speeds
from evroute.sumo.record import edge_rise_m, kinetic_steps, net_connections, steps_to_traversals, write_vtype_file
from evroute.sumo.snapshots import base_args, live_snapshots
from evroute.sumo.vehicle import DEFAULT_VTYPE, SUMO_GRAVITY_MPS2, battery_params, effective_mass_kg

#: ids of the EV and its route inside a trip's simulation (the background's ids are ``bg...`` / the user's)
EV_ID = "evroute_ev"
EV_ROUTE_ID = "evroute_ev_route"
#: metres a run-out must exceed one step's distance by (SUMO's vehicles arrive within 0.1 m of the arrival position)
ARRIVAL_MARGIN_M = 1.0
#: at most this many run-out edges after a route's successor (:meth:`LiveSimulation.runout`)
MAX_RUNOUT_EDGES = 20
#: SUMO's speed-factor distribution of passenger cars (``normc(1, 0.1, 0.2, 2)``: mean, deviation, bounds)
SPEED_FACTOR = (1.0, 0.1, 0.2, 2.0)


def draw_speed_factor(rng: np.random.Generator) -> float:
    """One driver's speed factor, drawn like SUMO draws it for a passenger car (normal, truncated to [0.2, 2])."""
    mean, dev, lo, hi = SPEED_FACTOR
    while True:
        x = float(rng.normal(mean, dev))
        if lo <= x <= hi:
            return x


@dataclass
class LiveTrip:
    """One EV trip through the live simulation.

    Attributes:
        edges: ``(n,)`` SUMO edge ids asked for: ``[pred, route..., succ]``; runout: the edges driven after ``succ``
            (:meth:`LiveSimulation.runout`, usually none); the EV arrives at the end of the last of them.
        route_energy_wh: ``(n - 2,)`` energy of each route edge's complete traversal (Wh); NaN where missing.
        route_travel_s: ``(n - 2,)`` travel time of each route edge (s).
        route_reduced_wh: ``(n - 2,)`` reduced energy of each route edge's traversal (Wh): its energy minus its
            change of kinetic and potential energy (:mod:`evroute.sumo.record`); NaN where missing.
        edge_energy_wh: energy of every edge driven (Wh), the partial first and last ones included, the junction
            after an edge counted to it (so a route edge's value is its ``route_energy_wh``): sums to ``battery_wh``.
        battery_wh: net energy the battery device reports for the trip (Wh; the drop of its charge level).
        depart_s: the departure time asked for (s since midnight); insert_s: when SUMO inserted the EV.
        arrive_s: the last step the EV was in the network (s); NaN if it never was.
        steps: simulation steps run; wall_s: wall-clock time of the whole trip (start of SUMO to the measured
            energies); extra: its parts (``start_s``: starting SUMO and loading the state, ``step_s``, ``close_s``,
            ``measure_s``: attribution and traversals).
        failure: why the trip failed (empty when it did not).
        arrived: the EV arrived (not teleported, not late): ``battery_wh`` is the whole trip's even when ``failure``
            says that its traversals did not match the route.
    """

    edges: list[str]
    route_energy_wh: np.ndarray
    route_travel_s: np.ndarray
    edge_energy_wh: dict[str, float]
    battery_wh: float
    depart_s: float
    insert_s: float
    arrive_s: float
    steps: int
    wall_s: float
    failure: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    route_reduced_wh: np.ndarray = field(default_factory=lambda: np.zeros(0))
    runout: list[str] = field(default_factory=list)
    arrived: bool = False

    @property
    def ok(self) -> bool:
        """Whether the EV drove the whole route without teleport and every route edge was measured."""
        return not self.failure


class LiveSimulation:
    """The background traffic of one scenario, ready to drive EVs through (see the module docstring).

    Args:
        net_file: SUMO network.
        route_files: background demand (the same files the snapshots were simulated from).
        snapshots: state files (:func:`live_snapshots`) and ``snapshot_times_s`` their times (s).
        vehicle, model: the EV (profile, ``Energy`` / ``MMPEVEM``).
        step_length, seed: SUMO's step (s) and seed (the loaded state's generators replace the seed's).
        max_trip_s: simulated seconds after the departure time by which the EV must have arrived.
        sumo_args: further ``sumo`` options for every trip (e.g. an output file for a test).
        backend: ``"libsumo"`` (SUMO in this process, the default) or ``"traci"`` (a ``sumo`` child process per
            trip, driven over a socket; same API, for the benchmark ``studies/sumo/sumo_live_bench.py``).
    """

    def __init__(
        self,
        net_file: str | os.PathLike[str],
        route_files: Sequence[str | os.PathLike[str]],
        snapshots: Sequence[Path],
        snapshot_times_s: Sequence[float] | np.ndarray,
        *,
        vehicle: VehicleProfile | None = None,
        model: str = "Energy",
        step_length: float = 1.0,
        seed: int = 0,
        max_trip_s: float = 3600.0,
        sumo_args: Sequence[str] = (),
        backend: str = "libsumo",
    ) -> None:
        if len(snapshots) != len(snapshot_times_s) or not snapshots:
            raise ParameterError("one snapshot time per snapshot file, at least one")
        if max_trip_s <= 0:
            raise ParameterError(f"max_trip_s must be > 0, got {max_trip_s}")
        from evroute.network.xmlguard import check_xml_file

        self.net_file = check_xml_file(net_file, "SUMO network file")  # before sumo's Xerces reads it
        self.route_files = [Path(p) for p in route_files]
        self.snapshots = [Path(p) for p in snapshots]
        self.snapshot_times_s = np.asarray(snapshot_times_s, dtype=np.float64)
        self.step_length = float(step_length)
        self.max_trip_s = float(max_trip_s)
        self._tmp = tempfile.TemporaryDirectory(prefix=temp_prefix("evroute-live-"))
        self.vtype_file = write_vtype_file(Path(self._tmp.name) / "ev.add.xml", vehicle, model=model)
        self.charge_wh = battery_params(vehicle or VehicleProfile())[1]  # the EV's initial charge (Wh)
        self.mass_kg = (vehicle or VehicleProfile()).mass_kg
        self.effective_mass_kg = effective_mass_kg(vehicle)
        self._rise = edge_rise_m(self.net_file)
        self._args = [str(sumo_binary("sumo")), *base_args(self.net_file, self.vtype_file, step_length, seed)]
        if self.route_files:
            self._args += ["-r", ",".join(str(p) for p in self.route_files)]
        self._args += list(sumo_args)
        self.graph: LaneGraph = lane_graph(self.net_file)
        self.legal_turns = net_connections(self.net_file)
        self._length, self._speed = edge_lengths_speeds(self.net_file)
        self._preds: dict[str, list[tuple[int, str]]] = {}
        self._succs: dict[str, list[tuple[int, str]]] = {}
        for (a, b), d in connection_directions(self.net_file).items():
            self._preds.setdefault(b, []).append((direction_rank(d), a))
            self._succs.setdefault(a, []).append((direction_rank(d), b))
        if backend not in ("libsumo", "traci"):
            raise ParameterError(f"unknown SUMO backend {backend!r} (use libsumo or traci)")
        self.backend = backend
        if backend == "libsumo":
            self.libsumo = import_libsumo()
        else:
            import traci

            self.libsumo = traci

    def end_edges(self, first: str, last: str) -> tuple[str, str]:
        """The edge a trip comes into ``first`` from and the edge it leaves ``last`` for (SUMO edge ids).

        Among the passenger connections into ``first`` (out of ``last``), the one of the best SUMO direction: straight
        on (``s``), then slight, then full turns, never a U-turn unless it is the only one; ties by edge id.  Entering
        the route straight on, the EV meets the start edge as through traffic does (the energy of an edge depends on
        the speed it is entered and left at: a turn means braking before it and accelerating after it).

        Raises:
            ParameterError: no passenger connection into ``first`` or out of ``last``.
        """
        preds, succs = self._preds.get(first), self._succs.get(last)
        if not preds or not succs:
            which = first if not preds else last
            raise ParameterError(f"edge {which!r} has no passenger connection to extend a live trip")
        return min(preds)[1], min(succs)[1]

    def runout(self, last: str, succ: str, speed_factor: float = 1.0) -> list[str]:
        """Edges driven after ``succ`` so that the traversal of the route's last edge ``last`` is closed.

        That traversal ends at the first step the EV is seen past ``last``.  The EV is seen only at the ends of
        simulation steps, and not at all in the step it arrives in (SUMO removes it at once): a successor shorter
        than one step's distance can be entered and driven to its end within a single step, and ``last`` then never
        gets a complete traversal.  The run-out continues from ``succ`` as :meth:`end_edges` leaves a route
        (straight on first, no edge twice) until ``succ`` and the run-out together are longer than one step's
        distance (``step_length * speed_factor`` times the highest speed limit of ``last``, ``succ`` and the run-out,
        which bounds SUMO's speed there) plus :data:`ARRIVAL_MARGIN_M`: then the first step that ends past ``last``
        ends before the arrival position.  Empty when ``succ`` alone is long enough; shorter where the net ends (a
        dead end, at most :data:`MAX_RUNOUT_EDGES` edges), and then :meth:`drive` says if ``last`` was left open.
        """
        tail, seen = [succ], {last, succ}
        for _ in range(MAX_RUNOUT_EDGES):
            reach = self.step_length * float(speed_factor) * max(self._speed.get(e, 0.0) for e in [last, *tail])
            if sum(self._length.get(e, 0.0) for e in tail) > reach + ARRIVAL_MARGIN_M:
                break
            options = [(rank, b) for rank, b in self._succs.get(tail[-1], []) if b not in seen]
            if not options:
                break
            tail.append(min(options)[1])
            seen.add(tail[-1])
        return tail[1:]

    def close(self) -> None:
        """Remove the trip's temporary files (the simulation itself is closed after every trip)."""
        self._tmp.cleanup()

    def drive(self, edges: Sequence[str], snapshot: int, *, speed_factor: float = 1.0) -> LiveTrip:
        """Drive ``edges`` (``[pred, route..., succ]``, SUMO edge ids, at least 3) from snapshot ``snapshot``.

        The EV departs at the snapshot's time on the first edge (``departPos=base``, ``departSpeed=max``) with the
        given speed factor and arrives at the end of the last one, or of its :meth:`runout` where ``succ`` is too
        short to close the last route edge's traversal.

        Raises:
            SumoError: SUMO fails to start from the snapshot or during the trip (its first error line).
        """
        edges = [str(e) for e in edges]
        if len(edges) < 3:
            raise ParameterError("a live trip drives [pred, route..., succ]: at least 3 edges")
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            if (a, b) not in self.legal_turns:
                raise ParameterError(f"no connection from edge {a!r} to {b!r} in {self.net_file.name}")
        if not 0 <= snapshot < len(self.snapshots):
            raise ParameterError(f"snapshot {snapshot} out of range 0..{len(self.snapshots) - 1}")
        runout = self.runout(edges[-2], edges[-1], speed_factor)
        ls = self.libsumo
        depart = float(self.snapshot_times_s[snapshot])
        wall0 = time.perf_counter()
        try:
            ls.start([*self._args, "--load-state", str(self.snapshots[snapshot]), "-b", f"{depart:g}"])
            wall1 = time.perf_counter()
        except Exception as exc:  # noqa: BLE001 - libsumo.TraCIException / FatalTraCIError
            self._safe_close()
            raise SumoError(
                f"sumo (libsumo) failed to start from {self.snapshots[snapshot].name}: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        times: list[float] = []
        lanes: list[str] = []
        pos: list[float] = []
        speed: list[float] = []
        drawn: list[float] = []
        failure = ""
        insert = np.nan
        steps = 0
        try:
            from traci import constants as tc

            ls.route.add(EV_ROUTE_ID, [*edges, *runout])
            ls.vehicle.add(
                EV_ID,
                EV_ROUTE_ID,
                typeID=DEFAULT_VTYPE,
                depart="now",
                departPos="base",
                departSpeed="max",
                arrivalPos="max",
            )
            ls.vehicle.setSpeedFactor(EV_ID, float(speed_factor))
            deadline = depart + self.max_trip_s
            key = "device.battery.chargeLevel"
            subscribed = False
            while True:
                ls.simulationStep()
                steps += 1
                now = ls.simulation.getTime()
                if EV_ID in ls.simulation.getArrivedIDList():
                    break
                if EV_ID in ls.simulation.getStartingTeleportIDList():
                    failure = f"teleported at {now:g} s"
                    break
                if not subscribed and EV_ID in ls.simulation.getDepartedIDList():
                    ls.vehicle.subscribe(EV_ID, [tc.VAR_LANE_ID, tc.VAR_LANEPOSITION, tc.VAR_SPEED])
                    ls.vehicle.subscribeParameterWithKey(EV_ID, key)
                    subscribed, insert = True, now - self.step_length
                if subscribed:
                    res = ls.vehicle.getSubscriptionResults(EV_ID)
                    times.append(now - self.step_length)  # the step's own time, as in SUMO's outputs
                    lanes.append(res[tc.VAR_LANE_ID])
                    pos.append(float(res[tc.VAR_LANEPOSITION]))
                    speed.append(float(res[tc.VAR_SPEED]))
                    drawn.append(self.charge_wh - float(res[tc.VAR_PARAMETER_WITH_KEY][1]))
                if now >= deadline:
                    failure = (
                        "not inserted" if not subscribed else "not arrived"
                    ) + f" {self.max_trip_s:g} s after departure at {depart:g} s"
                    break
        except Exception as exc:  # noqa: BLE001 - libsumo errors are one-line SUMO messages
            raise SumoError(f"sumo (libsumo) failed during a live trip: {str(exc).splitlines()[0]}") from None
        finally:
            wall2 = time.perf_counter()
            self._safe_close()
        wall3 = time.perf_counter()
        trip = self._trip(
            edges,
            np.asarray(times),
            lanes,
            np.asarray(pos),
            np.asarray(drawn),
            np.asarray(speed),
            depart,
            insert,
            steps,
            time.perf_counter() - wall0,
            failure,
        )
        trip.runout = runout
        trip.extra = {
            "start_s": wall1 - wall0,
            "step_s": wall2 - wall1,
            "close_s": wall3 - wall2,
            "measure_s": time.perf_counter() - wall3,
        }
        trip.wall_s = time.perf_counter() - wall0
        return trip

    def _safe_close(self) -> None:
        try:
            self.libsumo.close()
        except Exception:  # noqa: BLE001 - closing a simulation that did not start
            pass

    def _trip(
        self,
        edges: list[str],
        times: np.ndarray,
        lanes: list[str],
        pos: np.ndarray,
        drawn: np.ndarray,
        speed: np.ndarray,
        depart: float,
        insert: float,
        steps: int,
        wall: float,
        failure: str,
    ) -> LiveTrip:
        arrived = not failure and len(times) > 0  # drive's failures so far: teleported, not inserted, late
        n_route = len(edges) - 2
        energy = np.full(n_route, np.nan)
        travel = np.full(n_route, np.nan)
        reduced = np.full(n_route, np.nan)
        per_edge: dict[str, float] = {}
        battery = float(drawn[-1]) if len(drawn) else 0.0
        if len(times):
            step_wh = np.diff(drawn, prepend=0.0)  # per step; telescopes to the battery's total
            veh = np.full(len(times), EV_ID, dtype=object)
            both = np.column_stack([step_wh, kinetic_steps(times, veh, speed, self.effective_mass_kg)])
            t2, v2, l2, e2 = attribute_steps(times, veh, np.asarray(lanes, dtype=object), pos, both, self.graph)
            e2, k2 = e2[:, 0], e2[:, 1]
            current = edges[0]
            for name, wh in zip(np.asarray(l2).astype(str).tolist(), e2.tolist(), strict=True):
                if not name.startswith(":"):  # a junction's internal lane counts to the edge before it
                    current = name.rsplit("_", 1)[0]
                per_edge[current] = per_edge.get(current, 0.0) + wh
            tr = steps_to_traversals(t2, v2, l2, e2, legal_turns=self.legal_turns, kinetic_wh=k2)
            if not failure:
                failure = route_mismatch(edges[1:-1], tr["edge"].tolist())
                if not failure:  # the route's traversals, then those of succ and the run-out
                    tr, got = tr.iloc[:n_route], edges[1:-1]
                    energy = tr["energy_wh"].to_numpy(dtype=np.float64)
                    travel = tr["travel_s"].to_numpy(dtype=np.float64)
                    rise = np.array([self._rise.get(e, np.nan) for e in got])
                    potential = self.mass_kg * SUMO_GRAVITY_MPS2 * rise / 3600.0
                    reduced = energy - tr["kinetic_wh"].to_numpy(dtype=np.float64) - potential
        elif not failure:
            failure = "the EV never entered the network"
        return LiveTrip(
            edges=edges,
            route_energy_wh=energy,
            route_travel_s=travel,
            edge_energy_wh=per_edge,
            battery_wh=battery,
            depart_s=depart,
            insert_s=float(insert),
            arrive_s=float(times[-1]) if len(times) else float("nan"),
            steps=steps,
            wall_s=wall,
            failure=failure,
            route_reduced_wh=reduced,
            arrived=arrived,
        )


def route_mismatch(route: Sequence[str], got: Sequence[str]) -> str:
    """Why a trip's complete traversals ``got`` (in driving order) do not begin with ``route``; ``""`` when they do.

    The traversals after the route's (of ``succ`` and the run-out) are not checked.  The messages begin with
    ``"traversals do not match the route"`` and name the first route edge without its traversal.
    """
    n = len(route)
    for k, e in enumerate(route):
        if k >= len(got):
            why = (
                "its traversal was not closed: the EV arrived before it was seen past it"
                if k == n - 1
                else f"the trip has {len(got)} complete traversals for the route's {n} edges"
            )
            return f"traversals do not match the route: no complete traversal of its edge {k + 1} of {n} ({e}): {why}"
        if got[k] != e:
            return f"traversals do not match the route: its edge {k + 1} of {n} is {e}, the traversal {got[k]}"
    return ""


__all__ = [
    "ARRIVAL_MARGIN_M",
    "EV_ID",
    "MAX_RUNOUT_EDGES",
    "SPEED_FACTOR",
    "LiveSimulation",
    "LiveTrip",
    "connection_directions",
    "draw_speed_factor",
    "edge_lengths_speeds",
    "live_snapshots",
    "route_mismatch",
]
