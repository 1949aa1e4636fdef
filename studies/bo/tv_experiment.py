"""Run time-varying BO algorithms on the benchmark problems against a clock, resumably, in parallel if asked.

One run (:func:`run_one`) is a loop ``t = clock.now(); x = policy.ask(t); y = f(x, t) + noise (costs c s);
policy.tell(x, y, t)`` until ``clock.now() >= horizon``.  The policy's ``ask`` and ``tell`` are timed by the clock
(:mod:`~evroute.bo.timevarying.clock`); the regret is computed after the run from the logged ``(t_k, x_k)`` so that
its cost never enters the clock.  A run is saved as ``<out>/runs/<problem>/<algorithm>/seed<k>.npz`` (written
atomically), and :func:`run_protocol` skips runs whose file exists, so an interrupted protocol resumes where it
stopped.  Runs execute sequentially, on a :class:`concurrent.futures.ProcessPoolExecutor` or, optionally, on Ray
(imported lazily; not a dependency).

Seeding: replication ``k`` of a problem uses the same observation-noise stream for every algorithm (common random
numbers); the policy seed depends on (k, problem, algorithm).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from evroute.bo.timevarying.clock import make_clock
from evroute.bo.timevarying.policies import ALGORITHMS, PAPER_ALGORITHMS, make_policy
from evroute.bo.timevarying.problems import PROBLEMS, REFERENCE_VERSION, TVProblem, get_problem
from evroute.errors import ParameterError, check_positive

__all__ = ["FULL", "REDUCED", "Protocol", "RunSpec", "load_optimum", "run_one", "run_path", "run_protocol"]


@dataclass(frozen=True)
class RunSpec:
    """One run: ``problem`` x ``algorithm`` x replication ``seed`` under a clock.

    Attributes:
        horizon: run length in (clock) seconds.
        clock: ``"simulated"`` or ``"real"``.
        compute_scale: simulated clock only: factor on measured compute time.
    """

    problem: str
    algorithm: str
    seed: int
    horizon: float = 600.0
    clock: str = "simulated"
    compute_scale: float = 1.0


@dataclass(frozen=True)
class Protocol:
    """A set of runs: every problem x algorithm x ``replications`` replications (seeds 0..replications-1)."""

    horizon: float
    replications: int
    compute_scale: float = 1.0
    clock: str = "simulated"
    problems: tuple[str, ...] = tuple(PROBLEMS)
    algorithms: tuple[str, ...] = PAPER_ALGORITHMS
    note: str = field(default="", compare=False)

    def specs(self) -> list[RunSpec]:
        """All runs, replication-major (so a partial protocol has complete replications first)."""
        if int(self.replications) < 1:
            raise ParameterError(f"replications must be >= 1, got {self.replications!r}")
        check_positive("horizon", self.horizon)
        return [
            RunSpec(p, a, k, self.horizon, self.clock, self.compute_scale)
            for k in range(int(self.replications))
            for p in self.problems
            for a in self.algorithms
        ]


#: The paper's protocol: 600 s runs, 10 replications (real time in the paper; simulated clock by default here).
FULL = Protocol(horizon=600.0, replications=10, note="paper protocol: 600 s per run, 10 replications")
#: The protocol run in this repository (see docs/results/archive/tvbo_table3.md for why it is sized this way).
REDUCED = Protocol(
    horizon=600.0,
    replications=3,
    compute_scale=50.0,
    note="600 s simulated runs, compute time x50 (a machine 50x slower), 3 replications",
)


def _stable_int(*parts: object) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


def run_path(out_dir: str | Path, spec: RunSpec) -> Path:
    """File of one run's results."""
    return Path(out_dir) / "runs" / spec.problem / spec.algorithm / f"seed{spec.seed}.npz"


def load_optimum(problem: TVProblem, out_dir: str | Path | None) -> None:
    """Install the problem's maximiser path from ``<out>/optima/<name>.npz``, computing and saving it if missing.

    A cached path from another :data:`~evroute.bo.timevarying.problems.REFERENCE_VERSION` of the search is recomputed.
    """
    if out_dir is None:
        problem.maximiser_path()
        return
    path = Path(out_dir) / "optima" / f"{problem.name}.npz"
    if path.exists():
        with np.load(path) as data:
            if "version" in data.files and int(data["version"]) == REFERENCE_VERSION:  # older searches: recompute
                problem.set_maximiser_path(data["times"], data["xs"])
                return
    times, xs = problem.maximiser_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, times=times, xs=xs, version=REFERENCE_VERSION)
    os.replace(tmp, path)


