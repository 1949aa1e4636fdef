"""The combinatorial semi-bandit loop (Algorithm 1 of the reference paper).

Each round ``t``: the edge model's posterior -> index policy weights (Algorithm 2) -> shortest route
(oracle) -> drive it and observe every edge's noisy energy (semi-bandit feedback) -> batch update.
Regret is measured against the exact minimum expected-energy route of the environment
(:meth:`~evroute.environments.EnergyEnvironment.optimal_route`); in a drifting environment
(:mod:`evroute.environments.drifting`) that route is recomputed every round in which the truth changed.
The arms are road edges (the paper's) or turns (``--arms turn``, :mod:`evroute.arms`): the model then holds one
posterior per turn and terminal arm, the oracle is Dijkstra with arc weights, and a route's feedback is one energy per
arm it played.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.arms import ArmSpace, make_arms
from evroute.environments import EnergyEnvironment
from evroute.models.base import EdgeModel
from evroute.oracle import Route, optimal_route
from evroute.policies.index import IndexPolicy, ThompsonSampling


@dataclass(frozen=True)
class RoundRecord:
    """What happened in one round.  Energies in Wh, times in ms."""

    round: int
    route: str  # space-separated edge ids of the driven route
    route_edges: int
    route_length_m: float
    observed_wh: float
    expected_wh: float
    optimal_wh: float
    regret_wh: float
    cumulative_regret_wh: float
    beta: float
    posterior_ms: float
    index_ms: float
    oracle_ms: float
    update_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RouteLearner:
    """Shared bookkeeping of route learners: round counter, regret against ``optimal``, records, ``run``.

    Subclasses set ``env``, ``optimal``, ``start``, ``goal``, ``regret_reference``, ``potential_wh``, ``t = 0`` and
    ``cumulative_regret = 0.0``, call :meth:`_advance_environment` at the start and :meth:`_record` at the end of each
    ``step``.
    """

    env: EnergyEnvironment
    optimal: Route
    start: int
    goal: int
    regret_reference: str
    potential_wh: np.ndarray | None
    t: int
    cumulative_regret: float
    #: the arms routes are scored by (:mod:`evroute.arms`); ``None``: edge arms
    arms: ArmSpace | None = None

    def step(self) -> RoundRecord:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, horizon: int) -> list[RoundRecord]:
        """Play ``horizon`` rounds."""
        return [self.step() for _ in range(horizon)]

    def _advance_environment(self, t: int) -> None:
        """Move the environment's clock to round ``t``; a changed truth moves the regret reference with it."""
        if self.env.advance(t):  # drifting truth / time-of-day bins: regret against the current optimum
            self.optimal = regret_reference_route(
                self.env, self.start, self.goal, self.regret_reference, self.potential_wh, self.arms
            )

    def _record(
        self,
        edges: np.ndarray,
        observed: np.ndarray,
        beta: float,
        *,
        posterior_ms: float = 0.0,
        index_ms: float = 0.0,
        oracle_ms: float = 0.0,
        update_ms: float = 0.0,
    ) -> RoundRecord:
        """Close round ``t + 1`` after driving ``edges`` and observing ``observed`` (Wh per edge)."""
        expected = self.env.expected_energy(edges) if self.arms is None else self.env.route_truth(self.arms, edges)
        regret = expected - self.optimal.cost
        self.cumulative_regret += regret
        self.t += 1
        net = self.env.linegraph.network
        return RoundRecord(
            round=self.t,
            route=" ".join(net.edge_ids[edges].tolist()),
            route_edges=len(edges),
            route_length_m=float(net.length_m[edges].sum()),
            observed_wh=float(observed.sum()),
            expected_wh=expected,
            optimal_wh=self.optimal.cost,
            regret_wh=regret,
            cumulative_regret_wh=self.cumulative_regret,
            beta=float(beta),
            posterior_ms=posterior_ms,
            index_ms=index_ms,
            oracle_ms=oracle_ms,
            update_ms=update_ms,
        )


