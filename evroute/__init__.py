"""evroute: learn energy-efficient electric-vehicle routes online with combinatorial GP bandits.

The names a user needs, importable from ``evroute`` itself (each imported on first use, so ``import evroute`` and
``evroute --help`` stay light)::

    import evroute

    lg = evroute.build_line_graph(evroute.load_network("synthetic:2000:0"))
    prior = evroute.default_prior(lg, evroute.edge_prior(lg.network, evroute.load_vehicle()).energy_wh)
    model = evroute.models.build("gp-exact", prior)             # any kind: evroute.models.model_kinds()
    route = evroute.optimal_route(lg, model.posterior().mean, 0, 10)

* networks: :func:`load_network`, :class:`RoadNetwork`, :func:`build_line_graph`, :class:`LineGraph`;
* energy: :func:`edge_prior` (physics energies and travel times per edge), :class:`VehicleProfile`,
  :func:`load_vehicle`, :func:`elevation_potential_wh`;
* models: :class:`ModelPrior`, :func:`default_prior`, :mod:`evroute.models` (``evroute.models.build``);
* routes: :func:`resolve_route`, :func:`resolve_endpoint`, :func:`optimal_route` (a route query on any weights);
* learning: :func:`make_environment`, :class:`ThompsonSampling`, :func:`make_policy`, :class:`RoutingBandit`, and
  whole runs as the command line does them: :class:`ExperimentConfig`, :func:`run_experiment`, :func:`load_rounds`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evroute.errors import EvrouteError
from evroute.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from evroute import models
    from evroute.bandit import RoutingBandit
    from evroute.energy import VehicleProfile, edge_prior, elevation_potential_wh
    from evroute.environments import make_environment
    from evroute.experiments import ExperimentConfig, load_rounds, run_experiment
    from evroute.linegraph import LineGraph, build_line_graph
    from evroute.models.builders import ModelPrior, default_prior
    from evroute.network import RoadNetwork, load_network
    from evroute.oracle import optimal_route
    from evroute.policies import ThompsonSampling, make_policy
    from evroute.routes import resolve_endpoint, resolve_route

#: public name -> the module it lives in (imported on first use)
_WHERE: dict[str, str] = {
    "RoadNetwork": "evroute.network",
    "load_network": "evroute.network",
    "LineGraph": "evroute.linegraph",
    "build_line_graph": "evroute.linegraph",
    "VehicleProfile": "evroute.energy",
    "edge_prior": "evroute.energy",
    "elevation_potential_wh": "evroute.energy",
    "ModelPrior": "evroute.models.builders",
    "default_prior": "evroute.models.builders",
    "make_environment": "evroute.environments",
    "resolve_route": "evroute.routes",
    "resolve_endpoint": "evroute.routes",
    "optimal_route": "evroute.oracle",
    "ThompsonSampling": "evroute.policies",
    "make_policy": "evroute.policies",
    "RoutingBandit": "evroute.bandit",
    "ExperimentConfig": "evroute.experiments",
    "run_experiment": "evroute.experiments",
    "load_rounds": "evroute.experiments",
}

__all__ = [
    "EvrouteError",
    "ExperimentConfig",
    "LineGraph",
    "ModelPrior",
    "RoadNetwork",
    "RoutingBandit",
    "ThompsonSampling",
    "VehicleProfile",
    "__version__",
    "build_line_graph",
    "default_prior",
    "edge_prior",
    "elevation_potential_wh",
    "load_network",
    "load_rounds",
    "load_vehicle",
    "make_environment",
    "make_policy",
    "models",
    "optimal_route",
    "resolve_endpoint",
    "resolve_route",
    "run_experiment",
]


def load_vehicle(name_or_path: str | Path = "sumo_ev") -> VehicleProfile:
    """A vehicle profile: a shipped name (``evroute vehicles`` lists them) or a JSON file
    (:meth:`VehicleProfile.load <evroute.energy.VehicleProfile.load>`)."""
    from evroute import energy

    return energy.VehicleProfile.load(name_or_path)


def __getattr__(name: str) -> Any:
    """The public names of :data:`_WHERE` (and the :mod:`evroute.models` package), imported on first use."""
    if name == "models":
        return importlib.import_module("evroute.models")
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'evroute' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
