"""Experiments, the composition root: configs, the model registry (:mod:`evroute.experiments.registry`), the
resumable runner and result loading (imported on first use)."""

from typing import Any

__all__ = ["ExperimentConfig", "build_problem", "load_rounds", "run_experiment", "run_seed"]


def __getattr__(name: str) -> Any:
    if name == "ExperimentConfig":
        from evroute.experiments.config import ExperimentConfig

        return ExperimentConfig
    if name in __all__:
        from evroute.experiments import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'evroute.experiments' has no attribute {name!r}")
