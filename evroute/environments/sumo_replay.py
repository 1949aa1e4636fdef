"""Replay environment: the truth is a recorded SUMO day (``--env sumo-replay``).

The day is simulated once and cached (:func:`evroute.sumo.replay.record_day`: background traffic of EVs of the
vehicle profile, SUMO's battery device, probe trips until every edge of the largest SCC has ``min_samples``
traversals).  Then

* energies are *reduced* (:mod:`evroute.sumo.record`, "energy that telescopes"): a traversal's reduced energy is
  its battery energy minus its change of kinetic energy (``1/2 m_eff (v_exit^2 - v_entry^2)``) and of potential
  energy (``m g dz``), the dissipated energy and losses, ``>= 0`` by physics.  What SUMO's discretisation leaves
  below 0 (the potential charged per step with the slope where the step ends, not junction to junction; battery
  resolution) is clipped at 0 traversal by traversal, and :meth:`SumoReplayEnvironment.describe` reports how many
  traversals and how many Wh (``clipped_traversals``, ``clipped_wh``; on the recorded Monaco day of
  ``docs/results/archive/sumo_kinetic.md`` 4 % of the traversals, none on flat Luxembourg): the means of those edges are
  raised by that much, the one departure from "battery energy = reduced energy + potentials".  SUMO's ``MMPEVEM``
  model reports NaN energy for some steps (cause not traced): such traversals are left out and counted
  (``nan_traversals``);
* the true expected energy of edge ``e`` is the mean of its recorded reduced energies (one time-of-day bin: the
  whole simulated window; or per bin, below);
* an observation of ``e`` is one of its recorded reduced energies drawn uniformly at random (the real noise of
  stops, queues and accelerations; edges of one route are drawn independently);
* **time of day** (``bin_hours > 0``): the simulated window is cut into bins of ``bin_hours`` hours by the
  traversals' entry times, and a clock sweeps the window once every ``rounds_per_day`` rounds (round ``t`` is at
  ``hours[0] + ((t - 1) mod rounds_per_day) / rounds_per_day * (hours[1] - hours[0])``, wrapping to the next day);
  the truth of round ``t`` is every edge's mean in the clock's bin and observations are drawn from that bin's
  traversals.  An edge with fewer than ``bin_min_samples`` traversals in a bin uses all its traversals there
  (the whole-window mean; :meth:`SumoReplayEnvironment.describe` counts these cells).  The environment is then
  not static: the regret of a round is against the optimum of its bin;
* an edge no traversal of which was recorded even after the probe rounds (SUMO junction stubs of a few dm that
  vehicles cross within one 1 s step, so no step ends on them; rarely an edge probes cannot complete) takes the
  prior mean as its truth and as every observation; :attr:`SumoReplayEnvironment.eq8_edges` lists them;
* **turn arms** (``--arms turn``, :mod:`evroute.arms`): every traversal knows the edge driven next, so the truth of
  turn arm ``(e, e')`` is the mean reduced energy of the traversals of ``e`` that left into ``e'`` and its
  observations are drawn from them, when at least ``turn_min_samples`` (default 3) were recorded; a turn with fewer
  (never driven, or rarely) falls back to its edge: the edge's mean as truth and the edge's traversals as
  observations, so that it costs what an edge arm costs.  Terminal arms are their edges' (:mod:`evroute.arms`).
  Probe trips ``[pred, e, succ]`` cover edges, one random outgoing turn per trip, not every turn;
  :meth:`SumoReplayEnvironment.turn_coverage` counts the turns below the minimum.  Turn arms need one time-of-day
  bin (``bin_hours=0``);
* the models' prior mean is the same reduced quantity from physics: Eq. 8's energy minus the full potential,
  ``E_det - m g dz / 3600`` (:func:`reduced_prior_wh`), ``>= 0`` on every edge for efficiencies ``<= 1``;
  the prior variance is the paper's ``(outputscale_frac sigma_det)^2``; the noise variance is the measured one, the
  mean over edges of the variance of an edge's reduced energies (with bins: over the (bin, edge) cells with
  traversals of their own).

Route energy.  For a trip from rest to rest over ``start ... goal``, the battery energy is the sum of the reduced
means plus ``m g (z_end(goal) - z_start(start)) / 3600`` (:meth:`SumoReplayEnvironment.route_energy_wh`): the
kinetic terms telescope to 0 and the potential terms to a constant of the origin-destination pair, so regret is
unchanged by the shift, and because every mean is ``>= 0`` the exact optimum
(:meth:`SumoReplayEnvironment.optimal_route`) is one Dijkstra on the means: no negative cycle exists.  Since the
energies are already reduced, the learner must not subtract the elevation potential again: the environment
declares ``reduced_energies = True`` and the experiment runner then uses the potential ``none`` (and says so).

The run seed does not change the day (``demand_seed`` does): every seed of an experiment learns on the same
recorded day, with its own observation draws.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from evroute.arms import ArmSpace
from evroute.energy import VehicleProfile, network_energy_wh
from evroute.environments.base import EnergyEnvironment, config_from_params
from evroute.errors import DataError, ParameterError, check_positive
from evroute.linegraph import LineGraph
from evroute.oracle import Route, RouteOracle, has_negative_cycle, route_cost
from evroute.sumo.replay import DaySpec
from evroute.sumo.vehicle import SUMO_GRAVITY_MPS2


@dataclass(frozen=True)
class SumoReplayConfig(DaySpec):
    """Parameters: the recorded day (the :class:`evroute.sumo.replay.DaySpec` fields) and the models' prior.

    ``outputscale_frac`` sets the models' prior variance ``(outputscale_frac sigma_det)^2``; ``lengthscale``,
    ``graph_nu``, ``graph_kappa`` and ``product_weight`` initialise the GP's kernel (the paper's values).
    ``bin_hours`` (0: one bin, a static environment), ``rounds_per_day`` and ``bin_min_samples`` set the
    time-of-day bins; ``turn_min_samples`` the traversals a turn arm needs for a truth of its own (module doc).
    """

    outputscale_frac: float = 0.25
    lengthscale: float = 1.0
    graph_nu: float = 2.0
    graph_kappa: float = 1.0
    product_weight: float = 0.5
    bin_hours: float = 0.0
    rounds_per_day: int = 500
    bin_min_samples: int = 3
    turn_min_samples: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("outputscale_frac", self.outputscale_frac)
        check_positive("lengthscale", self.lengthscale)
        check_positive("bin_hours", self.bin_hours, allow_zero=True)
        if min(int(self.rounds_per_day), int(self.bin_min_samples), int(self.turn_min_samples)) < 1:
            raise ParameterError("rounds_per_day, bin_min_samples and turn_min_samples must be >= 1")

    @property
    def n_bins(self) -> int:
        """Time-of-day bins of the simulated window (1 when ``bin_hours`` is 0)."""
        span = self.window[1] - self.window[0]
        return 1 if self.bin_hours <= 0 else int(np.ceil(span / self.bin_hours - 1e-9))

    def bin_of_round(self, t: int) -> int:
        """The bin the clock is in at round ``t`` (1-based; the clock sweeps the window every ``rounds_per_day``)."""
        if self.n_bins == 1:
            return 0
        u = ((int(t) - 1) % int(self.rounds_per_day)) / int(self.rounds_per_day)
        return min(int(u * (self.window[1] - self.window[0]) / self.bin_hours), self.n_bins - 1)

    def bin_of_time(self, entry_s: np.ndarray) -> np.ndarray:
        """``(N,)`` bin of each traversal's entry time (s of the day; before/after the window: first/last bin)."""
        if self.n_bins == 1:
            return np.zeros(len(entry_s), dtype=np.int64)
        b = np.floor((np.asarray(entry_s, dtype=np.float64) / 3600.0 - self.window[0]) / self.bin_hours)
        return np.clip(b, 0, self.n_bins - 1).astype(np.int64)

    def day_spec(self) -> DaySpec:
        """The recorded day alone (what the SUMO cache is keyed on)."""
        return DaySpec(**{f.name: getattr(self, f.name) for f in fields(DaySpec)})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hours"] = list(self.window)
        return d


