"""evroute: learn energy-efficient electric-vehicle routes online with combinatorial GP bandits."""

from typing import Any

from evroute.errors import EvrouteError
from evroute.version import __version__

__all__ = ["EvrouteError", "RoadNetwork", "__version__"]


def __getattr__(name: str) -> Any:
    """``RoadNetwork`` is imported on first use, so ``import evroute.cli`` (and ``evroute --help``) stays light."""
    if name == "RoadNetwork":
        from evroute.network.road_network import RoadNetwork

        return RoadNetwork
    raise AttributeError(f"module 'evroute' has no attribute {name!r}")
