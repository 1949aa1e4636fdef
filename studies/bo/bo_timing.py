"""Per-iteration cost of BOKE, BOKE+, KR-UCB and GP-UCB against the number of observations (BOKE paper, Table 1).

For each size ``n`` a policy is given ``n`` random observations of Hartmann-3 and one iteration (``ask`` + ``tell``) is
timed (process CPU time, single BLAS thread, median of ``--repeats``).  GP-UCB is timed twice: with the rank-one
Cholesky extension evroute uses (``O(n^2)`` update + ``O(m n^2)`` inference) and with a full Cholesky refit before each
iteration (the ``O(n^3) + O(m n^2)`` cost model of the paper).  All methods use the same acquisition optimiser
(512 random candidates + 4 L-BFGS-B starts, so ``m`` is about the same).  Growth exponents are least-squares slopes
of ``log time`` on ``log n`` for ``n >= 400``.

Usage: ``python -m studies.bo.bo_timing [--sizes 100,200,...] [--repeats 3]``; the times go to ``--data`` (JSON), the
report and figure are built from it alone, and ``--report-only`` rebuilds them from ``--data`` without timing.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from evroute.bo import BOKE, GPUCB, KRUCB, BOKEPlus, SquaredExponential, get_function
from studies.reproduce.provenance import commit_line, head_commit

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
    ap.add_argument("--data", default=str(OUT / "data" / "bo_timing.json"), help="the measured times (JSON)")
    ap.add_argument("--out", default=str(OUT / "bo_timing.md"), help="the report")
    ap.add_argument("--fig", default=str(OUT / "bo_timing.png"), help="the figure")
    ap.add_argument("--report-only", action="store_true", help="time nothing; rebuild --out and --fig from --data")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if args.report_only:
        if not data.is_file():
            ap.exit(2, f"evroute: error: no timing data at {data} (run without --report-only)\n")
        d = json.loads(data.read_text())
    else:
        try:
            sizes = [int(s) for s in args.sizes.split(",")]
        except ValueError:
            ap.exit(2, f"evroute: error: --sizes must be comma-separated integers, not {args.sizes!r}\n")
        command = "python -m studies.bo.bo_timing " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        table: dict[str, list[float]] = {m: [] for m in METHODS}
        for n in sizes:
            for m in METHODS:
                table[m].append(float(np.median([time_iteration(m, n, r) for r in range(args.repeats)])))
                print(f"n={n} {m}: {table[m][-1]:.4f}s", flush=True)
        d = {"command": command.rstrip(), "sizes": sizes, "repeats": args.repeats, "seconds": table}
        d["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"
        d["commit"] = head_commit()
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text(json.dumps(d, indent=1) + "\n")
    lines = build_report(d)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    plot(d, Path(args.fig))
    print("\n".join(lines))


def slopes(d: dict[str, Any]) -> dict[str, float]:
    """Least-squares slope of log time on log n over the sizes n >= 400, per method (NaN with fewer than 2 sizes)."""
    n = np.array(d["sizes"], dtype=float)
    tail = n >= 400
    return {
        m: float(np.polyfit(np.log(n[tail]), np.log(np.array(t)[tail]), 1)[0]) if tail.sum() >= 2 else float("nan")
        for m, t in d["seconds"].items()
    }


def build_report(d: dict[str, Any]) -> list[str]:
    """The Markdown report (lines) from the measured times ``d`` (``seconds[method][k]``: CPU s at ``sizes[k]``)."""
    sizes, table, slope = d["sizes"], d["seconds"], slopes(d)
    rows = [f"| {m} | " + " | ".join(f"{v:.4f}" for v in t) + f" | {slope[m]:.2f} |" for m, t in table.items()]
    last = {m: t[-1] for m, t in table.items()}
    fastest = min(last, key=lambda m: last[m])
    order = sorted(slope, key=lambda m: slope[m])
    return [
        "# Per-iteration cost of BOKE, BOKE+, KR-UCB and GP-UCB",
        "",
        f"Command: `{d['command']}`",
        "",
        *([commit_line(str(d["commit"]), "bo_timing", timing=True), ""] if d.get("commit") else []),
        "Generated from the measured times in [`data/bo_timing.json`](data/bo_timing.json) (rebuild: "
        "`python -m studies.bo.bo_timing --report-only`).",
        "",
        f"CPU seconds of one `ask` + `tell` (median of {d['repeats']}), Hartmann-3, n random observations, one BLAS "
        "thread, same acquisition optimiser for all (512 random candidates + 4 L-BFGS-B starts). Exponent = fitted "
        f"slope of log time on log n for n >= 400. Machine: {d['machine']}, shared with other jobs, so absolute times "
        "are noisy.",
        "",
        "| method | " + " | ".join(f"n={s}" for s in sizes) + " | exponent |",
        "|---|" + "---|" * len(sizes) + "---|",
        *rows,
        "",
        f"- Growth exponents, lowest first: {', '.join(f'{m} {slope[m]:.2f}' for m in order)}.",
        f"- At n = {sizes[-1]} the fastest is {fastest} ({last[fastest]:.4f} s); "
        + ", ".join(f"{m} {last[m] / last[fastest]:.1f}x" for m in table if m != fastest)
        + " its time.",
        "",
        "Paper (Table 1): per iteration BOKE O(m t), KR-UCB O(t^2 + m t), GP-UCB O(t^3 + m t^2).",
    ]


def plot(d: dict[str, Any], path: Path) -> None:
    """Time per iteration against n, log-log, one line per method (PNG at ``path``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n, slope = np.array(d["sizes"], dtype=float), slopes(d)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for m, secs in d["seconds"].items():
        ax.loglog(n, np.array(secs), "o-", label=f"{m} (slope {slope[m]:.2f})")
    ax.set_xlabel("number of observations n")
    ax.set_ylabel("CPU seconds per iteration")
    ax.set_title("Per-iteration cost (Hartmann-3, 1 thread)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
