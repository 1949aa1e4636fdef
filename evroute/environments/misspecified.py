"""Worlds the models did not come from (issue 38, item 1): generating parameters drawn per seed, other truth and
noise families.

Registered as ``misspecified`` (``--env misspecified``, parameters :class:`MisspecConfig`).  Every seed draws its OWN
generating parameters from the wide ranges :data:`RANGES` (independent stream ``default_rng([seed, 38])``, so the
same seed is the same world for every model), then the truth of one of two families:

* ``truth="gp"``: the consistent environment (:mod:`evroute.environments.consistent`: the paper's GP perturbation,
  log-normal on the dissipative energy, exact optimum by one Dijkstra) with the drawn outputscale and noise fractions
  (a decade each), context lengthscale, graph Matérn ``nu`` (continuous in ``[1.5, 4]``: never the default model
  prior's ``nu = 1``, by construction; :mod:`evroute.models.builders`), ``kappa`` and the product weight ``w``.
  ``env.config`` is that drawn :class:`~evroute.environments.consistent.ConsistentConfig` (the oracle ablation
  reads it);
* ``truth="road-class"``: no Gaussian process at all.  The reduced cost (dissipative energy, ``r_det >= 0``) of edge
  ``e`` of road class ``c(e)`` (its speed limit rounded to 10 km/h) is

      r_e = r_det(e) (1 + a_c(e)) m_e + j_e,      f_e = p_e + r_e,

  with a per-class relative offset ``a_c ~ N(0, class_sd^2)`` (floored at -0.9), an independent per-edge log-normal
  factor ``m_e = exp(s z_e - s^2 / 2)``, ``s = iid_sd``, and a junction effect ``j_e >= 0``: the chance
  ``q_k ~ U(0, 1)`` (one per junction size ``k``, the number of turns out of the edge's end) of stopping there
  times the speed limit squared (the kinetic energy lost), scaled so that its root mean square is
  ``junction_frac * sigma_det``.  ``r_e >= 0``, so the exact optimum is still one Dijkstra on the reduced costs.
  ``prior_var`` is the realised mean square of ``f - E_det`` (Wh^2).

Feedback has the drawn noise variance ``(noise_frac sigma_det)^2`` in the family ``noise`` (:mod:`.noise`:
``gaussian``, heavy-tailed ``student-t`` with ``df`` degrees of freedom, or ``trip``-level correlated with share
``trip_share``).  ``sigma_det`` is the standard deviation of ``E_det`` over the edges (Wh).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile, elevation_potential_wh, network_energy_wh
from evroute.environments.base import config_from_params
from evroute.environments.consistent import ConsistentConfig, ConsistentEnvironment
from evroute.environments.noise import check_noise, draw_noise
from evroute.errors import ParameterError, check_positive
from evroute.linegraph import LineGraph

__all__ = ["RANGES", "TRUTHS", "MisspecConfig", "MisspecifiedEnvironment", "RoadClassDraw", "build", "parse_params"]

TRUTHS: tuple[str, ...] = ("gp", "road-class")

#: generating parameter -> (low, high, scale) of its per-seed draw: ``log`` (log-uniform) or ``lin`` (uniform)
RANGES: dict[str, tuple[float, float, str]] = {
    "outputscale_frac": (0.05, 0.5, "log"),  # sigma0 / sigma_det (the paper's 0.25 inside)
    "noise_frac": (0.03, 0.3, "log"),  # noise std / sigma_det (the paper's 0.1 inside)
    "lengthscale": (0.3, 3.0, "log"),  # context lengthscale, standardised units
    "graph_nu": (1.5, 4.0, "lin"),  # graph Matérn order (continuous: dense draws)
    "graph_kappa": (0.5, 4.0, "log"),  # graph Matérn lengthscale (hops)
    "product_weight": (0.0, 1.0, "lin"),  # share of the product term
    "class_sd": (0.05, 0.5, "log"),  # road-class truth: s.d. of the per-class relative offsets
    "junction_frac": (0.05, 0.5, "log"),  # road-class truth: junction effect's rms / sigma_det
    "iid_sd": (0.05, 0.3, "log"),  # road-class truth: per-edge log-normal s.d.
}

_GP_FIELDS = ("outputscale_frac", "noise_frac", "lengthscale", "graph_nu", "graph_kappa", "product_weight")
_ROAD_FIELDS = ("noise_frac", "class_sd", "junction_frac", "iid_sd")


@dataclass(frozen=True)
class MisspecConfig:
    """The user's parameters of the ``misspecified`` environment (the generating values are drawn per seed)."""

    truth: str = "gp"  # gp | road-class
    noise: str = "gaussian"  # gaussian | student-t | trip
    df: float = 3.0  # student-t degrees of freedom (> 2)
    trip_share: float = 0.5  # trip noise: share of the noise variance common to a trip
    max_cv: float = 1.0  # gp truth: cap on the reduced costs' coefficient of variation (as consistent)

    def __post_init__(self) -> None:
        if self.truth not in TRUTHS:
            raise ParameterError(f"truth must be one of {', '.join(TRUTHS)}, got {self.truth!r}")
        check_noise(self.noise, self.df, self.trip_share)
        check_positive("max_cv", self.max_cv, allow_zero=True)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RoadClassDraw:
    """The drawn generating parameters of the road-class truth (no kernel: the oracle ablation refuses it)."""

    noise_frac: float
    class_sd: float
    junction_frac: float
    iid_sd: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def draw_parameters(seed: int, names: tuple[str, ...]) -> dict[str, float]:
    """The generating values ``names`` of ``seed``, each drawn from :data:`RANGES` (stream ``[seed, 38]``; every
    range is drawn in :data:`RANGES` order, so a value does not depend on which others are used)."""
    rng = np.random.default_rng([int(seed), 38])
    u = rng.random(len(RANGES))
    out = {}
    for (name, (lo, hi, scale)), ui in zip(RANGES.items(), u, strict=True):
        out[name] = float(math.exp(math.log(lo) + ui * math.log(hi / lo)) if scale == "log" else lo + ui * (hi - lo))
    return {k: out[k] for k in names}


