"""Road networks: the :class:`RoadNetwork` type and its loaders (SUMO, OSM, synthetic, named)."""

from evroute.network.dem import Dem, drape, merge_dems, read_dem
from evroute.network.netconvert import netconvert_binary, netconvert_options, osm_to_sumo
from evroute.network.osm import load_osm
from evroute.network.pbf import pbf_to_osm
from evroute.network.registry import (
    DATASETS,
    DEFAULT_LOADER,
    LOADERS,
    NETWORK_NAMES,
    default_data_dir,
    fetch_dataset,
    load_network,
    load_osm_file,
)
from evroute.network.road_network import RoadNetwork
from evroute.network.snap import DEFAULT_MAX_SNAP_M, nearest_edge, nearest_edges
from evroute.network.sumo import load_sumo_net
from evroute.network.synthetic import synthetic_city

__all__ = [
    "DATASETS",
    "DEFAULT_LOADER",
    "DEFAULT_MAX_SNAP_M",
    "LOADERS",
    "NETWORK_NAMES",
    "Dem",
    "RoadNetwork",
    "default_data_dir",
    "drape",
    "fetch_dataset",
    "load_network",
    "load_osm",
    "load_osm_file",
    "merge_dems",
    "nearest_edge",
    "nearest_edges",
    "pbf_to_osm",
    "load_sumo_net",
    "netconvert_binary",
    "netconvert_options",
    "osm_to_sumo",
    "read_dem",
    "synthetic_city",
]
