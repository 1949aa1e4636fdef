"""Tree-ensemble bandit model (``--model trees``; issue 38's strong baseline): bootstrapped regression trees on the
edge features as the shared structure, an independent conjugate residual per edge.

**Model.** Edge ``e`` (length ``L_e`` m, physics energy ``mu0_e`` Wh) has expected energy
``f_e = mu0_e + L_e g(x_e) + r_e``: ``g`` is a per-metre correction (Wh/m) of the edge's features ``x_e`` (length m,
speed limit m/s, grade, road class = speed limit rounded to 10 km/h: the information of the GP's contexts, nothing
more), learnt by an ensemble of ``M`` regression trees; ``r_e ~ N(0, tau^2)`` is the edge's own residual (what its
features do not explain) and observations are ``y ~ N(f_e, s^2)``.  It is BLR's hierarchy
(:mod:`evroute.models.blr`) with trees in place of the linear regression.

**Uncertainty of the trees.** Member ``m`` is one extremely randomised tree (:class:`sklearn.tree.ExtraTreeRegressor`)
fitted to a Poisson bootstrap of the observations: edge ``e`` with ``n_e`` observations of mean ``ybar_e`` gets a
resampled count ``w ~ Poisson(n_e)`` (dropped when 0) and the resampled mean ``ybar_e + sqrt(s^2 / w) z`` (the
normal approximation of the mean of ``w`` resampled observations), target ``(mean - mu0_e) / L_e`` Wh/m with weight
``L_e^2 / (tau^2 + s^2 / w)`` (the target's precision).  Member ``m`` predicts ``G_me = mu0_e + L_e g_m(x_e)`` for
every edge; before ``min_edges`` edges are observed there is no member and ``G = mu0`` (the model is then BI).

**Posterior** (exact for the uniform mixture over members).  Given member ``m``, edge ``e``'s residual is conjugate:
gain ``k_e = tau^2 / (tau^2 + s^2 / n_e)`` (0 unobserved), mean ``M_me = G_me + k_e (ybar_e - G_me)``, variance
``(1 - k_e) tau^2``.  Over the members::

    E[f_e]   = mean_m M_me,        Var f_e = (1 - k_e) tau^2 + var_m M_me      (law of total variance)

Thompson sampling draws one member uniformly, then every edge from its conditional (``posterior().sampler``): one
tree's prediction per round, as bootstrapped Thompson sampling does; UCB and Bayes-UCB read the mixture's mean and
standard deviation (``mu - sqrt(beta_t) sd``, :mod:`evroute.policies.index`).

**Schedule and learnt variances** (cheap: ``M`` trees on at most the observed edges).  The trees are refitted at
the first round with ``min_edges`` observed edges, then every ``refit_every`` rounds; between refits new data enter
through the per-edge conjugate update.  At each refit the noise ``s^2`` is the pooled within-edge variance (the
model prior's noise variance as 2 pseudo-observations) and ``tau^2`` the moment estimate
``mean_e [(ybar_e - mean_m G_me)^2 - s^2 / n_e]`` over the observed edges, floored at ``resid_floor`` times the
model prior's ``sigma0^2`` (its start).  Member ``m`` of the refit at round ``t`` uses the random stream
``default_rng([seed, t, m])``: the same seed and data give the same trees, and a restored checkpoint (which holds
the ``(M, E)`` predictions, never a fitted tree) continues bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from evroute.errors import ParameterError
from evroute.linegraph import LineGraph
from evroute.models.base import EdgeModel, EdgePosterior
from evroute.models.builders import ModelPrior

__all__ = ["FEATURE_NAMES", "TreeConfig", "TreeEnsembleEdgeModel", "build_trees", "tree_features"]

#: the columns of :func:`tree_features`
FEATURE_NAMES: tuple[str, ...] = ("length_m", "speed_mps", "grade", "class_10kmh")
#: pseudo-observations of the model prior's noise variance in the pooled noise estimate
NOISE_PSEUDO = 2.0


@dataclass(frozen=True)
class TreeConfig:
    """``--model-param`` of ``trees``.

    Attributes:
        n_trees: ensemble members ``M`` (one bootstrap and one tree each).
        min_leaf: smallest number of distinct edges in a leaf (larger: smoother ``g``, more left to the residuals).
        refit_every: rounds between refits of the trees and variances.
        min_edges: observed edges needed before the first fit.
        resid_floor: floor of ``tau^2`` in units of the model prior's ``sigma0^2``.
        seed: the trees' random streams.
    """

    n_trees: int = 32
    min_leaf: int = 3
    refit_every: int = 4
    min_edges: int = 4
    resid_floor: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_trees", "min_leaf", "refit_every", "min_edges"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(f"{name} must be an integer >= 1, got {v!r}")
        if not (isinstance(self.resid_floor, int | float) and 0 < self.resid_floor <= 1):
            raise ParameterError(f"resid_floor must be in (0, 1], got {self.resid_floor!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ParameterError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")


def tree_features(linegraph: LineGraph) -> np.ndarray:
    """``(E, 4)`` raw edge features (:data:`FEATURE_NAMES`): length (m), speed limit (m/s), grade, road class (speed
    limit in km/h rounded to 10 km/h, in tens).  Trees need no scaling."""
    net = linegraph.network
    speed = np.asarray(net.speed_mps, dtype=np.float64)
    cols = [np.asarray(net.length_m, np.float64), speed, np.asarray(net.incline, np.float64), np.round(speed * 0.36)]
    return np.stack(cols, axis=1)


class TreeEnsembleEdgeModel(EdgeModel):
    """The tree-ensemble model of the module docstring.

    Args:
        prior_mean_wh: ``(E,)`` physics energies ``mu0`` (Wh).
        features: ``(E, p)`` edge features (:func:`tree_features`).
        length_m: ``(E,)`` edge lengths (m, > 0 after a 1 m floor).
        prior_var: ``sigma0^2`` (Wh^2), the residual variance before the first fit.
        noise_var: the noise variance before the first fit (Wh^2).
        config: :class:`TreeConfig`.
    """

    def __init__(
        self,
        prior_mean_wh: np.ndarray,
        features: np.ndarray,
        length_m: np.ndarray,
        prior_var: float,
        noise_var: float,
        config: TreeConfig | None = None,
    ) -> None:
        self.config = config or TreeConfig()
        self.prior_mean = np.asarray(prior_mean_wh, dtype=np.float64).copy()
        self.n_edges = len(self.prior_mean)
        self.features = np.asarray(features, dtype=np.float64)
        self.length = np.maximum(np.asarray(length_m, dtype=np.float64), 1.0)
        if self.features.shape[0] != self.n_edges or self.length.shape != (self.n_edges,):
            raise ParameterError(f"features must be ({self.n_edges}, p) and lengths ({self.n_edges},)")
        if not (prior_var > 0 and noise_var > 0 and math.isfinite(prior_var) and math.isfinite(noise_var)):
            raise ParameterError("prior and noise variances must be finite and > 0")
        self.prior_var = float(prior_var)
        self.noise0 = float(noise_var)
        self.noise_var = float(noise_var)
        self.resid_var = float(prior_var)
        self.members = np.zeros((0, self.n_edges))  # (M, E) predictions G (Wh); none before the first fit
        self.count = np.zeros(self.n_edges)
        self.total = np.zeros(self.n_edges)
        self.total_sq = np.zeros(self.n_edges)
        self.last_fit = -1  # round of the last refit (-1: none)

    def update(self, edges: np.ndarray, energies_wh: np.ndarray) -> None:
        e, y = self._check_batch(edges, energies_wh)
        np.add.at(self.count, e, 1.0)
        np.add.at(self.total, e, y)
        np.add.at(self.total_sq, e, y * y)

    def advance(self, t: float) -> None:
        """Refit at the first round with ``min_edges`` observed edges, then every ``refit_every`` rounds."""
        cfg = self.config
        if int(np.count_nonzero(self.count)) < cfg.min_edges:
            return
        if self.last_fit < 0 or t - self.last_fit >= cfg.refit_every:
            self.fit(int(t))

    # ------------------------------------------------------------------------------------------------- fit
    def pooled_noise_var(self) -> float:
        """The pooled within-edge variance with the prior's noise variance as :data:`NOISE_PSEUDO` observations."""
        seen = self.count > 0
        n = self.count[seen]
        scatter = np.maximum(self.total_sq[seen] - self.total[seen] ** 2 / n, 0.0)
        return float((scatter.sum() + NOISE_PSEUDO * self.noise0) / ((n - 1).sum() + NOISE_PSEUDO))

    def fit(self, t: int) -> None:
        """Refit the noise, the trees (member ``m`` from ``default_rng([seed, t, m])``) and ``tau^2``."""
        from sklearn.tree import ExtraTreeRegressor

        cfg = self.config
        s2 = self.noise_var = self.pooled_noise_var()
        seen = np.flatnonzero(self.count)
        n, ybar = self.count[seen], self.total[seen] / self.count[seen]
        x, length, m0 = self.features[seen], self.length[seen], self.prior_mean[seen]
        members = np.empty((cfg.n_trees, self.n_edges))
        for m in range(cfg.n_trees):
            rng = np.random.default_rng([cfg.seed, t, m])
            w = rng.poisson(n).astype(np.float64)
            z = rng.standard_normal(len(n))
            keep = w > 0
            if not keep.any():  # every count resampled to 0: this member keeps the physics energies
                members[m] = self.prior_mean
                continue
            wk = w[keep]
            target = (ybar[keep] + np.sqrt(s2 / wk) * z[keep] - m0[keep]) / length[keep]
            weight = length[keep] ** 2 / (self.resid_var + s2 / wk)
            tree = ExtraTreeRegressor(min_samples_leaf=cfg.min_leaf, random_state=int(rng.integers(2**31 - 1)))
            tree.fit(x[keep], target, sample_weight=weight / weight.mean())
            members[m] = self.prior_mean + self.length * tree.predict(self.features)
        self.members = members
        resid = (ybar - members[:, seen].mean(axis=0)) ** 2 - s2 / n
        self.resid_var = max(float(resid.mean()), cfg.resid_floor * self.prior_var)
        self.last_fit = t

    # ------------------------------------------------------------------------------------------- posterior
    def member_means(self) -> tuple[np.ndarray, np.ndarray]:
        """``(M, E)`` conditional means ``M_me`` given each member and the ``(E,)`` conditional variance (Wh^2)."""
        n = self.count
        seen = n > 0
        k = np.zeros(self.n_edges)
        k[seen] = self.resid_var / (self.resid_var + self.noise_var / n[seen])
        ybar = np.where(seen, self.total / np.maximum(n, 1.0), 0.0)
        g = self.members if len(self.members) else self.prior_mean[None, :]  # before any fit: the physics energies
        means = g + k * (ybar - g)
        return means, (1.0 - k) * self.resid_var

    def posterior(self) -> EdgePosterior:
        means, cond_var = self.member_means()
        sd = np.sqrt(cond_var)

        def sampler(rng: np.random.Generator) -> np.ndarray:
            m = int(rng.integers(len(means)))
            return np.asarray(means[m] + sd * rng.standard_normal(self.n_edges))

        return EdgePosterior(
            mean=means.mean(axis=0),
            variance=cond_var + means.var(axis=0),
            noise_var=np.full(self.n_edges, self.noise_var),
            sampler=sampler,
        )

    def hyperparameters(self) -> dict[str, Any]:
        return {
            "noise_var": self.noise_var,
            "resid_var": self.resid_var,
            "members": len(self.members),  # 0 before the first fit
            "last_fit": self.last_fit,
        }


def build_trees(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
    """The ``trees`` model of ``linegraph``: the prior's mean, ``sigma0^2`` and noise variance as starting values,
    ``params`` the fields of :class:`TreeConfig` (``seed``: the run's unless set)."""
    if prior.prior_var_edges is not None:
        raise ParameterError("the trees model cannot take per-edge prior variances (init=oracle on this environment)")
    known = {f.name for f in fields(TreeConfig)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(f"unknown trees model parameters: {', '.join(unknown)}")
    cfg = TreeConfig(**{"seed": int(seed), **params})
    return TreeEnsembleEdgeModel(
        prior.prior_mean_wh,
        tree_features(linegraph),
        np.asarray(linegraph.network.length_m, dtype=np.float64),
        prior.prior_var,
        prior.noise_var,
        cfg,
    )
