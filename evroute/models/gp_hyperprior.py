"""HP-GP-TS as reconstructed here (``--model gp-hp``): Thompson sampling over a finite set of candidate GP priors,
then over the edges under the sampled prior (issue 38 item 2; Sandberg & Chehreghani, arXiv 2502.01226).

**What the source says, and what is reconstructed.** The only text of the paper available to this project is its
abstract: HyperPrior GP-TS "utilizes a bi-level Thompson sampling scheme" for joint prior selection and regret
minimisation, and Prior-Elimination GP-TS "disqualifies priors with poor predictive performance".  This module is
the bi-level Thompson sampling that Bayes' rule defines for a FINITE set of candidate priors ``P_1..P_K`` with a
uniform hyperprior: the posterior probability of prior ``j`` after observations ``y`` is
``w_j = p(y | P_j) / sum_i p(y | P_i)`` (each ``p(y | P_j)`` the exact GP marginal likelihood,
:meth:`~evroute.models.gp_exact.ExactGPEdgeModel.log_evidence`, in Wh so that priors with other scales compare), and a
Thompson draw first samples ``j ~ w`` and then every edge from ``N(mu_j, sigma_j^2)`` (independent per edge, as the
project's GP-TS draws).  That is exact Thompson sampling under the hierarchical prior; whether the paper's
hyper-posterior, candidate set or any tempering differ could not be checked.  PE-GP-TS is NOT built: its
elimination rule (the statistic, the threshold or confidence level, when it is applied, and which surviving prior
is used) is not in the available text.

**Candidates** (fixed before any run, never from an environment): every combination of a prior standard deviation
``a sigma0``, a noise standard deviation ``b varsigma0`` and a context lengthscale ``c l0`` with ``a``, ``b``, ``c``
from :class:`HyperPriorConfig` (``sigma0``, ``varsigma0``, ``l0``: the model prior's,
:func:`evroute.models.builders.default_prior`); default ``a, b in {1/3, 1, 3}``, ``c = 1``: nine priors spanning about
a decade in each standard deviation around the default (the misspecified worlds draw theirs over a decade each).
Each candidate is an exact GP (``gp-exact``) whose hyperparameters stay fixed (no ML-II: selecting among priors
replaces it).  ``UCB``/``Bayes-UCB`` read the mixture's mean and variance
``sum_j w_j mu_j``, ``sum_j w_j (sigma_j^2 + mu_j^2) - mean^2``.

Cost: ``K`` exact GP posteriors per round plus ``K`` marginal likelihoods (``|U|^3`` each, ``U`` the visited edges).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.builders import ModelPrior, build_gp_exact

__all__ = ["HyperPriorConfig", "HyperPriorGPModel", "build_gp_hp", "parse_scales"]


def parse_scales(name: str, text: str) -> tuple[float, ...]:
    """``"0.5,2"`` -> ``(0.5, 2.0)``: positive finite multipliers, at least one."""
    try:
        out = tuple(float(v) for v in str(text).split(",") if v.strip())
    except ValueError:
        raise ParameterError(f"{name} must be comma-separated numbers, got {text!r}") from None
    if not out or not all(math.isfinite(v) and v > 0 for v in out):
        raise ParameterError(f"{name} must be positive numbers, got {text!r}")
    return out


@dataclass(frozen=True)
class HyperPriorConfig:
    """``--model-param`` of ``gp-hp``: comma-separated multipliers of the model prior's prior standard deviation,
    noise standard deviation and context lengthscale; the candidates are every combination."""

    prior_scales: str = "0.333,1,3"
    noise_scales: str = "0.333,1,3"
    lengthscales: str = "1"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prior_scales", "noise_scales", "lengthscales"):
            parse_scales(name, getattr(self, name))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ParameterError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")

    def grid(self) -> list[tuple[float, float, float]]:
        """``(a, b, c)`` of every candidate, in the order prior x noise x lengthscale."""
        return list(
            itertools.product(
                parse_scales("prior_scales", self.prior_scales),
                parse_scales("noise_scales", self.noise_scales),
                parse_scales("lengthscales", self.lengthscales),
            )
        )


class HyperPriorGPModel(EdgeModel):
    """Bi-level Thompson sampling over candidate GP edge models (module docstring).

    Args:
        candidates: ``K`` edge models over the same edges with a ``log_evidence()`` (``log p(y)``, Wh units).
        labels: ``K`` names of the candidates (for :meth:`hyperparameters`).
    """

    def __init__(self, candidates: list[Any], labels: list[str]) -> None:
        if not candidates or len(candidates) != len(labels):
            raise ParameterError("gp-hp needs at least one candidate prior and one label per candidate")
        self.candidates = candidates
        self.labels = list(labels)
        self.n_edges = int(candidates[0].n_edges)
        if any(c.n_edges != self.n_edges for c in candidates):
            raise ParameterError("the candidate models disagree on the number of edges")

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        for c in self.candidates:
            c.update(e, y)

    def advance(self, t: float) -> None:
        for c in self.candidates:
            c.advance(t)

    def log_evidences(self) -> np.ndarray:
        """``(K,)`` ``log p(y | P_j)`` of every candidate (Wh units)."""
        return np.array([float(c.log_evidence()) for c in self.candidates])

    def weights(self) -> np.ndarray:
        """``(K,)`` posterior probabilities of the candidates under the uniform hyperprior."""
        ll = self.log_evidences()
        w = np.exp(ll - ll.max())
        return np.asarray(w / w.sum())

    def posterior(self) -> EdgePosterior:
        w = self.weights()
        posts = [c.posterior() for c in self.candidates]
        mus = np.stack([p.mean for p in posts])
        var = np.stack([p.variance for p in posts])
        noise = np.stack([p.noise_var for p in posts])
        mean = w @ mus
        mix_var = np.maximum(w @ (var + mus**2) - mean**2, 0.0)
        sds = np.sqrt(var)

        def sampler(rng: np.random.Generator) -> np.ndarray:
            j = int(rng.choice(len(w), p=w))
            return np.asarray(mus[j] + sds[j] * rng.standard_normal(self.n_edges))

        return EdgePosterior(mean=mean, variance=mix_var, noise_var=w @ noise, sampler=sampler)

    def hyperparameters(self) -> dict[str, Any]:
        return {"candidates": self.labels, "weights": self.weights().tolist()}


def build_gp_hp(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
    """``gp-hp``: one fixed-hyperparameter ``gp-exact`` per candidate of :class:`HyperPriorConfig` (``params``)."""
    known = {f.name for f in dataclasses.fields(HyperPriorConfig)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(f"unknown gp-hp model parameters: {', '.join(unknown)}")
    cfg = HyperPriorConfig(**{"seed": int(seed), **params})
    if prior.arms is not None and prior.arms.kind != "edge":
        raise ParameterError("gp-hp learns edges only")
    candidates, labels = [], []
    for a, b, c in cfg.grid():
        p = dataclasses.replace(prior, prior_var=prior.prior_var * a * a, noise_var=prior.noise_var * b * b)
        candidates.append(
            build_gp_exact(
                linegraph,
                p,
                seed=cfg.seed,
                learn_hyper=False,
                refit_first=0,
                lengthscale=prior.kernel.lengthscale * c,
            )
        )
        labels.append(f"prior_sd x{a:g}, noise_sd x{b:g}, lengthscale x{c:g}")
    return HyperPriorGPModel(candidates, labels)
