"""Charging stops planned with a probability of arriving (issue 36).

* :mod:`evroute.charging.curves` -- a vehicle's charging power as a function of the state of charge, and the time to
  charge from ``a`` to ``b`` at a charger of a given power (the integral of ``1 / min(curve, charger)``);
* :mod:`evroute.charging.chargers` -- charging stations from OSM, CSV or GeoJSON, snapped to the network;
* :mod:`evroute.charging.legs` -- the candidate routes between origin, chargers and destination with their energy
  mean and variance under the model's posterior (the trip-level correlation included);
* :mod:`evroute.charging.search` -- the plan: least total time (or a time / energy blend) subject to
  ``P(charge >= reserve at every stop and at the destination) >= 1 - delta`` and a maximum number of stops, by a
  label-setting search over (site, charge) with dominance;
* :mod:`evroute.charging.planner` -- :func:`~evroute.charging.planner.plan_trip`, one call from a trip to its plan;
* :mod:`evroute.charging.montecarlo` -- plans driven in worlds sampled from the posterior (stranding rate);
* :mod:`evroute.charging.answers`, :mod:`evroute.charging.plan_map` -- text, JSON, GeoJSON and the offline HTML map;
* :mod:`evroute.cli.plan` -- ``evroute plan`` (the cli side).

Layer: the top one, with :mod:`evroute.driver` (it uses the driver's posterior of routes, the oracle level below,
and, in :mod:`~evroute.cli.plan` only, the experiments' network loader).  Nothing is imported here.
"""
