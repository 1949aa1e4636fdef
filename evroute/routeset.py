"""Non-combinatorial route-set baseline (``--model routeset``): IGP-UCB / GP-TS over k candidate routes.

Instead of learning every edge and routing with an oracle, the learner fixes a finite set of candidate routes once
and plays the single-arm GP bandits of :mod:`evroute.bo` over it, one route per round:

* **Candidates**: the ``k`` (default 20) cheapest simple routes from start to goal under the physics prior, by
  Yen's algorithm (:func:`networkx.shortest_simple_paths`) on the line graph.  Route weights must be non-negative, so
  the edge weights are the **rectified** prior energies ``E[max(0, N(E_det, varsigma^2))]`` (``weights="rectified"``,
  the weights the index oracle itself would use with the prior as its knowledge) or ``max(E_det, 0)``
  (``"positive"``); with an elevation potential (the runner's default ``potential="elevation"``, see
  :meth:`evroute.policies.IndexPolicy.weights`) ``E_det`` minus the potential is rectified, as the oracle does.
  The candidates are sorted by that weighted cost (the order Yen's algorithm yields).  The best
  route of the environment need not be a candidate: the regret of this baseline then has a linear floor, the gap of
  the best candidate (:attr:`RouteSetBandit.best_candidate_gap_wh`).
* **Arms and kernel**: each route is an arm of a :class:`~evroute.bo.FiniteDomain` whose coordinates are its
  standardised route features (:data:`FEATURE_NAMES`: length, free-flow time, ascent, descent, mean speed, prior energy
  ``sum E_det``) plus its candidate index (so that arms stay distinct; the kernel ignores it).  The prior
  covariance is ``(1 - overlap_weight) k_SE(features) + overlap_weight * overlap``, ``k_SE`` the
  :class:`~evroute.bo.SquaredExponential` kernel (``lengthscale`` 1 in standardised units) and ``overlap(r, r') =
  |r n r'| / sqrt(|r| |r'|)`` the cosine similarity of the routes' edge sets (positive semi-definite; 1 on the
  diagonal).  Default ``overlap_weight = 0.5``.
* **Rewards**: the policies maximise, so the reward of a driven route is ``-(observed route energy) / scale`` with
  ``scale = sigma0 sqrt(mean number of edges of the candidates)`` (the standard deviation of a route's residual if
  edges were independent), and the GP prior mean is ``-sum E_det / scale``: the GP learns the residual of each route
  around the physics prior in units of about 1, matching the papers' ``B = 1``.  The noise of a route's observation
  in these units is ``|r| varsigma^2 / scale^2 ~ varsigma^2 / sigma0^2``, the default ``lam`` (and ``R = sqrt(lam)``).
* **Policies**: ``policy="ucb"`` is :class:`~evroute.bo.IGPUCB`, ``policy="ts"`` :class:`~evroute.bo.GPTS`, both
  with the O(N^2) rank-one arm :class:`~evroute.bo.ExactGP`, ``B = 1`` and ``delta = 0.1`` (the :mod:`evroute.bo`
  defaults) and ``gamma = "empirical"``: the information gain ``1/2 sum ln(1 + sigma^2_{s-1}(x_s) / lam)`` actually
  collected.  The default unit-constant bound ``(ln t)^{d+1}`` of an SE kernel in ``d = 6`` feature dimensions is
  3.6e5 at ``t = 500`` and ignores that the arm set is finite; with it both policies explore almost uniformly.

:class:`RouteSetBandit` has the interface the experiment runner uses (``step() -> RoundRecord``, ``t``,
``cumulative_regret``, ``optimal``, ``state()``/``load_state()``), measures regret against the same reference route
as :class:`~evroute.bandit.RoutingBandit` (:func:`~evroute.bandit.regret_reference_route`) and uses the same
feedback-noise stream construction, so results, plots and summaries are directly comparable.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.bandit import RoundRecord, RouteLearner, regret_reference_route
from evroute.bo import GPTS, IGPUCB, FiniteDomain, SquaredExponential
from evroute.energy import travel_time_s
from evroute.environments import EnergyEnvironment
from evroute.errors import ParameterError, UnreachableError, check_positive
from evroute.linegraph import LineGraph, standardise
from evroute.models.builders import ModelPrior, default_prior
from evroute.oracle import MIN_WEIGHT_WH, Route, rectified_gaussian_mean

__all__ = [
    "FEATURE_NAMES",
    "ROUTESET_POLICIES",
    "CandidateRoutes",
    "RouteSetBandit",
    "build_routeset_bandit",
    "candidate_routes",
    "route_features",
    "route_kernel",
]

FEATURE_NAMES: tuple[str, ...] = ("length_m", "time_s", "ascent_m", "descent_m", "mean_speed_mps", "prior_wh")
ROUTESET_POLICIES = {"ucb": IGPUCB, "ts": GPTS}


@dataclass(frozen=True)
class CandidateRoutes:
    """The candidate set: ``routes[i]`` are line-graph edge indices, ``costs[i]`` the search cost (Wh), ascending."""

    routes: tuple[np.ndarray, ...]
    costs: np.ndarray
    weights: str

    def __len__(self) -> int:
        return len(self.routes)


def candidate_routes(
    linegraph: LineGraph,
    prior_mean_wh: np.ndarray,
    noise_var: float,
    start: int,
    goal: int,
    *,
    k: int = 20,
    weights: str = "rectified",
    potential_wh: np.ndarray | None = None,
) -> CandidateRoutes:
    """The ``k`` cheapest simple routes from ``start`` to ``goal`` under the prior (see module docstring).

    Args:
        prior_mean_wh: ``(E,)`` physics energies ``E_det`` (Wh).
        noise_var: observation-noise variance (Wh^2), for ``weights="rectified"``.
        k: number of routes (fewer if fewer simple routes exist).
        weights: ``"rectified"`` or ``"positive"``.
        potential_wh: optional ``(E,)`` potential subtracted from ``E_det`` before rectification (Wh).
    """
    import networkx as nx

    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ParameterError(f"k must be a positive integer, got {k!r}")
    e_det = np.asarray(prior_mean_wh, dtype=np.float64)
    if potential_wh is not None:
        e_det = e_det - np.asarray(potential_wh, dtype=np.float64)
    if weights == "rectified":
        w = np.maximum(rectified_gaussian_mean(e_det, np.full_like(e_det, noise_var)), MIN_WEIGHT_WH)
    elif weights == "positive":
        w = np.maximum(e_det, MIN_WEIGHT_WH)
    else:
        raise ParameterError(f"weights must be 'rectified' or 'positive', got {weights!r}")
    turns = linegraph.turns
    g = nx.DiGraph()
    g.add_nodes_from(range(linegraph.n_nodes))
    g.add_weighted_edges_from(zip(turns[:, 0].tolist(), turns[:, 1].tolist(), w[turns[:, 1]].tolist(), strict=True))
    try:
        paths = list(itertools.islice(nx.shortest_simple_paths(g, int(start), int(goal), weight="weight"), int(k)))
    except nx.NetworkXNoPath:
        raise UnreachableError(f"goal edge {goal} is unreachable from start edge {start}") from None
    routes = tuple(np.asarray(p, dtype=np.int64) for p in paths)
    return CandidateRoutes(routes, np.array([float(w[r].sum()) for r in routes]), weights)


def route_features(linegraph: LineGraph, prior_mean_wh: np.ndarray, routes: tuple[np.ndarray, ...]) -> np.ndarray:
    """``(N, 6)`` raw route features in :data:`FEATURE_NAMES` order (m, s, m, m, m/s, Wh)."""
    net = linegraph.network
    t_s = travel_time_s(net.length_m, net.speed_mps)
    dz = net.z_to_m - net.z_from_m
    rows = []
    for r in routes:
        length, time_s = float(net.length_m[r].sum()), float(t_s[r].sum())
        rows.append(
            [
                length,
                time_s,
                float(np.clip(dz[r], 0, None).sum()),
                float(np.clip(-dz[r], 0, None).sum()),
                length / time_s,
                float(np.asarray(prior_mean_wh)[r].sum()),
            ]
        )
    return np.asarray(rows, dtype=np.float64)


def route_kernel(
    features: np.ndarray, routes: tuple[np.ndarray, ...], *, lengthscale: float = 1.0, overlap_weight: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Standardised arm coordinates ``(N, 6)`` and prior covariance ``(N, N)`` (see module docstring)."""
    check_positive("lengthscale", lengthscale)
    if not 0.0 <= float(overlap_weight) <= 1.0:
        raise ParameterError(f"overlap_weight must be in [0, 1], got {overlap_weight!r}")
    x = standardise(features)
    sets = [set(r.tolist()) for r in routes]
    overlap = np.array([[len(a & b) / math.sqrt(len(a) * len(b)) for b in sets] for a in sets])
    cov = (1.0 - overlap_weight) * SquaredExponential(lengthscale)(x, x) + overlap_weight * overlap
    return x, cov