def run_one(spec: RunSpec, out_dir: str | Path | None = None) -> dict[str, np.ndarray]:
    """Execute one run; returns (and, if ``out_dir`` is given, saves) its per-iteration log.

    Returns a dict of ``(K,)`` arrays ``t`` (query times, s), ``regret``, ``dataset_size`` (|D| after the tell),
    ``compute`` (measured seconds of ask + tell, unscaled, simulated clock only), and ``X`` ``(K, d)``.
    """
    from threadpoolctl import threadpool_limits  # one BLAS thread: CPU-time accounting = single-core compute

    problem = get_problem(spec.problem)
    if spec.algorithm not in ALGORITHMS:
        raise ParameterError(f"unknown algorithm {spec.algorithm!r}; known: {', '.join(ALGORITHMS)}")
    load_optimum(problem, out_dir)
    noise_rng = np.random.default_rng([spec.seed, _stable_int(spec.problem)])
    policy_seed = _stable_int(spec.seed, spec.problem, spec.algorithm)
    policy = make_policy(spec.algorithm, problem.domain, seed=policy_seed, nu_t=problem.nu_t)
    clock = make_clock(spec.clock, compute_scale=spec.compute_scale)
    log_t, log_x, log_n, log_c = [], [], [], []
    with threadpool_limits(1):
        while (t := clock.now()) < spec.horizon:
            before = getattr(clock, "compute_seconds", 0.0)
            with clock.compute():
                x = policy.ask(t)
            y = problem.observe(x, t, noise_rng)
            clock.evaluate(problem.cost)
            with clock.compute():
                policy.tell(x, y, t)
            log_t.append(t)
            log_x.append(x)
            log_n.append(policy.dataset_size)
            log_c.append(getattr(clock, "compute_seconds", 0.0) - before)
    ts, xs = np.asarray(log_t), np.asarray(log_x).reshape(-1, problem.dim)
    result = {
        "t": ts,
        "X": xs,
        "regret": problem.regret(xs, ts),
        "dataset_size": np.asarray(log_n),
        "compute": np.asarray(log_c),
    }
    agreements = getattr(policy.manager, "agreements", None)
    if getattr(policy.manager, "compare", False) and agreements is not None:
        result["w2_agree"] = np.asarray(agreements, dtype=bool)  # exact Eq. 12 vs W-DBO bound, per removal
    if out_dir is not None:
        path = run_path(out_dir, spec)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, allow_pickle=False, meta=json.dumps(asdict(spec)), **result)  # numeric arrays and a JSON str
        os.replace(tmp, path)
    return result


def _run_and_forget(spec: RunSpec, out_dir: str) -> str:
    run_one(spec, out_dir)
    return str(run_path(out_dir, spec))


def run_protocol(
    specs: Iterable[RunSpec],
    out_dir: str | Path,
    *,
    workers: int = 1,
    executor: str = "process",
    address: str | None = None,
    progress: bool = True,
) -> list[Path]:
    """Run every spec whose result file is missing; returns the paths of all result files.

    Args:
        specs: the runs (e.g. ``Protocol.specs()``).
        out_dir: results directory (``runs/`` and ``optima/`` are created under it).
        workers: parallel runs (``1``: sequential in this process).
        executor: ``"process"`` (a process pool) or ``"ray"`` (needs ``ray`` installed).
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); ``None``: ``RAY_ADDRESS``
            if set, else a local Ray instance.
    """
    out = str(out_dir)
    specs = list(specs)
    todo = [s for s in specs if not run_path(out, s).exists()]
    if executor not in ("process", "ray"):
        raise ParameterError(f"executor must be 'process' or 'ray', got {executor!r}")
    for name in sorted({s.problem for s in todo}):  # maximiser paths once, before any parallel run
        load_optimum(get_problem(name), out)
    if progress:
        print(f"{len(specs) - len(todo)} of {len(specs)} runs already done; running {len(todo)}", flush=True)
    if executor == "ray":
        try:
            import ray
        except ImportError as exc:
            raise ParameterError("executor='ray' needs the optional dependency ray (pip install ray)") from exc
        ray.init(address=address, ignore_reinit_error=True)
        remote = ray.remote(num_cpus=1)(_run_and_forget)
        for done in ray.get([remote.remote(s, out) for s in todo]):
            if progress:
                print(done, flush=True)
    elif int(workers) <= 1:
        for s in todo:
            _run_and_forget(s, out)
            if progress:
                print(run_path(out, s), flush=True)
    else:
        with ProcessPoolExecutor(max_workers=int(workers)) as pool:
            for done in pool.map(_run_and_forget, todo, [out] * len(todo)):
                if progress:
                    print(done, flush=True)
    return [run_path(out, s) for s in specs]
