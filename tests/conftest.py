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
    """The tests' compute cache (:mod:`evroute.network.computecache`) is a fresh folder, not the user's."""
    if "EVROUTE_COMPUTE_CACHE" not in os.environ:
        os.environ["EVROUTE_COMPUTE_CACHE"] = str(tmp_path_factory.mktemp("compute-cache"))
    if (
        "EVROUTE_CACHE_KEY_FILE" not in os.environ
    ):  # the cache manifests' key (evroute.network.cachefiles), not the user's
        # one key for all of a run's xdist workers (their common temporary root): with a key per worker, each would
        # find the others' cache entries foreign and rebuild them while another worker reads them
        shared = "PYTEST_XDIST_WORKER" in os.environ
        folder = tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.mktemp("cache-key")
        os.environ["EVROUTE_CACHE_KEY_FILE"] = str(folder / "evroute-cache.key")
