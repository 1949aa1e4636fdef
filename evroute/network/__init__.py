"""Road networks: the :class:`RoadNetwork` type and its loaders (SUMO, OSM, synthetic, named)."""

from evroute.network.dem import Dem, drape, read_dem
from evroute.network.netconvert import netconvert_binary, netconvert_options, osm_to_sumo
from evroute.network.osm import load_osm
from evroute.network.registry import (
    DATASETS,
    NETWORK_NAMES,
    default_data_dir,
    fetch_dataset,
    load_network,
)
from evroute.network.road_network import RoadNetwork
from evroute.network.sumo import load_sumo_net
from evroute.network.synthetic import synthetic_city

__all__ = [
    "DATASETS",
    "NETWORK_NAMES",
    "Dem",
    "RoadNetwork",
    "default_data_dir",
    "drape",
    "fetch_dataset",
    "load_network",
    "load_osm",
    "load_sumo_net",
    "netconvert_binary",
    "netconvert_options",
    "osm_to_sumo",
    "read_dem",
    "synthetic_city",
]
