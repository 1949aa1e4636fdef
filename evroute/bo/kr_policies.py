"""Kernel-regression policies of Zhu et al. (BOKE paper): BOKE, BOKE+ and the KR-UCB baseline.

All three use the Gaussian-kernel Nadaraya-Watson mean ``m_t`` and the unnormalised density ``W_t`` of
:mod:`evroute.bo.kr` with Scott's bandwidth ``h_t = c t^{-1/(d+4)}`` (Eq. 5.1), in unit-cube coordinates on a box
(raw arm coordinates on a finite domain), on standardised observations ``(y - mean(y)) / std(y)``.

* **BOKE** (Alg. 2, IKR-UCB Eq. 3.12): ``x_{t+1} = argmax m_t(x) + sqrt(beta_t / W_t(x))`` with
  ``beta_t = 2 varsigma^2 M_Psi log(2 pi^2 t^2 / (3 delta))`` (Thm 4.13; ``M_Psi = 1`` for the Gaussian kernel).
  It is maximised in the rescaled form ``beta_t^{-1/2} m_t + W_t^{-1/2}`` (Eq. 4.8, same argmax) through the monotone
  map ``asinh``, evaluated from ``log W_t`` so that far from the data the value stays finite (``~ log 2 - log W / 2``).
* **BOKE+** (Alg. 3): with probability ``p`` an IKR-UCB step, otherwise pure exploitation ``argmax m_t`` (Eq. 3.14).
* **KR-UCB** (App. A.2, Alg. 5): the UCB score over observed points
  ``m_t(x_i) + C sqrt(log sum_j W_t(x_j) / W_t(x_i))`` (A.4); Alg. 5 line 3: if ``t^alpha < #distinct points`` the
  best observed point is queried again (A.4), otherwise progressive widening (A.5) queries
  ``argmin_{||x - x~|| < rho} W_t(x)`` around it, a new point.  ``t`` counts every observation, the initial design
  included, so the number of distinct points grows like ``t^alpha``: widening happens once ``t >= n0^{1/alpha}``.

Defaults for what the paper leaves open (documented in ``docs/bo.md``): ``c = 1/sqrt(12)``, ``varsigma = 1`` (in
standardised-``y`` units), ``delta = 0.1``, ``p = 0.5``, ``alpha = 0.8``, ``C = 1``, ``rho = h_t``.  With the
``3 d``-point initial design of the experiments, ``alpha = 0.5`` never widens before ``t = 9 d^2`` (144 for ``d = 4``,
beyond every budget of Sec. 5), so KR-UCB would only re-query its initial design; ``alpha = 0.8`` widens from
``t = (3 d)^{1.25}`` on (e.g. ``t = 23`` for ``d = 4``) and makes about ``t^0.8`` distinct queries, as the paper's
Fig. 6 (KR-UCB converging, more slowly than BOKE) requires.
With no observation yet, every policy returns a uniform random point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from evroute.bo.base import BoxDomain, Domain, FloatArray, Policy, SeedLike
from evroute.bo.kr import NadarayaWatson, scott_bandwidth
from evroute.bo.optim import AcquisitionOptimizer
from evroute.errors import ParameterError, check_positive

__all__ = ["BOKE", "BOKEPlus", "KRUCB", "KernelRegressionPolicy", "ikr_ucb"]

_SWITCH = 50.0  # -log W / 2 above which asinh(a) is replaced by its asymptote log 2 + u


def ikr_ucb(m: FloatArray, log_w: FloatArray, beta: float) -> FloatArray:
    """``asinh(beta^{-1/2} m + W^{-1/2})``, a monotone transform of the IKR-UCB acquisition, overflow-free ``(q,)``."""
    c, u = 1.0 / math.sqrt(beta), -0.5 * np.asarray(log_w)
    small = u < _SWITCH
    out = np.log(2.0) + u
    out[small] = np.arcsinh(c * m[small] + np.exp(u[small]))
    return out


class KernelRegressionPolicy(Policy):
    """Shared machinery of the kernel-regression policies.

    Args:
        domain: finite arm set or box.
        bandwidth_scale: ``c`` in Scott's rule ``h_t = c t^{-1/(d+4)}`` (default ``1/sqrt(12)``).
        optimizer: acquisition optimiser for box domains.
        seed: random seed.
    """

    def __init__(
        self,
        domain: Domain,
        *,
        bandwidth_scale: float = 1.0 / math.sqrt(12.0),
        optimizer: AcquisitionOptimizer | None = None,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(domain, seed=seed)
        self.bandwidth_scale = check_positive("bandwidth_scale", bandwidth_scale)
        self.optimizer = optimizer if optimizer is not None else AcquisitionOptimizer()
        self.is_box = isinstance(domain, BoxDomain)

    def _to_coords(self, x: FloatArray) -> FloatArray:
        return self.box_domain.to_unit(x) if self.is_box else np.asarray(x, dtype=float)

    def _from_coords(self, u: FloatArray) -> FloatArray:
        return self.box_domain.from_unit(u) if self.is_box else np.asarray(u, dtype=float)

    def bandwidth(self, t: int) -> float:
        """Scott's bandwidth ``h_t`` for ``t`` observations."""
        return scott_bandwidth(t, self.domain.dim, self.bandwidth_scale)

    def model(self) -> NadarayaWatson:
        """Kernel regression on the current (standardised) data with bandwidth ``h_t``, ``t = n_obs``."""
        y = self.y
        std = float(np.std(y))
        ys = (y - np.mean(y)) / (std if std > 0 else 1.0)
        return NadarayaWatson(self._to_coords(self.X), ys, self.bandwidth(self.n_obs))

    def _maximize(
        self,
        batch: Callable[[FloatArray], FloatArray],
        single: Callable[[FloatArray], tuple[float, FloatArray]],
    ) -> FloatArray:
        """Maximise over the domain: exhaustive on a finite one, multi-start L-BFGS-B on a box (in coordinates)."""
        if not self.is_box:
            pts = self.finite_domain.points
            vals = batch(pts)
            best = np.flatnonzero(vals >= np.max(vals) - 1e-12 * max(1.0, float(np.max(np.abs(vals)))))
            return pts[best[self.rng.integers(best.size)]].copy()
        best_obs = self._to_coords(self.X[np.argsort(-self.y)[:5]])
        extra = best_obs + 0.01 * self.rng.standard_normal(best_obs.shape)
        return self.optimizer.maximize(batch, single, self.domain.dim, self.rng, extra)

    def _exploit(self, nw: NadarayaWatson) -> FloatArray:
        """Pure exploitation ``argmax m_t`` (BOKE Eq. 3.14), in coordinates."""

        def single(u: FloatArray) -> tuple[float, FloatArray]:
            m, _, dm, _ = nw.predict_grad(u)
            return m, dm

        return self._maximize(lambda u: nw.predict(u)[0], single)