class MisspecifiedEnvironment(ConsistentEnvironment):
    """A consistent-type environment (reduced costs ``>= 0``, exact optimum) with a drawn world and noise family.

    Attributes (besides :class:`~evroute.environments.consistent.ConsistentEnvironment`'s):
        settings: the user's :class:`MisspecConfig`; ``config``: the drawn generating parameters.
    """

    name = "misspecified"
    settings: MisspecConfig

    def observe(self, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Noisy energies (Wh) of the driven ``edges`` of ONE trip, noise of the family ``settings.noise``."""
        edges = np.asarray(edges, dtype=np.int64)
        s = self.settings
        eps = draw_noise(s.noise, len(edges), self.noise_var, rng, df=s.df, trip_share=s.trip_share)
        return self.true_mean_wh[edges] + eps

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **self.settings.to_dict(), "generating": self.config.to_dict()}


def road_classes(speed_mps: np.ndarray) -> np.ndarray:
    """``(E,)`` road class of every edge: the index of its speed limit rounded to 10 km/h among the distinct ones."""
    rounded = np.round(np.asarray(speed_mps, dtype=np.float64) * 3.6 / 10.0)
    return np.unique(rounded, return_inverse=True)[1].reshape(-1)


def road_class_truth(
    linegraph: LineGraph, e_det: np.ndarray, pot: np.ndarray, draw: RoadClassDraw, seed: int
) -> np.ndarray:
    """``(E,)`` true reduced costs ``r_e`` (Wh, ``>= 0``) of the road-class truth of the module docstring."""
    net = linegraph.network
    r_det = np.maximum(e_det - pot, 0.0)
    rng = np.random.default_rng([int(seed), 38, 1])
    cls = road_classes(net.speed_mps)
    a = np.maximum(rng.normal(0.0, draw.class_sd, int(cls.max()) + 1), -0.9)
    s = draw.iid_sd
    m = np.exp(s * rng.standard_normal(len(e_det)) - 0.5 * s * s)
    size = np.bincount(np.asarray(linegraph.turns[:, 0], dtype=np.int64), minlength=len(e_det))
    sizes, which = np.unique(size, return_inverse=True)
    q = rng.random(len(sizes))[which.reshape(-1)]
    shape = q * np.asarray(net.speed_mps, dtype=np.float64) ** 2
    rms = float(np.sqrt(np.mean(shape**2)))
    j = draw.junction_frac * float(np.std(e_det)) * shape / rms if rms > 0 else np.zeros_like(shape)
    return np.asarray(r_det * (1.0 + a[cls]) * m + j, dtype=np.float64)


def parse_params(params: dict[str, Any]) -> MisspecConfig:
    """:class:`MisspecConfig` from an experiment's ``environment`` dict (:class:`ParameterError` if invalid)."""
    return config_from_params(MisspecConfig, params, "misspecified")


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> MisspecifiedEnvironment:
    """Registry entry: the misspecified world of ``seed`` (module docstring)."""
    cfg = parse_params(params)
    if cfg.truth == "gp":
        v = draw_parameters(seed, _GP_FIELDS)
        drawn = ConsistentConfig(
            outputscale_frac=v["outputscale_frac"],
            noise_frac=v["noise_frac"],
            lengthscale=v["lengthscale"],
            graph_nu=v["graph_nu"],
            graph_kappa=v["graph_kappa"],
            product_weight=v["product_weight"],
            max_cv=cfg.max_cv,
        )
        base = ConsistentEnvironment.sample(linegraph, vehicle=vehicle, config=drawn, seed=seed)
        env = MisspecifiedEnvironment(
            linegraph,
            base.prior_mean_wh,
            base.true_mean_wh,
            base.prior_var,
            base.noise_var,
            drawn,
            base.potential_wh,
            base.marginal_var_wh2,
        )
    else:
        road = RoadClassDraw(**draw_parameters(seed, _ROAD_FIELDS))
        net = linegraph.network
        e_det = network_energy_wh(net, vehicle)
        pot = elevation_potential_wh(net, vehicle)
        f = pot + road_class_truth(linegraph, e_det, pot, road, seed)
        noise_var = road.noise_frac**2 * float(e_det.var())
        prior_var = float(np.mean((f - e_det) ** 2))
        env = MisspecifiedEnvironment(linegraph, e_det, f, prior_var, noise_var, road, pot)  # type: ignore[arg-type]
    env.settings = cfg
    return env


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = MisspecConfig
