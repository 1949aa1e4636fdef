"""Experiment configuration: network, route, model, policy, horizon, seeds and parameters.

:class:`ExperimentConfig` is a pydantic dataclass: types, ranges and unknown keys are checked when it is built
(from Python, a JSON file or the CLI), and model / policy / environment parameters are checked against the
schemas derived from the classes that take them (:mod:`evroute.validation`).  Errors are one-line
:class:`~evroute.errors.ParameterError` messages naming the field.
"""

from __future__ import annotations

import contextlib
import json
import numbers
from collections.abc import Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, Strict, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass

from evroute.errors import DataError, ParameterError
from evroute.validation import check_params, format_error

#: Most seeds one experiment may run (a guard against ``--seeds 1000000000``).
MAX_SEEDS = 10_000
#: Largest seed (numpy's seed range is unbounded, but a 32-bit seed keeps configs portable).
MAX_SEED = 2**32 - 1
#: Most rounds per seed.
MAX_HORIZON = 10_000_000
#: Route references for regret (see :func:`evroute.bandit.regret_reference_route`).
REGRET_REFERENCES = ("auto", "exact", "rectified")
POTENTIALS = ("elevation", "none")
#: OpenStreetMap loaders (:func:`evroute.network.load_network`)
LOADERS = ("netconvert", "osmnx")


def _integral(v: Any) -> Any:
    """numpy integers count as integers (``seeds=np.arange(3)``); floats, strings and bools stay errors."""
    return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v


Int = Annotated[int, BeforeValidator(_integral), Strict()]
Seed = Annotated[Int, Field(ge=0, le=MAX_SEED)]
NonEmpty = Annotated[str, Strict(), Field(min_length=1)]