class BOKE(KernelRegressionPolicy):
    """BOKE (Alg. 2): IKR-UCB ``argmax m_t + sqrt(beta_t / W_t)``, ``beta_t = 2 vs^2 M log(2 pi^2 t^2 / (3 delta))``.

    Args:
        varsigma: sub-Gaussian noise constant, in standardised-``y`` units (default 1).
        delta: confidence of Thm 4.13 (default 0.1).
        m_psi: ``M_Psi = sup Psi`` (1 for the Gaussian kernel).
        Other keyword arguments as in :class:`KernelRegressionPolicy`.
    """

    def __init__(
        self, domain: Domain, *, varsigma: float = 1.0, delta: float = 0.1, m_psi: float = 1.0, **kwargs: Any
    ) -> None:
        super().__init__(domain, **kwargs)
        self.varsigma = check_positive("varsigma", varsigma)
        self.delta = check_positive("delta", delta)
        if not self.delta < 1:
            raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
        self.m_psi = check_positive("m_psi", m_psi)

    def beta(self, t: int) -> float:
        """``beta_t = 2 varsigma^2 M_Psi log(2 pi^2 t^2 / (3 delta))`` (Thm 4.13)."""
        return 2.0 * self.varsigma**2 * self.m_psi * math.log(2.0 * math.pi**2 * t**2 / (3.0 * self.delta))

    def _ikr_step(self, nw: NadarayaWatson) -> FloatArray:
        beta = self.beta(self.n_obs)
        c = 1.0 / math.sqrt(beta)

        def batch(u: FloatArray) -> FloatArray:
            m, log_w = nw.predict(u)
            return ikr_ucb(m, log_w, beta)

        def single(u: FloatArray) -> tuple[float, FloatArray]:
            m, log_w, dm, dlog_w = nw.predict_grad(u)
            s = -0.5 * log_w
            if s >= _SWITCH:
                return math.log(2.0) + s, -0.5 * dlog_w
            es = math.exp(s)
            a = c * m + es
            return math.asinh(a), (c * dm - 0.5 * es * dlog_w) / math.sqrt(1.0 + a * a)

        return self._maximize(batch, single)

    def _ask(self, t: float | None) -> FloatArray:
        if self.n_obs == 0:
            return self.domain.sample(1, self.rng)[0]
        return self._from_coords(self._ikr_step(self.model()))


