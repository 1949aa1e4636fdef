"""Observation-noise families of the misspecified environments (issue 38): what a driven route's feedback adds.

Every family has mean 0 and per-edge variance ``noise_var`` (Wh^2), so that only its SHAPE differs from the
models' assumption (independent Gaussian noise per edge):

* ``gaussian``: ``eps_e = s z_e``, ``z_e`` i.i.d. standard normal (the models' own assumption);
* ``student-t``: ``eps_e = s sqrt((df - 2) / df) t_e``, ``t_e`` i.i.d. Student-t with ``df > 2`` degrees of freedom
  (heavy tails: excess kurtosis ``6 / (df - 4)`` for ``df > 4``, infinite for ``df <= 4``);
* ``trip``: ``eps_e = s (sqrt(rho) u + sqrt(1 - rho) z_e)`` with ONE ``u ~ N(0, 1)`` per call, i.e. per trip (a
  driver / day effect shared by every edge of the route): variance ``s^2``, covariance ``rho s^2`` between two edges
  of the same trip, 0 between trips.

``s = sqrt(noise_var)``.  One call of :func:`draw_noise` is one trip (the environment's ``observe``).
"""

from __future__ import annotations

import numpy as np

from evroute.errors import ParameterError

__all__ = ["NOISE_FAMILIES", "check_noise", "draw_noise"]

NOISE_FAMILIES: tuple[str, ...] = ("gaussian", "student-t", "trip")


def check_noise(family: str, df: float, trip_share: float) -> None:
    """:class:`ParameterError` unless ``family`` is known, ``df > 2`` and ``0 <= trip_share <= 1``."""
    if family not in NOISE_FAMILIES:
        raise ParameterError(f"noise must be one of {', '.join(NOISE_FAMILIES)}, got {family!r}")
    if not df > 2:
        raise ParameterError(f"df must be > 2 (finite noise variance), got {df}")
    if not 0.0 <= trip_share <= 1.0:
        raise ParameterError(f"trip_share must be in [0, 1], got {trip_share}")


def draw_noise(
    family: str, n: int, noise_var: float, rng: np.random.Generator, *, df: float = 3.0, trip_share: float = 0.5
) -> np.ndarray:
    """``(n,)`` noise of one trip over ``n`` driven edges (Wh), of ``family`` with per-edge variance ``noise_var``."""
    s = float(np.sqrt(noise_var))
    if family == "gaussian":
        return s * rng.standard_normal(n)
    if family == "student-t":
        return s * np.sqrt((df - 2.0) / df) * rng.standard_t(df, n)
    if family == "trip":
        u = rng.standard_normal()
        return s * (np.sqrt(trip_share) * u + np.sqrt(1.0 - trip_share) * rng.standard_normal(n))
    raise ParameterError(f"noise must be one of {', '.join(NOISE_FAMILIES)}, got {family!r}")