@dataclass(frozen=True, config=ConfigDict(extra="forbid", allow_inf_nan=False))
class ExperimentConfig:
    """One experiment: a (model, policy) pair on one route for several seeds.

    Attributes:
        network: ``synthetic[:EDGES[:SEED]]``, ``monaco``, ``luxembourg`` or a path.
        route: named route (``A``/``B``) when ``start``/``goal`` are not given.
        start, goal: explicit start/goal edge ids.
        model: edge model name (``bi``; more are registered by :mod:`evroute.experiments.registry`).
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
        dem: elevation raster (or a list of tiles to mosaic) for networks without elevation.
        loader: OpenStreetMap loader, ``netconvert`` (default: turn restrictions honoured) or ``osmnx``.
        arms: ``edge`` (default: one arm per road edge, the paper's) or ``turn`` (one arm per turn ``e -> e'`` plus
            a terminal arm per edge, :mod:`evroute.arms`; models ``bi`` and ``gp-exact``).
    """

    network: NonEmpty = Field(
        default="synthetic:2000:0", description="synthetic[:EDGES[:SEED]], monaco, luxembourg or a path"
    )
    route: NonEmpty | None = Field(default="A", description="named route (A or B) when start/goal are not given")
    start: NonEmpty | None = Field(default=None, description="start edge id (with goal, instead of route)")
    goal: NonEmpty | None = Field(default=None, description="goal edge id (with start, instead of route)")
    model: NonEmpty = Field(default="bi", description="edge model or learner name (evroute.experiments.registry)")
    policy: NonEmpty = Field(default="ts", description="index policy: ucb, bucb, ts or greedy")
    policy_params: dict[str, Any] = Field(default_factory=dict, description="policy keyword parameters")
    model_params: dict[str, Any] = Field(default_factory=dict, description="model keyword parameters")
    env: NonEmpty = Field(
        default="consistent", description="environment name (evroute.environments): consistent, paper, drifting, ..."
    )
    environment: dict[str, Any] = Field(default_factory=dict, description="environment parameters")
    horizon: Annotated[Int, Field(ge=1, le=MAX_HORIZON)] = Field(default=100, description="rounds per seed T")
    seeds: Annotated[tuple[Seed, ...], Field(min_length=1, max_length=MAX_SEEDS)] = Field(
        default=(0,), description="one run per seed (distinct, >= 0)"
    )
    env_seed: Seed | None = Field(
        default=None, description="fixed environment seed for all runs (null: the run's seed)"
    )
    regret_reference: NonEmpty = Field(default="auto", description="auto, exact or rectified")
    potential: NonEmpty = Field(default="elevation", description="elevation or none")
    vehicle: NonEmpty = Field(default="sumo_ev", description="vehicle profile name or JSON file")
    data_dir: NonEmpty | None = Field(default=None, description="folder with real road data (else $EVROUTE_DATA)")
    dem: NonEmpty | list[NonEmpty] | None = Field(
        default=None, description="elevation raster (or a list of tiles to mosaic) for networks without elevation"
    )
    loader: NonEmpty = Field(
        default="netconvert", description="OpenStreetMap loader: netconvert (turn restrictions honoured) or osmnx"
    )
    arms: NonEmpty = Field(
        default="edge", description="bandit arms: edge (one per road edge) or turn (one per turn, evroute.arms)"
    )

    @model_validator(mode="after")
    def _check(self) -> ExperimentConfig:
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds must be distinct")
        if self.potential not in POTENTIALS:
            raise ValueError(f"potential must be one of {', '.join(POTENTIALS)}, got {self.potential!r}")
        if self.loader not in LOADERS:
            raise ValueError(f"loader must be one of {', '.join(LOADERS)}, got {self.loader!r}")
        if self.regret_reference not in REGRET_REFERENCES:
            raise ValueError(
                f"regret_reference must be one of {', '.join(REGRET_REFERENCES)}, got {self.regret_reference!r}"
            )
        if (self.start is None) != (self.goal is None):
            raise ValueError("start and goal must be given together")
        if self.start is not None and self.start == self.goal:
            raise ValueError(f"start and goal are the same edge {self.start!r}")
        return self

    def __post_init__(self) -> None:
        check_parameters(self)

    @property
    def label(self) -> str:
        """Short method label, e.g. ``BI-TS`` (``BI-TS-TURN`` with turn arms)."""
        return f"{self.model.upper()}-{self.policy.upper()}" + ("" if self.arms == "edge" else f"-{self.arms.upper()}")

    def env_config(self) -> Any:
        """The environment's config object (validates :attr:`env` and :attr:`environment`)."""
        from evroute.environments import check_environment

        return check_environment(self.env, self.environment)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        return d

    @classmethod
    def from_dict(cls, d: Any, what: str = "config") -> ExperimentConfig:
        """Validate a JSON object; errors name the field (``what 'horizon': ...``)."""
        if not isinstance(d, dict):
            raise ParameterError(f"{what} must be a JSON object of config fields, got {type(d).__name__}")
        try:
            return _ADAPTER.validate_python(d)
        except ValidationError as exc:
            raise ParameterError(format_error(exc, what)) from None

    @classmethod
    def from_file(cls, path: str | Path) -> ExperimentConfig:
        """Load a JSON config file."""
        return cls.from_dict(read_json(path, "config file"), what=f"config file {path}:")


_ADAPTER: TypeAdapter[ExperimentConfig] = TypeAdapter(ExperimentConfig)
_pydantic_init = ExperimentConfig.__init__


def _init(self: ExperimentConfig, *args: Any, **kwargs: Any) -> None:
    """pydantic's ``__init__`` with its :class:`ValidationError` as a one-line :class:`ParameterError`."""
    try:
        _pydantic_init(self, *args, **kwargs)
    except ValidationError as exc:
        raise ParameterError(format_error(exc, "config")) from None


ExperimentConfig.__init__ = _init  # type: ignore[method-assign]


def field_names() -> list[str]:
    return [f.name for f in fields(ExperimentConfig)]


def config_json_schema() -> dict[str, Any]:
    """JSON schema of :class:`ExperimentConfig` (for ``evroute config schema``)."""
    return _ADAPTER.json_schema()


