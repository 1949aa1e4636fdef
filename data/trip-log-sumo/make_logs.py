"""Make ``data/trip-log-sumo/``: SUMO-simulated EV trips on ``data/sumo-tiny/grid.net.xml`` as trip logs.

Run from the repository root: ``python data/trip-log-sumo/make_logs.py`` (seeded; SUMO's outputs depend on its
version, ``eclipse-sumo`` as pinned in ``requirements.lock``).

Eight trips between random pairs of grid edges (seed 0), each the shortest legal path, driven by SUMO with the EV
(vehicle ``sumo_ev``, battery device) at 1 s steps: ``fcd.xml`` + ``battery.xml`` are SUMO's FCD (geo) and battery
outputs; ``trip_<k>.csv`` are the same trips as logs in the documented schema with 5 m GPS noise, 1 s sampling and
the state of charge rounded to 0.01 % (``evroute.sumo.triplogs.degrade``, seed 1).  See README.md.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NET = HERE.parent / "sumo-tiny" / "grid.net.xml"
TRIPS = 8


def main() -> int:
    from scipy.sparse.csgraph import shortest_path

    from evroute.energy import VehicleProfile
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.sumo.triplogs import degrade, simulate_trips
    from evroute.traces import write_trace_csv
    from evroute.traces.formats import read_sumo_fcd

    lg = build_line_graph(load_network(NET))
    ids = lg.network.edge_ids
    _, pred = shortest_path(lg.adjacency, return_predecessors=True, unweighted=True)
    rng = np.random.default_rng(0)
    routes: dict[str, list[str]] = {}
    while len(routes) < TRIPS:
        a, b = (int(x) for x in rng.choice(lg.n_nodes, 2, replace=False))
        path = [b]
        while path[-1] != a:
            path.append(int(pred[a, path[-1]]))
        if len(path) >= 4:
            routes[f"trip_{len(routes)}"] = [str(ids[e]) for e in path[::-1]]
    with tempfile.TemporaryDirectory() as tmp:
        fcd, bat = simulate_trips(NET, routes, tmp, vehicle=VehicleProfile.load("sumo_ev"), depart_gap_s=30.0)
        for src in (fcd, bat):
            text = src.read_text()
            # drop SUMO's header comment (it records the temporary paths and the date)
            start = text.find("<fcd-export") if src == fcd else text.find("<battery-export")
            (HERE / src.name).write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + text[start:])
        shutil.copy(Path(tmp) / "trips.rou.xml", HERE / "trips.rou.xml")
    rng = np.random.default_rng(1)
    for tr in read_sumo_fcd(HERE / "fcd.xml", HERE / "battery.xml"):
        log = degrade(tr, rng, gps_sigma_m=5.0, period_s=1.0, soc_step_pct=0.01)
        write_trace_csv(log, HERE / f"{tr.name}.csv")
    print(f"{HERE}: {len(routes)} trips")
    return 0


if __name__ == "__main__":
    sys.exit(main())
