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
``battery_capacity_wh``     ``device.battery.capacity``     the EV starts half full (:func:`battery_params`)
``min_soc``, ``max_soc``    none                            the window is a routing constraint, not SUMO's
``auxiliary_power_w``       ``constantPowerIntake``         when set, plus the HVAC at ``ambient_temp_c`` (None:
                                                            SUMO's 100 W default)
``max_regen_power_kw``      ``maximumRecuperationPower``    ``MMPEVEM`` only (W); SUMO's ``Energy`` model has
                                                            no recuperation power limit
``radial_drag_m``           ``radialDragCoefficient``       ``Energy`` only, when set (None: SUMO's 0.1)
``rotating_mass_kg``        ``rotatingMass``                when set (None: SUMO's 40 kg)
``top_speed_kmh``           ``maxSpeed`` (attribute, m/s)   when set
``motor_power_kw``,         none                            SUMO's ``Energy`` model has constant
``motor_efficiency_map``                                    efficiencies; MMPEVEM has its own loss map
``regen_fraction_max``,     none                            SUMO recovers all braking power (no brake
``regen_half_speed_kmh``,                                   blending); its battery device has one efficiency
``regen_fade_width_kmh``,
``battery_efficiency_map``
``charging_curve``,         none                            not energy-model parameters
``sources``
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
#: profile fields that do not change what SUMO records for a trip drawing or recovering less than half the battery
#: (every trip of a city day): left out of the recorded-day cache keys (:func:`energy_fields`)
BATTERY_ONLY_FIELDS = ("battery_capacity_wh", "min_soc", "max_soc")
#: profile fields that change no energy (documentation and charging): left out of the cache keys too
NON_SIMULATED_FIELDS = ("sources", "charging_curve")


def battery_params(vehicle: VehicleProfile) -> tuple[float, float]:
    """``(capacity_wh, initial_charge_wh)`` of the SUMO battery device: the profile's capacity, starting half full,
    so that a trip drawing or recovering less than half the capacity is never clipped at an empty or full battery
    (the probes read the energy drawn as the initial charge minus ``device.battery.chargeLevel``)."""
    cap = float(vehicle.battery_capacity_wh)
    return cap, 0.5 * cap


def energy_fields(vehicle: VehicleProfile) -> dict[str, float | str]:
    """The profile fields that change a recorded SUMO trip's energy (cache keys of recorded days): every field but
    the name, the description, :data:`BATTERY_ONLY_FIELDS` and the optional refinements left unset (None), so
    the keys of days recorded before those fields existed stay the same."""
    skip = ("name", "description", *BATTERY_ONLY_FIELDS, *NON_SIMULATED_FIELDS)
    return {k: v for k, v in vehicle.to_dict().items() if k not in skip and v is not None}


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
    if vehicle.auxiliary_power_w is not None or vehicle.hvac_w > 0:  # with the HVAC at the ambient temperature
        params["constantPowerIntake"] = vehicle.aux_w
    if vehicle.radial_drag_m is not None and model == "Energy":
        params["radialDragCoefficient"] = float(vehicle.radial_drag_m)
    if vehicle.max_regen_power_kw is not None and model == "MMPEVEM":
        params["maximumRecuperationPower"] = 1000.0 * float(vehicle.max_regen_power_kw)
    if vehicle.rotating_mass_kg is not None:
        params["rotatingMass"] = float(vehicle.rotating_mass_kg)
    return params


def effective_mass_kg(vehicle: VehicleProfile | None = None, extra: Mapping[str, float] | None = None) -> float:
    """Mass whose kinetic energy SUMO's ``Energy`` model charges, ``mass + rotatingMass`` (kg): the profile's mass
    plus the rotating mass (the profile's ``rotating_mass_kg``, else :data:`SUMO_ONLY_DEFAULTS`;
    ``extra["rotatingMass"]`` overrides both)."""
    v = vehicle or VehicleProfile()
    rot = {**SUMO_ONLY_DEFAULTS, **profile_params(v), **(extra or {})}["rotatingMass"]
    return float(v.mass_kg) + float(rot)


def ev_vtype_xml(
    vehicle: VehicleProfile | None = None,
    *,
    model: str = "Energy",
    vtype_id: str = DEFAULT_VTYPE,
    extra: Mapping[str, float] | None = None,
    attributes: Mapping[str, str] | None = None,
    charge_wh: float | None = None,
) -> str:
    """One ``<vType>`` element: a passenger EV with a battery device and the ``model`` energy model.

    Args:
        vehicle: the vehicle profile (default ``sumo_ev``).
        model: ``"Energy"`` or ``"MMPEVEM"``.
        vtype_id: the type id (default: SUMO's default type, so that every vehicle without a type becomes this EV).
        extra: further params, e.g. ``{"constantPowerIntake": 0}`` (override :data:`SUMO_ONLY_DEFAULTS`).
        attributes: further vType attributes, e.g. ``{"sigma": "0"}`` for a driver without speed noise.
        charge_wh: initial battery charge (Wh, at most the capacity; default half the capacity).
    """
    v = vehicle or VehicleProfile()
    capacity, charge = battery_params(v)
    if charge_wh is not None:
        if not 0 <= charge_wh <= capacity:
            raise ParameterError(f"initial charge {charge_wh:g} Wh is outside 0..{capacity:g} Wh (the capacity)")
        charge = float(charge_wh)
    params: dict[str, float | str] = {
        "has.battery.device": "true",
        "device.battery.capacity": capacity,
        "device.battery.chargeLevel": charge,
    }
    params.update(SUMO_ONLY_DEFAULTS)
    params.update(profile_params(v, model))  # a set auxiliary power replaces SUMO's default
    params.update(extra or {})
    attrs = {
        "id": vtype_id,
        "vClass": "passenger",
        "emissionClass": f"{model}/unknown" if model == "Energy" else "MMPEVEM",
        "mass": f"{v.mass_kg:g}",
    }
    if v.top_speed_kmh is not None:
        attrs["maxSpeed"] = f"{v.top_speed_mps:g}"
    attrs.update(attributes or {})
    head = " ".join(f"{k}={quoteattr(str(val))}" for k, val in attrs.items())
    text = {k: f"{val:g}" if isinstance(val, float) else str(val) for k, val in params.items()}
    body = "".join(f"\n        <param key={quoteattr(k)} value={quoteattr(val)}/>" for k, val in text.items())
    return f"    <vType {head}>{body}\n    </vType>"


__all__ = [
    "BATTERY_ONLY_FIELDS",
    "NON_SIMULATED_FIELDS",
    "DEFAULT_VTYPE",
    "ENERGY_MODELS",
    "SUMO_GRAVITY_MPS2",
    "SUMO_ONLY_DEFAULTS",
    "battery_params",
    "energy_fields",
    "effective_mass_kg",
    "ev_vtype_xml",
    "profile_params",
]