class RoutingBandit(RouteLearner):
    """Learns the minimum-energy route from ``start`` to ``goal`` (line-graph node indices).

    Args:
        env: the simulated environment (true energies and feedback).
        model: edge model (prior mean = the physics energy model).
        policy: index policy (UCB, BUCB, TS, greedy).
        start, goal: start and goal edge indices in ``env.linegraph``.
        seed: seeds the policy's and the feedback noise's random streams (independent streams).
        optimal: the regret reference route if already known (else computed from ``env``).
        regret_reference: ``"auto"``: the environment's exact optimum
            (:meth:`~evroute.environments.EnergyEnvironment.optimal_route`: one Dijkstra on reduced costs in the
            consistent environment, Johnson in the paper's when no negative-energy cycle is reachable), else the
            best simple route if the integer program certifies it within :data:`EXACT_TRY_CUT_ROUNDS` cut rounds of at
            most :data:`EXACT_TRY_NODES` nodes, else the best route
            known (:func:`evroute.oracle.best_known_route`; the runner also lowers it to any cheaper route
            the run drove, :func:`rebase_regret`); ``"exact"``: always the exact best simple route (integer
            program when negative cycles are reachable: may be slow); ``"rectified"``: always the
            perfect-knowledge rectified route.  ``optimal.method`` says which one was used.
        potential_wh: optional ``(E,)`` potential subtracted from the estimates before rectification
            (see :meth:`evroute.policies.IndexPolicy.weights`); ``None`` is the paper's Algorithm 2.
        arms: the bandit's arms (:func:`evroute.arms.make_arms`): ``None`` or edge arms (the paper's), or turn arms;
            the model then has one arm per turn and per terminal arm, the oracle is Dijkstra with arc weights, and
            the potential is charged to each arm's edge.
        lazy_ts: Thompson rounds by the compiled bidirectional search that draws an edge's sample only when it
            touches it (:class:`evroute.search.LazyThompsonEngine`; exact, another random stream than the full
            draw).  ``None`` (default): when the model is BI (:class:`~evroute.models.bi.BayesianEdgeModel`), the
            policy plain Thompson sampling, the arms edges, numba installed, the network has at least
            :data:`LAZY_TS_MIN_ARMS` edges (so that the smaller studies keep their random streams bit for bit) and
            the route's ends are close enough that the two searches are expected to settle at most
            :data:`LAZY_TS_EXPECTED_SHARE` of the nodes (:func:`evroute.search.bidirectional_share`; otherwise the
            engine is never built and numba never imported); and until a round's search would settle more than
            :data:`LAZY_TS_MAX_SHARE` of them (then that round and the rest draw every edge).  ``True``: always,
            whenever the model, policy and arms allow it (else :class:`ParameterError`); ``False``: never.  Unless
            ``False``, rounds that draw every edge on networks of at least :data:`LAZY_TS_MIN_ARMS` edge arms find
            their route by the compiled bucket search (:func:`evroute.search.node_weighted_route`: SciPy's route and
            cost, faster), and with a BI model and plain Thompson sampling compute the posterior, the draw (the same
            normals from the policy's stream) and the weights compiled too and search the junction graph
            (:class:`evroute.search.full_draw.FullDrawThompson`: the same route cost, bit for bit); ``False`` keeps
            NumPy's weights and SciPy's Dijkstra (the reference).
    """

    arms: ArmSpace  # never None here: edge arms by default

    def __init__(
        self,
        env: EnergyEnvironment,
        model: EdgeModel,
        policy: IndexPolicy,
        start: int,
        goal: int,
        *,
        seed: int = 0,
        optimal: Route | None = None,
        regret_reference: str = "auto",
        potential_wh: np.ndarray | None = None,
        arms: ArmSpace | None = None,
        lazy_ts: bool | None = None,
    ) -> None:
        self.env = env
        self.model = model
        self.policy = policy
        self.start, self.goal = int(start), int(goal)
        self.arms = make_arms(env.linegraph) if arms is None else arms
        self.oracle = self.arms.oracle
        if model.n_edges != self.arms.n_arms:
            from evroute.errors import ParameterError

            raise ParameterError(
                f"the model has {model.n_edges} arms, the {self.arms.kind} arms are {self.arms.n_arms}"
            )
        policy_ss, noise_ss = np.random.SeedSequence(seed).spawn(2)
        self.rng_policy = np.random.default_rng(policy_ss)
        self.rng_noise = np.random.default_rng(noise_ss)
        self.potential_wh = None if potential_wh is None else np.asarray(potential_wh, dtype=np.float64)
        self.regret_reference = regret_reference
        self.optimal = optimal or regret_reference_route(
            env, self.start, self.goal, regret_reference, self.potential_wh, self.arms
        )
        self._arm_potential = None if self.potential_wh is None else self.arms.lift(self.potential_wh)
        self.t = 0
        self.cumulative_regret = 0.0
        self._lazy = _lazy_engine(self, lazy_ts)
        self._lazy_auto = lazy_ts is None
        self._lazy_built = self._lazy is not None
        self._compiled_oracle = lazy_ts is not False and _compiled_oracle_fits(self)
        self._full_draw = _full_draw_engine(self) if self._compiled_oracle else None

    def step(self) -> RoundRecord:
        """Play one round and return its record."""
        t = self.t + 1
        self._advance_environment(t)
        self.model.advance(t)
        c0 = time.perf_counter()
        route = None
        if self._lazy is not None:  # posterior, draws and weights inside the search, for the edges it touches
            key = ThompsonSampling.round_key(self.rng_policy)
            c1 = c2 = time.perf_counter()
            state = self.model.conjugate_state()  # type: ignore[attr-defined]  # checked by _lazy_engine
            cap = int(LAZY_TS_MAX_SHARE * self.arms.n_arms) if self._lazy_auto else None
            route = self._lazy.route(state, key, self.start, self.goal, self._arm_potential, max_settled=cap)
            if route is None:  # the two searches cover most of the graph: the full draw is cheaper, from now on
                self._lazy = None
        if route is None and self._full_draw is not None:  # the same draws, posterior to route in compiled passes
            z = self.rng_policy.standard_normal(self.arms.n_arms)  # ThompsonSampling.estimates's very numbers
            c1 = c2 = time.perf_counter()
            state = self.model.conjugate_state()  # type: ignore[attr-defined]  # checked by _full_draw_engine
            route = self._full_draw.route(state, z, self.start, self.goal, self._arm_potential)
        if route is None:
            post = self.model.posterior()
            c1 = time.perf_counter()
            w = self.policy.weights(post, t, self.rng_policy, self._arm_potential)
            c2 = time.perf_counter()
            if self._compiled_oracle:  # the same route, by the compiled bucket search (LAZY_TS_MIN_ARMS)
                from evroute.search import node_weighted_route

                route = node_weighted_route(self.env.linegraph, w, self.start, self.goal)
            else:
                route = self.arms.shortest_route(w, self.start, self.goal)
        c3 = time.perf_counter()
        played = self.arms.route_arms(route.edges)
        y = self.env.observe_arms(self.arms, played, self.rng_noise)
        c4 = time.perf_counter()
        self.model.update(played, y)
        c5 = time.perf_counter()
        return self._record(
            route.edges,
            y,
            self.policy.beta(t, self.arms.n_arms),
            posterior_ms=1e3 * (c1 - c0),
            index_ms=1e3 * (c2 - c1),
            oracle_ms=1e3 * (c3 - c2),
            update_ms=1e3 * (c5 - c4),
        )

    # ------------------------------------------------------------ checkpointing
    def state(self) -> dict[str, Any]:
        """Everything needed to continue exactly where the bandit is (model, policy, RNG states, round)."""
        out = {
            "t": self.t,
            "cumulative_regret": self.cumulative_regret,
            "model": self.model,
            "policy": self.policy,
            "rng_policy": self.rng_policy.bit_generator.state,
            "rng_noise": self.rng_noise.bit_generator.state,
        }
        if self._lazy_built:  # whether the run still searches lazily (only where it can: older snapshots stay valid)
            out["lazy_ts"] = self._lazy is not None
        return out

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state` snapshot."""
        self.t = int(state["t"])
        self.cumulative_regret = float(state["cumulative_regret"])
        self.model = state["model"]
        self.policy = state["policy"]
        self.rng_policy.bit_generator.state = state["rng_policy"]
        self.rng_noise.bit_generator.state = state["rng_noise"]
        if not state.get("lazy_ts", True):  # the run had left the lazy search
            self._lazy = None


#: Networks with at least this many edges run BI Thompson rounds by the lazy compiled search by default
#: (:class:`RoutingBandit`'s ``lazy_ts``); every committed study's network is smaller, so their routes and random
#: streams are those of the full draw.
LAZY_TS_MIN_ARMS = 200_000

#: By default a lazy search that settles more than this share of the nodes gives up; that round and every later one
#: of the run then draw every edge.  At a million edges the lazy search costs about 3.6 ms per 1% of the nodes it
#: settles (random trips on an idle core: 7.1 ms at 2.0%, 45 ms at 12%, 156 ms at 44%), a round that draws every edge
#: 23-47 ms on the same trips (its search, on the junction graph, stops at the goal; 48 ms on the cross-city route A),
#: side by side in ``docs/scale_rounds.md``: the break-even is near 6%, and below 5% the lazy search wins on every
#: measured trip.  Cross-city routes end up drawing every edge (the benchmark's route A: the two searches meet after
#: settling 82% of the nodes at 100k edges, 87% at 1M); random trips at 1M settle 10% (median).
LAZY_TS_MAX_SHARE = 0.05

#: By default the lazy engine is built only when the geometric estimate of the share of nodes the two searches settle
#: (:func:`evroute.search.bidirectional_share`) is at most this: the break-even of :data:`LAZY_TS_MAX_SHARE`, judged
#: before any search, so that a cross-city run never pays for importing numba's bidirectional search and a capped
#: first attempt (about 1.6 s of the warm set-up at a million edges, ``docs/benchmark_scale.md``).
LAZY_TS_EXPECTED_SHARE = 0.05


def _compiled_oracle_fits(bandit: RoutingBandit) -> bool:
    """Whether the full-draw rounds of ``bandit`` search by :func:`evroute.search.node_weighted_route` (the SciPy
    oracle's route and cost, about 1.5-2 times faster at a million edges: ``docs/scale_rounds.md``): edge arms, at
    least :data:`LAZY_TS_MIN_ARMS` of them (smaller studies keep SciPy's search, ties and all) and numba installed."""
    from evroute.search import numba_available

    return bandit.arms.kind == "edge" and bandit.arms.n_arms >= LAZY_TS_MIN_ARMS and numba_available()


def _full_draw_engine(bandit: RoutingBandit) -> Any:
    """The :class:`~evroute.search.full_draw.FullDrawThompson` of ``bandit``'s rounds that draw every edge when its
    full-draw rounds search compiled (:func:`_compiled_oracle_fits`), the policy is plain Thompson sampling and the
    model a BI model (``conjugate_state``); else ``None`` (posterior, policy weights and route as separate steps).
    The same normals from the policy's stream, the same route: the weights agree to the rectified mean's precision
    (``evroute.search.full_draw``), the route searched on the junction graph (``evroute.search.junction``): a round
    on the benchmark's route A at a million edges takes about 48 ms of CPU on an idle core against 105 ms with the
    line graph's compiled search (``docs/benchmark_scale.md``)."""
    if type(bandit.policy) is not ThompsonSampling or not callable(getattr(bandit.model, "conjugate_state", None)):
        return None
    from evroute.search.full_draw import FullDrawThompson

    return FullDrawThompson(bandit.env.linegraph)


def _lazy_engine(bandit: RoutingBandit, lazy_ts: bool | None) -> Any:
    """The :class:`~evroute.search.LazyThompsonEngine` of ``bandit``'s rounds, or ``None`` (``lazy_ts`` of
    :class:`RoutingBandit`)."""
    from evroute.errors import ParameterError
    from evroute.search import LazyThompsonEngine, bidirectional_share, numba_available

    if lazy_ts is False:
        return None
    fits = (
        type(bandit.policy) is ThompsonSampling
        and bandit.arms.kind == "edge"
        and callable(getattr(bandit.model, "conjugate_state", None))
        and numba_available()
    )
    if lazy_ts is None:  # by default only where the two searches are expected to stay small (no numba import else)
        lg = bandit.env.linegraph
        wins = (
            fits
            and bandit.arms.n_arms >= LAZY_TS_MIN_ARMS
            and bidirectional_share(lg, bandit.start, bandit.goal) <= LAZY_TS_EXPECTED_SHARE
        )
        return LazyThompsonEngine(lg) if wins else None
    if not fits:
        raise ParameterError(
            "lazy Thompson rounds need plain Thompson sampling, a BI model, edge arms and numba installed"
        )
    return LazyThompsonEngine(bandit.env.linegraph)


#: Deterministic budget of the integer program that tries to certify the best simple route before the best known
#: route is used: cycle-elimination rounds, and branch-and-bound nodes per solve.  Work budgets, not seconds, so that
#: the regret reference (and every regret number) is the same on any machine and under any load.  On the paper's
#: environment, where it never certifies, giving up cost 37 s of CPU on Monaco A and 76 s on Luxembourg A.
EXACT_TRY_CUT_ROUNDS = 20
EXACT_TRY_NODES = 50


def rebase_regret(rows: list[dict[str, Any]], reference: Route) -> tuple[list[dict[str, Any]], float, float]:
    """Lower a non-exact regret reference to the cheapest route the run drove (static environments).

    ``rows`` are the run's round records (dicts with ``expected_wh``); when one of them is cheaper than
    ``reference.cost``, every row's ``optimal_wh``, ``regret_wh`` and ``cumulative_regret_wh`` is recomputed against
    it.  Returns the rows, the reference energy (Wh) and the final cumulative regret (Wh).  An exact reference is
    returned unchanged (no simple route is cheaper).
    """
    ref = float(reference.cost)
    if not reference.exact and rows:
        ref = min(ref, min(float(r["expected_wh"]) for r in rows))
    cum = 0.0
    out = []
    for r in rows:
        regret = float(r["expected_wh"]) - ref
        cum += regret
        out.append({**r, "optimal_wh": ref, "regret_wh": regret, "cumulative_regret_wh": cum})
    return out, ref, cum


def regret_reference_route(
    env: EnergyEnvironment,
    start: int,
    goal: int,
    reference: str = "auto",
    potential_wh: np.ndarray | None = None,
    arms: ArmSpace | None = None,
) -> Route:
    """The route regret is measured against (see :class:`RoutingBandit`); ``potential_wh`` as the oracle's.

    Turn ``arms`` in an environment with a turn term (``env.turn_term``): the exact optimum under the arms' truths
    (:meth:`~evroute.environments.EnergyEnvironment.optimal_route_arms`; such environments have non-negative truths);
    without a turn term turn arms cost every route what edge arms do, and the edge reference below applies.
    """
    from evroute.errors import ParameterError
    from evroute.oracle import best_known_route, rectified_reference_route

    if arms is not None and arms.kind != "edge" and env.turn_term:
        return env.optimal_route_arms(arms, start, goal)
    if reference == "rectified":
        return rectified_reference_route(env.linegraph, env.true_mean_wh, env.noise_var, start, goal, potential_wh)
    if reference not in ("auto", "exact"):
        raise ParameterError(f"regret_reference must be auto, exact or rectified, got {reference!r}")
    if reference == "exact":
        return optimal_route(env.linegraph, env.true_mean_wh, start, goal, on_negative_cycle="exact")
    from evroute.errors import NegativeCycleError

    try:
        return env.optimal_route(start, goal)
    except NegativeCycleError:
        pass

    def search() -> Route:
        try:  # negative cycles: the exact best simple route when the integer program certifies it quickly
            return optimal_route(
                env.linegraph,
                env.true_mean_wh,
                start,
                goal,
                on_negative_cycle="exact",
                max_cut_rounds=EXACT_TRY_CUT_ROUNDS,
                node_limit=EXACT_TRY_NODES,
                time_limit_s=math.inf,
            )
        except NegativeCycleError:
            return best_known_route(env.linegraph, env.true_mean_wh, env.noise_var, start, goal, potential_wh)

    if not env.static:  # a drifting truth: a new search every round it changes, nothing worth keeping
        return search()
    return _cached_search(env, start, goal, potential_wh, search)


#: Version of the negative-cycle reference search (integer program, then best known route); part of its cache key:
#: bump it whenever :func:`regret_reference_route`'s fallback or the functions it calls change their result.
REFERENCE_VERSION = 1


def reference_cache_inputs(
    env: EnergyEnvironment, start: int, goal: int, potential_wh: np.ndarray | None
) -> dict[str, Any]:
    """Everything the negative-cycle reference search depends on (the key of its compute-cache entry): the line
    graph's turns and adjacency, the true energies, the noise variance, start, goal, potential, the search's budgets
    and version, and the versions of networkx (Yen's paths, ties included) and HiGHS (scipy, in the cache layer)."""
    import networkx as nx

    from evroute.network.computecache import array_digest

    adj = env.linegraph.adjacency.tocsr()
    return {
        "graph": array_digest(env.linegraph.turns, adj.indptr, adj.indices, adj.data),
        "true_mean_wh": array_digest(np.asarray(env.true_mean_wh, dtype=np.float64)),
        "noise_var": array_digest(np.asarray(env.noise_var, dtype=np.float64)),
        "potential_wh": array_digest(None if potential_wh is None else np.asarray(potential_wh, dtype=np.float64)),
        "start": int(start),
        "goal": int(goal),
        "budget": [EXACT_TRY_CUT_ROUNDS, EXACT_TRY_NODES],
        "version": REFERENCE_VERSION,
        "networkx": nx.__version__,
    }


def _cached_search(
    env: EnergyEnvironment, start: int, goal: int, potential_wh: np.ndarray | None, search: Any
) -> Route:
    """``search()`` through the compute cache (:mod:`evroute.network.computecache`): the methods of one (route,
    seed) share one search, in this process and across processes."""
    from evroute.network.computecache import cached_compute

    inputs = reference_cache_inputs(env, start, goal, potential_wh)
    n_edges = int(env.linegraph.n_nodes)

    def check(got: Any) -> None:
        check_route_dict(got, n_edges, start, goal)

    got = cached_compute(
        "regret-reference", inputs, lambda: _route_dict(search()), what="regret reference", blas=False, check=check
    )
    return Route(np.asarray(got["edges"], dtype=np.int64), float(got["cost"]), str(got["method"]))


def check_route_dict(got: Any, n_edges: int, start: int, goal: int) -> None:
    """Raise :class:`ValueError` unless ``got`` is a cached route (:func:`_route_dict`): keys ``edges`` (int64
    line-graph nodes in ``[0, n_edges)`` from ``start`` to ``goal``), ``cost`` (finite) and ``method`` (a string)."""
    if not isinstance(got, dict) or set(got) != {"edges", "cost", "method"}:
        raise ValueError("a route entry has the keys edges, cost and method")
    e = got["edges"]
    if not isinstance(e, np.ndarray) or e.dtype != np.int64 or e.ndim != 1 or len(e) == 0:
        raise ValueError("a route's edges are a non-empty int64 vector")
    if e.min() < 0 or e.max() >= n_edges or int(e[0]) != int(start) or int(e[-1]) != int(goal):
        raise ValueError("a route's edges are not a route of this network from its start to its goal")
    if not isinstance(got["cost"], float) or not math.isfinite(got["cost"]) or not isinstance(got["method"], str):
        raise ValueError("a route's cost is a finite float and its method a string")


def _route_dict(route: Route) -> dict[str, Any]:
    return {"edges": np.asarray(route.edges, dtype=np.int64), "cost": float(route.cost), "method": route.method}