def read_json(path: str | Path, what: str) -> Any:
    """Parse a JSON file; one-line :class:`DataError` when it is missing, a folder, unreadable or malformed."""
    p = Path(path)
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise DataError(f"{what} {p} not found") from None
    except IsADirectoryError:
        raise DataError(f"{what} {p} is a directory, not a JSON file") from None
    except OSError as exc:
        raise DataError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DataError(f"{what} {p} is not a text file") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{what} {p} is not valid JSON: {exc}") from None


def check_parameters(cfg: ExperimentConfig) -> None:
    """Model, policy and environment names and parameters against their registries and schemas (no files)."""
    from evroute.experiments.registry import check_arms, check_model, check_model_params, is_learner
    from evroute.policies import POLICIES, make_policy

    check_model(cfg.model, cfg.policy)  # the name first, then the types, then the ranges
    check_arms(cfg.model, cfg.arms, cfg.model_params)
    with _naming(f"model parameter ({cfg.model})"):
        check_model_params(cfg.model, cfg.model_params)
    if is_learner(cfg.model):
        if cfg.policy_params:
            raise ParameterError(f"model {cfg.model!r} takes its parameters as model parameters, not policy parameters")
    else:
        if cfg.policy.lower() not in POLICIES:
            make_policy(cfg.policy)  # the registry's own "unknown policy" error
        check_params("policy parameter", cfg.policy_params, [POLICIES[cfg.policy.lower()]])
        with _naming(f"policy parameter ({cfg.policy})"):
            make_policy(cfg.policy, **cfg.policy_params)  # ranges
    with _naming(f"environment parameter ({cfg.env})"):
        check_environment_params(cfg.env, cfg.environment)


@contextlib.contextmanager
def _naming(what: str) -> Iterator[None]:
    """Prefix a range error raised by a class (``graph_nu must be > 0, got -1``) with what it checked, unless the
    message already says (``model parameter (gp) 'x': ...`` from the schema)."""
    try:
        yield
    except ParameterError as exc:
        text = str(exc)
        if text.startswith(what.split(" (")[0]):
            raise
        raise ParameterError(f"{what}: {text}") from None


#: drifting-environment keys that only the daily cycle uses (``drift=slow`` has no daily cycle)
DAILY_ONLY = frozenset({"drift_period", "drift_daily_amplitude"})


def check_environment_params(env: str, params: dict[str, Any]) -> None:
    """Name, types and unknown keys of an environment's parameters against its config class (``CONFIG`` of its
    module; the drifting environment's ``drift_*`` keys against :class:`DriftConfig`), then their ranges."""
    from evroute.environments import check_environment, environment_module

    mod = environment_module(env)
    drift_cls = getattr(mod, "DRIFT_CONFIG", None)
    drift_keys = sorted(k for k in params if k == "drift" or k.startswith("drift_"))
    if drift_cls is None:
        own = {f.name for f in fields(mod.CONFIG)}
        if set(drift_keys) - own:
            raise ParameterError(
                f"environment parameter {drift_keys[0]!r} needs --env drifting (environment {env!r} does not drift)"
            )
        check_params("environment parameter", params, [mod.CONFIG])
    else:
        daily_only = DAILY_ONLY & set(drift_keys)
        if str(params.get("drift", "daily")).lower() == "slow" and daily_only:
            raise ParameterError(
                f"environment parameter {sorted(daily_only)[0]!r} sets the daily cycle, but drift=slow has none "
                "(use drift=daily, the default)"
            )
        static = {k: v for k, v in params.items() if k != "drift" and not k.startswith("drift_")}
        check_params("environment parameter", static, [mod.CONFIG])
        drift = {k[len("drift_") :]: v for k, v in params.items() if k.startswith("drift_")}
        check_params("environment parameter", drift, [drift_cls], skip=["kind"], prefix="drift_")
        if "drift" in params and not isinstance(params["drift"], str):
            raise ParameterError(f"environment parameter 'drift' must be a string, got {params['drift']!r}")
    check_environment(env, params)
