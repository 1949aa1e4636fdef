"""Road networks: the :class:`RoadNetwork` type and its loaders (SUMO, OSM, synthetic, named)."""

from evroute.network.road_network import RoadNetwork

__all__ = ["RoadNetwork"]
