"""The interface every environment implements: truth, feedback, time and the exact optimum.

An environment holds the TRUE expected energy of every road edge (``true_mean_wh``, Wh, the "truth" of the
current round), returns noisy semi-bandit feedback for the edges a route drives (:meth:`observe`), moves its truth
to a round (:meth:`advance`, a no-op for static environments) and knows the best route between two edges
(:meth:`optimal_route`: exact, or :class:`~evroute.errors.NegativeCycleError` when no exact optimum is defined).
It also holds ``prior_mean_wh`` (the physics energy ``E_det``, the models' prior mean) and its generating variances
``prior_var`` and ``noise_var``, which models are told only under the ablation ``--model-param init=oracle``
(:func:`evroute.experiments.registry.model_prior`).
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.oracle import Route

if TYPE_CHECKING:  # pragma: no cover
    from _typeshed import DataclassInstance

    from evroute.arms import ArmSpace


class EnergyEnvironment:
    """True expected edge energies and noisy semi-bandit feedback (the base class of every environment).

    Attributes:
        linegraph: the line graph the environment lives on.
        prior_mean_wh: ``(E,)`` physics energy ``E_det`` (Wh), the models' prior mean.
        true_mean_wh: ``(E,)`` true expected energy ``f`` (Wh) of the current round.
        prior_var: ``sigma0^2`` (Wh^2), average prior variance of ``f`` (the generating value).
        noise_var: observation-noise variance (Wh^2) of :meth:`observe`.
        config: the environment's parameters (an object with ``to_dict()``).
    """

    #: registry name of the environment (``evroute.environments.make_environment``)
    name: str = "base"
    #: whether the truth stays the same in every round (:meth:`advance` never changes it)
    static: bool = True
    #: whether a turn arm's truth can differ from its edge's (:meth:`arm_truth`); without a turn term, turn arms
    #: (:mod:`evroute.arms`) score every route exactly as edge arms do
    turn_term: bool = False

    def __init__(
        self,
        linegraph: LineGraph,
        prior_mean_wh: np.ndarray,
        true_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        config: Any = None,
    ) -> None:
        self.linegraph = linegraph
        self.prior_mean_wh = np.asarray(prior_mean_wh, dtype=np.float64)
        self.true_mean_wh = np.asarray(true_mean_wh, dtype=np.float64)
        self.prior_var = float(prior_var)
        self.noise_var = float(noise_var)
        self.config = config

    @property
    def n_edges(self) -> int:
        return len(self.true_mean_wh)

    def truth(self) -> np.ndarray:
        """``(E,)`` true expected energies (Wh) of the current round."""
        return self.true_mean_wh

    def observe(self, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy energies (Wh) of the driven ``edges`` (semi-bandit feedback), shape ``(len(edges),)``."""
        edges = np.asarray(edges, dtype=np.int64)
        return self.true_mean_wh[edges] + np.sqrt(self.noise_var) * rng.standard_normal(len(edges))

    def marginal_variances(self) -> np.ndarray | None:
        """``(E,)`` actual variances of ``f_e`` over the environment's draws (Wh^2) where they differ from what
        ``prior_var`` and the generating kernel say (e.g. the consistent environment's capped variances); ``None``:
        ``prior_var`` times the generating kernel's diagonal is exact.  Read only by the oracle ablation."""
        return None

    def advance(self, t: float) -> bool:
        """Move the truth to round ``t``; returns whether ``true_mean_wh`` changed (static: never).

        The bandit calls it every round and recomputes its regret reference when it returns ``True``.
        """
        return False

    def expected_energy(self, edges: np.ndarray) -> float:
        """True expected energy (Wh) of a route given as edge indices."""
        return float(self.true_mean_wh[np.asarray(edges, dtype=np.int64)].sum())

    def optimal_route(self, start: int, goal: int) -> Route:
        """The exact minimum-energy route from ``start`` to ``goal`` under the current truth.

        Default: Dijkstra when every energy is non-negative, else Johnson's algorithm.

        Raises:
            NegativeCycleError: a negative-energy cycle is reachable from ``start`` (no exact optimum is defined).
        """
        from evroute.oracle import optimal_route

        return optimal_route(self.linegraph, self.true_mean_wh, start, goal, on_negative_cycle="raise")

    # ------------------------------------------------------------------ arms (evroute.arms)
    def arm_truth(self, arms: ArmSpace) -> np.ndarray:
        """``(A,)`` true expected energy (Wh) of every arm in the current round.

        Default (no turn term): every arm has its edge's truth, ``true_mean_wh[arms.tail]``.
        """
        return arms.lift(self.true_mean_wh)

    def observe_arms(self, arms: ArmSpace, played: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy energies (Wh) of the ``played`` arms ``(k,)`` of one route (in driving order), shape ``(k,)``.

        Default: the observations of the arms' edges (:meth:`observe`), the same draws as edge arms get.
        """
        return self.observe(arms.tail[np.asarray(played, dtype=np.int64)], rng)

    def route_truth(self, arms: ArmSpace, edges: np.ndarray) -> float:
        """True expected energy (Wh) of route ``edges`` scored by ``arms`` (the sum of its arms' truths)."""
        if arms.kind == "edge" or not self.turn_term:
            return self.expected_energy(edges)
        return arms.route_cost(self.arm_truth(arms), edges)

    def optimal_route_arms(self, arms: ArmSpace, start: int, goal: int) -> Route:
        """The exact minimum-energy route when routes are scored by ``arms``: :meth:`optimal_route` without a turn
        term (same route costs), else :meth:`evroute.arms.ArmSpace.optimal_route` on :meth:`arm_truth`."""
        if arms.kind == "edge" or not self.turn_term:
            return self.optimal_route(start, goal)
        return arms.optimal_route(self.arm_truth(arms), start, goal)

    def describe(self) -> dict[str, Any]:
        """Name and parameters, for results metadata."""
        return {"name": self.name, **(self.config.to_dict() if self.config is not None else {})}


ConfigT = TypeVar("ConfigT", bound="DataclassInstance")


def config_from_params(cls: type[ConfigT], params: dict[str, Any], environment: str) -> ConfigT:
    """``cls(**params)`` for an environment's config dataclass; unknown keys and bad values are one-line
    :class:`ParameterError` messages naming ``environment`` (the strict types are checked before, by
    :mod:`evroute.validation`)."""
    known = {f.name for f in fields(cls)}
    if set(params) - known:
        raise ParameterError(
            f"unknown parameters of the {environment} environment: {sorted(set(params) - known)} "
            f"(known: {', '.join(sorted(known))})"
        )
    try:
        return cls(**params)
    except TypeError as exc:
        raise ParameterError(f"bad {environment} parameter: {exc}") from None
