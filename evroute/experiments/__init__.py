"""Experiments: configs, the resumable runner and result loading."""

from evroute.experiments.config import ExperimentConfig
from evroute.experiments.runner import build_problem, load_rounds, run_experiment, run_seed

__all__ = ["ExperimentConfig", "build_problem", "load_rounds", "run_experiment", "run_seed"]
