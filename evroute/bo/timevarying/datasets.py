"""Data-set management strategies of the time-varying policies (which observations the GP keeps).

A :class:`DataManager` is called by :class:`~evroute.bo.timevarying.policies.TimeVaryingGPUCB` after every stored
observation and edits the policy's *active set* (the indices of the observations the GP is conditioned on):

=====================  ==========================================================================================
:class:`KeepAll`        never removes (GP-UCB, TV-GP-UCB, ABO)
:class:`PeriodicReset`  empties the data set every ``every`` observations (R-GP-UCB, Bogunovic et al. 2016)
:class:`EventReset`     keeps only the new observation when it is inconsistent with the posterior (ET-GP-UCB)
:class:`W2Budget`       W-DBO: removes the least relevant observations (normalised integrated W2) under a budget
                        that grows with time (Bardou et al. 2024b, rule of the public W-DBO code)
:class:`W2Cap`          BOLT: removes the least relevant observations (integrated W2) until ``|D| <= n*``
=====================  ==========================================================================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from evroute.bo.timevarying.bolt import (
    exact_integrated_w2_removal,
    integrated_w2_removal,
    integrated_w2_to_prior,
    optimal_dataset_size,
)
from evroute.bo.timevarying.kernels import SpatioTemporalKernel, matern
from evroute.errors import ParameterError, check_positive

if TYPE_CHECKING:
    from evroute.bo.gp import ExactGP
    from evroute.bo.timevarying.policies import TimeVaryingGPUCB

__all__ = ["DataManager", "EventReset", "KeepAll", "PeriodicReset", "W2Budget", "W2Cap"]


class DataManager(ABC):
    """Strategy that edits ``policy.active`` after each observation (the newest index is ``policy.active[-1]``)."""

    #: whether the strategy needs a temporal kernel (the W2 criterion integrates over future time)
    needs_time: bool = False

    @abstractmethod
    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        """Update ``policy.active``; ``x_model`` is the new point in model coordinates, ``t`` its time feature."""


class KeepAll(DataManager):
    """Keep every observation."""

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        return None


class PeriodicReset(DataManager):
    """Reset the data set every ``every`` observations (counted after the initial design).

    Args:
        every: reset period ``N`` in observations.
    """

    def __init__(self, every: int = 50) -> None:
        if isinstance(every, bool) or int(every) < 1:
            raise ParameterError(f"reset period must be an int >= 1, got {every!r}")
        self.every = int(every)
        self._since = 0

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        if policy.n_obs <= policy.n_init:
            return
        self._since += 1
        if self._since >= self.every:
            policy.active.clear()
            self._since = 0


class EventReset(DataManager):
    """ET-GP-UCB trigger (Brunzema et al. 2022): reset to ``{new observation}`` when the observation leaves the GP's
    probabilistic uniform error bound, a bound over *all* steps since the last reset, not a per-step test.

    With ``k`` the number of trigger tests since the last reset (``k = 1, 2, ...``), the test at step ``k`` uses the
    confidence ``delta_k = 6 delta / (pi^2 k^2)`` (``sum_k delta_k = delta``, the union bound over time) and the
    Gaussian tail ``P(|y - mu(x)| > a s) <= exp(-a^2 / 2)`` with ``s^2 = sigma^2(x) + sigma0^2``, so the event is

        ``|y_k - mu(x_k)| > sqrt(2 log(pi^2 k^2 / (6 delta))) sqrt(sigma^2(x_k) + sigma0^2)``,

    and on a time-invariant ``f`` with the right model no reset happens, over any number of steps, with probability
    at least ``1 - delta``.  ``mu``, ``sigma`` are the posterior of the GP used to choose ``x`` (fitted before the
    observation), in observation units.  (The previous rule, a fixed ``sqrt(2 log(1/delta))`` threshold at every step,
    false-triggers a fraction ``~delta`` of all steps: 25-46 resets in 185 steps on a static function.)

    Args:
        delta: probability of a false trigger over the whole time a time-invariant model holds, in (0, 1).
        noise_var: observation-noise variance ``sigma0^2`` in observation units, when known; ``None`` (default): the
            GP's learnt noise variance.
    """

    def __init__(self, delta: float = 0.1, noise_var: float | None = None) -> None:
        if not 0.0 < float(delta) < 1.0:
            raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
        self.delta = float(delta)
        self.noise_var = None if noise_var is None else check_positive("noise_var", noise_var, allow_zero=True)
        self.n_resets = 0
        self.steps_since_reset = 0
        self.reset_steps: list[int] = []

    def threshold_factor(self, k: int) -> float:
        """``sqrt(2 log(pi^2 k^2 / (6 delta)))`` for the ``k``-th test since the last reset (``k >= 1``)."""
        return float(np.sqrt(2.0 * np.log(np.pi**2 * max(int(k), 1) ** 2 / (6.0 * self.delta))))

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        gp = policy.gp
        if policy.n_obs <= policy.n_init or gp is None or gp.n < 2:
            return
        self.steps_since_reset += 1
        post = gp.posterior(SpatioTemporalKernel.inputs(x_model[None, :], t), standardized=True)
        mu, sd = post.mean[0] * gp.y_std + gp.y_mean, post.std[0] * gp.y_std  # observation units
        noise_var = gp.noise * gp.y_std**2 if self.noise_var is None else self.noise_var
        threshold = self.threshold_factor(self.steps_since_reset) * np.sqrt(sd**2 + noise_var)
        if abs(y - mu) > threshold:
            del policy.active[:-1]
            self.n_resets += 1
            self.steps_since_reset = 0
            self.reset_steps.append(policy.n_obs - 1)


def _remove(policy: TimeVaryingGPUCB, gp: ExactGP, i: int) -> None:
    """Drop the ``i``-th active observation from the policy and the conditioned ``gp``."""
    del policy.active[i]
    gp.remove([i])


class W2Budget(DataManager):
    """W-DBO removal: budget ``b`` grows as ``(1 + alpha)^{dt / l_T}``; remove ``argmin`` while ``min crit + 1 < b``.

    ``crit_i = W2(GP_D, GP_{D \\ i}) / W2(GP_D, GP_{})`` (normalised integrated W2); each removal divides ``b`` by
    ``min crit + 1``.  At least ``min_size`` observations are kept.

    Args:
        alpha: budget growth per temporal lengthscale.
        min_size: never shrink the data set below this size.
    """

    needs_time = True

    def __init__(self, alpha: float = 0.25, min_size: int = 2) -> None:
        self.alpha = check_positive("alpha", alpha)
        self.min_size = max(int(min_size), 1)
        self.budget = 1.0
        self._t_prev: float | None = None
        self.n_removed = 0

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        if policy.n_obs <= policy.n_init or policy.gp is None:
            self._t_prev = t
            return
        gp = policy.condition_active()
        if self._t_prev is not None:
            self.budget *= (1.0 + self.alpha) ** (max(t - self._t_prev, 0.0) / gp.kernel.length_t)
        self._t_prev = t
        while len(policy.active) > self.min_size:
            crit = integrated_w2_removal(gp, t) / max(integrated_w2_to_prior(gp, t), 1e-300)
            i = int(np.argmin(crit))
            m = float(crit[i]) + 1.0
            if m >= self.budget:
                break
            self.budget /= m
            _remove(policy, gp, i)
            self.n_removed += 1


class W2Cap(DataManager):
    """BOLT removal (Alg. 1, Recommendations 1-2): while ``|D| > n*``, remove ``argmin_i W2(GP_D, GP_{D \\ i})``.

    ``n*`` (Eq. 9, :func:`~evroute.bo.timevarying.bolt.optimal_dataset_size`) is recomputed after every observation
    (after the initial design) from the policy's response-time model and the current ``l_T``, warm-started at the
    previous ``n*``; it is infinite (no removal) until the response-time model is ready.  When ``n*`` drops by more
    than one, several observations are removed in the same step, each the ``argmin`` of the criterion recomputed on
    the remaining data, so ``|D| <= n*`` after every step (Algorithm 1 removes one because its ``n*`` is fixed).

    The criterion (Eq. 12) is the integrated squared 2-Wasserstein distance over ``R^d x [t, inf)``:
    ``criterion="bound"`` (default) is the W-DBO code's closed-form upper bound
    (:func:`~evroute.bo.timevarying.bolt.integrated_w2_removal`), ``criterion="exact"`` integrates the exact
    ``(sigma_D - sigma_{D \\ i})^2`` numerically (:func:`~evroute.bo.timevarying.bolt.exact_integrated_w2_removal`).
    With ``compare=True`` both argmins are computed at every removal and :attr:`agreements` records whether they are
    the same observation (the one of ``criterion`` is removed).

    Args:
        n_max: upper limit of ``n*``.
        min_size: lower limit of ``n*``.
        criterion: ``"bound"`` or ``"exact"``.
        compare: record the agreement of the two criteria at every removal.
    """

    needs_time = True

    def __init__(self, n_max: int = 10_000, min_size: int = 2, criterion: str = "bound", compare: bool = False) -> None:
        if int(n_max) < 1 or int(min_size) < 1:
            raise ParameterError(f"n_max and min_size must be >= 1, got {n_max!r}, {min_size!r}")
        if criterion not in ("bound", "exact"):
            raise ParameterError(f"criterion must be 'bound' or 'exact', got {criterion!r}")
        self.n_max, self.min_size = int(n_max), int(min_size)
        self.criterion, self.compare = criterion, bool(compare)
        self.n_star: int | None = None
        self.n_removed = 0
        self.agreements: list[bool] = []

    def update_n_star(self, policy: TimeVaryingGPUCB) -> int | None:
        """Recompute ``n*`` from ``policy.response_model`` and the GP's ``l_T`` (None while not computable)."""
        model = policy.response_model
        if policy.gp is None or not model.ready:
            return self.n_star
        if model.is_constant:
            self.n_star = self.n_max
            return self.n_star
        nu_t, length_t = policy.gp.kernel.nu_t, policy.gp.kernel.length_t
        n0 = self.n_star if self.n_star is not None else max(len(policy.active), 1)
        n = optimal_dataset_size(lambda lag: matern(lag, length_t, nu_t), model, n0=n0, n_max=self.n_max)
        self.n_star = max(n, self.min_size)
        return self.n_star

    def _argmin(self, gp: ExactGP, t: float) -> int:
        bound = int(np.argmin(integrated_w2_removal(gp, t))) if self.compare or self.criterion == "bound" else -1
        exact = int(np.argmin(exact_integrated_w2_removal(gp, t))) if self.compare or self.criterion == "exact" else -1
        if self.compare:
            self.agreements.append(bound == exact)
        return bound if self.criterion == "bound" else exact

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        if policy.n_obs <= policy.n_init:
            return
        n_star = self.update_n_star(policy)
        if n_star is None or len(policy.active) <= n_star:
            return
        gp = policy.condition_active()
        while len(policy.active) > n_star:
            _remove(policy, gp, self._argmin(gp, t))
            self.n_removed += 1
