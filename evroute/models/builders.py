"""One builder path for every edge model: the prior a user has, and each model's keyword parameters.

A model is built from a :class:`ModelPrior` alone (:func:`evroute.models.build`); it never sees an environment.  The
prior holds what a user of the library has before driving: the network (its line graph: structure, Laplacian,
edge contexts), the arms (edges, or turns: :mod:`evroute.arms`), the physics energies ``E_det`` (Eq. 8, the prior
mean), the prior and noise variances and the initial GP kernel hyper-parameters.  :func:`default_prior` fills it
with documented defaults computed from ``E_det`` and the network alone (:data:`NEUTRAL`), fixed from sources that
owe nothing to the simulated environments (issue 38: the earlier defaults were the consistent environment's
generating fractions 0.25 and 0.1 of ``sigma_det``, its ``nu = 2``, ``kappa = 1`` and ``w = 1/2``, so "no oracle"
meant the oracle's numbers):

* prior standard deviation ``sigma0 = prior_cv * rms(E_det)``, ``rms(E_det)`` the root mean square of the edges'
  physics energies (Wh), with ``prior_cv = 0.16``: the mean absolute error of the constant-speed physics model
  (Eq. 8, the prior mean itself) against FASTSim 3 over eight vehicle-cycle pairs, measured by
  ``studies.energy_validation`` (``docs/results/energy_validation.md`` (a), "eq8: mean -16.1 %", at commit 92600c2);
* noise standard deviation ``noise_to_prior * sigma0`` with ``noise_to_prior = 1/2``: only a starting value, the
  noise is LEARNT (BI's empirical Bayes refits ``refit_first``, ``gp-exact``'s ``learn_noise``);
* context lengthscale ``sqrt(d)`` for the ``d`` standardised edge contexts (each context has unit variance, so
  ``sqrt(d)`` is the scale of the distance between two edges' context vectors), refit by ML-II;
* graph Matérn ``nu = 1`` (the least smooth integer order: the sparse and local graph solvers need an integer, and
  nothing in the physics says the residual energy is smooth along the roads; ``nu`` is not learnt) and
  ``kappa = correlation_m / mean edge length`` graph hops with ``correlation_m = 300`` m, the distance over which
  a road's traffic and grade persist (about one urban signal spacing); ``kappa`` is not learnt either;
* ``product_weight = 3/4`` (the graph-correlated term's initial share; both outputscales are refit by ML-II).

Hyper-parameters are then learnt from the data by the models that learn them (exact-GP type-II maximum likelihood
refits, SVGP Adam steps).  The environment's own generating values enter only through the named ablation
``--model-param init=oracle``, which the experiment runner (the composition root, :mod:`evroute.experiments`)
resolves; this module never reads an environment.

:func:`build_gp_family` is the one constructor of the three GP models (``gp``, ``gp-exact``, ``gp-tv``): initial
kernel values (user value, else the prior's), thread setting and config coercion live here once.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from evroute.errors import ParameterError, check_range
from evroute.linegraph import CONTEXT_NAMES, LineGraph
from evroute.models.base import EdgeModel

if TYPE_CHECKING:  # pragma: no cover
    from evroute.arms import ArmSpace

__all__ = [
    "INITS",
    "KERNEL_FIELDS",
    "NEUTRAL",
    "KernelInit",
    "KernelInitParams",
    "ModelPrior",
    "PriorParams",
    "TurnKernelParams",
    "arm_prior",
    "build_arc_gp",
    "build_bi",
    "build_bi_arms",
    "build_gp",
    "build_gp_exact",
    "build_gp_family",
    "build_gp_tv",
    "build_kr",
    "default_prior",
    "set_threads",
]

#: ``--model-param init`` values: ``default`` (neutral defaults, :func:`default_prior`), ``oracle`` (the
#: environment's generating values and actual per-edge variances: an ablation, resolved by the experiment runner) or
#: ``oracle-v1`` (the generating values with the scalar ``prior_var`` only: the oracle before the actual variances
#: were handed over, which the results made before reproduce with).
INITS: tuple[str, ...] = ("default", "oracle", "oracle-v1")

#: the initial GP kernel hyper-parameters every GP model takes
KERNEL_FIELDS: tuple[str, ...] = ("graph_nu", "graph_kappa", "lengthscale", "product_weight")


@dataclass(frozen=True)
class KernelInit:
    """Initial GP kernel hyper-parameters: graph Matérn ``nu``, ``kappa``; context lengthscale (standardised units);
    ``product_weight = s_1 / (s_1 + s_2)``."""

    graph_nu: float
    graph_kappa: float
    lengthscale: float
    product_weight: float


@dataclass(frozen=True)
class Neutral:
    """The documented defaults of :func:`default_prior` (sources in the module docstring)."""

    prior_cv: float = 0.16  # sigma0 / rms(E_det): Eq. 8's mean absolute error against FASTSim 3
    noise_to_prior: float = 0.5  # initial noise std / sigma0 (learnt)
    product_weight: float = 0.75
    graph_nu: float = 1.0
    correlation_m: float = 300.0  # graph kappa = correlation_m / mean edge length (hops)


NEUTRAL = Neutral()


@dataclass(frozen=True)
class ModelPrior:
    """What a model is told before any data.

    Attributes:
        prior_mean_wh: ``(E,)`` prior mean, the physics energies ``E_det`` (Wh).
        prior_var: ``sigma0^2`` (Wh^2), average prior variance of the expected energies.
        noise_var: observation-noise variance (Wh^2).
        kernel: initial GP kernel hyper-parameters.
        init: ``"default"`` (neutral defaults), ``"oracle"`` or ``"oracle-v1"`` (the environment's generating values).
        prior_var_edges: ``(E,)`` prior variance of each expected energy (Wh^2, > 0), or ``None``: ``prior_var``
            (BI) and ``prior_var`` times the kernel's diagonal (GP).  Set only by the oracle ablation, for an
            environment whose actual variances are not of that form (the consistent environment's capped ones):
            BI takes them as its per-edge prior variances, ``gp-exact`` scales its kernel to have them as its
            diagonal at the initial hyper-parameters.
        linegraph: the network's line graph (``E`` nodes: structure, graph Laplacian, edge contexts); every model
            is built on it (:func:`evroute.models.build` needs it).
        arms: the bandit's arms (:class:`~evroute.arms.ArmSpace`), or ``None`` for the edges; turn arms build the
            kinds that can learn them (``bi``, ``gp-exact``) over the arms.
    """

    prior_mean_wh: np.ndarray
    prior_var: float
    noise_var: float
    kernel: KernelInit
    init: str = "default"
    prior_var_edges: np.ndarray | None = None
    linegraph: LineGraph | None = field(default=None, repr=False, compare=False)
    arms: ArmSpace | None = field(default=None, repr=False, compare=False)


def default_prior(linegraph: LineGraph, prior_mean_wh: np.ndarray) -> ModelPrior:
    """The default prior of the module docstring, from ``E_det`` (``(E,)``, Wh) and the network only."""
    e_det = np.asarray(prior_mean_wh, dtype=np.float64)
    sigma0 = NEUTRAL.prior_cv * math.sqrt(float(np.mean(e_det**2)))
    d = len(CONTEXT_NAMES)  # the columns of linegraph.contexts(), not computed here (~0.5 s at a million edges)
    mean_length_m = float(np.mean(linegraph.network.length_m))
    kernel = KernelInit(
        graph_nu=NEUTRAL.graph_nu,
        graph_kappa=NEUTRAL.correlation_m / max(mean_length_m, 1e-3),
        lengthscale=math.sqrt(d),
        product_weight=NEUTRAL.product_weight,
    )
    noise_var = (NEUTRAL.noise_to_prior * sigma0) ** 2
    return ModelPrior(e_det, sigma0**2, noise_var, kernel, "default", linegraph=linegraph)


@dataclass(frozen=True)
class PriorParams:
    """``--model-param`` of every edge model: ``init`` selects the prior (``default``, or the ``oracle`` and
    ``oracle-v1`` ablations)."""

    init: Literal["default", "oracle", "oracle-v1"] = "default"

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ParameterError(f"init must be one of {', '.join(INITS)}, got {self.init!r}")


@dataclass(frozen=True)
class KernelInitParams:
    """``--model-param`` of the GP models besides their config dataclass: initial kernel values overriding the
    prior's (``None``: the prior's) and ``threads`` (torch and BLAS threads of the process; 0 keeps the setting)."""

    graph_nu: float | None = None
    graph_kappa: float | None = None
    lengthscale: float | None = None
    product_weight: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ParameterError(f"threads must be an integer >= 0, got {self.threads!r}")
        for name in ("graph_nu", "graph_kappa", "lengthscale"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 0.0, low_open=True)
        if self.product_weight is not None:
            check_range("product_weight", self.product_weight, 0.0, 1.0)


def set_threads(n: int, *, blas: bool = True) -> None:
    """Limit torch (and, with ``blas``, the BLAS libraries of the process) to ``n`` threads (``0``: keep them).

    One thread by default: small dense algebra is many times slower multi-threaded on a shared CPU, and sweeps
    parallelise over processes.  The BLAS limit is process-wide and persists: later seeds' environments, built in
    the same process, are then computed with another BLAS thread count, which changes their last bits
    (:func:`evroute.experiments.runner.use_blas_threads`); the SVGP (torch only) therefore leaves BLAS alone.
    """
    if n <= 0:
        return
    import torch

    torch.set_num_threads(n)
    if blas:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)


def _coerce(config_cls: type, params: dict[str, Any], what: str) -> dict[str, Any]:
    """Check ``params`` against the fields of ``config_cls``; strings for booleans and integral floats for integers
    are converted (values from Python callers; the CLI's values are typed by :mod:`evroute.validation`)."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    unknown = set(params) - set(fields)
    if unknown:
        raise ParameterError(f"unknown {what} model parameters: {', '.join(sorted(unknown))}")
    out = dict(params)
    for k, v in params.items():
        tp = fields[k].type
        if tp in ("bool", bool) and isinstance(v, str):
            out[k] = v.lower() in ("1", "true", "yes")
        elif tp in ("int", int) and isinstance(v, float) and v.is_integer():
            out[k] = int(v)
    return out


def build_gp_family(
    model_cls: Callable[..., EdgeModel],
    config_cls: type,
    what: str,
    linegraph: LineGraph,
    prior: ModelPrior,
    *,
    seed: int = 0,
    blas_threads: bool = True,
    **params: Any,
) -> EdgeModel:
    """A GP edge model ``model_cls(E_det, sigma0^2, noise_var, laplacian, contexts, config=..., **kernel)``.

    Args:
        model_cls, config_cls: the model class and its config dataclass (``seed`` is set when it has that field).
        what: the model's name in error messages.
        blas_threads: whether ``threads`` also limits the BLAS libraries (:func:`set_threads`).
        prior: the prior; ``params`` may override its kernel values (:data:`KERNEL_FIELDS`).
        params: config fields, kernel values and ``threads`` (:class:`KernelInitParams`).
    """
    kernel = {k: float(params.pop(k, getattr(prior.kernel, k))) for k in KERNEL_FIELDS}
    if prior.prior_var_edges is not None:  # per-edge prior variances (oracle ablation): only models that take them
        if "prior_var_edges" not in inspect.signature(model_cls).parameters:
            raise ParameterError(
                f"the {what} model cannot take per-edge prior variances (init=oracle on this environment): use gp-exact"
            )
        kernel["prior_var_edges"] = prior.prior_var_edges  # type: ignore[assignment]
    set_threads(int(params.pop("threads", 1)), blas=blas_threads)
    values = _coerce(config_cls, params, what)
    if "seed" in {f.name for f in dataclasses.fields(config_cls)}:
        values = {"seed": int(seed), **values}
    try:
        cfg = config_cls(**values)
    except TypeError as exc:
        raise ParameterError(f"invalid {what} model parameters: {exc}") from None
    return model_cls(
        prior.prior_mean_wh,
        prior.prior_var,
        prior.noise_var,
        linegraph.laplacian(),
        linegraph.contexts(),
        config=cfg,
        **kernel,
    )


def build_bi(
    linegraph: LineGraph, prior: ModelPrior, *, prior_var_scale: float = 1.0, refit_first: int = 0
) -> EdgeModel:
    """BI (independent conjugate Gaussian per edge) with the prior's mean, variance (per edge where the prior has
    them) times ``prior_var_scale`` and noise variance; ``refit_first > 0``: both variances learnt by empirical
    Bayes at rounds ``refit_first * 2^j`` (:class:`~evroute.models.bi.BayesianEdgeModel`)."""
    from evroute.models.bi import BayesianEdgeModel

    var = prior.prior_var if prior.prior_var_edges is None else prior.prior_var_edges
    return BayesianEdgeModel(prior.prior_mean_wh, var * prior_var_scale, prior.noise_var, refit_first=refit_first)


def build_gp(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
    """``gp``: the sparse variational GP (:class:`~evroute.models.gp.GPEdgeModel`); ``threads`` leaves BLAS alone
    (the SVGP computes in torch; see :func:`set_threads`)."""
    from evroute.models.gp import GPConfig, GPEdgeModel

    return build_gp_family(GPEdgeModel, GPConfig, "gp", linegraph, prior, seed=seed, blas_threads=False, **params)


def build_gp_exact(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
    """``gp-exact``: the exact GP posterior (:class:`~evroute.models.gp_exact.ExactGPEdgeModel`)."""
    from evroute.models.gp_exact import ExactGPConfig, ExactGPEdgeModel

    return build_gp_family(ExactGPEdgeModel, ExactGPConfig, "gp-exact", linegraph, prior, seed=seed, **params)


def build_gp_tv(linegraph: LineGraph, prior: ModelPrior, *, seed: int = 0, **params: Any) -> EdgeModel:
    """``gp-tv``: the time-varying exact GP with BOLT's data cap
    (:class:`~evroute.models.gp_tv.TimeVaryingGPEdgeModel`)."""
    from evroute.models.gp_tv import TimeVaryingGPEdgeModel, TVGPConfig

    return build_gp_family(TimeVaryingGPEdgeModel, TVGPConfig, "gp-tv", linegraph, prior, seed=seed, **params)


def build_kr(linegraph: LineGraph, prior: ModelPrior, **params: Any) -> EdgeModel:
    """Kernel regression on ``linegraph`` with the prior's mean and variances; ``params``: the keyword parameters
    of :class:`~evroute.models.kr.KernelRegressionEdgeModel` (``hops``, ``graph_decay``, ``bandwidth``, ...)."""
    from evroute.models.kr import KernelRegressionEdgeModel

    if prior.prior_var_edges is not None:
        raise ParameterError("the kr model cannot take per-edge prior variances (init=oracle on this environment)")
    return KernelRegressionEdgeModel(linegraph, prior.prior_mean_wh, prior.prior_var, prior.noise_var, **params)


# ---------------------------------------------------------------------------------------- turn arms (evroute.arms)
@dataclass(frozen=True)
class TurnKernelParams:
    """``--model-param`` of ``gp-exact`` with ``--arms turn``: the initial turn term of the arc kernel
    (:mod:`evroute.kernels.arcs`): outputscale ``s_3`` (units of ``sigma0^2``; 0 switches the turn term off) and the
    turn-feature lengthscale (standardised units)."""

    turn_outputscale: float = 0.5
    turn_lengthscale: float = 1.0

    def __post_init__(self) -> None:
        check_range("turn_outputscale", self.turn_outputscale, 0.0)
        check_range("turn_lengthscale", self.turn_lengthscale, 0.0, low_open=True)


def arm_prior(prior: ModelPrior, arms: ArmSpace) -> ModelPrior:
    """The prior of the ``arms``: every arm's prior mean is its edge's (``(A,)``), variances and kernel unchanged."""
    return dataclasses.replace(prior, prior_mean_wh=arms.lift(prior.prior_mean_wh))


def build_bi_arms(linegraph: LineGraph, prior: ModelPrior, **params: Any) -> EdgeModel:
    """``bi`` on turn arms (``prior.arms``): one conjugate posterior per arm, prior mean the arm's edge's."""
    if prior.arms is None:
        raise ParameterError("bi on arms needs a prior with arms")
    return build_bi(linegraph, arm_prior(prior, prior.arms), **params)


def build_arc_gp(
    linegraph: LineGraph,
    prior: ModelPrior,
    arms: ArmSpace | None = None,
    *,
    seed: int = 0,
    turn_outputscale: float = TurnKernelParams.turn_outputscale,
    turn_lengthscale: float = TurnKernelParams.turn_lengthscale,
    **params: Any,
) -> EdgeModel:
    """``gp-exact`` on turn ``arms`` (default ``prior.arms``): :class:`~evroute.models.gp_arcs.ArcExactGPModel` with
    the prior's edge mean lifted to the arms, the edge kernel's initial values and the turn term's
    (:class:`TurnKernelParams`)."""
    from evroute.models.gp_arcs import ArcExactGPModel
    from evroute.models.gp_exact import ExactGPConfig

    given = prior.arms if arms is None else arms
    if given is None:
        raise ParameterError("gp-exact on arms needs a prior with arms")
    arms = given

    TurnKernelParams(turn_outputscale, turn_lengthscale)
    feats = arms.turn_features()

    def model(mean: np.ndarray, prior_var: float, noise_var: float, lap: Any, ctx: np.ndarray, **kw: Any) -> EdgeModel:
        return ArcExactGPModel(
            arms.lift(mean),
            prior_var,
            noise_var,
            lap,
            ctx,
            arms.tail,
            arms.head,
            feats,
            turn_outputscale=turn_outputscale,
            turn_lengthscale=turn_lengthscale,
            **kw,
        )

    return build_gp_family(model, ExactGPConfig, "gp-exact", linegraph, prior, seed=seed, **params)
