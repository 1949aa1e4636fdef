"""Check that a change of the GP model leaves the committed BO results valid (same numbers, or a stated difference).

Three slices, each run through the public policy APIs of :mod:`evroute.bo` (the study protocols come from
:mod:`studies.bo.protocols`; a version without that module has them in ``scripts/bo_*.py``):

* ``kernelized``: trials of ``studies/bo/bo_kernelized_bandits.py`` (all eight tasks, all five GP policies, the
  committed horizons: 30,000 on E1/E2, 5,000 on E3, 1,000 per sensor snapshot) re-run and compared with the
  committed per-trial files in ``docs/results/kernelized_bandits_runs/``;
* ``boke``: GP-UCB runs of ``studies/bo/bo_boke.py`` (the only BOKE-paper method with a GP) re-run and compared with
  ``docs/results/boke_runs/``;
* ``tv``: every time-varying policy of :mod:`evroute.bo.timevarying` run for ``--tv-steps`` steps on a deterministic
  clock (``t`` advances by ``1 + 0.002 |D|^2`` s per step, so BOLT's ``n*`` binds) on Ackley-3 with seeded noise;
  the chosen points, data-set sizes and times are written with ``--dump`` and compared with ``--compare`` (the
  Table 3 runs themselves use measured CPU time, so they are not reproducible bit for bit on any version).

Usage::

    python -m studies.bo.bo_model_equivalence --slices tv --dump /tmp/tv_ref.npz          # on the old version
    python -m studies.bo.bo_model_equivalence --slices kernelized,boke,tv --compare /tmp/tv_ref.npz

Prints, per slice, the number of arrays compared, how many are bit-identical and the largest absolute difference;
``--report PATH`` also writes these lines, with the command, to a Markdown file.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from evroute.bo import get_function
from studies.bo import protocols as P

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
LINES: list[str] = []  # everything printed, for --report


def _say(line: str) -> None:
    print(line, flush=True)
    LINES.append(line)


def _report(label: str, pairs: list[tuple[str, np.ndarray, np.ndarray]]) -> bool:
    same = sum(np.array_equal(a, b) for _, a, b in pairs)
    diffs = [float(np.max(np.abs(a - b))) if a.shape == b.shape else np.inf for _, a, b in pairs]
    worst = max(diffs) if diffs else 0.0
    _say(f"{label}: {len(pairs)} arrays, {same} bit-identical, max |difference| {worst:.3g}")
    for (name, _a, b), d in zip(pairs, diffs, strict=True):
        if d > 0:
            _say(f"  {name}: max |diff| {d:.3g} (reference max |value| {float(np.max(np.abs(b))):.3g})")
    return same == len(pairs)


def kernelized(trials: list[int], tasks: list[str]) -> bool:
    horizons = {t: 30000 for t in P.KB_TASKS} | {"rosenbrock": 5000, "hartmann3": 5000}
    horizons |= {"temperature": 1000, "light": 1000}
    pairs = []
    for trial in trials:
        for task in tasks:
            done = len(pairs)
            ref = np.load(RESULTS / "kernelized_bandits_runs" / f"{task}_T{horizons[task]}_trial{trial}.npz")
            insts = P.kb_make_task(task, trial)
            for name in P.KB_POLICIES:
                curve = np.mean(
                    [P.kb_run_instance(i, name, horizons[task], 1000 * trial + k) for k, i in enumerate(insts)], axis=0
                )
                pairs.append((f"{task} trial {trial} {name}", curve, ref[name]))
            _report(f"  {task} trial {trial}", pairs[done:])
    return _report("kernelized bandits", pairs)


def boke(seeds: list[int], funcs: list[str]) -> bool:
    pairs = []
    for seed in seeds:
        for key in funcs:
            name, dim, budget = P.BOKE_FUNCS[key]
            fn = get_function(name, dim)
            sigma = P.boke_noise_std(fn)
            for noisy in (False, True):
                res = P.boke_run_one(fn, "GP-UCB", budget, noisy, seed, sigma, P.boke_initial_design(fn, seed))
                setting = "noisy" if noisy else "clean"
                ref = np.load(RESULTS / "boke_runs" / f"{key}_{setting}_GP-UCB_{seed}.npz")
                pairs.append((f"{key} {setting} seed {seed}", res.simple_regret, ref["simple_regret"]))
    return _report("BOKE GP-UCB", pairs)


def tv_runs(steps: int) -> dict[str, np.ndarray]:
    from evroute.bo.timevarying import ALGORITHMS, make_policy

    fn = get_function("ackley", 3)
    out: dict[str, np.ndarray] = {}
    for name in ALGORITHMS:
        pol = make_policy(name, fn.domain, seed=3, n_init=8)
        rng = np.random.default_rng(11)
        t, xs, sizes, times = 0.0, [], [], []
        for _ in range(steps):
            x = pol.ask(t)
            y = float(fn.objective(x)) * (1.0 + 0.5 * np.sin(t / 40.0)) + 0.1 * rng.standard_normal()
            pol.tell(x, y, t)
            xs.append(x)
            sizes.append(pol.dataset_size)
            times.append(t)
            t += 1.0 + 0.002 * pol.dataset_size**2
        out[f"{name}/x"], out[f"{name}/size"], out[f"{name}/t"] = np.array(xs), np.array(sizes), np.array(times)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", default="kernelized,boke,tv")
    ap.add_argument("--trials", default="0", help="kernelized-bandit trials (comma-separated)")
    ap.add_argument("--tasks", default="", help="kernelized-bandit tasks (default: all eight)")
    ap.add_argument("--seeds", default="0,1", help="BOKE seeds (comma-separated)")
    ap.add_argument("--tv-steps", type=int, default=80)
    ap.add_argument("--dump", help="write the tv slice to this .npz")
    ap.add_argument("--compare", help="compare the tv slice with this .npz")
    ap.add_argument("--report", help="also write the result lines to this Markdown file")
    args = ap.parse_args(argv)
    start = time.time()
    slices = set(args.slices.split(","))
    ok = True
    if "kernelized" in slices:
        kb_tasks = args.tasks.split(",") if args.tasks else P.KB_TASKS
        ok &= kernelized([int(s) for s in args.trials.split(",")], kb_tasks)
    if "boke" in slices:
        ok &= boke([int(s) for s in args.seeds.split(",")], list(P.BOKE_FUNCS))
    if "tv" in slices:
        runs = tv_runs(args.tv_steps)
        if args.dump:
            np.savez(args.dump, **runs)
            _say(f"tv slice written to {args.dump}")
        if args.compare:
            ref = np.load(args.compare)
            ok &= _report("time-varying policies", [(k, runs[k], ref[k]) for k in ref.files])
    if args.report:
        args_text = " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        command = f"python -m studies.bo.bo_model_equivalence {args_text}"
        head = [
            "# Same numbers after a change of the GP model (generated)",
            "",
            f"Command: `{command}`",
            "",
            f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, one BLAS "
            f"thread; {time.time() - start:.0f} s. Verdict: {'all bit-identical' if ok else 'DIFFERENCES (below)'}.",
            "",
            "```",
        ]
        Path(args.report).write_text("\n".join(head + LINES + ["```", ""]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
