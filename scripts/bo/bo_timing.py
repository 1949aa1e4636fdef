"""Per-iteration cost of BOKE, BOKE+, KR-UCB and GP-UCB against the number of observations (BOKE paper, Table 1).

For each size ``n`` a policy is given ``n`` random observations of Hartmann-3 and one iteration (``ask`` + ``tell``) is
timed (process CPU time, single BLAS thread, median of ``--repeats``).  GP-UCB is timed twice: with the rank-one
Cholesky extension evroute uses (``O(n^2)`` update + ``O(m n^2)`` inference) and with a full Cholesky refit before each
iteration (the ``O(n^3) + O(m n^2)`` cost model of the paper).  All methods use the same acquisition optimiser
(512 random candidates + 4 L-BFGS-B starts, so ``m`` is about the same).  Growth exponents are least-squares slopes
of ``log time`` on ``log n`` for ``n >= 400``.

Usage: ``python scripts/bo/bo_timing.py [--sizes 100,200,...] [--repeats 3]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from evroute.bo import BOKE, GPUCB, KRUCB, BOKEPlus, SquaredExponential, get_function

OUT = Path(__file__).resolve().parents[2] / "docs" / "results"
METHODS = ["BOKE", "BOKE+", "KR-UCB", "GP-UCB (rank-one)", "GP-UCB (full refit)"]


def build(method: str, n: int, seed: int):  # noqa: ANN201
    fn = get_function("hartmann3")
    dom = fn.domain
    if method == "BOKE":
        pol = BOKE(dom, seed=seed)
    elif method == "BOKE+":
        pol = BOKEPlus(dom, seed=seed)
    elif method == "KR-UCB":
        pol = KRUCB(dom, seed=seed)
    else:
        pol = GPUCB(dom, kernel=SquaredExponential(0.2 * np.sqrt(3)), beta=2.0, lam=1e-4, normalize_y=True, seed=seed)
    x = dom.sample(n, np.random.default_rng(seed))
    pol.tell_many(x, fn.objective(x))
    return pol, fn


def time_iteration(method: str, n: int, seed: int) -> float:
    pol, fn = build(method, n, seed)
    start = time.process_time()
    if method == "GP-UCB (full refit)":
        pol.model.recompute()
    x = pol.ask()
    pol.tell(x, fn.objective(x))
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="per-iteration timing of BOKE / KR-UCB / GP-UCB")
    ap.add_argument("--sizes", default="100,200,400,800,1600,3200")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    command = "python scripts/bo/bo_timing.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    table = {m: [] for m in METHODS}
    for n in sizes:
        for m in METHODS:
            table[m].append(float(np.median([time_iteration(m, n, r) for r in range(args.repeats)])))
            print(f"n={n} {m}: {table[m][-1]:.4f}s", flush=True)
    report(sizes, table, command, args.repeats)


def report(sizes: list[int], table: dict[str, list[float]], command: str, repeats: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = np.array(sizes, dtype=float)
    tail = n >= 400
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    rows, slopes = [], {}
    for m, secs in table.items():
        t = np.array(secs)
        slopes[m] = float(np.polyfit(np.log(n[tail]), np.log(t[tail]), 1)[0]) if tail.sum() >= 2 else float("nan")
        ax.loglog(n, t, "o-", label=f"{m} (slope {slopes[m]:.2f})")
        rows.append(f"| {m} | " + " | ".join(f"{v:.4f}" for v in t) + f" | {slopes[m]:.2f} |")
    ax.set_xlabel("number of observations n")
    ax.set_ylabel("CPU seconds per iteration")
    ax.set_title("Per-iteration cost (Hartmann-3, 1 thread)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "bo_timing.png", dpi=110)
    lines = [
        "# Per-iteration cost of BOKE, BOKE+, KR-UCB and GP-UCB",
        "",
        f"Command: `{command}`",
        "",
        f"CPU seconds of one `ask` + `tell` (median of {repeats}), Hartmann-3, n random observations, one BLAS thread,",
        "same acquisition optimiser for all (512 random candidates + 4 L-BFGS-B starts). Slope = fitted exponent of",
        "time ~ n^slope for n >= 400. Machine: shared 2-core VM (other jobs running), so absolute times are noisy.",
        "",
        "| method | " + " | ".join(f"n={s}" for s in sizes) + " | exponent |",
        "|---|" + "---|" * len(sizes) + "---|",
        *rows,
        "",
        "Paper (Table 1): per iteration BOKE O(m t), KR-UCB O(t^2 + m t), GP-UCB O(t^3 + m t^2).",
        "",
    ]
    (OUT / "bo_timing.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