class RouteSetBandit(RouteLearner):
    """One route per round from a fixed candidate set, chosen by IGP-UCB or GP-TS (see module docstring).

    Args:
        env: the simulated environment.
        start, goal: start and goal edge indices.
        policy: ``"ucb"`` (IGP-UCB) or ``"ts"`` (GP-TS).
        seed: seeds the policy's and the feedback noise's streams (same construction as ``RoutingBandit``).
        regret_reference, potential_wh: as in :class:`~evroute.bandit.RoutingBandit` (the same regret reference).
        prior: the prior mean ``E_det``, ``sigma0^2`` and noise variance the learner is told
            (:class:`~evroute.models.builders.ModelPrior`; default:
            :func:`~evroute.models.builders.default_prior` of the environment's physics energies and network).
        k, weights: candidate set (:func:`candidate_routes`).
        lengthscale, overlap_weight: route kernel (:func:`route_kernel`).
        lam: GP regulariser in reward units (default ``noise_var / prior_var``).
        B, delta, gamma: confidence parameters of :class:`~evroute.bo.IGPUCB` / :class:`~evroute.bo.GPTS`.
    """

    def __init__(
        self,
        env: EnergyEnvironment,
        start: int,
        goal: int,
        *,
        policy: str = "ts",
        seed: int = 0,
        regret_reference: str = "auto",
        potential_wh: np.ndarray | None = None,
        prior: ModelPrior | None = None,
        k: int = 20,
        weights: str = "rectified",
        lengthscale: float = 1.0,
        overlap_weight: float = 0.5,
        lam: float | None = None,
        B: float = 1.0,  # noqa: N803
        delta: float = 0.1,
        gamma: str | float = "empirical",
    ) -> None:
        if policy not in ROUTESET_POLICIES:
            raise ParameterError(f"route-set policy must be 'ucb' (IGP-UCB) or 'ts' (GP-TS), got {policy!r}")
        self.env = env
        self.start, self.goal = int(start), int(goal)
        lg = env.linegraph
        self.prior = prior = default_prior(lg, env.prior_mean_wh) if prior is None else prior
        self.candidates = candidate_routes(
            lg,
            prior.prior_mean_wh,
            prior.noise_var,
            self.start,
            self.goal,
            k=k,
            weights=weights,
            potential_wh=potential_wh,
        )
        routes = self.candidates.routes
        self.features = route_features(lg, prior.prior_mean_wh, routes)
        x, cov = route_kernel(self.features, routes, lengthscale=lengthscale, overlap_weight=overlap_weight)
        self.scale = math.sqrt(prior.prior_var * float(np.mean([len(r) for r in routes])))
        lam_v = prior.noise_var / prior.prior_var if lam is None else check_positive("lam", lam)
        policy_ss, noise_ss = np.random.SeedSequence(seed).spawn(2)
        self.policy = ROUTESET_POLICIES[policy](
            FiniteDomain(np.column_stack([x, np.arange(len(routes))])),
            prior_cov=cov,
            prior_mean=-self.features[:, -1] / self.scale,
            lam=lam_v,
            B=B,
            delta=delta,
            gamma=gamma,
            seed=np.random.default_rng(policy_ss),
        )
        self.rng_noise = np.random.default_rng(noise_ss)
        self.regret_reference, self.potential_wh = regret_reference, potential_wh
        self.optimal = regret_reference_route(env, self.start, self.goal, regret_reference, potential_wh)
        expected = np.array([env.expected_energy(r) for r in routes])
        self.best_candidate_gap_wh = float(expected.min() - self.optimal.cost)
        self.t = 0
        self.cumulative_regret = 0.0

    def step(self) -> RoundRecord:
        """Play one round: ask the policy for a route, drive it, tell it ``-energy / scale``."""
        t = self.t + 1
        self._advance_environment(t)
        c0 = time.perf_counter()
        x = self.policy.ask()
        c1 = time.perf_counter()
        arm = self.policy.domain.index_of(x)  # type: ignore[attr-defined]
        route = Route(self.candidates.routes[arm], float(self.candidates.costs[arm]), "routeset")
        y = self.env.observe(route.edges, self.rng_noise)
        c2 = time.perf_counter()
        self.policy.tell(x, -float(y.sum()) / self.scale)
        c3 = time.perf_counter()
        return self._record(
            route.edges, y, float(self.policy.width(t)), index_ms=1e3 * (c1 - c0), update_ms=1e3 * (c3 - c2)
        )

    def state(self) -> dict[str, Any]:
        """Checkpoint: round, cumulative regret, the policy (GP posterior and its RNG) and the noise RNG state."""
        return {
            "t": self.t,
            "cumulative_regret": self.cumulative_regret,
            "policy": self.policy,
            "rng_noise": self.rng_noise.bit_generator.state,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state` snapshot."""
        self.t = int(state["t"])
        self.cumulative_regret = float(state["cumulative_regret"])
        self.policy = state["policy"]
        self.rng_noise.bit_generator.state = state["rng_noise"]


def build_routeset_bandit(
    env: EnergyEnvironment,
    start: int,
    goal: int,
    *,
    policy: str,
    seed: int,
    regret_reference: str = "auto",
    potential_wh: np.ndarray | None = None,
    prior: ModelPrior | None = None,
    **model_params: Any,
) -> RouteSetBandit:
    """Runner entry point: ``model_params`` are :class:`RouteSetBandit` keywords (``k``, ``weights``, ``B``, ...);
    ``prior`` as in :class:`RouteSetBandit`."""
    try:
        return RouteSetBandit(
            env,
            start,
            goal,
            policy=policy,
            seed=seed,
            regret_reference=regret_reference,
            potential_wh=potential_wh,
            prior=prior,
            **model_params,
        )
    except TypeError as exc:
        raise ParameterError(f"invalid parameters for model 'routeset': {exc}") from None
