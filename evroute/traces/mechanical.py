"""Energies that add up along a route: battery energy minus the change of the vehicle's mechanical energy.

By conservation of energy, over any stretch of driving the battery pays for the change of the vehicle's mechanical
energy plus everything dissipated on the way::

    E_battery = dM + D,     M = (1/2 m_k v^2 + m g z) / 3600   [Wh],     D >= 0

(``m_k`` the mass whose kinetic energy is counted: the vehicle's mass plus the equivalent mass of its rotating
parts; ``z`` the height of the road under the vehicle).  ``D`` -- the *reduced* energy -- holds the resistances
(rolling, drag), the drivetrain's losses on propulsion (``W (1/eta+ - 1)``), the part of braking the motor does not
recover (``|W| (1 - eta-)``, all of it beyond the regeneration power cap) and the auxiliaries: each counted once,
at 1 J per J, so ``D`` is what the battery gave that did not end up stored in the vehicle's motion or height.  It
is the quantity every learner in evroute observes and every model file of kind ``reduced`` holds:

* ``dM`` telescopes: along a route the windows' (or edges') mechanical changes sum to ``M(end) - M(start)``,
  whatever happened between, so a route's battery energy is the **sum of its edges' reduced energies plus its own
  boundary term** ``M(end) - M(start)`` (:func:`boundary_wh`); a driver asking for a route starts and stops at rest,
  so the kinetic part of that term is 0 and only ``m g (z_end - z_start) / 3600`` remains;
* the kinetic energy a trip happens to carry at a log's end, or the acceleration from rest at its start, are
  properties of that trip, not of the edges where they happened: with battery energies as observations they would
  be learned as edge energy (and would not add across routes); with reduced energies they cancel exactly.

The same convention as the SUMO replay (:mod:`evroute.sumo.record`: ``reduced_wh = energy_wh - kinetic_wh -
potential_wh`` with SUMO's ``m + rotatingMass`` and junction heights), and heights come from the road network, not
the log (GPS altitude is metres off; the network's junction heights are what a route's boundary term uses, so the
two agree exactly).  Model files record it in their header as :func:`energies_meta`; ``evroute route`` / ``reach``
add the boundary term back (:mod:`evroute.cli.driver`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evroute.energy import VehicleProfile, edge_prior
from evroute.errors import DataError, ParameterError

#: the value of a model header's ``meta["energies"]["kind"]`` for reduced energies (module doc)
REDUCED = "reduced"


def potential_wh(network: Any, vehicle: VehicleProfile, gravity_mps2: float | None = None) -> np.ndarray:
    """``(E,)`` potential energy change ``m g (z_to - z_from) / 3600`` of every edge (Wh), no efficiency;
    ``gravity_mps2`` defaults to the profile's."""
    g = vehicle.gravity_mps2 if gravity_mps2 is None else float(gravity_mps2)
    return vehicle.mass_kg * g * (np.asarray(network.z_to_m) - np.asarray(network.z_from_m)) / 3600.0


def reduced_prior_wh(network: Any, vehicle: VehicleProfile, prior: str = "eq8") -> np.ndarray:
    """``(E,)`` the ``prior`` model's edge energy minus the edge's potential change (Wh): the physics prior of a reduced
    energy.

    ``prior`` names a model of :func:`evroute.energy.edge_prior` (``"profile"``, the project's default, as
    ``evroute learn`` starts a new model from; ``"eq8"``, the paper's, here by default for its exact route identity).
    Eq. 8 is at constant speed (no kinetic change), so its reduced energy is its dissipated part, ``>= 0`` for
    efficiencies ``<= 1`` on a network with ``|dz| <= length``; summed over a route and given back its boundary term
    ``m g (z_end - z_start) / 3600`` it is Eq. 8's route energy exactly (consecutive edges share their junction's
    height).  The speed profile drives each edge ``u -> v_c -> u`` (no kinetic change either), so the same holds for
    its expected energies."""
    return edge_prior(network, vehicle, prior).energy_wh - potential_wh(network, vehicle)


def energies_meta(vehicle: VehicleProfile, kinetic_mass_kg: float | None = None, **extra: Any) -> dict[str, Any]:
    """What a model file's ``meta["energies"]`` records for reduced energies: the convention, ``g`` and the masses
    of the potential and kinetic terms (a route's boundary term needs them)."""
    mk = vehicle.mass_kg if kinetic_mass_kg is None else float(kinetic_mass_kg)
    return {
        "kind": REDUCED,
        "gravity_mps2": float(vehicle.gravity_mps2),
        "mass_kg": float(vehicle.mass_kg),
        "kinetic_mass_kg": mk,
        **extra,
    }


