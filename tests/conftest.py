"""Shared fixtures."""

from __future__ import annotations

import pytest
from netfixtures import grid_network

from evroute.network.road_network import RoadNetwork


@pytest.fixture
def grid() -> RoadNetwork:
    return grid_network()
