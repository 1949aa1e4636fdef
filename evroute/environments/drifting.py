"""Time-varying energy environment: every edge's expected energy drifts over rounds (issue 5, item 5).

The static environment draws ``f_0 = E_det + sigma0 g_0`` with ``g_0`` one draw of the paper's GP perturbation
(:func:`evroute.environments.paper.sample_prior_function`). The drifting environment adds ``C`` further independent
draws ``g_1 .. g_C`` of the same perturbation (so each component is smooth and correlated over the graph exactly
like the static one), weighted by smooth temporal coefficients:

    f(e, t) = f_0(e) + sigma0 [ a_d (g_1(e) sin(2 pi t / P + phi) + g_2(e) cos(2 pi t / P + phi))
                                + a_s sum_{k=1}^{K} g_{2+k}(e) c_k(t) ]

* the **daily cycle** (temperature / traffic): period ``P`` rounds, edge-specific amplitude and phase (the pair
  ``g_1, g_2`` gives every edge its own amplitude ``a_d sqrt(g_1^2 + g_2^2)`` and phase), random global phase
  ``phi``;
* the **slow drift**: ``K`` coefficients ``c_k(t)``, each an independent draw of a stationary unit-variance GP with
  squared-exponential covariance of lengthscale ``L`` rounds, represented exactly enough by ``n_features`` random
  Fourier features so that it is defined (and infinitely smooth) at every real ``t``.

Time ``t`` is the round index (one round = one time unit); all draws are seeded.  Registered as environment
``drifting`` (``--env drifting``) and configured through the experiment's ``environment`` dict: ``drift``
(``"daily"``, the default: cycle + drift, ``"slow"``: drift only) and the ``drift_*`` keys of :class:`DriftConfig`
(without the prefix there), e.g. ``{"drift": "daily", "drift_period": 100, "drift_daily_amplitude": 1.0}``; every
other key is an :class:`~evroute.environments.paper.EnvironmentConfig` field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile
from evroute.environments.paper import EnvironmentConfig, PaperEnvironment, sample_prior_function
from evroute.errors import ParameterError, check_positive
from evroute.linegraph import LineGraph

__all__ = ["DRIFT_KINDS", "DriftConfig", "DriftingEnvironment", "build", "parse_params"]

DRIFT_KINDS: tuple[str, ...] = ("daily", "slow")


@dataclass(frozen=True)
class DriftConfig:
    """Temporal drift of the expected energies (amplitudes in units of ``sigma0``, times in rounds)."""

    kind: str = "daily"  # daily | slow (none is the static environment)
    period: float = 100.0  # P: rounds per "day"
    daily_amplitude: float = 1.0  # a_d
    slow_amplitude: float = 0.5  # a_s
    slow_lengthscale: float = 150.0  # L: lengthscale of the slow drift (rounds)
    n_slow: int = 2  # K: number of slow-drift components
    n_features: int = 64  # random Fourier features per slow coefficient

    def __post_init__(self) -> None:
        if self.kind not in DRIFT_KINDS:
            raise ParameterError(f"drift must be one of {', '.join(DRIFT_KINDS)}, got {self.kind!r}")
        check_positive("drift_period", self.period)
        check_positive("drift_daily_amplitude", self.daily_amplitude, allow_zero=True)
        check_positive("drift_slow_amplitude", self.slow_amplitude, allow_zero=True)
        check_positive("drift_slow_lengthscale", self.slow_lengthscale)
        if int(self.n_slow) < 0 or int(self.n_features) < 1:
            raise ParameterError(
                f"drift_n_slow must be >= 0 and drift_n_features >= 1, got {self.n_slow}, {self.n_features}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_params(params: dict[str, Any]) -> tuple[EnvironmentConfig, DriftConfig]:
    """Split an experiment's ``environment`` dict into the static (paper) config and the drift."""
    from evroute.environments.paper import parse_params as parse_static

    base = {k: v for k, v in params.items() if k != "drift" and not k.startswith("drift_")}
    drift = {k[len("drift_") :]: v for k, v in params.items() if k.startswith("drift_")}
    kind = str(params.get("drift", "daily")).lower()
    if kind not in DRIFT_KINDS:
        raise ParameterError(f"drift must be one of {', '.join(DRIFT_KINDS)}, got {kind!r}")
    cfg = parse_static(base)
    known = {f.name for f in fields(DriftConfig)} - {"kind"}
    if set(drift) - known:
        raise ParameterError(f"unknown drift parameters: {sorted('drift_' + k for k in set(drift) - known)}")
    ints = {"n_slow", "n_features"}
    values: dict[str, Any] = {k: int(v) if k in ints else float(v) for k, v in drift.items()}
    try:
        return cfg, DriftConfig(kind=kind, **values)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"invalid drift parameter: {exc}") from None


