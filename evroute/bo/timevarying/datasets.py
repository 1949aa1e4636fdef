"""Data-set management strategies of the time-varying policies (which observations the GP keeps).

A :class:`DataManager` is called by :class:`~evroute.bo.timevarying.policies.TimeVaryingGPUCB` after every stored
observation and edits the policy's *active set* (the indices of the observations the GP is conditioned on):

=====================  ==========================================================================================
:class:`KeepAll`        never removes (GP-UCB, TV-GP-UCB, ABO)
:class:`PeriodicReset`  empties the data set every ``every`` observations (R-GP-UCB, Bogunovic et al. 2016)
:class:`EventReset`     keeps only the new observation when it is inconsistent with the posterior (ET-GP-UCB)
:class:`W2Budget`       W-DBO: removes the least relevant observations (normalised integrated W2) under a budget
                        that grows with time (Bardou et al. 2024b, rule of the public W-DBO code)
:class:`W2Cap`          BOLT: removes the least relevant observations (integrated W2) while ``|D| > n*``
=====================  ==========================================================================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from evroute.bo.timevarying.bolt import integrated_w2_removal, integrated_w2_to_prior, optimal_dataset_size
from evroute.bo.timevarying.kernels import matern
from evroute.errors import ParameterError, check_positive

if TYPE_CHECKING:
    from evroute.bo.timevarying.gp import SpatioTemporalGP
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
    """ET-GP-UCB trigger: reset to ``{new observation}`` if ``|y - mu(x)| > sqrt(2 log(1/delta)) sqrt(s^2(x) + s0^2)``.

    ``mu``, ``s`` are the posterior of the GP fitted before the observation (the one used to choose ``x``) and ``s0^2``
    its learnt noise variance, all in observation units.

    Args:
        delta: false-trigger probability of a time-invariant model, in (0, 1).
    """

    def __init__(self, delta: float = 0.1) -> None:
        if not 0.0 < float(delta) < 1.0:
            raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
        self.delta = float(delta)
        self.n_resets = 0

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        gp = policy.gp
        if policy.n_obs <= policy.n_init or gp is None or gp.n < 2:
            return
        mu, sd = gp.predict_original(x_model[None, :], t)
        noise_var = gp.hyper.noise * gp.y_std**2
        threshold = np.sqrt(2.0 * np.log(1.0 / self.delta)) * np.sqrt(sd[0] ** 2 + noise_var)
        if abs(y - mu[0]) > threshold:
            del policy.active[:-1]
            self.n_resets += 1


def _remove(policy: TimeVaryingGPUCB, gp: SpatioTemporalGP, i: int) -> None:
    """Drop the ``i``-th active observation from the policy and the conditioned ``gp``."""
    del policy.active[i]
    keep = np.delete(np.arange(gp.n), i)
    gp.refit_subset(keep)


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
            self.budget *= (1.0 + self.alpha) ** (max(t - self._t_prev, 0.0) / gp.hyper.length_t)
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
    """BOLT removal (Algorithm 1): if ``|D| > n*``, remove ``argmin_i W2(GP_D, GP_{D \\ i})`` -- one per observation.

    As in the paper's Algorithm 1, at most one observation is removed per iteration, so ``|D|`` stays at ``n*`` once
    it has reached it and shrinks by one per iteration if ``n*`` drops (a transiently poor ``l_T`` estimate cannot wipe
    the data set out in one step).

    ``n*`` (:func:`~evroute.bo.timevarying.bolt.optimal_dataset_size`) is recomputed after every observation (after
    the initial design) from the
    policy's response-time model and the current ``l_T``, warm-started at the previous ``n*``; it is infinite (no
    removal) until the response-time model is ready.

    Args:
        n_max: upper limit of ``n*``.
        min_size: lower limit of ``n*``.
    """

    needs_time = True

    def __init__(self, n_max: int = 10_000, min_size: int = 2) -> None:
        if int(n_max) < 1 or int(min_size) < 1:
            raise ParameterError(f"n_max and min_size must be >= 1, got {n_max!r}, {min_size!r}")
        self.n_max, self.min_size = int(n_max), int(min_size)
        self.n_star: int | None = None
        self.n_removed = 0

    def update_n_star(self, policy: TimeVaryingGPUCB) -> int | None:
        """Recompute ``n*`` from ``policy.response_model`` and the GP's ``l_T`` (None while not computable)."""
        model = policy.response_model
        if policy.gp is None or not model.ready:
            return self.n_star
        if model.is_constant:
            self.n_star = self.n_max
            return self.n_star
        nu_t, length_t = policy.gp.nu_t, policy.gp.hyper.length_t
        n0 = self.n_star if self.n_star is not None else max(len(policy.active), 1)
        n = optimal_dataset_size(lambda lag: matern(lag, length_t, nu_t), model, n0=n0, n_max=self.n_max)
        self.n_star = max(n, self.min_size)
        return self.n_star

    def after_tell(self, policy: TimeVaryingGPUCB, x_model: np.ndarray, y: float, t: float) -> None:
        if policy.n_obs <= policy.n_init:
            return
        n_star = self.update_n_star(policy)
        if n_star is None or len(policy.active) <= n_star:
            return
        gp = policy.condition_active()
        _remove(policy, gp, int(np.argmin(integrated_w2_removal(gp, t))))
        self.n_removed += 1
