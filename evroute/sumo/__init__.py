"""SUMO as the ground truth: traffic scenarios, EV energy measured by SUMO's battery device, routes back to SUMO.

Flat functions, osmnx-style:

* :func:`background_demand` -- seeded daily traffic (randomTrips.py + duarouter), cached by content hash;
* :func:`record_traversals` -- simulate and return every EV edge traversal (edge, entry time, travel time, battery,
  kinetic, potential and reduced energy in Wh, entry and exit speed);
* :func:`split_energy` / :func:`attribute_steps` -- a step's energy split over the lanes it covered, by distance;
* :func:`ev_vtype_xml` -- the EV of a :class:`~evroute.energy.VehicleProfile` as a SUMO vType (field mapping there);
* :func:`write_routes_xml` / :func:`export_experiment_routes` -- routes as ``.rou.xml`` for ``sumo-gui``;
* :func:`fit_trip_correlation` / :func:`route_sd` -- the within-trip correlation of a recorded day's traversal
  errors and a trip's predictive standard deviation (:mod:`evroute.sumo.trip_interval`).
"""

from evroute.sumo.attribution import attribute_steps, split_energy
from evroute.sumo.binaries import SumoError, sumo_binary, sumo_home
from evroute.sumo.export import export_experiment_routes, routes_xml, write_routes_xml
from evroute.sumo.record import record_traversals, steps_to_traversals
from evroute.sumo.scenario import DAILY_PROFILE, background_demand, check_route_file, hourly_rates
from evroute.sumo.trip_interval import fit_day_correlation, fit_trip_correlation, route_interval, route_sd
from evroute.sumo.vehicle import ENERGY_MODELS, ev_vtype_xml

__all__ = [
    "DAILY_PROFILE",
    "ENERGY_MODELS",
    "SumoError",
    "attribute_steps",
    "background_demand",
    "check_route_file",
    "ev_vtype_xml",
    "export_experiment_routes",
    "fit_day_correlation",
    "fit_trip_correlation",
    "hourly_rates",
    "record_traversals",
    "route_interval",
    "route_sd",
    "routes_xml",
    "split_energy",
    "steps_to_traversals",
    "sumo_binary",
    "sumo_home",
    "write_routes_xml",
]