class SumoReplayEnvironment(EnergyEnvironment):
    """Environment replaying recorded SUMO traversals, static or by time of day (see the module docstring).

    Attributes (besides the base class's):
        counts: ``(E,)`` recorded traversals per edge (whole window).
        samples_wh, offsets: the whole window's traversals of edge ``e``: ``samples_wh[offsets[e]:offsets[e + 1]]``.
        bin_means: ``(B, E)`` true mean per time-of-day bin (Wh); ``B = 1`` without bins.
        starts, cell_counts: ``(B, E)`` where each (bin, edge)'s traversals lie in ``samples_wh`` and how many.
        day_mean_wh: ``(E,)`` whole-window mean (Wh); own_cells: ``(B, E)`` cells with enough traversals of their own.
        bin: the clock's current bin; fallback_cells: (bin, edge) cells using the whole window's traversals.
        potential_wh: ``(E,)`` potential energy difference ``m g dz / 3600`` of each edge (Wh), the shift between
            reduced and battery energy (telescopes along a route).
        clipped_traversals, clipped_wh: recorded reduced energies below 0 clipped to 0, and their total (Wh, <= 0).
        nan_traversals: recorded traversals without a finite energy, left out (MMPEVEM, module doc).
        meta: the recorded day's metadata (samples, probes, edges short of samples).
    """

    name = "sumo-replay"
    #: the truth and the observations are reduced energies (kinetic and potential energy taken out): the learner
    #: must not subtract a potential again (:func:`evroute.experiments.runner.bandit_potential`)
    reduced_energies = True

    def __init__(
        self,
        linegraph: LineGraph,
        prior_mean_wh: np.ndarray,
        edge: np.ndarray,
        reduced_wh: np.ndarray,
        prior_var: float,
        config: SumoReplayConfig,
        potential_wh: np.ndarray,
        meta: dict[str, Any] | None = None,
        entry_s: np.ndarray | None = None,
        next_edge: np.ndarray | None = None,
    ) -> None:
        n = linegraph.n_nodes
        edge = np.asarray(edge, dtype=np.int64)
        raw = np.asarray(reduced_wh, dtype=np.float64)
        finite = np.isfinite(raw)  # MMPEVEM: NaN energy for steps outside its motor map (module doc)
        self.nan_traversals = int((~finite).sum())
        if not finite.all():
            edge, raw = edge[finite], raw[finite]
            entry_s = None if entry_s is None else np.asarray(entry_s)[finite]
            next_edge = None if next_edge is None else np.asarray(next_edge)[finite]
        below = raw < 0  # SUMO's discretisation (module doc): clipped, counted
        self.clipped_traversals, self.clipped_wh = int(below.sum()), float(raw[below].sum())
        energy_wh = np.maximum(raw, 0.0)
        #: whether the traversals' next edges are known (turn arms have truths of their own)
        self.turn_term = next_edge is not None
        self._traversals = (edge, None if next_edge is None else np.asarray(next_edge, dtype=np.int64), energy_wh)
        self._turn_cache: tuple[int, tuple[np.ndarray, ...]] | None = None
        prior_mean_wh = np.asarray(prior_mean_wh, dtype=np.float64)
        if len(edge) == 0:
            raise DataError("the recorded SUMO day holds no EV traversal of the network's largest SCC")
        if config.n_bins > 1 and (entry_s is None or len(entry_s) != len(edge)):
            raise DataError("time-of-day bins need the entry time of every traversal")
        # edges no probe could complete (sub-metre junction stubs SUMO crosses within one step, lanes probes cannot
        # use): their truth and every observation are the prior's (Eq. 8, reduced), in ``eq8_edges`` and describe()
        self.eq8_edges = np.flatnonzero(np.bincount(edge, minlength=n) == 0)
        all_edge = np.concatenate([edge, self.eq8_edges])
        all_energy = np.concatenate([energy_wh, prior_mean_wh[self.eq8_edges]])
        order = np.argsort(all_edge, kind="stable")
        pooled = all_energy[order]  # the whole window's traversals, grouped by edge
        self.counts = np.bincount(all_edge, minlength=n)
        self.offsets = offsets = np.concatenate([[0], np.cumsum(self.counts)])
        mean = np.add.reduceat(pooled, offsets[:-1]) / self.counts
        sq = np.add.reduceat((pooled - np.repeat(mean, self.counts)) ** 2, offsets[:-1])
        var = np.where(self.counts > 1, sq / np.maximum(self.counts - 1, 1), 0.0)
        n_bins = config.n_bins
        if n_bins == 1:
            self.samples_wh = pooled
            self.starts, self.cell_counts, self.bin_means = offsets[None, :-1], self.counts[None], mean[None]
            cell_var, own = var[None], np.ones((1, n), dtype=bool)
        else:  # cells (bin, edge) after the pooled block; sparse cells point at the edge's pooled traversals
            assert entry_s is not None  # checked above: bins need the entry times
            key = config.bin_of_time(entry_s) * n + edge
            cell_n = np.bincount(key, minlength=n_bins * n).reshape(n_bins, n)
            cell_start = len(pooled) + np.concatenate([[0], np.cumsum(cell_n.ravel())[:-1]]).reshape(n_bins, n)
            own = cell_n >= int(config.bin_min_samples)
            self.samples_wh = np.concatenate([pooled, energy_wh[np.argsort(key, kind="stable")]])
            self.starts = np.where(own, cell_start, offsets[None, :-1])
            self.cell_counts = np.where(own, cell_n, self.counts[None])
            cell_sum = np.bincount(key, weights=energy_wh, minlength=n_bins * n).reshape(n_bins, n)
            cell_mean = cell_sum / np.maximum(cell_n, 1)
            self.bin_means = np.where(own, cell_mean, mean[None])
            cell_sq = np.bincount(key, weights=(energy_wh - cell_mean.ravel()[key]) ** 2, minlength=n_bins * n).reshape(
                n_bins, n
            )
            cell_var = np.where(cell_n > 1, cell_sq / np.maximum(cell_n - 1, 1), 0.0)
        has_var = own & (self.cell_counts > 1) if n_bins > 1 else self.counts[None] > 1
        noise_var = float(cell_var[has_var].mean()) if np.any(has_var) else float(prior_var)
        # (edges with one traversal, including the Eq. 8 ones, have no variance and do not enter the mean)
        super().__init__(linegraph, prior_mean_wh, self.bin_means[0], prior_var, noise_var, config)
        self.static = n_bins == 1
        self.bin = 0  # the clock's bin (round 1 is at the window's start)
        self.own_cells, self.day_mean_wh = own, mean
        self.fallback_cells = int((~own).sum())
        self.edge_var_wh2 = var
        self.potential_wh = np.asarray(potential_wh, dtype=np.float64)
        self.meta = dict(meta or {})
        self._oracle = RouteOracle(linegraph)

    def observe(self, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One recorded reduced energy (Wh) of each driven edge, drawn uniformly among that edge's traversals (in
        the clock's bin)."""
        e = np.asarray(edges, dtype=np.int64)
        k = (rng.random(len(e)) * self.cell_counts[self.bin, e]).astype(np.int64)
        return self.samples_wh[self.starts[self.bin, e] + k]

    def advance(self, t: float) -> bool:
        """Move the clock to round ``t``; returns whether the bin (and so the truth) changed."""
        b = self.config.bin_of_round(int(t))
        if b == self.bin:
            return False
        self.bin = b
        self.true_mean_wh = self.bin_means[b]
        return True

    # ------------------------------------------------------------------ turn arms (module doc)
    def _turn_cells(self, arms: ArmSpace) -> tuple[np.ndarray, ...]:
        """``(truth (A,), own (C,), samples, starts (C,), counts (C,))`` of turn ``arms`` (cached per arm count)."""
        if self._turn_cache is not None and self._turn_cache[0] == arms.n_arms:
            return self._turn_cache[1]
        if self.config.n_bins > 1:
            raise ParameterError("turn arms on sumo-replay need one time-of-day bin (bin_hours=0)")
        edge, nxt, energy = self._traversals
        if nxt is None:
            raise DataError("the recorded day has no next edge per traversal (recorded before attribution version 4)")
        ok = nxt >= 0  # the next edge lies in the largest SCC
        arm = arms.turn_index(edge[ok], nxt[ok])
        c = arms.n_turns
        counts = np.bincount(arm, minlength=c)
        own = counts >= int(self.config.turn_min_samples)
        order = np.argsort(arm, kind="stable")
        samples = energy[ok][order]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        truth = arms.lift(self.true_mean_wh).copy()
        sums = np.bincount(arm, weights=energy[ok], minlength=c)
        truth[:c][own] = sums[own] / counts[own]
        cells = (truth, own, samples, starts, counts)
        self._turn_cache = (arms.n_arms, cells)
        return cells

    def arm_truth(self, arms: ArmSpace) -> np.ndarray:
        """``(A,)`` true means (Wh): a turn arm's own mean with ``turn_min_samples`` traversals, else its edge's."""
        if arms.kind == "edge" or not self.turn_term:
            return super().arm_truth(arms)
        return self._turn_cells(arms)[0]

    def observe_arms(self, arms: ArmSpace, played: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One recorded reduced energy (Wh) per played arm: drawn among the turn's own traversals, or (too few of
        them, a terminal arm) among its edge's, as :meth:`observe` draws."""
        if arms.kind == "edge" or not self.turn_term:
            return super().observe_arms(arms, played, rng)
        _, own, samples, starts, counts = self._turn_cells(arms)
        a = np.asarray(played, dtype=np.int64)
        e = arms.tail[a]
        u = rng.random(len(a))
        out = self.samples_wh[self.starts[self.bin, e] + (u * self.cell_counts[self.bin, e]).astype(np.int64)]
        turn = a < arms.n_turns
        mine = np.zeros(len(a), dtype=bool)
        mine[turn] = own[a[turn]]
        am = a[mine]
        out[mine] = samples[starts[am] + (u[mine] * counts[am]).astype(np.int64)]
        return out

    def turn_counts(self, arms: ArmSpace) -> np.ndarray:
        """``(C,)`` recorded traversals of every turn arm (those of ``e`` that left into ``e'``)."""
        return self._turn_cells(arms)[4]

    def turn_coverage(self, arms: ArmSpace) -> dict[str, int]:
        """Recorded traversals per turn arm: turns with at least ``turn_min_samples`` (own truth), with fewer but
        some, never driven, and the probe trips ``[pred, e, e']`` that would bring every turn to the minimum."""
        _, own, _, _, counts = self._turn_cells(arms)
        need = np.maximum(int(self.config.turn_min_samples) - counts, 0)
        return {
            "turns": int(arms.n_turns),
            "turns_with_min_samples": int(own.sum()),
            "turns_below_min": int(((counts > 0) & ~own).sum()),
            "turns_never_driven": int((counts == 0).sum()),
            "probe_trips_to_cover": int(need.sum()),
        }

    def reduced_costs(self) -> np.ndarray:
        """``(E,)`` the true means (Wh): already reduced energies, ``>= 0``."""
        return self.true_mean_wh

    def route_energy_wh(self, edges: np.ndarray) -> float:
        """Expected battery energy (Wh) of a rest-to-rest trip over ``edges``: the sum of the reduced means plus the
        potential energy ``m g (z_end - z_start) / 3600`` (the kinetic terms telescope to 0)."""
        e = np.asarray(edges, dtype=np.int64)
        return float(self.true_mean_wh[e].sum() + self.potential_wh[e].sum())

    def optimal_route(self, start: int, goal: int) -> Route:
        """Exact minimum-energy route: Dijkstra on the (non-negative) reduced means; its cost is their sum."""
        route = self._oracle.shortest_route(self.true_mean_wh, start, goal)
        return Route(route.edges, route_cost(self.true_mean_wh, route.edges), "dijkstra")

    def describe(self) -> dict[str, Any]:
        r = self.reduced_costs()
        neg = int((r < 0).sum())
        return {
            "name": self.name,
            **self.config.to_dict(),
            "energies": "reduced: battery minus kinetic and potential energy change, clipped at 0",
            "noise_var_wh2": self.noise_var,
            "clipped_traversals": self.clipped_traversals,
            "clipped_wh": self.clipped_wh,
            "nan_traversals": self.nan_traversals,
            "negative_reduced_costs": neg,
            "eq8_edges": self.linegraph.network.edge_ids[self.eq8_edges].tolist(),
            "negative_cycle_reachable": bool(neg and has_negative_cycle(self.linegraph, r, 0)),
            "bins": int(self.config.n_bins),
            "bin_fallback_cells": self.fallback_cells,
            "day": self.meta,
        }


def full_potential_wh(network: Any, vehicle: VehicleProfile, gravity_mps2: float) -> np.ndarray:
    """``(E,)`` potential energy difference ``m g (z_to - z_from) / 3600`` of every edge (Wh): no efficiency."""
    return vehicle.mass_kg * gravity_mps2 * (network.z_to_m - network.z_from_m) / 3600.0


def reduced_prior_wh(network: Any, vehicle: VehicleProfile) -> np.ndarray:
    """``(E,)`` Eq. 8's energy minus the full potential ``m g dz / 3600`` (Wh), the prior of a reduced energy.

    Non-negative for efficiencies ``<= 1``: uphill or with ``E_mech >= 0``, ``E = E_mech / eta+ >= E_mech >= m g dz``
    (the resistances are ``>= 0``); downhill with recuperation, ``E - m g dz = (1 - eta-) m g |dz| + eta- R >= 0``.
    Uses the profile's own ``g`` (Eq. 8's), where the recording uses SUMO's 9.81 m/s^2.
    """
    return network_energy_wh(network, vehicle) - full_potential_wh(network, vehicle, vehicle.gravity_mps2)


def parse_params(params: dict[str, Any]) -> SumoReplayConfig:
    """:class:`SumoReplayConfig` from an experiment's ``environment`` dict (:class:`ParameterError` if invalid)."""
    return config_from_params(SumoReplayConfig, params, "sumo-replay")


def prepare(linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None) -> None:
    """Registry hook run before a run writes anything: a SUMO network, SUMO itself, and the recorded day (cached)."""
    from evroute.sumo.binaries import sumo_binary
    from evroute.sumo.replay import record_day, sumo_net_file

    cfg = parse_params(params)
    sumo_net_file(linegraph)
    sumo_binary("sumo")
    record_day(linegraph, cfg.day_spec(), vehicle=vehicle or VehicleProfile())


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> SumoReplayEnvironment:
    """Registry entry: record (or load the cached) SUMO day and replay it; ``seed`` is not used (see module doc)."""
    from evroute.sumo.replay import record_day

    cfg = parse_params(params)
    v = vehicle or VehicleProfile()
    data, meta = record_day(linegraph, cfg.day_spec(), vehicle=v)
    net = linegraph.network
    e_det = network_energy_wh(net, v)
    prior_var = cfg.outputscale_frac**2 * float(e_det.var())
    return SumoReplayEnvironment(
        linegraph,
        reduced_prior_wh(net, v),
        data["edge"].to_numpy(),
        data["reduced_wh"].to_numpy(),
        prior_var,
        cfg,
        full_potential_wh(net, v, SUMO_GRAVITY_MPS2),
        meta,
        data["entry_s"].to_numpy(),
        data["next_edge"].to_numpy() if "next_edge" in data else None,
    )


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = SumoReplayConfig
