"""evroute for drivers: a learned (or prior) posterior served as route answers with uncertainty.

* :mod:`evroute.driver.belief` -- the joint posterior of the edges of a route (:class:`RouteBelief`);
* :mod:`evroute.driver.answers` -- energy +- sd, travel time, arrival state of charge with a 90 % interval and
  ``P(arrival charge >= reserve)`` of a route (:func:`answer_route`);
* :mod:`evroute.driver.risk` -- the risk-aware route (minimum expected energy subject to that probability);
* :mod:`evroute.driver.reach` -- the road segments reachable on a given charge with a given probability.

These sit at the oracle level: they use models, the energy model and the route oracle, never experiments or cli
(:mod:`evroute.cli.driver` is the cli side).  Nothing is imported here, so ``evroute --help`` stays fast.
"""
