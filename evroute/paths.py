"""Where evroute finds its bundled data files, the user's data directory and its caches."""

from __future__ import annotations

import os
from pathlib import Path

#: Repository ``data/`` folder: vehicle profiles and route definitions the project writes itself.
PROJECT_DATA = Path(__file__).resolve().parent.parent / "data"


def user_cache_dir() -> Path:
    """Per-user cache (``$EVROUTE_CACHE`` or ``$XDG_CACHE_HOME/evroute`` or ``~/.cache/evroute``)."""
    if os.environ.get("EVROUTE_CACHE"):
        return Path(os.environ["EVROUTE_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evroute"


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Directory holding real road data: ``explicit``, else ``$EVROUTE_DATA``, else the user cache's ``data``."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("EVROUTE_DATA"):
        return Path(os.environ["EVROUTE_DATA"]).expanduser()
    return user_cache_dir() / "data"
