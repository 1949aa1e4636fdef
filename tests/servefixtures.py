"""Helpers of the service tests: a small network's server state and a real uvicorn server in a thread."""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Iterator

import numpy as np

from evroute.energy import VehicleProfile
from evroute.linegraph import LineGraph, build_line_graph
from evroute.models.base import EdgeModel
from evroute.models.store import prior_model
from evroute.network.synthetic import synthetic_city
from evroute.service.state import ServiceState

NET = "synthetic:300:1"


@functools.lru_cache(maxsize=2)
def small_lg(edges: int = 300, seed: int = 1) -> LineGraph:
    return build_line_graph(synthetic_city(edges, seed=seed))


def learned(kind: str, lg: LineGraph, seed: int = 0, n_obs: int = 60, **gp) -> EdgeModel:
    """A model of ``kind`` after ``n_obs`` noisy observations of random edges."""
    m = prior_model(kind, lg, VehicleProfile(), **gp)
    rng = np.random.default_rng(seed)
    e = rng.integers(0, lg.n_nodes, n_obs)
    m.update(e, m.posterior().mean[e] + rng.normal(0.0, 2.0, n_obs))
    return m


def state(kind: str = "bi", **gp) -> ServiceState:
    """A fresh server state on the small network with a learned model of ``kind``."""
    lg = small_lg()
    return ServiceState(lg, VehicleProfile(), learned(kind, lg, **gp), None, network_spec="small")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(app: object) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free localhost port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))  # type: ignore[arg-type]
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not t.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(10)
