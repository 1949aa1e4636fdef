"""Time-varying GP-UCB policies on the single-arm ask/tell interface of :mod:`evroute.bo`.

One parametrised implementation, :class:`TimeVaryingGPUCB`, covers the seven algorithms of the BOLT paper's
experiments; each named class only fixes its time input, temporal kernel, data-set manager and acquisition:

============  ===============  ===================  =============================  =========================
class         time input       temporal kernel      data set                       acquisition
============  ===============  ===================  =============================  =========================
StaticGPUCB   none             --                   keep all                       GP-UCB
RGPUCB        none             --                   reset every 50 observations    GP-UCB
ETGPUCB       none             --                   event-triggered reset          GP-UCB
TVGPUCB       iteration index  (1 - eps)^(|i-j|/2)  keep all                       GP-UCB at the next index
ABO           clock (seconds)  Matérn-3/2           keep all                       UCB over x and [t, t + R]
WDBO          clock (seconds)  Matérn-3/2           W2 relevance + growing budget  GP-UCB at t
BOLT          clock (seconds)  Matérn-3/2           W2 relevance + cap n*          GP-UCB at t
============  ===============  ===================  =============================  =========================

All use ``k_S`` = Matérn-5/2 on unit-cube coordinates, learn ``lambda, l_S, sigma0^2`` (and ``l_T`` / ``eps``) by
maximum marginal likelihood at every iteration, start with ``n_init = 15`` uniformly random queries and use
``beta_n = 0.2 d log(2 n)`` (the W-DBO code's choice; UCB = ``mu + sqrt(beta) sigma``) maximised by multi-start
L-BFGS-B from the best of ``n_raw`` random points.  Clock-based policies need ``t`` (seconds) in ``ask`` and ``tell``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize

from evroute.bo.acquisition import ucb_terms, upper_confidence_bound
from evroute.bo.base import BoxDomain, Domain, FiniteDomain, FloatArray, Policy, SeedLike
from evroute.bo.gp import ExactGP
from evroute.bo.optim import acquisition_value_and_grad
from evroute.bo.timevarying.bolt import ResponseTimeModel
from evroute.bo.timevarying.datasets import DataManager, EventReset, KeepAll, PeriodicReset, W2Budget, W2Cap
from evroute.bo.timevarying.gp import GPHyper, HyperBounds, SpatioTemporalKernel, spatio_temporal_gp
from evroute.errors import ParameterError, check_positive

__all__ = [
    "ABO",
    "ALGORITHMS",
    "BOLT",
    "PAPER_ALGORITHMS",
    "BOLTExact",
    "ETGPUCB",
    "RGPUCB",
    "TVGPUCB",
    "WDBO",
    "StaticGPUCB",
    "TimeVaryingGPUCB",
    "make_policy",
]

TimeInput = Literal["none", "clock", "index"]


class TimeVaryingGPUCB(Policy):
    """GP-UCB on a (spatio-temporal) GP whose data set is edited by a :class:`DataManager`.

    Args:
        domain: search space (a box is mapped to the unit cube for the GP; finite arms are used as given).
        seed: seed of :attr:`rng` (initial design, random starts).
        time_input: ``"clock"`` (GP input is the time ``t`` in seconds), ``"index"`` (the observation's index) or
            ``"none"`` (static GP, ``t`` ignored).
        nu_s: smoothness of ``k_S``.
        nu_t: smoothness of ``k_T`` (ignored for ``time_input="none"``).
        manager: data-set strategy (default :class:`KeepAll`).
        n_init: number of initial uniformly random queries.
        beta_scale: ``c`` in ``beta_n = c d log(2 n)``.
        lookahead: if True, maximise the UCB jointly over ``x`` and ``tau`` in ``[t, t + R]``, ``R`` the last measured
            response time (the time until the next observation can be made), and query ``x`` now (ABO).
        fit_iters: L-BFGS-B iterations of each hyperparameter fit.
        n_raw, n_restarts: random candidates and local searches of the acquisition maximisation.
        time_bounds: bounds of ``l_T`` in the units of the time input.
        init_length_t: initial ``l_T``.
        init_hyper: initial ``lambda, l_S, sigma0^2`` (standardised units; its ``length_t`` is replaced by
            ``init_length_t``); with ``fit_iters=0`` they stay fixed.
    """

    def __init__(
        self,
        domain: Domain,
        *,
        seed: SeedLike = None,
        time_input: TimeInput = "clock",
        nu_s: float = 2.5,
        nu_t: float = 1.5,
        manager: DataManager | None = None,
        n_init: int = 15,
        beta_scale: float = 0.2,
        lookahead: bool = False,
        fit_iters: int = 20,
        n_raw: int = 512,
        n_restarts: int = 5,
        time_bounds: tuple[float, float] = (1.0, 1e4),
        init_length_t: float = 100.0,
        init_hyper: GPHyper | None = None,
    ) -> None:
        super().__init__(domain, seed=seed)
        if time_input not in ("none", "clock", "index"):
            raise ParameterError(f"time_input must be 'none', 'clock' or 'index', got {time_input!r}")
        self.time_input: TimeInput = time_input
        self.manager = manager if manager is not None else KeepAll()
        if self.manager.needs_time and time_input == "none":
            raise ParameterError(f"{type(self.manager).__name__} needs a temporal kernel (time_input != 'none')")
        if int(n_init) < 0 or int(n_raw) < 1 or int(n_restarts) < 0:
            raise ParameterError(f"need n_init >= 0, n_raw >= 1, n_restarts >= 0, got {n_init}, {n_raw}, {n_restarts}")
        self.n_init, self.n_raw, self.n_restarts = int(n_init), int(n_raw), int(n_restarts)
        self.beta_scale = check_positive("beta_scale", beta_scale)
        self.lookahead = bool(lookahead)
        self._last_response = 0.0
        lo, hi = (float(v) for v in time_bounds)
        if not 0 < lo < hi:
            raise ParameterError(f"time_bounds must satisfy 0 < low < high, got {time_bounds!r}")
        init = replace(init_hyper or GPHyper(), length_t=float(np.clip(init_length_t, lo, hi)))
        self._init_hyper = init
        self._new_gp = partial(
            spatio_temporal_gp,
            nu_s=nu_s,
            nu_t=None if time_input == "none" else nu_t,
            bounds=HyperBounds(length_t=(lo, hi)),
            init=init,
            fit_iters=fit_iters,
        )
        self._new_gp()  # validate the kernel parameters now
        self.gp: ExactGP | None = None
        self.active: list[int] = []
        self.response_model = ResponseTimeModel()
        self._last_ask: tuple[float, int] | None = None
        self._feat: list[float] = []

    # ------------------------------------------------------------------ model coordinates
    @property
    def dataset_size(self) -> int:
        """Number of observations the GP is conditioned on (``|D|``)."""
        return len(self.active)

    def _to_model(self, x: FloatArray) -> FloatArray:
        return self.domain.to_unit(x) if isinstance(self.domain, BoxDomain) else np.asarray(x, dtype=float)

    def _time_feature(self, t: float | None) -> float:
        if self.time_input == "clock":
            if t is None or not np.isfinite(t):
                raise ParameterError(f"{type(self).__name__} needs the current time t (seconds) in ask and tell")
            return float(t)
        return float(self.n_obs) if self.time_input == "index" else 0.0

    def condition_active(self, *, optimise: bool = False) -> ExactGP:
        """Condition :attr:`gp` on the active observations (hyperparameters re-fitted only if ``optimise``)."""
        if self.gp is None:
            self.gp = self._new_gp()
        idx = np.asarray(self.active, dtype=int)
        z = SpatioTemporalKernel.inputs(self._to_model(self.X[idx]), np.asarray(self._feat)[idx])
        self.gp.set_train_data(z, self.y[idx], fit=optimise)
        return self.gp

    # ------------------------------------------------------------------ ask / tell
    def tell(self, x: ArrayLike, y: float, t: float | None = None) -> None:
        feat = self._time_feature(t)  # validates t before anything is stored
        super().tell(x, y, t)
        self._feat.append(feat)
        self.active.append(self.n_obs - 1)
        self.manager.after_tell(self, self._to_model(self.X[-1]), float(self.y[-1]), feat)

    def _update(self, x: FloatArray, y: float, t: float | None) -> None:
        return None  # bookkeeping is done in tell, after the time feature has been stored

    def _ask(self, t: float | None) -> ArrayLike:
        tq = self._time_feature(t)
        if self.time_input == "clock" and t is not None:
            if self._last_ask is not None and t >= self._last_ask[0]:
                self.response_model.add(self._last_ask[1], t - self._last_ask[0])
                self._last_response = float(t - self._last_ask[0])
            self._last_ask = (float(t), len(self.active))
        if self.n_obs < self.n_init or not self.active:
            return self.domain.sample(1, self.rng)[0]
        gp = self.condition_active(optimise=len(self.active) >= 3)
        beta = self.beta_scale * self.domain.dim * np.log(2.0 * (self.n_obs + 1))
        return self._maximise(gp, tq, beta)

    def _maximise(self, gp: ExactGP, tq: float, beta: float) -> FloatArray:
        width = np.sqrt(beta)
        inputs = SpatioTemporalKernel.inputs
        if isinstance(self.domain, FiniteDomain):
            ucb = upper_confidence_bound(gp.posterior(inputs(self.domain.points, tq), standardized=True), width)
            return self.domain.points[int(np.argmax(ucb))].copy()
        d = self.domain.dim
        window = self._last_response if self.lookahead and gp.kernel.temporal else 0.0
        raw = np.vstack([self.rng.random((self.n_raw, d)), gp.train_inputs[-min(gp.n, 10) :, :d]])
        raw_t = tq + window * self.rng.random(len(raw))
        vals = upper_confidence_bound(gp.posterior(inputs(raw, raw_t), standardized=True), width)
        order = np.argsort(-vals)[: max(self.n_restarts, 1)]
        best_x, best_v = raw[order[0]], float(vals[order[0]])
        bounds = [(0.0, 1.0)] * d + ([(tq, tq + window)] if window > 0 else [])

        def neg(z: FloatArray) -> tuple[float, FloatArray]:
            zt = np.append(z[:d], z[d] if window > 0 else tq)
            v, g = acquisition_value_and_grad(gp, zt, lambda m, s: ucb_terms(m, s, width))
            return -v, -(g if window > 0 else g[:d])

        for i in order[: self.n_restarts]:
            z0 = raw[i] if window <= 0 else np.append(raw[i], raw_t[i])
            res = minimize(neg, z0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 50})
            if np.all(np.isfinite(res.x)) and -res.fun > best_v:
                best_x, best_v = np.clip(res.x[:d], 0.0, 1.0), float(-res.fun)
        return self.box_domain.from_unit(best_x)


class StaticGPUCB(TimeVaryingGPUCB):
    """GP-UCB (Srinivas et al. 2012) on a time-invariant GP that keeps every observation (the control)."""

    def __init__(self, domain: Domain, *, seed: SeedLike = None, **kw: Any) -> None:
        super().__init__(domain, seed=seed, time_input="none", manager=KeepAll(), **kw)


class RGPUCB(TimeVaryingGPUCB):
    """R-GP-UCB (Bogunovic et al. 2016): time-invariant GP-UCB whose data set is reset every ``reset_every`` steps."""

    def __init__(self, domain: Domain, *, seed: SeedLike = None, reset_every: int = 50, **kw: Any) -> None:
        super().__init__(domain, seed=seed, time_input="none", manager=PeriodicReset(reset_every), **kw)


class ETGPUCB(TimeVaryingGPUCB):
    """ET-GP-UCB (Brunzema et al. 2022): time-invariant GP-UCB with an event-triggered reset (:class:`EventReset`)."""

    def __init__(
        self, domain: Domain, *, seed: SeedLike = None, delta: float = 0.1, noise_var: float | None = None, **kw: Any
    ) -> None:
        manager = EventReset(delta, noise_var)
        super().__init__(domain, seed=seed, time_input="none", manager=manager, **kw)


class TVGPUCB(TimeVaryingGPUCB):
    """TV-GP-UCB (Bogunovic et al. 2016): ``k_T = (1 - eps)^(|i - j| / 2)`` over observation indices, eps learnt.

    ``(1 - eps)^(|i-j|/2) = exp(-|i-j| / l)`` with ``l = -2 / log(1 - eps)``: a Matérn-1/2 in the index, so ``eps``
    is learnt as its lengthscale (bounds ``l`` in [1, 1e5] iterations); see :attr:`epsilon`.
    """

    def __init__(self, domain: Domain, *, seed: SeedLike = None, **kw: Any) -> None:
        kw.setdefault("time_bounds", (1.0, 1e5))
        kw.setdefault("init_length_t", 200.0)
        kw["nu_t"] = 0.5
        super().__init__(domain, seed=seed, time_input="index", manager=KeepAll(), **kw)

    @property
    def epsilon(self) -> float:
        """Current forgetting rate ``eps = 1 - exp(-2 / l)``."""
        length = self.gp.kernel.length_t if self.gp is not None else self._init_hyper.length_t
        return float(1.0 - np.exp(-2.0 / length))


class ABO(TimeVaryingGPUCB):
    """ABO (Nyikosa et al. 2018): spatio-temporal GP, no removal, UCB maximised over ``x`` and a look-ahead window
    of future times.  ABO chooses the time of its next evaluation in the window; a TVBO algorithm cannot choose when
    it observes, so the window is ``[t, t + R]`` with ``R`` the last measured response time (when the next
    observation can happen) and the chosen ``x`` is queried at ``t``."""

    def __init__(self, domain: Domain, *, seed: SeedLike = None, **kw: Any) -> None:
        super().__init__(domain, seed=seed, time_input="clock", manager=KeepAll(), lookahead=True, **kw)


class WDBO(TimeVaryingGPUCB):
    """W-DBO (Bardou et al. 2024b): spatio-temporal GP with W2-relevance removal under a growing budget."""

    def __init__(self, domain: Domain, *, seed: SeedLike = None, alpha: float = 0.25, **kw: Any) -> None:
        super().__init__(domain, seed=seed, time_input="clock", manager=W2Budget(alpha), **kw)


class BOLT(TimeVaryingGPUCB):
    """BOLT (Bardou & Thiran): spatio-temporal GP, data set capped at ``n*``, W2-relevance removal (:class:`W2Cap`)."""

    def __init__(
        self,
        domain: Domain,
        *,
        seed: SeedLike = None,
        n_max: int = 10_000,
        criterion: str = "bound",
        compare: bool = False,
        **kw: Any,
    ) -> None:
        manager = W2Cap(n_max, criterion=criterion, compare=compare)
        super().__init__(domain, seed=seed, time_input="clock", manager=manager, **kw)

    @property
    def n_star(self) -> int | None:
        """The current cap ``n*`` (None until the response-time model is ready)."""
        assert isinstance(self.manager, W2Cap)
        return self.manager.n_star


class BOLTExact(BOLT):
    """BOLT removing by the exact Eq. 12 criterion (numerical ``(d sigma)^2``), also recording at every removal
    whether the W-DBO bound would have removed the same observation (``manager.agreements``)."""

    def __init__(self, domain: Domain, *, seed: SeedLike = None, **kw: Any) -> None:
        super().__init__(domain, seed=seed, criterion="exact", compare=True, **kw)


ALGORITHMS: dict[str, type[TimeVaryingGPUCB]] = {
    "gp-ucb": StaticGPUCB,
    "et-gp-ucb": ETGPUCB,
    "r-gp-ucb": RGPUCB,
    "tv-gp-ucb": TVGPUCB,
    "abo": ABO,
    "w-dbo": WDBO,
    "bolt": BOLT,
    "bolt-exact": BOLTExact,
}
#: The seven algorithms of the paper's Table 3 (``bolt-exact`` is our variant).
PAPER_ALGORITHMS: tuple[str, ...] = tuple(ALGORITHMS)[:7]


def make_policy(name: str, domain: Domain, *, seed: SeedLike = None, **kw: Any) -> TimeVaryingGPUCB:
    """Build one of :data:`ALGORITHMS` by name (case-insensitive), forwarding keyword arguments."""
    key = str(name).lower().replace("_", "-")
    if key not in ALGORITHMS:
        raise ParameterError(f"unknown time-varying algorithm {name!r}; known: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[key](domain, seed=seed, **kw)
