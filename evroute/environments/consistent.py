"""A physically consistent version of the paper's environment: no edge can have a negative reduced cost.

The paper perturbs every edge's energy by a Gaussian ``sigma0 g_e`` (:mod:`evroute.environments.paper`).  That
can make a flat edge's energy negative and creates negative-energy cycles, so a car could gain energy by circling
and the best route is NP-hard.  Here only the DISSIPATIVE part of the energy is perturbed.  With the elevation
potential ``p_e = m g eta- dz_e / 3600`` (:func:`evroute.energy.elevation_potential_wh`) every physics energy splits
into ``E_det(e) = p_e + r_e``, with the reduced cost ``r_e >= 0`` (the losses and resistances).  The environment
draws the same Gaussian field ``g`` as the paper's environment of the same seed (same kernel, same random stream)
and turns it into a log-normal multiplier of the reduced cost:

    r_e = r_det(e) exp(s_e z_e - s_e^2 / 2),   z_e = g_e / sqrt(v_e),   f_e = p_e + r_e,

with ``v_e`` the prior variance of ``g_e``.  Then

* ``E[f_e] = E_det(e)``: the paper's mean (``E[exp(s z - s^2/2)] = 1``);
* ``Var f_e = r_det(e)^2 (exp(s_e^2) - 1) = min(sigma0^2 v_e, (max_cv r_det(e))^2)``: the paper's variance
  ``sigma0^2 v_e`` wherever it is compatible with a non-negative reduced cost whose coefficient of variation is at
  most ``max_cv`` (default 1), smaller on edges whose dissipative energy is small against ``sigma0``;
* ``corr(f_i, f_j) = (exp(s_i s_j rho_ij) - 1) / sqrt((exp(s_i^2) - 1)(exp(s_j^2) - 1))`` for the paper's
  correlation ``rho_ij`` (a Gaussian copula: the rank correlation is the paper's exactly, the linear one is close
  to it for small ``s``);
* every reduced cost ``f_e - p_e = r_e >= 0``, so no cycle has negative energy (the potential telescopes around a
  cycle) and the exact minimum-energy route is ONE Dijkstra on the reduced costs (:meth:`optimal_route`).

The measured deviation from the paper's GP (mean, variance, correlation) is in ``docs/regret.md``.  Feedback and
the noise are the paper's (``noise = 0.1 sigma_det``, ``sigma_det`` the spread of ``E_det``); ``prior_var`` is the
paper's ``sigma0^2 = (0.25 sigma_det)^2``, but the ACTUAL marginal variances ``Var f_e`` above (after the cap) are
:meth:`ConsistentEnvironment.marginal_variances`, which the oracle ablation hands the models
(:func:`evroute.experiments.registry.model_prior`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evroute.energy import VehicleProfile, elevation_potential_wh, network_energy_wh
from evroute.environments.base import EnergyEnvironment, config_from_params
from evroute.environments.paper import EnvironmentConfig, seeded_prior_draw
from evroute.errors import check_positive
from evroute.linegraph import LineGraph
from evroute.oracle import Route, RouteOracle, route_cost


@dataclass(frozen=True)
class ConsistentConfig(EnvironmentConfig):
    """The paper's parameters (:class:`EnvironmentConfig`) plus the cap on the reduced costs' variation."""

    max_cv: float = 1.0  # cap on the coefficient of variation (std / mean) of every edge's reduced cost

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("max_cv", self.max_cv, allow_zero=True)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ConsistentEnvironment(EnergyEnvironment):
    """Static environment with non-negative reduced costs ``f - potential`` (see the module docstring).

    Attributes (besides the base class's):
        potential_wh: ``(E,)`` elevation potential difference ``p_e`` of each edge (Wh).
        reduced_wh: ``(E,)`` true reduced costs ``r_e = f_e - p_e >= 0`` (Wh).
        marginal_var_wh2: ``(E,)`` exact variance of ``f_e`` over the environment's draws (Wh^2),
            ``min(sigma0^2 v_e, (max_cv r_det(e))^2)``; ``None`` when the environment was built without it.
    """

    name = "consistent"

    def __init__(
        self,
        linegraph: LineGraph,
        prior_mean_wh: np.ndarray,
        true_mean_wh: np.ndarray,
        prior_var: float,
        noise_var: float,
        config: ConsistentConfig,
        potential_wh: np.ndarray,
        marginal_var_wh2: np.ndarray | None = None,
    ) -> None:
        super().__init__(linegraph, prior_mean_wh, true_mean_wh, prior_var, noise_var, config)
        self.potential_wh = np.asarray(potential_wh, dtype=np.float64)
        self.reduced_wh = np.maximum(self.true_mean_wh - self.potential_wh, 0.0)
        self.marginal_var_wh2 = None if marginal_var_wh2 is None else np.asarray(marginal_var_wh2, dtype=np.float64)

    def marginal_variances(self) -> np.ndarray | None:
        """``(E,)`` exact ``Var f_e`` over the draws of this environment's configuration (Wh^2; see the module doc)."""
        return self.marginal_var_wh2

    @classmethod
    def sample(
        cls,
        linegraph: LineGraph,
        *,
        vehicle: VehicleProfile | None = None,
        config: ConsistentConfig | None = None,
        seed: int = 0,
    ) -> ConsistentEnvironment:
        """Draw the environment of ``seed`` (the log-normal image of the paper environment's draw of ``seed``)."""
        cfg = config or ConsistentConfig()
        net = linegraph.network
        e_det = network_energy_wh(net, vehicle)
        pot = elevation_potential_wh(net, vehicle)
        r_det = np.maximum(e_det - pot, 0.0)  # >= 0 up to rounding for a consistent network (checked at load)
        sigma_det2 = float(e_det.var())
        prior_var = cfg.outputscale_frac**2 * sigma_det2
        noise_var = cfg.noise_frac**2 * sigma_det2
        if prior_var > 0:
            g, v = seeded_prior_draw(linegraph, cfg, seed)
            f = pot + lognormal_reduced_costs(r_det, g, v, np.sqrt(prior_var), cfg.max_cv)
            marginal = reduced_cost_variances(r_det, v, np.sqrt(prior_var), cfg.max_cv)
        else:
            f, marginal = e_det.copy(), np.zeros_like(e_det)
        return cls(linegraph, e_det, f, prior_var, noise_var, cfg, pot, marginal)

    def optimal_route(self, start: int, goal: int) -> Route:
        """The exact minimum-energy route: Dijkstra on the reduced costs; ``cost`` is its true energy (Wh).

        Exact because the potential telescopes along every route: consecutive edges share the elevation of their
        junction.  On a network where they do not (checked once), Johnson's algorithm on the energies is used.
        From :data:`ROUTE_CACHE_MIN_EDGES` edges on, the check and the route are kept in the compute cache
        (:func:`reduced_route`).
        """
        edges = reduced_route(self.linegraph, self.reduced_wh, start, goal)
        if edges is None:
            return super().optimal_route(start, goal)
        return Route(edges, route_cost(self.true_mean_wh, edges), "dijkstra-reduced")


#: Line graphs with at least this many nodes keep :func:`reduced_route`'s result in the compute cache (below, the
#: Dijkstra costs milliseconds, no more than reading an entry; at a million edges ~0.6 s of every warm set-up).
ROUTE_CACHE_MIN_EDGES = 100_000


def _route_code_digest() -> str:
    """SHA-256 of the source of the code :func:`reduced_route` runs (part of its cache key)."""
    import hashlib
    import inspect

    from evroute import oracle

    parts = (potential_telescopes, oracle.RouteOracle, oracle._backtrack, LineGraph.arc_pattern, _reduced_route_now)
    return hashlib.sha256("".join(inspect.getsource(f) for f in parts).encode()).hexdigest()


def _reduced_route_now(linegraph: LineGraph, reduced_wh: np.ndarray, start: int, goal: int) -> np.ndarray:
    """``(k,)`` int64 edges of the Dijkstra route on the ``(E,)`` reduced costs, or ``(0,)`` when the potential does
    not telescope on ``linegraph`` (:func:`potential_telescopes`)."""
    if not potential_telescopes(linegraph):
        return np.zeros(0, dtype=np.int64)
    return np.asarray(RouteOracle(linegraph).shortest_route(reduced_wh, start, goal).edges, dtype=np.int64)


def reduced_route(linegraph: LineGraph, reduced_wh: np.ndarray, start: int, goal: int) -> np.ndarray | None:
    """The ``(k,)`` edges of the minimum route on the ``(E,)`` reduced costs ``reduced_wh`` (Wh, >= 0) from ``start``
    to ``goal``, or ``None`` when the elevation potential does not telescope on ``linegraph``.

    From :data:`ROUTE_CACHE_MIN_EDGES` nodes on, kept in the compute cache (:mod:`evroute.network.computecache`)
    under the line graph's :meth:`~evroute.linegraph.LineGraph.content_digest`, the checksum of ``reduced_wh``, the
    two ends and the source of the code that computes it: a verified entry is the route the Dijkstra returns, and
    an entry that is not a route from ``start`` to ``goal`` is rebuilt with one warning."""
    start, goal = int(start), int(goal)
    if linegraph.n_nodes < ROUTE_CACHE_MIN_EDGES:
        edges = _reduced_route_now(linegraph, reduced_wh, start, goal)
    else:
        from evroute.network.computecache import array_digest, cached_compute

        def check(value: Any) -> None:
            if not isinstance(value, np.ndarray) or value.dtype != np.int64 or value.ndim != 1:
                raise ValueError("not a route")
            if len(value) and (value[0] != start or value[-1] != goal or value.min() < 0):
                raise ValueError("not a route between the two ends")
            if len(value) and value.max() >= linegraph.n_nodes:
                raise ValueError("a route edge is outside the line graph")

        inputs = {
            "linegraph": linegraph.content_digest(),
            "reduced_wh": array_digest(np.asarray(reduced_wh, dtype=np.float64)),
            "ends": [start, goal],
            "code": _route_code_digest(),
        }
        edges = cached_compute(
            "reduced-route",
            inputs,
            lambda: _reduced_route_now(linegraph, reduced_wh, start, goal),
            what="optimal route",
            array=True,
            blas=False,
            check=check,
        )
    return None if len(edges) == 0 else np.array(edges, dtype=np.int64)


def potential_telescopes(linegraph: LineGraph, tol_m: float = 1e-6) -> bool:
    """Whether every turn ``e1 -> e2`` has ``z_to(e1) == z_from(e2)`` (the elevation potential is a node potential)."""
    net = linegraph.network
    _, heads, tails = linegraph.arc_pattern()  # the turns (e1, e2) = (tails, heads), without a (C, 2) copy
    return bool(len(heads) == 0 or np.max(np.abs(net.z_to_m[tails] - net.z_from_m[heads])) <= tol_m)


def lognormal_reduced_costs(
    r_det: np.ndarray, g: np.ndarray, var: np.ndarray, sigma0: float, max_cv: float
) -> np.ndarray:
    """``(E,)`` reduced costs ``r_det exp(s z - s^2 / 2)`` with ``z = g / sqrt(var)`` and the ``s`` of the module doc.

    Args:
        r_det: ``(E,)`` physics reduced costs (Wh, >= 0), the mean of the result.
        g: ``(E,)`` Gaussian draw; ``var``: ``(E,)`` its prior variances.
        sigma0: target standard deviation per unit of ``var`` (Wh); ``max_cv``: cap on std / mean.
    """
    r_det = np.asarray(r_det, dtype=np.float64)
    v = np.maximum(np.asarray(var, dtype=np.float64), 1e-12)
    z = np.asarray(g, dtype=np.float64) / np.sqrt(v)
    target_sd = np.sqrt(reduced_cost_variances(r_det, v, sigma0, max_cv))
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(r_det > 0, target_sd / r_det, 0.0)
    s = np.sqrt(np.log1p(cv**2))
    return r_det * np.exp(s * z - 0.5 * s**2)


def reduced_cost_variances(r_det: np.ndarray, var: np.ndarray, sigma0: float, max_cv: float) -> np.ndarray:
    """``(E,)`` variances (Wh^2) of the reduced costs of :func:`lognormal_reduced_costs`, hence of ``f_e``:
    ``min(sigma0^2 var, (max_cv r_det)^2)`` (``r_det`` ``(E,)`` Wh, ``var`` ``(E,)`` the Gaussian draw's variances)."""
    r_det = np.asarray(r_det, dtype=np.float64)
    v = np.maximum(np.asarray(var, dtype=np.float64), 1e-12)
    return np.minimum(sigma0**2 * v, (max_cv * r_det) ** 2)


def parse_params(params: dict[str, Any]) -> ConsistentConfig:
    """:class:`ConsistentConfig` from an experiment's ``environment`` dict (:class:`ParameterError` if invalid)."""
    return config_from_params(ConsistentConfig, params, "consistent")


def build(
    linegraph: LineGraph, params: dict[str, Any], *, vehicle: VehicleProfile | None = None, seed: int = 0
) -> ConsistentEnvironment:
    """Registry entry: the consistent environment of ``seed`` with the parameters ``params``."""
    return ConsistentEnvironment.sample(linegraph, vehicle=vehicle, config=parse_params(params), seed=seed)


#: parameter schema of this environment (checked by :mod:`evroute.validation` before a run)
CONFIG = ConsistentConfig
