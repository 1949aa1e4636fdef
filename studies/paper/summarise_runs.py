"""Summarise finished experiment folders: a Markdown table and a cumulative-regret figure.

Usage::

    python -m studies.paper.summarise_runs results/core/monaco-A-bi-ts results/core/luxembourg-A-bi-ts \\
        --out docs/results/core_bi_ts --title "BI-TS, T=500, 5 seeds"

For every folder: method, network, route, seeds, final cumulative regret (mean +- s.e.), mean regret per
round in the first and last fifth of the horizon (a flattening curve has a much smaller last-fifth value),
the regret reference used per seed, and the median per-round time.  Writes ``OUT.md`` and ``OUT.png``; the
Markdown repeats this command.  The table and figure are built by
:func:`studies.common.report.write_runs_summary`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from studies.common.report import write_runs_summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", required=True, help="output path without extension (writes .md and .png)")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    text = write_runs_summary(
        [Path(f) for f in args.folders], Path(args.out), args.title, argv if argv is not None else sys.argv[1:]
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
