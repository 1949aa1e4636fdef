"""Index policies of Algorithm 2: optimistic / sampled edge estimates, rectified into oracle weights.

Energies are costs, so "optimistic" means LOW energy.  Each policy maps the marginal posterior
``N(mu_e, sigma_e^2)`` of every edge to an estimate ``mu~_e``:

* UCB:    ``mu~ = mu - sqrt(beta_t) sigma`` with ``beta_t = 2 log(|A| t^2 / sqrt(2 pi))`` (times ``beta_scale``);
* BUCB:   ``mu~ = Q(eta_t, N(mu, sigma^2)) = mu + sigma Phi^-1(eta_t)`` (the lower ``eta_t`` quantile) with
          ``eta_t = sqrt(2 pi)^omega / (2 |A|^omega t^xi)``, i.e. ``beta_t = 2 erfinv(1 - 2 eta_t)^2``;
* TS:     ``mu~ ~ N(mu, sigma^2)`` independently per edge;
* Greedy: ``mu~ = mu``.

Then the oracle weight is the rectified-Gaussian mean ``w_e = E[max(0, X)]``, ``X ~ N(mu~_e, varsigma_e^2)``
with ``varsigma^2`` the observation-noise variance, which is positive so Dijkstra applies.
``|A|`` is the number of base arms (edges of the line graph).

The indices are the project's one set (:mod:`evroute.kernels.indices`, shared with the BO policies), whose convention
is to maximise: energy is a cost, so UCB and Bayes-UCB take the negated index of the negated energy
(:func:`~evroute.kernels.indices.lower_confidence_index`, ``mu - w sigma`` bit for bit); a Thompson draw needs no sign.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from evroute.errors import ParameterError, check_positive, check_range
from evroute.kernels.indices import bayes_ucb_width, lower_confidence_index, thompson_sample
from evroute.models.base import EdgePosterior
from evroute.oracle import MIN_WEIGHT_WH, rectified_gaussian_mean

#: Largest ``beta_scale``: ``sqrt(1e6)`` = 1000 times GP-UCB's confidence width, already an index that ignores the
#: data; far above it (``1e308``) the width overflows float64 and the oracle gets NaN weights.
MAX_BETA_SCALE = 1e6


def ucb_beta(t: int, n_arms: int) -> float:
    """GP-UCB confidence parameter ``beta_t = 2 log(|A| t^2 / sqrt(2 pi))`` (paper Thm 3.1, finite case)."""
    return 2.0 * math.log(n_arms * t**2 / math.sqrt(2 * math.pi))


def bucb_eta(t: int, n_arms: int, xi: float = 1.0, omega: float = 1.0) -> float:
    """GP-BUCB quantile level ``eta_t = sqrt(2 pi)^omega / (2 |A|^omega t^xi)``."""
    return math.sqrt(2 * math.pi) ** omega / (2.0 * n_arms**omega * t**xi)


def bucb_beta(t: int, n_arms: int, xi: float = 1.0, omega: float = 1.0) -> float:
    """Equivalent ``beta_t = 2 erfinv(1 - 2 eta_t)^2 = Phi^-1(eta_t)^2`` (0 when ``eta_t >= 1/2``)."""
    return bayes_ucb_width(bucb_eta(t, n_arms, xi, omega)) ** 2


class IndexPolicy(ABC):
    """Maps an :class:`EdgePosterior` to per-edge estimates and to rectified oracle weights."""

    name: str = "index"

    @abstractmethod
    def estimates(self, posterior: EdgePosterior, t: int, rng: np.random.Generator) -> np.ndarray:
        """``(E,)`` estimates ``mu~`` (Wh) for round ``t >= 1``."""

    def weights(
        self, posterior: EdgePosterior, t: int, rng: np.random.Generator, potential_wh: np.ndarray | None = None
    ) -> np.ndarray:
        """``(E,)`` non-negative oracle weights ``E[max(0, N(mu~ - potential, varsigma^2))]`` (Wh).

        Args:
            potential_wh: optional ``(E,)`` potential difference along each edge (Wh, e.g.
                :func:`evroute.energy.elevation_potential_wh`).  Subtracting it changes every route's cost by
                the same constant (it telescopes between start and goal), so the best route is unchanged, but
                far fewer estimates need rectifying: see ``docs/regret.md``.  ``None`` is Algorithm 2 as published.
        """
        if t < 1:
            raise ParameterError(f"round index t must be >= 1, got {t}")
        mu_tilde = self.estimates(posterior, t, rng)
        if potential_wh is not None:
            mu_tilde = mu_tilde - potential_wh
        if posterior.noise_var is None:
            raise ParameterError("the posterior has no observation-noise variance (an edge model's posterior has one)")
        return np.maximum(rectified_gaussian_mean(mu_tilde, posterior.noise_var), MIN_WEIGHT_WH)

    def beta(self, t: int, n_arms: int) -> float:
        """Confidence parameter used at round ``t`` (0 for policies without one)."""
        return 0.0

    def params(self) -> dict[str, float]:
        return {}


class UCB(IndexPolicy):
    """Lower confidence bound on energy: ``mu - sqrt(beta_scale * beta_t) sigma``."""

    name = "ucb"

    def __init__(self, beta_scale: float = 1.0) -> None:
        self.beta_scale = check_range("beta_scale", beta_scale, 0.0, MAX_BETA_SCALE)

    def beta(self, t: int, n_arms: int) -> float:
        return self.beta_scale * max(ucb_beta(t, n_arms), 0.0)

    def estimates(self, posterior: EdgePosterior, t: int, rng: np.random.Generator) -> np.ndarray:
        return lower_confidence_index(posterior.mean, posterior.std, math.sqrt(self.beta(t, len(posterior.mean))))

    def params(self) -> dict[str, float]:
        return {"beta_scale": self.beta_scale}


class BayesUCB(IndexPolicy):
    """Bayes-UCB: the lower ``eta_t`` quantile of each edge posterior (``beta_scale`` scales ``beta_t``)."""

    name = "bucb"

    def __init__(self, xi: float = 1.0, omega: float = 1.0, beta_scale: float = 1.0) -> None:
        self.xi = check_positive("xi", xi)
        self.omega = check_positive("omega", omega, allow_zero=True)
        self.beta_scale = check_range("beta_scale", beta_scale, 0.0, MAX_BETA_SCALE)

    def beta(self, t: int, n_arms: int) -> float:
        return self.beta_scale * bucb_beta(t, n_arms, self.xi, self.omega)

    def estimates(self, posterior: EdgePosterior, t: int, rng: np.random.Generator) -> np.ndarray:
        return lower_confidence_index(posterior.mean, posterior.std, math.sqrt(self.beta(t, len(posterior.mean))))

    def params(self) -> dict[str, float]:
        return {"xi": self.xi, "omega": self.omega, "beta_scale": self.beta_scale}


class ThompsonSampling(IndexPolicy):
    """Independent per-edge posterior samples ``mu~_e ~ N(mu_e, sigma_e^2)`` (the paper's), or one joint posterior
    draw when the model provides it (``EdgePosterior.sampler``)."""

    name = "ts"

    def estimates(self, posterior: EdgePosterior, t: int, rng: np.random.Generator) -> np.ndarray:
        return thompson_sample(posterior, rng, joint=False)

    @staticmethod
    def round_key(rng: np.random.Generator) -> int:
        """The key of one round's lazily drawn samples (:class:`evroute.search.LazyThompsonEngine`): one 63-bit
        integer from the policy's stream, so a run stays reproducible from its seed and resumable from its RNG state
        (the lazy draws are another stream than :meth:`estimates`'s, used only at scale: see
        :data:`evroute.bandit.LAZY_TS_MIN_ARMS`)."""
        return int(rng.integers(0, 2**63))


class Greedy(IndexPolicy):
    """Posterior mean (exploitation only), a baseline."""

    name = "greedy"

    def estimates(self, posterior: EdgePosterior, t: int, rng: np.random.Generator) -> np.ndarray:
        return posterior.mean


POLICIES: dict[str, type[IndexPolicy]] = {"ucb": UCB, "bucb": BayesUCB, "ts": ThompsonSampling, "greedy": Greedy}


def make_policy(name: str, **params: float) -> IndexPolicy:
    """Build a policy by name (``ucb``, ``bucb``, ``ts``, ``greedy``) with keyword parameters."""
    key = name.lower()
    if key not in POLICIES:
        raise ParameterError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
    try:
        return POLICIES[key](**params)
    except TypeError:
        raise ParameterError(f"invalid parameters for policy {name!r}: {sorted(params)}") from None
