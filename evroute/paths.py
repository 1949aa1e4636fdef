"""Where evroute finds the small data files it ships (vehicle profiles, route definitions).

They live inside the package (``evroute/resources``) and are read with :mod:`importlib.resources`, so an
installed wheel finds them as an editable install does.  The user's road-data directory and the conversion
cache are resolved by :func:`evroute.network.registry.default_data_dir` and
:func:`evroute.network.registry.net_cache_dir`.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable


def resource(*parts: str) -> Traversable:
    """``evroute/resources/<parts...>`` as an :mod:`importlib.resources` traversable (``read_text``, ``iterdir``)."""
    node = files("evroute") / "resources"
    for p in parts:
        node = node / p
    return node
