"""Make ``data/trip-log/sample.csv``: one EV trip on the tiny SUMO grid, logged once per second.

Run from the repository root: ``python data/trip-log/make_sample.py`` (deterministic: no randomness).

The trip is the energy-optimal route of the physics model (paper Eq. 8, vehicle ``sumo_ev``) from the grid's
south-west edge to its north-east edge, driven at each street's speed limit; position, altitude and state of
charge are interpolated along each edge's geometry.  A 60 kWh battery starts at 80 % charge.  See README.md for
the schema.
"""

from __future__ import annotations

import csv
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BATTERY_WH = 60_000.0
START_SOC = 0.8
START = datetime(2026, 1, 5, 8, 0, 0, tzinfo=UTC)


def main() -> int:
    from evroute.energy import network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.oracle import optimal_route
    from evroute.routes import corner_route

    net = load_network(HERE.parent / "sumo-tiny" / "grid.net.xml")
    lg = build_line_graph(net)
    net = lg.network
    start, goal = corner_route(lg, "A")
    energy = network_energy_wh(net)
    edges = optimal_route(lg, energy, start, goal).edges
    rows, t, used_wh = [], 0.0, 0.0
    for e in edges:
        lonlat = np.asarray(net.geometry[e], dtype=np.float64)
        seg = np.hypot(np.diff(lonlat[:, 0]) * np.cos(np.radians(lonlat[:, 1].mean())), np.diff(lonlat[:, 1]))
        frac = np.concatenate([[0.0], np.cumsum(seg) / max(seg.sum(), 1e-12)])  # share of the edge at each vertex
        duration = float(net.length_m[e] / net.speed_mps[e])
        first = int(np.ceil(t)) if rows else 0
        for second in range(first, int(np.floor(t + duration)) + 1):
            u = min(max((second - t) / duration, 0.0), 1.0)
            lon, lat = (float(np.interp(u, frac, lonlat[:, k])) for k in (0, 1))
            alt = float(net.z_from_m[e] + u * (net.z_to_m[e] - net.z_from_m[e]))
            soc = START_SOC - (used_wh + u * float(energy[e])) / BATTERY_WH
            stamp = (START + timedelta(seconds=second)).isoformat().replace("+00:00", "Z")
            speed_kmh = 3.6 * net.speed_mps[e]
            rows.append([stamp, f"{speed_kmh:.2f}", f"{alt:.1f}", f"{100 * soc:.4f}", f"{lat:.7f}", f"{lon:.7f}"])
        t += duration
        used_wh += float(energy[e])
    with open(HERE / "sample.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time", "speed_kmh", "altitude_m", "soc_pct", "lat", "lon"])
        w.writerows(rows)
    print(f"{HERE / 'sample.csv'}: {len(rows)} rows, {len(edges)} edges, {used_wh:.1f} Wh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
