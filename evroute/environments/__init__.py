"""Environments: the truth a route learner is scored against (true edge energies, feedback, exact optimum).

Every environment is a :class:`EnergyEnvironment` (truth, :meth:`~EnergyEnvironment.observe`,
:meth:`~EnergyEnvironment.advance`, :meth:`~EnergyEnvironment.optimal_route`) and lives in one module of this
package that defines ``parse_params(params) -> config`` (validation, no sampling) and
``build(linegraph, params, *, vehicle, seed) -> EnergyEnvironment``.  The registry maps names to those modules:

* ``consistent`` (default of ``evroute run``): the paper's GP perturbation applied, log-normally, to the
  dissipative part of the energy only; no negative reduced cost, exact optimum by one Dijkstra
  (:mod:`evroute.environments.consistent`);
* ``paper``: the reference paper's environment, ``E_det`` plus a Gaussian process draw (the reproductions use it;
  :mod:`evroute.environments.paper`);
* ``drifting``: the paper's environment whose energies drift over rounds (:mod:`evroute.environments.drifting`);
* ``sumo-replay``: a recorded SUMO day of EV traffic, mean and noise measured by SUMO's battery device
  (:mod:`evroute.environments.sumo_replay`);
* ``sumo-live``: each round's route driven by an EV through a running SUMO simulation of the same scenario,
  regret against the replay's means (:mod:`evroute.environments.sumo_live`);
* ``misspecified``: worlds the models did not come from: generating parameters drawn per seed from wide ranges, a
  road-class and junction truth, heavy-tailed or trip-correlated noise (:mod:`evroute.environments.misspecified`).

A new environment is one module plus one line in :data:`ENVIRONMENTS` (or :func:`register_environment`).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from evroute.energy import VehicleProfile
from evroute.environments.base import EnergyEnvironment
from evroute.environments.consistent import ConsistentConfig, ConsistentEnvironment
from evroute.environments.paper import EnvironmentConfig, PaperEnvironment, sample_prior_function
from evroute.errors import ParameterError
from evroute.linegraph import LineGraph

#: environment name -> module defining ``parse_params`` and ``build``
ENVIRONMENTS: dict[str, str] = {
    "consistent": "evroute.environments.consistent",
    "paper": "evroute.environments.paper",
    "drifting": "evroute.environments.drifting",
    "sumo-replay": "evroute.environments.sumo_replay",
    "sumo-live": "evroute.environments.sumo_live",
    "misspecified": "evroute.environments.misspecified",
}
#: environment of ``evroute run`` when none is named
DEFAULT_ENVIRONMENT = "consistent"


def register_environment(name: str, module: str) -> None:
    """Register the module ``module`` (dotted path; it defines ``parse_params`` and ``build``) as ``name``."""
    ENVIRONMENTS[name.lower()] = module


def environment_names() -> list[str]:
    return sorted(ENVIRONMENTS)


def environment_module(name: str) -> ModuleType:
    """The module of environment ``name`` (:class:`ParameterError` naming the known ones if unknown)."""
    key = str(name).lower()
    if key not in ENVIRONMENTS:
        raise ParameterError(f"unknown environment {name!r} (choose from {', '.join(environment_names())})")
    return importlib.import_module(ENVIRONMENTS[key])


def check_environment(name: str, params: dict[str, Any]) -> Any:
    """Validate ``params`` for environment ``name`` without sampling; returns its config object."""
    return environment_module(name).parse_params(dict(params))


def prepare_environment(
    linegraph: LineGraph, name: str, params: dict[str, Any] | None = None, *, vehicle: VehicleProfile | None = None
) -> None:
    """Check that environment ``name`` can be built on ``linegraph`` and do its one-time work (a simulated day),
    before a run writes anything; a no-op for environments whose module defines no ``prepare`` hook."""
    hook = getattr(environment_module(name), "prepare", None)
    if hook is not None:
        hook(linegraph, dict(params or {}), vehicle=vehicle)


def make_environment(
    linegraph: LineGraph,
    name: str = DEFAULT_ENVIRONMENT,
    params: dict[str, Any] | None = None,
    *,
    vehicle: VehicleProfile | None = None,
    seed: int = 0,
) -> EnergyEnvironment:
    """Environment ``name`` on ``linegraph`` with ``params`` (deterministic given ``seed``)."""
    return environment_module(name).build(linegraph, dict(params or {}), vehicle=vehicle, seed=seed)


__all__ = [
    "DEFAULT_ENVIRONMENT",
    "ENVIRONMENTS",
    "ConsistentConfig",
    "ConsistentEnvironment",
    "EnergyEnvironment",
    "EnvironmentConfig",
    "PaperEnvironment",
    "check_environment",
    "environment_module",
    "environment_names",
    "make_environment",
    "prepare_environment",
    "register_environment",
    "sample_prior_function",
]