class BOKEPlus(BOKE):
    """BOKE+ (Alg. 3): each round ``q ~ Bernoulli(p)``; ``q = 1``: IKR-UCB step, ``q = 0``: ``argmax m_t``.

    Args:
        p: probability of the IKR-UCB step, in ``(0, 1]`` (not given by the paper; default 0.5).
        Other keyword arguments as in :class:`BOKE`.
    """

    def __init__(self, domain: Domain, *, p: float = 0.5, **kwargs: Any) -> None:
        super().__init__(domain, **kwargs)
        if not 0.0 < float(p) <= 1.0:
            raise ParameterError(f"p must be in (0, 1], got {p!r}")
        self.p = float(p)

    def _ask(self, t: float | None) -> FloatArray:
        if self.n_obs == 0:
            return self.domain.sample(1, self.rng)[0]
        nw = self.model()
        explore = self.rng.random() < self.p
        return self._from_coords(self._ikr_step(nw) if explore else self._exploit(nw))


class KRUCB(KernelRegressionPolicy):
    """KR-UCB with progressive widening (BOKE paper App. A.2, Alg. 5).

    Args:
        alpha: widening exponent in ``(0, 1)`` (default 0.8, see the module docstring): re-query (A.4) while
            ``t^alpha < #distinct points``, else widen (A.5).
        C: exploration constant (default 1, standardised-``y`` units).
        rho: widening radius (default ``None``: the current bandwidth ``h_t``, i.e. ``tau = exp(-1/2)``).
        n_ball: random candidates in the widening ball (default 256), the best of which is polished by L-BFGS-B.
        Other keyword arguments as in :class:`KernelRegressionPolicy`.
    """

    def __init__(
        self,
        domain: Domain,
        *,
        alpha: float = 0.8,
        C: float = 1.0,  # noqa: N803
        rho: float | None = None,
        n_ball: int = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__(domain, **kwargs)
        if not 0.0 < float(alpha) < 1.0:
            raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
        self.alpha = float(alpha)
        self.C = check_positive("C", C, allow_zero=True)
        self.rho = None if rho is None else check_positive("rho", rho)
        if int(n_ball) < 1:
            raise ParameterError(f"n_ball must be >= 1, got {n_ball!r}")
        self.n_ball = int(n_ball)

    def scores(self, nw: NadarayaWatson) -> tuple[FloatArray, FloatArray]:
        """Distinct observed points ``(k, d)`` (coordinates) and their A.4 scores ``(k,)``; costs ``O(t^2)``."""
        distinct = np.unique(nw.x, axis=0)
        log_w_all = nw.log_density(nw.x)
        log_sum = float(logsumexp(log_w_all))
        m, log_w = nw.predict(distinct)
        return distinct, m + self.C * np.sqrt(np.maximum(log_sum, 0.0) * np.exp(-log_w))

    def _widen(self, nw: NadarayaWatson, centre: FloatArray) -> FloatArray:
        rho = self.rho if self.rho is not None else nw.h
        if not self.is_box:
            pts = self.finite_domain.points
            near = np.flatnonzero(np.linalg.norm(pts - centre, axis=1) < rho)
            near = near if near.size else np.array([int(np.argmin(np.linalg.norm(pts - centre, axis=1)))])
            return pts[near[int(np.argmin(nw.log_density(pts[near])))]].copy()
        d = self.domain.dim
        direction = self.rng.standard_normal((self.n_ball, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        radius = rho * self.rng.random(self.n_ball) ** (1.0 / d)
        cand = np.clip(centre + direction * radius[:, None], 0.0, 1.0)  # projection keeps points in the ball
        log_w = nw.log_density(cand)
        best = cand[int(np.argmin(log_w))]
        lo, hi = np.clip(centre - rho, 0.0, 1.0), np.clip(centre + rho, 0.0, 1.0)

        def f(u: FloatArray) -> tuple[float, FloatArray]:
            _, lw, _, dlw = nw.predict_grad(u)
            return lw, dlw

        res = minimize(f, best, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)))
        if np.linalg.norm(res.x - centre) < rho and res.fun < float(np.min(log_w)):
            return np.clip(res.x, 0.0, 1.0)
        return best

    def _ask(self, t: float | None) -> FloatArray:
        if self.n_obs == 0:
            return self.domain.sample(1, self.rng)[0]
        nw = self.model()
        distinct, sc = self.scores(nw)
        centre = distinct[int(np.argmax(sc))]
        if self.n_obs**self.alpha < distinct.shape[0]:
            return self._from_coords(centre)
        return self._from_coords(self._widen(nw, centre))
