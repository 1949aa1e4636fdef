"""evroute: learn energy-efficient electric-vehicle routes online with combinatorial GP bandits."""

from evroute.errors import EvrouteError
from evroute.network.road_network import RoadNetwork

__version__ = "0.1.0"
__all__ = ["EvrouteError", "RoadNetwork", "__version__"]
