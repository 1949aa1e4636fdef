"""An app factory for running the server under uvicorn (or another ASGI server) directly, e.g. with workers::

    EVROUTE_SERVE_NETWORK=luxembourg EVROUTE_SERVE_MODEL=model.npz \\
        uvicorn --factory evroute.service.asgi:app --workers 4

Environment: ``EVROUTE_SERVE_NETWORK`` (required), ``EVROUTE_SERVE_MODEL`` and ``EVROUTE_SERVE_VEHICLE``
(optional; as ``evroute serve --model`` / ``--vehicle``); ``EVROUTE_DATA`` as everywhere.  Each worker process
calls :func:`app` once and loads its own copy.
"""

from __future__ import annotations

import os
from typing import Any

from evroute.errors import ParameterError


def app() -> Any:
    """The FastAPI app of the network, model and vehicle the environment names (see the module doc)."""
    from threadpoolctl import threadpool_limits

    from evroute.service.app import create_app
    from evroute.service.state import load_state

    network = os.environ.get("EVROUTE_SERVE_NETWORK", "").strip()
    if not network:
        raise ParameterError("set EVROUTE_SERVE_NETWORK to the network to serve (e.g. luxembourg)")
    state = load_state(
        network,
        model_path=os.environ.get("EVROUTE_SERVE_MODEL") or None,
        vehicle=os.environ.get("EVROUTE_SERVE_VEHICLE") or None,
    )
    threadpool_limits(1)  # one BLAS thread per request, as evroute serve
    return create_app(state)


__all__ = ["app"]
