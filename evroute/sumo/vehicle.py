"""The EV of SUMO's battery device, built from the same vehicle profile as the physics model (Eq. 8).

One JSON profile (``data/vehicles/*.json``, :class:`evroute.energy.VehicleProfile`) drives both the prior and the
simulator.  Field mapping to SUMO 1.28 (``Energy`` model, the model of the reference paper's Table 2):

==========================  ==============================  ===============================================
profile field               SUMO vType attribute / param    note
==========================  ==============================  ===============================================
``mass_kg``                 ``mass`` (attribute)            vehicle mass
``rolling_resistance``      ``rollDragCoefficient``
``front_area_m2``           ``frontSurfaceArea``
``drag_coefficient``        ``airDragCoefficient``
``propulsion_efficiency``   ``propulsionEfficiency``        ``Energy`` only (MMPEVEM uses its loss map)
``recuperation_efficiency`` ``recuperationEfficiency``      ``Energy`` only
``gravity_mps2``            none                            SUMO uses g = 9.81 m/s^2 (hard-coded)
``air_density_kgpm3``       none                            SUMO uses rho = 1.2 kg/m^3 (hard-coded)
==========================  ==============================  ===============================================

Parameters SUMO has and Eq. 8 lacks keep SUMO's defaults (:data:`SUMO_ONLY_DEFAULTS`; override with ``extra``):
the rotating mass (kinetic energy of wheels and motor when accelerating), the radial (cornering) drag and the
constant power of the auxiliaries.  They are part of what the validation measures Eq. 8 against.
"""

from __future__ import annotations

from collections.abc import Mapping
from xml.sax.saxutils import quoteattr

from evroute.energy import VehicleProfile
from evroute.errors import ParameterError

ENERGY_MODELS: tuple[str, ...] = ("Energy", "MMPEVEM")

#: SUMO 1.28 defaults of the parameters Eq. 8 does not have (``Energy`` model, SUMO's documentation).
SUMO_ONLY_DEFAULTS: dict[str, float] = {
    "rotatingMass": 40.0,  # kg, equivalent mass of the rotating parts
    "radialDragCoefficient": 0.1,
    "constantPowerIntake": 100.0,  # W, auxiliaries
}

#: SUMO's gravitational acceleration (m/s^2, hard-coded in its energy models)
SUMO_GRAVITY_MPS2 = 9.81

#: vType id the demand's vehicles use when they name none; redefining it makes every such vehicle this EV.
DEFAULT_VTYPE = "DEFAULT_VEHTYPE"
#: a battery large enough never to run empty within a simulated day (Wh); it starts half full, so that recuperated
#: energy is never clipped at a full battery
BATTERY_WH = 1.0e9
CHARGE_WH = 0.5 * BATTERY_WH


def profile_params(vehicle: VehicleProfile, model: str = "Energy") -> dict[str, float]:
    """SUMO vType params (``<param key=... value=...>``) of ``vehicle`` for energy ``model`` (see the mapping)."""
    if model not in ENERGY_MODELS:
        raise ParameterError(f"unknown SUMO energy model {model!r} (use {' or '.join(ENERGY_MODELS)})")
    params = {
        "frontSurfaceArea": vehicle.front_area_m2,
        "airDragCoefficient": vehicle.drag_coefficient,
        "rollDragCoefficient": vehicle.rolling_resistance,
    }
    if model == "Energy":
        params["propulsionEfficiency"] = vehicle.propulsion_efficiency
        params["recuperationEfficiency"] = vehicle.recuperation_efficiency
    return params


def effective_mass_kg(vehicle: VehicleProfile | None = None, extra: Mapping[str, float] | None = None) -> float:
    """Mass whose kinetic energy SUMO's ``Energy`` model charges, ``mass + rotatingMass`` (kg): the profile's mass
    plus the vType's rotating mass (:data:`SUMO_ONLY_DEFAULTS`, or ``extra["rotatingMass"]``)."""
    v = vehicle or VehicleProfile()
    rot = {**SUMO_ONLY_DEFAULTS, **(extra or {})}["rotatingMass"]
    return float(v.mass_kg) + float(rot)


def ev_vtype_xml(
    vehicle: VehicleProfile | None = None,
    *,
    model: str = "Energy",
    vtype_id: str = DEFAULT_VTYPE,
    extra: Mapping[str, float] | None = None,
    attributes: Mapping[str, str] | None = None,
) -> str:
    """One ``<vType>`` element: a passenger EV with a battery device and the ``model`` energy model.

    Args:
        vehicle: the vehicle profile (default ``sumo_ev``).
        model: ``"Energy"`` or ``"MMPEVEM"``.
        vtype_id: the type id (default: SUMO's default type, so that every vehicle without a type becomes this EV).
        extra: further params, e.g. ``{"constantPowerIntake": 0}`` (override :data:`SUMO_ONLY_DEFAULTS`).
        attributes: further vType attributes, e.g. ``{"sigma": "0"}`` for a driver without speed noise.
    """
    v = vehicle or VehicleProfile()
    params: dict[str, float | str] = {
        "has.battery.device": "true",
        "device.battery.capacity": BATTERY_WH,
        "device.battery.chargeLevel": CHARGE_WH,
    }
    params.update(profile_params(v, model))
    params.update(SUMO_ONLY_DEFAULTS)
    params.update(extra or {})
    attrs = {
        "id": vtype_id,
        "vClass": "passenger",
        "emissionClass": f"{model}/unknown" if model == "Energy" else "MMPEVEM",
        "mass": f"{v.mass_kg:g}",
    }
    attrs.update(attributes or {})
    head = " ".join(f"{k}={quoteattr(str(val))}" for k, val in attrs.items())
    text = {k: f"{val:g}" if isinstance(val, float) else str(val) for k, val in params.items()}
    body = "".join(f"\n        <param key={quoteattr(k)} value={quoteattr(val)}/>" for k, val in text.items())
    return f"    <vType {head}>{body}\n    </vType>"


__all__ = [
    "BATTERY_WH",
    "CHARGE_WH",
    "DEFAULT_VTYPE",
    "ENERGY_MODELS",
    "SUMO_GRAVITY_MPS2",
    "SUMO_ONLY_DEFAULTS",
    "effective_mass_kg",
    "ev_vtype_xml",
    "profile_params",
]
