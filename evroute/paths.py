"""Where evroute finds the small data files it ships (vehicle profiles, route definitions).

The user's road-data directory and the conversion cache are resolved by
:func:`evroute.network.registry.default_data_dir` and :func:`evroute.network.registry.net_cache_dir`.
"""

from __future__ import annotations

from pathlib import Path

#: Repository ``data/`` folder: vehicle profiles and route definitions the project writes itself.
PROJECT_DATA = Path(__file__).resolve().parent.parent / "data"
