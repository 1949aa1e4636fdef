"""Vehicle physics (layer 1): vehicle profiles, the paper's Eq. 8 and the speed-profile model (the default prior).

* :mod:`evroute.energy.vehicle`: :class:`VehicleProfile` and the shipped profiles;
* :mod:`evroute.energy.eq8`: the reference paper's constant-speed model (Eq. 8) and the battery side shared by all;
* :mod:`evroute.energy.profile`: one edge driven as accelerate-cruise-brake;
* :mod:`evroute.energy.prior`: the per-edge prior of a network by name (``"profile"`` default, ``"eq8"``).
"""

from evroute.energy.eq8 import (
    battery_energy_wh,
    edge_energy_wh,
    elevation_potential_wh,
    heading_change_rad,
    network_energy_wh,
    reduced_cost_wh,
    travel_time_s,
)
from evroute.energy.prior import PRIORS, EdgePrior, edge_prior
from evroute.energy.profile import DrivingStyle, ProfileEnergy, battery_power_w, profile_energy
from evroute.energy.vehicle import (
    DEFAULT_VEHICLE,
    OPTIONAL_RANGES,
    PHYSICAL_RANGES,
    VEHICLE_DIR,
    VehicleProfile,
    vehicle_names,
)

__all__ = [
    "DEFAULT_VEHICLE",
    "OPTIONAL_RANGES",
    "PHYSICAL_RANGES",
    "PRIORS",
    "VEHICLE_DIR",
    "DrivingStyle",
    "EdgePrior",
    "ProfileEnergy",
    "VehicleProfile",
    "battery_energy_wh",
    "battery_power_w",
    "edge_energy_wh",
    "edge_prior",
    "elevation_potential_wh",
    "heading_change_rad",
    "network_energy_wh",
    "profile_energy",
    "reduced_cost_wh",
    "travel_time_s",
    "vehicle_names",
]
