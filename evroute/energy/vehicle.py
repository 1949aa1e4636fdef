"""The vehicle profile: the parameters of the energy models, loaded from ``evroute/resources/vehicles/*.json``.

The paper's fields (mass, resistances, two constant efficiencies, battery) are always present.  Optional fields
(``None``: not modelled, so a profile without them gives the paper's Eq. 8 unchanged) add what a real car has:

* ``motor_power_kw`` and ``motor_efficiency_map``: the motor's efficiency as a function of the fraction of its peak
  power, ``[[fraction, efficiency], ...]`` (linear interpolation, clamped at the ends; FASTSim's
  ``eff_interp_achieved``).  The battery-to-wheel efficiency is then ``propulsion_efficiency * eta_motor(|P| /
  P_max)`` (``propulsion_efficiency`` holds the rest of the chain: transmission and battery), the wheel-to-battery
  one ``recuperation_efficiency * eta_motor``;
* ``auxiliary_power_w`` (W), ``max_regen_power_kw`` (kW), ``rotating_mass_kg`` (equivalent mass of wheels and motor,
  kg), ``top_speed_kmh`` (a cap on the driving speed of every edge);
* ``regen_fraction_max``, ``regen_half_speed_kmh`` and ``regen_fade_width_kmh``: brake blending, the share of the
  braking power the motor recovers at speed ``v`` (the friction brakes take the rest),
  ``f(v) = f_max / (1 + exp(-(v - v_half) / w))`` (:meth:`VehicleProfile.regen_fraction`): near ``f_max`` at speed,
  fading out below about ``v_half + 3 w`` as the motor's back-EMF falls and the friction brakes finish the stop.  It
  is FASTSim 2's regenerative braking limit ``max_regen / (1 + regen_a exp(-regen_b (v_mph + 1)))`` rewritten in
  km/h: with its ``regen_a = 500``, ``regen_b = 0.99`` per mph, ``v_half = (ln 500 - 0.99) / 0.99`` mph = 8.493 km/h
  and ``w = 1 / 0.99`` mph = 1.6256 km/h.  Without these fields the motor takes all the braking power (``f = 1``);
* ``battery_efficiency_map``: the battery's efficiency against its C-rate (terminal power over capacity, 1/h,
  negative when charging), ``[[c_rate, efficiency], ...]`` (linear interpolation, clamped at the ends): its ohmic
  losses grow with the current.  The battery then pays ``P_el / eta_b`` for a terminal power ``P_el > 0`` (motor and
  auxiliaries) and stores ``P_el eta_b`` when charging (:meth:`VehicleProfile.chemical_power_w`), and
  ``propulsion_efficiency`` / ``recuperation_efficiency`` hold the rest of the chain (the transmission) only;
* ``hvac_power_curve`` and ``ambient_temp_c``: the climate control's power against the ambient temperature,
  ``[[degrees C, W], ...]`` (linear interpolation, clamped at the ends), added to ``auxiliary_power_w`` when an ambient
  temperature is set (:attr:`VehicleProfile.hvac_w`); no ambient temperature (the default): no HVAC load, so results
  do not move unless a temperature is asked for;
* ``charging_curve``: DC fast-charging power against state of charge, ``[[soc, kW], ...]`` (not used by the energy
  models; for charging stops);
* ``sources``: where each value comes from, ``{field: text}``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import DataError, ParameterError, check_positive, check_range
from evroute.paths import resource

VEHICLE_DIR = resource("vehicles")

#: the vehicle of the driver commands (``evroute route`` / ``reach``) when none is named: a real car.  The learning
#: studies keep the reference paper's ``sumo_ev`` (their configs name it).
DEFAULT_VEHICLE = "chevrolet_bolt_2020"

#: Physically possible ranges of the vehicle fields, ``name -> (low, high, low excluded)``, SI units.  Generous on
#: purpose (a profile is the user's), but a value outside is a typo, not a vehicle: mass up to 100 t (the heaviest
#: road-legal trucks are ~60 t), frontal area up to 15 m^2 (a bus or truck ~10 m^2), drag coefficient up to 2 (a flat
#: plate ~1.2), rolling resistance up to 0.5 (tyres in loose sand ~0.3), gravity up to 25 m/s^2 (Earth 9.78-9.83),
#: air density up to 3 kg/m^3 (1.2 at sea level, ~1.5 at -40 C), efficiencies at most 1.  Checked when a profile is
#: built, so absurd values (``mass_kg: 1e300``) are one-line errors before any energy is computed.
PHYSICAL_RANGES: dict[str, tuple[float, float, bool]] = {
    "mass_kg": (0.0, 100_000.0, True),
    "rolling_resistance": (0.0, 0.5, False),
    "front_area_m2": (0.0, 15.0, True),
    "drag_coefficient": (0.0, 2.0, False),
    "propulsion_efficiency": (0.0, 1.0, True),
    "recuperation_efficiency": (0.0, 1.0, False),
    "gravity_mps2": (0.0, 25.0, True),
    "air_density_kgpm3": (0.0, 3.0, False),
    "battery_capacity_wh": (0.0, 10_000_000.0, True),
}
#: ranges of the optional fields, checked when set: auxiliary power up to 50 kW, regeneration and motor power up
#: to 1 MW, rotating mass up to 1 t, top speed up to 500 km/h, ambient temperature -60 to 60 C (the extremes measured
#: on Earth's inhabited land are about -68 and 57 C)
OPTIONAL_RANGES: dict[str, tuple[float, float]] = {
    "auxiliary_power_w": (0.0, 50_000.0),
    "max_regen_power_kw": (0.0, 1_000.0),
    "radial_drag_m": (0.0, 10.0),
    "motor_power_kw": (0.0, 1_000.0),
    "rotating_mass_kg": (0.0, 1_000.0),
    "top_speed_kmh": (0.0, 500.0),
    "ambient_temp_c": (-60.0, 60.0),
    "regen_fraction_max": (0.0, 1.0),
    "regen_half_speed_kmh": (0.0, 100.0),
    "regen_fade_width_kmh": (0.0, 50.0),
}


def _curve(name: str, value: Any, x_range: tuple[float, float], y_range: tuple[float, float]) -> tuple:
    """``value`` as a tuple of ``(x, y)`` float pairs, ``x`` strictly increasing in ``x_range``, ``y`` in
    ``y_range`` (a one-line :class:`ParameterError` otherwise)."""
    try:
        pts = tuple((float(x), float(y)) for x, y in value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a list of [x, y] pairs") from None
    arr = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    if len(arr) < 2 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr[:, 0]) <= 0):
        raise ParameterError(f"{name} needs >= 2 finite points with strictly increasing x")
    for col, (lo, hi), what in ((0, x_range, "x"), (1, y_range, "y")):
        if arr[:, col].min() < lo or arr[:, col].max() > hi:
            raise ParameterError(f"{name}: every {what} must be in [{lo:g}, {hi:g}]")
    return pts


@dataclass(frozen=True)
class VehicleProfile:
    """Vehicle and environment parameters of the energy models (SI units; module doc for the optional fields)."""

    name: str = "sumo_ev"
    mass_kg: float = 1830.0
    rolling_resistance: float = 0.01
    front_area_m2: float = 2.6
    drag_coefficient: float = 0.35
    propulsion_efficiency: float = 0.98
    recuperation_efficiency: float = 0.96
    gravity_mps2: float = 9.82
    air_density_kgpm3: float = 1.2
    description: str = ""
    #: battery capacity (Wh); default SUMO's battery device default (35 kWh)
    battery_capacity_wh: float = 35000.0
    #: usable window of the state of charge (fractions of the capacity): the battery management keeps the charge
    #: within ``[min_soc, max_soc]``
    min_soc: float = 0.0
    max_soc: float = 1.0
    #: constant auxiliary power (W); None: not modelled (Eq. 8 adds nothing, SUMO keeps its own 100 W default)
    auxiliary_power_w: float | None = None
    #: maximum regeneration power (kW, at the battery) capping the recovered energy; None: no limit
    max_regen_power_kw: float | None = None
    #: cornering drag coefficient (m; SUMO's ``radialDragCoefficient``): ``c m v theta`` J per heading change
    #: ``theta`` at speed ``v`` (:mod:`evroute.energy.eq8`); None: not modelled (Eq. 8 as in the paper)
    radial_drag_m: float | None = None
    #: peak motor power (kW): the reference of ``motor_efficiency_map``'s power fractions
    motor_power_kw: float | None = None
    #: ``[[fraction of motor_power_kw, motor efficiency], ...]``; None: constant efficiencies
    motor_efficiency_map: tuple[tuple[float, float], ...] | None = None
    #: equivalent mass of the rotating parts (kg), added to the mass in the kinetic terms
    rotating_mass_kg: float | None = None
    #: top speed (km/h): no edge is driven faster
    top_speed_kmh: float | None = None
    #: the largest share of the braking power the motor recovers (brake blending; the friction brakes take the rest);
    #: None: all of it (module doc)
    regen_fraction_max: float | None = None
    #: speed (km/h) at which the recovered share has faded to half of ``regen_fraction_max``; None: no fade
    regen_half_speed_kmh: float | None = None
    #: width (km/h) of that fade (the logistic's scale); set with ``regen_half_speed_kmh``
    regen_fade_width_kmh: float | None = None
    #: ``[[C-rate (1/h, < 0 charging), battery efficiency], ...]``; None: the battery's losses are part of the
    #: constant efficiencies (module doc)
    battery_efficiency_map: tuple[tuple[float, float], ...] | None = None
    #: DC charging power against state of charge, ``[[soc in 0..1, kW], ...]``
    charging_curve: tuple[tuple[float, float], ...] | None = None
    #: HVAC power against ambient temperature, ``[[degrees C, W], ...]``; None: not modelled
    hvac_power_curve: tuple[tuple[float, float], ...] | None = None
    #: ambient temperature (degrees C) of the HVAC load; None: no HVAC load
    ambient_temp_c: float | None = None
    #: ``{field: source}``: where each value comes from (not compared, not hashed)
    sources: dict[str, str] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        for f, (low, high, low_open) in PHYSICAL_RANGES.items():
            check_range(f, getattr(self, f), low, high, low_open=low_open)
        for f, (low, high) in OPTIONAL_RANGES.items():
            if getattr(self, f) is not None:
                low_open = f in ("motor_power_kw", "top_speed_kmh", "regen_fade_width_kmh")
                check_range(f, getattr(self, f), low, high, low_open=low_open)
        if (self.regen_half_speed_kmh is None) != (self.regen_fade_width_kmh is None):
            raise ParameterError(
                "regen_half_speed_kmh and regen_fade_width_kmh are set together (the fade's two parameters)"
            )
        check_positive("min_soc", self.min_soc, allow_zero=True)
        check_positive("max_soc", self.max_soc)
        if not self.min_soc < self.max_soc <= 1:
            raise ParameterError(
                f"need 0 <= min_soc < max_soc <= 1, got min_soc {self.min_soc}, max_soc {self.max_soc}"
            )
        if self.motor_efficiency_map is not None:
            if self.motor_power_kw is None:
                raise ParameterError("motor_efficiency_map needs motor_power_kw (its power fractions' reference)")
            pts = _curve("motor_efficiency_map", self.motor_efficiency_map, (0.0, 10.0), (0.01, 1.0))
            object.__setattr__(self, "motor_efficiency_map", pts)
        if self.battery_efficiency_map is not None:
            pts = _curve("battery_efficiency_map", self.battery_efficiency_map, (-20.0, 20.0), (0.5, 1.0))
            object.__setattr__(self, "battery_efficiency_map", pts)
        if self.charging_curve is not None:
            pts = _curve("charging_curve", self.charging_curve, (0.0, 1.0), (0.0, 10_000.0))
            object.__setattr__(self, "charging_curve", pts)
        if self.hvac_power_curve is not None:
            pts = _curve("hvac_power_curve", self.hvac_power_curve, (-60.0, 60.0), (0.0, 50_000.0))
            object.__setattr__(self, "hvac_power_curve", pts)
        if self.ambient_temp_c is not None and self.hvac_power_curve is None:
            raise ParameterError(f"ambient_temp_c needs hvac_power_curve (vehicle {self.name!r} has none)")

    @property
    def aux_w(self) -> float:
        """Auxiliary power used by the models (W): ``auxiliary_power_w`` (or 0) plus :attr:`hvac_w`."""
        return float(self.auxiliary_power_w or 0.0) + self.hvac_w

    @property
    def hvac_w(self) -> float:
        """HVAC power (W) at ``ambient_temp_c`` from ``hvac_power_curve``; 0 without an ambient temperature."""
        if self.ambient_temp_c is None or self.hvac_power_curve is None:
            return 0.0
        temps, watts = np.asarray(self.hvac_power_curve, dtype=np.float64).T
        return float(np.interp(self.ambient_temp_c, temps, watts))

    @property
    def effective_mass_kg(self) -> float:
        """Mass of the kinetic terms (kg): ``mass_kg + rotating_mass_kg``."""
        return float(self.mass_kg + (self.rotating_mass_kg or 0.0))

    @property
    def top_speed_mps(self) -> float:
        """Top speed (m/s; ``inf`` when not set)."""
        return float("inf") if self.top_speed_kmh is None else float(self.top_speed_kmh) / 3.6

    def motor_efficiency(self, power_w: np.ndarray) -> np.ndarray:
        """Motor efficiency at wheel power ``power_w`` (W, any shape; the map at ``|P| / motor_power_kw``), 1 where
        the profile has no map."""
        p = np.asarray(power_w, dtype=np.float64)
        if self.motor_efficiency_map is None or self.motor_power_kw is None:
            return np.ones_like(p)
        xs, ys = np.asarray(self.motor_efficiency_map, dtype=np.float64).T
        return np.interp(np.abs(p) / (1000.0 * self.motor_power_kw), xs, ys)

    def chemical_power_w(self, terminal_w: np.ndarray) -> np.ndarray:
        """Chemical power (W) the battery gives for terminal power ``terminal_w`` (W, any shape; negative when
        charging): ``P / eta_b(P / C)`` when ``P > 0``, ``P eta_b(P / C)`` when charging, ``C`` the capacity (Wh), and
        ``P`` itself where the profile has no ``battery_efficiency_map``."""
        p = np.asarray(terminal_w, dtype=np.float64)
        if self.battery_efficiency_map is None:
            return p
        xs, ys = np.asarray(self.battery_efficiency_map, dtype=np.float64).T
        eta = np.interp(p / self.battery_capacity_wh, xs, ys)
        return np.where(p > 0, p / eta, p * eta)

    @property
    def regen_fades(self) -> bool:
        """Whether the recovered share of the braking power depends on speed (:meth:`regen_fraction`)."""
        return self.regen_half_speed_kmh is not None

    def regen_fraction(self, speed_mps: np.ndarray | float) -> np.ndarray:
        """Share of the braking power the motor recovers at speed ``speed_mps`` (m/s, any shape; module doc):
        ``f_max / (1 + exp(-(v - v_half) / w))``, ``f_max`` (1 when unset) where the profile has no fade."""
        v = np.asarray(speed_mps, dtype=np.float64)
        f_max = 1.0 if self.regen_fraction_max is None else float(self.regen_fraction_max)
        if self.regen_half_speed_kmh is None or self.regen_fade_width_kmh is None:
            return np.full_like(v, f_max)
        x = (3.6 * v - self.regen_half_speed_kmh) / self.regen_fade_width_kmh
        return f_max * 0.5 * (1.0 + np.tanh(0.5 * x))  # the logistic 1 / (1 + exp(-x)), without overflow

    @classmethod
    def load(cls, name_or_path: str | Path = "sumo_ev") -> VehicleProfile:
        """Load a profile by name (``evroute/resources/vehicles/NAME.json``) or from a JSON file path.

        The JSON object is checked against the fields of this class (strict types: ``"mass_kg": true`` is an
        error, unknown keys too), then their ranges.
        """
        from evroute.validation import call_checked, check_params

        p = Path(name_or_path)
        src = VEHICLE_DIR / f"{name_or_path}.json" if not p.suffix else p
        if not src.is_file():
            known = ", ".join(vehicle_names())
            what = "is a directory" if p.suffix and p.is_dir() else "not found"
            raise DataError(f"vehicle profile {str(name_or_path)!r} {what} (known: {known})")
        try:
            raw = json.loads(src.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"cannot read vehicle profile {src}: {exc}") from None
        check_params(f"vehicle profile {src}: field", raw, [cls])
        try:
            return call_checked(f"vehicle profile {src}", cls, **raw)
        except ParameterError as exc:
            raise ParameterError(f"vehicle profile {src}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def vehicle_names() -> list[str]:
    """Names of the shipped vehicle profiles (``evroute/resources/vehicles/*.json``), sorted."""
    return sorted(q.name[:-5] for q in VEHICLE_DIR.iterdir() if q.name.endswith(".json"))


__all__ = ["DEFAULT_VEHICLE", "OPTIONAL_RANGES", "PHYSICAL_RANGES", "VEHICLE_DIR", "VehicleProfile", "vehicle_names"]
