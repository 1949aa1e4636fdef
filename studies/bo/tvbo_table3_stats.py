"""Derived statistics quoted in docs/results/archive/tvbo_table3.md, from the per-run files of
``studies/bo/tvbo_table3.py``.

Usage: ``python -m studies.bo.tvbo_table3_stats [--out runs/tvbo] [--seeds 0 1]``.  Prints, for the complete
replications among ``--seeds``: wins, mean rank and last places per algorithm (on the per-problem mean regrets,
rescored as in ``studies/bo/tvbo_table3.py``), BOLT's rank per problem, the per-problem regret ranges, the number
of ET-GP-UCB resets (steps where its data set shrinks), BOLT's largest single-step removal, peak and minimum |D|
after the peak, and the final |D| of BOLT and W-DBO.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from studies.bo.protocols import tvbo_rescore as rescore
from studies.bo.tv_experiment import REDUCED
from studies.bo.tv_report import ALGO_LABELS, load_runs, normalised_scores, summary_table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/tvbo")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = ap.parse_args(argv)
    df, logs = load_runs(args.out)
    df = df[df["seed"].isin(args.seeds) & df["algorithm"].isin(REDUCED.algorithms)]
    cells = len(REDUCED.problems) * len(REDUCED.algorithms)
    complete = [s for s in args.seeds if (df["seed"] == s).sum() == cells]
    if complete != args.seeds:
        print(f"incomplete replications among {args.seeds}: complete {complete}", file=sys.stderr)
        return 1
    logs = {k: v for k, v in logs.items() if k[2] in complete and k[1] in REDUCED.algorithms}
    df, _ = rescore(args.out, df, logs)
    _, means = summary_table(df)
    ranks = means.rank(axis=1, method="min")
    norm = normalised_scores(means)
    print(f"seeds {complete}")
    print("algorithm | wins | mean rank | last | overall")
    for a in means.columns:
        last = int((ranks[a] == ranks.max(axis=1)).sum())
        wins = int((ranks[a] == 1).sum())
        print(f"{ALGO_LABELS[a]} | {wins} | {ranks[a].mean():.2f} | {last} | {norm[a].mean():.3f}")
    print("\nBOLT rank per problem:", ranks["bolt"].astype(int).to_dict())
    print("\nper-problem means (ranked):")
    for p in means.index:
        row = means.loc[p].sort_values()
        print(f"  {p}: " + ", ".join(f"{ALGO_LABELS[a]} {v:.4g}" for a, v in row.items()))
    print("\nper-seed average regret and rank among the seven (problem: algorithm seed values):")
    for p in means.index:
        sub = df[df["problem"] == p]
        by_seed = sub.pivot_table(index="seed", columns="algorithm", values="avg_regret")
        seed_ranks = by_seed.rank(axis=1, method="min")
        for a in ("bolt", "w-dbo"):
            vals = ", ".join(f"s{s} {v:.4g} (#{int(seed_ranks.loc[s, a])})" for s, v in by_seed[a].items())
            print(f"  {p}: {ALGO_LABELS[a]} {vals}")
    print("\nper-run dataset statistics (problem, seed):")
    for (p, a, s), log in sorted(logs.items()):
        size = log["dataset_size"]
        drops = -np.diff(size)
        if a == "et-gp-ucb":
            print(f"  ET-GP-UCB {p} s{s}: resets {int((drops > 0).sum())}, iterations {size.size}")
        if a == "bolt":
            peak = int(np.argmax(size))
            print(
                f"  BOLT {p} s{s}: final |D| {size[-1]} of {size.size} iterations,"
                f" largest removal {drops.max(initial=0)}, peak {size[peak]}, min after peak {size[peak:].min()}"
            )
        if a == "w-dbo":
            print(f"  W-DBO {p} s{s}: final |D| {size[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
