"""Make the SYNTHETIC sample charger files of data/chargers/ (Monaco: CSV, Luxembourg: GeoJSON), seeded.

The shipped OpenStreetMap extracts have no charging stations, so these files are made up: stations at random road
edges of the network (seeded), each 10-80 m off the road in a random direction, with a power drawn from 11, 22
(AC, type2), 50 and 150 kW (DC, ccs), 1-4 points and an availability in [0.6, 1].  Every id starts with ``SYN-``
and every row says ``synthetic`` in its note: they are for tests and docs, not for driving.

    python -m studies.charging.make_sample_chargers            # needs monaco.osm / luxembourg.osm in $EVROUTE_DATA
"""

from __future__ import annotations

import argparse
import csv
import json
import warnings
from pathlib import Path

import numpy as np

POWERS = np.array([11.0, 22.0, 50.0, 150.0])
P_POWER = np.array([0.2, 0.3, 0.35, 0.15])
NOTE = "synthetic (studies/charging/make_sample_chargers.py), not a real station"


def make(network: str, n: int, seed: int) -> list[dict]:
    from evroute.experiments.runner import load_linegraph
    from evroute.routes import edge_midpoints

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lg = load_linegraph(network)
    mid = edge_midpoints(lg.network.geometry)
    rng = np.random.default_rng(seed)
    edges = rng.choice(lg.n_nodes, n, replace=False)
    rows = []
    for k, e in enumerate(edges):
        off = rng.uniform(10.0, 80.0)
        ang = rng.uniform(0, 2 * np.pi)
        lat = mid[e, 1] + off * np.sin(ang) / 111_320.0
        lon = mid[e, 0] + off * np.cos(ang) / (111_320.0 * np.cos(np.radians(mid[e, 1])))
        p = float(rng.choice(POWERS, p=P_POWER))
        rows.append(
            {
                "id": f"SYN-{network[:2].upper()}-{k + 1:03d}",
                "lon": round(float(lon), 6),
                "lat": round(float(lat), 6),
                "power_kw": p,
                "connector": "ccs" if p >= 50 else "type2",
                "capacity": int(rng.integers(1, 5)),
                "availability": round(float(rng.uniform(0.6, 1.0)), 2),
                "note": NOTE,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/chargers", help="folder (default: %(default)s)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = make("monaco", 12, 36)
    with (out / "monaco_synthetic.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    rows = make("luxembourg", 50, 36)
    feats = [
        {
            "type": "Feature",
            "id": r["id"],
            "geometry": {"type": "Point", "coordinates": [r["lon"], r["lat"]]},
            "properties": {k: v for k, v in r.items() if k not in ("lon", "lat")},
        }
        for r in rows
    ]
    doc = {"type": "FeatureCollection", "name": "luxembourg synthetic chargers", "features": feats}
    (out / "luxembourg_synthetic.geojson").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}/monaco_synthetic.csv (12) and {out}/luxembourg_synthetic.geojson (50)")


if __name__ == "__main__":
    main()
