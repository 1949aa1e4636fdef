"""Where evroute finds the small data files it ships (vehicle profiles, route definitions).

They live inside the package (``evroute/resources``) and are read with :mod:`importlib.resources`, so an
installed wheel finds them as an editable install does.  The user's cache folder (:func:`cache_home`) and the
conversion cache of road networks (:func:`net_cache_dir`, re-exported by :mod:`evroute.network.registry`) are
resolved here, below every module that writes into them; the road-data directory by
:func:`evroute.network.registry.default_data_dir`.
"""

from __future__ import annotations

import os
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path


def resource(*parts: str) -> Traversable:
    """``evroute/resources/<parts...>`` as an :mod:`importlib.resources` traversable (``read_text``, ``iterdir``)."""
    node = files("evroute") / "resources"
    for p in parts:
        node = node / p
    return node


def cache_home() -> Path:
    """The user cache folder of evroute (:mod:`platformdirs`: ``$XDG_CACHE_HOME/evroute`` or ``~/.cache/evroute``
    on Linux, ``~/Library/Caches/evroute`` on macOS, ``%LOCALAPPDATA%\\evroute\\Cache`` on Windows)."""
    import platformdirs

    return platformdirs.user_cache_path("evroute", appauthor=False)


def net_cache_dir() -> Path:
    """Where converted SUMO networks are cached: ``$EVROUTE_CACHE`` or ``~/.cache/evroute/nets``."""
    if os.environ.get("EVROUTE_CACHE"):
        return Path(os.environ["EVROUTE_CACHE"]).expanduser()
    return cache_home() / "nets"
