"""Edge models: posteriors over expected edge energies (Bayesian inference, Gaussian processes)."""

from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.bi import BayesianEdgeModel

__all__ = ["BayesianEdgeModel", "EdgeModel", "EdgePosterior"]
