"""Request counts and latency percentiles per endpoint (``GET /metrics``), as a pure ASGI middleware.

Latencies are wall time from the request's arrival in the app to the end of its response body (ms), kept in a ring
of the last :data:`WINDOW` requests per endpoint (bounded memory, percentiles of recent traffic).  Updates take a
lock: the app's handlers run in a thread pool.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any

import numpy as np

#: latencies kept per endpoint
WINDOW = 10_000


class Metrics:
    """Thread-safe counters: ``record(path, status, ms)`` and ``snapshot()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count: Counter[str] = Counter()
        self._status: dict[str, Counter[str]] = {}
        self._lat: dict[str, deque[float]] = {}

    def record(self, path: str, status: int, ms: float) -> None:
        with self._lock:
            self._count[path] += 1
            self._status.setdefault(path, Counter())[str(status)] += 1
            self._lat.setdefault(path, deque(maxlen=WINDOW)).append(ms)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """``path -> {requests, errors, status, p50_ms, p95_ms, p99_ms, mean_ms}`` (percentiles of the window)."""
        with self._lock:
            items = [(p, n, dict(self._status[p]), np.asarray(self._lat[p])) for p, n in self._count.items()]
        out: dict[str, dict[str, Any]] = {}
        for path, n, status, lat in items:
            q = np.percentile(lat, [50, 95, 99]) if len(lat) else [None] * 3
            out[path] = {
                "requests": n,
                "errors": sum(v for k, v in status.items() if int(k) >= 400),
                "status": status,
                "p50_ms": None if q[0] is None else float(q[0]),
                "p95_ms": None if q[1] is None else float(q[1]),
                "p99_ms": None if q[2] is None else float(q[2]),
                "mean_ms": float(lat.mean()) if len(lat) else None,
            }
        return out


def rss_mb() -> float | None:
    """Resident set size of this process (MB, from ``/proc/self/statm``); None where there is no ``/proc``."""
    try:
        import os

        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


class MetricsMiddleware:
    """ASGI middleware recording every HTTP request's path, status and latency in ``metrics``."""

    def __init__(self, app: Any, metrics: Metrics, known: set[str]) -> None:
        self.app, self.metrics, self.known = app, metrics, known

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = [500]

        async def send_wrapper(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            path = scope.get("path", "")
            key = path if path in self.known else "other"  # unknown paths are not keys: bounded memory
            self.metrics.record(key, status[0], 1000.0 * (time.perf_counter() - t0))


__all__ = ["WINDOW", "Metrics", "MetricsMiddleware", "rss_mb"]
