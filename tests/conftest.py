"""Shared fixtures."""

from __future__ import annotations

import os

import pytest
from netfixtures import grid_network

from evroute.network.road_network import RoadNetwork


@pytest.fixture
def grid() -> RoadNetwork:
    return grid_network()


@pytest.fixture(autouse=True, scope="session")
def _compute_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tests' compute cache (:mod:`evroute.network.computecache`) is a fresh folder, not the user's.

    The cache manifests' key (:mod:`evroute.network.cachefiles`) stays the user's: the converted networks live in the
    user's network cache, and a test key would make every test run rebuild them (and every later user run rebuild
    them again), racing any process that reads them; tests of the key itself set their own key file."""
    if "EVROUTE_COMPUTE_CACHE" not in os.environ:
        os.environ["EVROUTE_COMPUTE_CACHE"] = str(tmp_path_factory.mktemp("compute-cache"))