class DriftingEnvironment(PaperEnvironment):
    """A :class:`~evroute.environments.paper.PaperEnvironment` whose ``true_mean_wh`` is ``f(., t)`` of the round
    set by :meth:`advance`.

    Attributes (besides the base class's):
        base_mean_wh: ``(E,)`` static part ``f_0`` (Wh).
        components_wh: ``(C, E)`` spatial components ``sigma0 g_c`` (Wh), ``C = 2 + K`` (daily) or ``K`` (slow).
        drift: the :class:`DriftConfig`.
    """

    name = "drifting"
    static = False

    def __init__(
        self,
        linegraph: LineGraph,
        prior_mean_wh: np.ndarray,
        base_mean_wh: np.ndarray,
        components_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        config: EnvironmentConfig,
        drift: DriftConfig,
        rng: np.random.Generator,
    ) -> None:
        super().__init__(linegraph, prior_mean_wh, base_mean_wh, prior_var, noise_var, config)
        self.base_mean_wh = np.asarray(base_mean_wh, dtype=np.float64).copy()
        self.components_wh = np.asarray(components_wh, dtype=np.float64)
        self.drift = drift
        self.phase = float(rng.uniform(0.0, 2.0 * np.pi))
        k, j = int(drift.n_slow), int(drift.n_features)
        # RFF of a unit-variance SE kernel: omega ~ N(0, 1 / L^2), c(t) = sqrt(2 / J) sum_j w_j cos(omega_j t + b_j)
        self._omega = rng.standard_normal((k, j)) / drift.slow_lengthscale
        self._bias = rng.uniform(0.0, 2.0 * np.pi, (k, j))
        self._weights = rng.standard_normal((k, j))
        self.time: float | None = None
        self.advance(0)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            **{f"drift_{k}" if k != "kind" else "drift": v for k, v in self.drift.to_dict().items()},
        }

    def coefficients(self, t: float) -> np.ndarray:
        """``(C,)`` temporal coefficients at round ``t`` (units of ``sigma0``)."""
        d = self.drift
        slow = (
            d.slow_amplitude
            * np.sqrt(2.0 / d.n_features)
            * np.sum(self._weights * np.cos(self._omega * float(t) + self._bias), axis=1)
        )
        if d.kind == "slow":
            return slow
        ang = 2.0 * np.pi * float(t) / d.period + self.phase
        return np.concatenate([[d.daily_amplitude * np.sin(ang), d.daily_amplitude * np.cos(ang)], slow])

    def mean_at(self, t: float) -> np.ndarray:
        """``(E,)`` true expected energies ``f(., t)`` (Wh) at round ``t``."""
        return self.base_mean_wh + self.coefficients(t) @ self.components_wh

    def advance(self, t: float) -> bool:
        """Move the truth to round ``t``; returns whether it changed (always, unless ``t`` is the current round)."""
        if self.time is not None and float(t) == self.time:
            return False
        self.time = float(t)
        self.true_mean_wh = self.mean_at(t)
        return True

    @classmethod
    def sample_drifting(
        cls,
        linegraph: LineGraph,
        drift: DriftConfig,
        *,
        vehicle: VehicleProfile | None = None,
        config: EnvironmentConfig | None = None,
        seed: int = 0,
    ) -> DriftingEnvironment:
        """Draw a drifting environment: the static one of ``seed`` plus seeded drift components."""
        static = PaperEnvironment.sample(linegraph, vehicle=vehicle, config=config, seed=seed)
        cfg = static.config
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x7D1F7]))
        n_comp = int(drift.n_slow) + (2 if drift.kind == "daily" else 0)
        sigma0 = np.sqrt(static.prior_var)
        comps = (
            np.stack([sigma0 * sample_prior_function(linegraph, cfg, rng) for _ in range(n_comp)])
            if n_comp
            else np.zeros((0, static.n_edges))
        )
        return cls(
            linegraph,
            static.prior_mean_wh,
            static.true_mean_wh,
            comps,
            static.prior_var,
            static.noise_var,
            cfg,
            drift,
            rng,
        )


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> DriftingEnvironment:
    """Registry entry: the drifting environment of ``seed`` with the parameters ``params`` (see the module doc)."""
    cfg, drift = parse_params(params)
    return DriftingEnvironment.sample_drifting(linegraph, drift, vehicle=vehicle, config=cfg, seed=seed)


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = EnvironmentConfig
#: schema of the ``drift_*`` parameters
DRIFT_CONFIG = DriftConfig