def is_reduced(header: dict[str, Any] | None) -> bool:
    """Whether a model file's header says it holds reduced energies (its ``meta["energies"]["kind"]``)."""
    meta = (header or {}).get("meta", {})
    energies = meta.get("energies", {}) if isinstance(meta, dict) else {}
    return isinstance(energies, dict) and energies.get("kind") == REDUCED


def require_reduced(header: dict[str, Any], path: str) -> None:
    """:class:`DataError` (one line) unless the model file at ``path`` holds reduced energies: a model of battery
    energies cannot take readings of reduced energies (the two differ per edge by the potential change)."""
    if not is_reduced(header):
        raise DataError(
            f"model {path} holds battery energies per edge; trip logs are learned as reduced energies (battery minus "
            "kinetic and potential energy, docs/trip_logs.md): start a new model file"
        )


def boundary_wh(
    meta: dict[str, Any],
    z_start_m: float,
    z_end_m: float,
    *,
    v_start_mps: float = 0.0,
    v_end_mps: float = 0.0,
) -> float:
    """A trip's boundary term ``M(end) - M(start)`` (Wh, module doc) from a header's ``meta["energies"]``: what the
    battery pays on top of the sum of the route's reduced energies (``v = 0``: from rest to rest)."""
    try:
        g, m, mk = float(meta["gravity_mps2"]), float(meta["mass_kg"]), float(meta["kinetic_mass_kg"])
    except (KeyError, TypeError, ValueError):
        raise DataError(f"model header's energies {meta!r} lack gravity_mps2 / mass_kg / kinetic_mass_kg") from None
    return (m * g * (z_end_m - z_start_m) + 0.5 * mk * (v_end_mps**2 - v_start_mps**2)) / 3600.0


def sample_mechanical_wh(
    speed_mps: np.ndarray,
    height_m: np.ndarray,
    vehicle: VehicleProfile,
    kinetic_mass_kg: float | None = None,
) -> np.ndarray:
    """``(N,)`` mechanical energy ``M_i = (1/2 m_k v_i^2 + m g z_i) / 3600`` of each sample (Wh).

    Args:
        speed_mps: ``(N,)`` logged speed (m/s).
        height_m: ``(N,)`` height of the road at each sample (m; :func:`path_height_m`), ``nan`` where unknown.
        kinetic_mass_kg: ``m_k`` (default: the profile's mass).
    """
    v = np.asarray(speed_mps, dtype=np.float64)
    z = np.asarray(height_m, dtype=np.float64)
    if v.shape != z.shape:
        raise ParameterError(f"speed {v.shape} and height {z.shape} differ in shape")
    mk = vehicle.mass_kg if kinetic_mass_kg is None else float(kinetic_mass_kg)
    if not mk > 0:
        raise ParameterError(f"kinetic mass must be > 0, got {mk}")
    return (0.5 * mk * v**2 + vehicle.mass_kg * vehicle.gravity_mps2 * z) / 3600.0


def path_height_m(
    edge: np.ndarray, offset_m: np.ndarray, length_m: np.ndarray, z_from_m: np.ndarray, z_to_m: np.ndarray
) -> np.ndarray:
    """``(T,)`` road height at matched positions (m): linear along the edge between its junction heights, ``nan``
    where the sample is unmatched (``edge < 0``).

    Args:
        edge, offset_m: ``(T,)`` matched edge and position along it (m) (:class:`~evroute.traces.mapmatch.
            MatchedTrace`).
        length_m: ``(E,)`` the edge lengths the offsets refer to; z_from_m, z_to_m: ``(E,)`` junction heights (m).
    """
    e = np.asarray(edge, dtype=np.int64)
    ok = e >= 0
    out = np.full(e.shape, np.nan)
    eo = e[ok]
    share = np.clip(np.asarray(offset_m, dtype=np.float64)[ok] / np.maximum(np.asarray(length_m)[eo], 1e-9), 0, 1)
    zf, zt = np.asarray(z_from_m, dtype=np.float64)[eo], np.asarray(z_to_m, dtype=np.float64)[eo]
    out[ok] = zf + share * (zt - zf)
    return out


__all__ = [
    "REDUCED",
    "boundary_wh",
    "energies_meta",
    "is_reduced",
    "path_height_m",
    "potential_wh",
    "reduced_prior_wh",
    "require_reduced",
    "sample_mechanical_wh",
]
