"""Incline distribution of a network before/after the elevation smoothing, and its steepest edges with evidence.

For each loader and smoothing scale it prints the quantiles of the absolute road grade (rise over run), the
number of edges above 15 % and 25 % and the steepest edges; for an OSM network it also prints, for the steepest
edges, the OSM way they come from (tags and the ``ele`` profile of its nodes), the evidence for why they are steep.
Used for ``docs/inclines.md``:

    EVROUTE_DATA=/work/shared/data EVROUTE_CACHE=/tmp/incline-cache \\
        nice .venv/bin/python -m studies.env.incline_report --network monaco --loaders netconvert osmnx
"""

from __future__ import annotations

import argparse
import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from evroute.network.inclines import grade, horizontal_length_m, steep_edges
from evroute.network.registry import DATASETS, dataset_path, load_network

QUANTILES = (0.5, 0.9, 0.99)


def _row(label: str, net) -> str:  # noqa: ANN001 - RoadNetwork
    g = np.abs(grade(net))
    q = " | ".join(f"{100 * v:.1f}" for v in np.quantile(g, QUANTILES))
    top = steep_edges(net, 0.0)[0]
    return (
        f"| {label} | {net.n_edges} | {q} | {100 * g.max():.1f} | {int((g > 0.15).sum())} | {int((g > 0.25).sum())} "
        f"| `{top['edge']}` ({100 * top['grade']:+.1f} %, run {top['length_m']:.1f} m) |"
    )


def _osm_ways(osm: Path) -> tuple[dict[str, dict[str, str]], dict[str, list[str]], dict[str, tuple[float, float, str]]]:
    tags, refs, nodes = {}, {}, {}
    for _, el in ET.iterparse(osm, events=("end",)):
        if el.tag == "node":
            ele = next((t.get("v", "") for t in el.iter("tag") if t.get("k") == "ele"), "")
            nodes[el.get("id", "")] = (float(el.get("lat", "nan")), float(el.get("lon", "nan")), ele)
            el.clear()
        elif el.tag == "way":
            wid = el.get("id", "")
            tags[wid] = {t.get("k", ""): t.get("v", "") for t in el.iter("tag")}
            refs[wid] = [n.get("ref", "") for n in el.iter("nd")]
            el.clear()
    return tags, refs, nodes


def _evidence(net, osm: Path, n_edges: int) -> list[str]:  # noqa: ANN001 - RoadNetwork
    """The OSM way of each of the ``n_edges`` steepest edges: tags and the ``ele`` profile along it."""
    tags, refs, nodes = _osm_ways(osm)
    out, seen = [], set()
    h = horizontal_length_m(net)
    for r in steep_edges(net, 0.0)[:n_edges]:
        i = net.index_of(r["edge"])
        wid = r["edge"].lstrip("-").split("#")[0].split("-")[0]
        out.append(
            f"- `{r['edge']}`: grade {100 * r['grade']:+.1f} %, run {h[i]:.1f} m, "
            f"z {net.z_from_m[i]:.2f} -> {net.z_to_m[i]:.2f} m, OSM way {wid}"
        )
        if wid in seen or wid not in tags:
            continue
        seen.add(wid)
        keep = ("highway", "name", "nature", "prec_alti", "tunnel", "bridge", "layer")
        out.append(f"  - way {wid} tags: " + ", ".join(f"{k}={tags[wid][k]}" for k in keep if k in tags[wid]))
        prof, dist, prev = [], 0.0, None
        for ref in refs[wid]:
            lat, lon, ele = nodes.get(ref, (math.nan, math.nan, ""))
            if prev is not None:
                dist += math.hypot((lat - prev[0]) * 111195, (lon - prev[1]) * 111195 * math.cos(math.radians(lat)))
            prev = (lat, lon)
            prof.append(f"{dist:.0f} m: {ele or '?'}")
        out.append("  - ele along the way: " + ", ".join(prof))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="monaco")
    ap.add_argument("--loaders", nargs="+", default=["netconvert"])
    ap.add_argument("--scales", nargs="+", type=float, default=[0.0, 25.0, 50.0, 100.0], help="smoothing scales (m)")
    ap.add_argument("--evidence", type=int, default=6, help="steepest edges to explain")
    args = ap.parse_args()
    print("| loader, smoothing | edges | p50 | p90 | p99 | max (%) | > 15 % | > 25 % | steepest edge |")
    print("|---|---|---|---|---|---|---|---|---|")
    nets = {}
    for loader in args.loaders:
        for scale in args.scales:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                net = load_network(args.network, loader=loader, smooth_m=scale)
            nets[(loader, scale)] = net
            print(_row(f"{loader}, {'raw' if scale == 0 else f'{scale:g} m'}", net))
    if args.network in DATASETS:
        osm = dataset_path(args.network)
        for key in [(args.loaders[0], args.scales[0]), (args.loaders[0], 50.0)]:
            if key in nets:
                print(f"\n{key[0]}, smoothing {key[1]:g} m, steepest edges:")
                print("\n".join(_evidence(nets[key], osm, args.evidence)))


if __name__ == "__main__":
    main()
