"""Helpers of the benchmark and study scripts (``studies/bench/``, ``studies/sumo/``, ``studies/env/``): which networks
can run here, and the machine line of a benchmark table."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

REAL_NETWORKS = ("monaco", "luxembourg")


def available_networks(spec: str) -> list[str]:
    """Comma-separated network names, minus real networks when ``EVROUTE_DATA`` is unset (said on stderr)."""
    out = []
    for net in [n for n in spec.split(",") if n]:
        if net in REAL_NETWORKS and not os.environ.get("EVROUTE_DATA"):
            print(f"skip {net}: EVROUTE_DATA is not set", file=sys.stderr)
            continue
        out.append(net)
    return out


def machine_line() -> str:
    """CPU, core count, Python/NumPy versions and the load average now (benchmarks on shared machines)."""
    load = os.getloadavg()
    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}; load average at the end "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}"
    )
