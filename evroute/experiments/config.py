"""Experiment configuration: network, route, model, policy, horizon, seeds and parameters."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from evroute.errors import DataError, ParameterError
from evroute.policies import make_policy


@dataclass(frozen=True)
class ExperimentConfig:
    """One experiment: a (model, policy) pair on one route for several seeds.

    Attributes:
        network: ``synthetic[:EDGES[:SEED]]``, ``monaco``, ``luxembourg`` or a path.
        route: named route (``A``/``B``) when ``start``/``goal`` are not given.
        start, goal: explicit start/goal edge ids.
        model: edge model name (``bi``; more are registered by :mod:`evroute.models.factory`).
        policy: ``ucb``, ``bucb``, ``ts`` or ``greedy``.
        policy_params: e.g. ``{"beta_scale": 0.5}`` or ``{"xi": 0.5, "omega": 1}``.
        model_params: model-specific parameters.
        env: environment name (:mod:`evroute.environments`): ``consistent`` (default: the paper's perturbation on
            the dissipative energy only, exact optimum), ``paper`` (the reference paper's, used by the
            reproductions) or ``drifting`` (the paper's, drifting over rounds).
        environment: that environment's parameters (its defaults when empty), e.g. ``{"lengthscale": 0.5}``, or
            ``{"drift": "daily", "drift_period": 100}`` for ``drifting``.
        horizon: rounds per seed ``T``.
        seeds: one run per seed; seed ``s`` draws environment ``s`` (unless ``env_seed`` is fixed) and
            seeds the policy and the feedback noise.
        env_seed: fixed environment seed for all runs (``None``: the run's seed).
        regret_reference: ``auto`` | ``exact`` | ``rectified``, see :class:`evroute.bandit.RoutingBandit`.
        potential: ``elevation`` (default): the index oracle rectifies estimates minus the elevation potential
            :func:`evroute.energy.elevation_potential_wh` (same best route, far less rectification bias);
            ``none``: Algorithm 2 of the paper as published (rectify the raw estimates).
        vehicle: vehicle profile name or JSON path.
        data_dir: directory with real road data (else ``EVROUTE_DATA``).
        dem: elevation raster for OSM networks without elevation.
    """

    network: str = "synthetic:2000:0"
    route: str | None = "A"
    start: str | None = None
    goal: str | None = None
    model: str = "bi"
    policy: str = "ts"
    policy_params: dict[str, float] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    env: str = "consistent"
    environment: dict[str, Any] = field(default_factory=dict)
    horizon: int = 100
    seeds: tuple[int, ...] = (0,)
    env_seed: int | None = None
    regret_reference: str = "auto"
    potential: str = "elevation"
    vehicle: str = "sumo_ev"
    data_dir: str | None = None
    dem: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if int(self.horizon) < 1:
            raise ParameterError(f"horizon must be >= 1, got {self.horizon}")
        if not self.seeds or min(self.seeds) < 0 or len(set(self.seeds)) != len(self.seeds):
            raise ParameterError("seeds must be distinct non-negative integers")
        make_policy(self.policy, **self.policy_params)  # validates name and parameters
        if self.potential not in ("elevation", "none"):
            raise ParameterError(f"potential must be elevation or none, got {self.potential!r}")
        if self.regret_reference not in ("auto", "exact", "rectified"):
            raise ParameterError(f"regret_reference must be auto, exact or rectified, got {self.regret_reference!r}")
        self.env_config()

    @property
    def label(self) -> str:
        """Short method label, e.g. ``BI-TS``."""
        return f"{self.model.upper()}-{self.policy.upper()}"

    def env_config(self) -> Any:
        """The environment's config object (validates :attr:`env` and :attr:`environment`)."""
        from evroute.environments import check_environment

        return check_environment(self.env, self.environment)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ParameterError(f"unknown config keys: {', '.join(sorted(unknown))}")
        return cls(**d)

    @classmethod
    def from_file(cls, path: str | Path) -> ExperimentConfig:
        """Load a JSON config file."""
        p = Path(path)
        try:
            return cls.from_dict(json.loads(p.read_text()))
        except FileNotFoundError:
            raise DataError(f"config file {p} not found") from None
        except json.JSONDecodeError as exc:
            raise DataError(f"config file {p} is not valid JSON: {exc}") from None
