"""Summarise finished experiment folders: a Markdown table and a cumulative-regret figure.

Usage::

    python scripts/summarise_runs.py results/core/monaco-A-bi-ts results/core/luxembourg-A-bi-ts \\
        --out docs/results/core_bi_ts --title "BI-TS, T=500, 5 seeds"

For every folder: method, network, route, seeds, final cumulative regret (mean +- s.e.), mean regret per
round in the first and last fifth of the horizon (a flattening curve has a much smaller last-fifth value),
the regret reference used per seed, and the median per-round time.  Writes ``OUT.md`` and ``OUT.png``; the
Markdown repeats this command and, from each folder's ``config.json``, the ``evroute run`` settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from evroute.experiments import load_rounds
from evroute.io import atomic_write_text
from evroute.viz import plot_regret


def summarise(folder: Path) -> tuple[str, dict[str, object], object]:
    cfg = json.loads((folder / "config.json").read_text())
    df = load_rounds(folder)
    horizon = int(df["round"].max())
    fifth = max(1, horizon // 5)
    per_round = df.groupby("round").regret_wh.mean().to_numpy()
    final = df[df["round"] == horizon].cumulative_regret_wh.to_numpy()
    methods = sorted({json.loads(p.read_text()).get("optimal_method", "?") for p in folder.glob("seed_*/summary.json")})
    total_ms = df[["posterior_ms", "index_ms", "oracle_ms", "update_ms"]].sum(axis=1)
    label = f"{cfg['model'].upper()}-{cfg['policy'].upper()} {cfg['network']} {cfg.get('route') or ''}".strip()
    row = {
        "method": f"{cfg['model'].upper()}-{cfg['policy'].upper()}",
        "network": cfg["network"],
        "route": cfg.get("route") or f"{cfg['start']}->{cfg['goal']}",
        "seeds": len(final),
        "T": horizon,
        "final": f"{final.mean():.1f} +- {final.std(ddof=1) / np.sqrt(len(final)) if len(final) > 1 else 0:.1f}",
        "first": f"{per_round[:fifth].mean():.2f}",
        "last": f"{per_round[-fifth:].mean():.2f}",
        "reference": "/".join(methods),
        "potential": cfg.get("potential", "none"),
        "ms": f"{np.median(total_ms):.2f}",
    }
    return label, row, df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", required=True, help="output path without extension (writes .md and .png)")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    rows, frames = [], {}
    for f in args.folders:
        label, row, df = summarise(Path(f))
        rows.append(row)
        frames[label] = df
    out = Path(args.out)
    png = plot_regret(frames, out.with_suffix(".png"), title=args.title)
    cols = ["method", "network", "route", "potential", "seeds", "T", "final", "first", "last", "reference", "ms"]
    head = (
        "| method | network | route | potential | seeds | T | final cumulative regret (Wh, mean +- s.e.) "
        "| regret/round, first fifth | regret/round, last fifth | regret reference | median round (ms) |\n"
        "|" + "---|" * len(cols) + "\n"
    )
    cmd = "python scripts/summarise_runs.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = (
        f"Command: `{cmd}`\n\n"
        + head
        + "".join("| " + " | ".join(str(r[c]) for c in cols) + " |\n" for r in rows)
        + f"\n![cumulative regret]({png.name})\n"
    )
    atomic_write_text(out.with_suffix(".md"), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
