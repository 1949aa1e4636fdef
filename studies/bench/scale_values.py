"""The numbers of ``docs/data/benchmark_scale.json`` as the page reads them (:mod:`studies.bench.scale_report`,
:mod:`studies.bench.scale_bounds`, :mod:`studies.bench.scale_country`): a run's quantity, the issue's targets, units."""

from __future__ import annotations

import math
from typing import Any

from studies.bench.scale_junction import SERVED, served_step
from studies.bench.scale_measure import SETUP_STAGES

#: the issue's "Done when" targets at 1M edges: label -> (run, key, limit, unit)
TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("cold set-up (empty cache) ≤ 30 s CPU", "cold", "setup", 30.0),
    ("cold set-up peak memory ≤ 2 GB", "cold", "setup_peak_mb", 2048.0),
    ("set-up from a warm cache ≤ 5 s (CPU)", "warm", "setup", 5.0),
    ("BI-TS round ≤ 50 ms (CPU)", "cold", "BI-TS round", 0.050),
    ("warm route query against a served model ≤ 5 ms (CCH as served, CPU)", "cold", SERVED, 0.005),
    ("reach ≤ 200 ms (CPU)", "cold", "reach", 0.200),
)


def run_ok(run: dict[str, Any] | None) -> bool:
    """Whether ``run`` (one child's result) completed."""
    return bool(run) and run.get("status") == "ok"  # type: ignore[union-attr]


def value(run: dict[str, Any] | None, key: str) -> float | None:
    """One quantity of a run (:data:`QUANTITIES`), or None where it was not measured."""
    if not run_ok(run):
        return None
    assert run is not None
    if key == "setup":
        return float(sum(run["steps"][s]["cpu_s"] for s in SETUP_STAGES))
    if key in ("setup_peak_mb", "peak_mb"):
        return float(run[key])
    step = served_step(run["steps"]) if key == SERVED else run["steps"].get(key)
    return None if step is None else float(step["cpu_s"])


def fmt_s(x: float | None) -> str:
    """Seconds with units that suit them (µs, ms, s); an em dash when not measured."""
    if x is None:
        return "—"
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1.0:
        return f"{x * 1e3:.3g} ms"
    if x < 600.0:
        return f"{x:.3g} s"
    return f"{x:,.0f} s ({x / 3600:.2g} h)" if x >= 3600 else f"{x:,.0f} s ({x / 60:.0f} min)"


def fmt_q(label: str, x: float | None) -> str:
    """A quantity of :data:`studies.bench.scale_report.QUANTITIES`: MB when its label says so, else seconds."""
    if x is None:
        return "—"
    return f"{x:,.0f} MB" if "MB" in label else fmt_s(x)


def by_size(d: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """``(requested edges, entry)`` of every size in ``d``, smallest first."""
    return sorted(((int(k), v) for k, v in d["sizes"].items()), key=lambda kv: kv[0])


def edge_count(entry: dict[str, Any]) -> int:
    """Edges of a size's network: as built when its cold run completed, else as requested."""
    return int(entry["cold"]["edges"]) if run_ok(entry["cold"]) else int(entry["requested_edges"])


def slope(x0: float, y0: float, x1: float, y1: float) -> float | None:
    """Log-log slope between two points (None when a value is not positive)."""
    if min(x0, y0, x1, y1) <= 0 or x0 == x1:
        return None
    return math.log(y1 / y0) / math.log(x1 / x0)


__all__ = ["TARGETS", "by_size", "edge_count", "fmt_q", "fmt_s", "run_ok", "slope", "value"]
