"""Set-up of one BI-TS run stage by stage, in CPU time, and a previous implementation beside it
(``studies/bench/bench_env_setup.py --check``).

:func:`measure` times, in one process, the set-up of ``evroute run --model bi --policy ts`` up to and including
round 1, split into the steps :func:`evroute.experiments.runner.build_problem` and ``make_bandit`` take: generating or
loading the network, its line graph, the route, the environment (its draw: graph draws by sparse Cholesky, random
features), the bandit (model, regret reference) and round 1.  Process CPU time (``time.process_time``, all threads)
next to wall time, and digests of what was made (network, draw, route, round 1) so that two implementations can be
compared for bit-identity.

:func:`check` runs :func:`measure` for the current code and for the ``evroute`` package of another commit (extracted
with ``git archive`` into a temporary folder) alternately, in one process (:class:`CodeTree` swaps the two packages'
modules in ``sys.modules``), and then each in fresh processes (nothing imported or cached in the process: what
``evroute run`` pays).  The load average is recorded around every measurement.

This module imports only the standard library and NumPy at its top level: a fresh child process loads it by file
name with another ``evroute`` first on its path.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

STAGES: tuple[str, ...] = ("network", "line graph", "route", "environment", "bandit", "round 1")


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        arr = np.ascontiguousarray(a)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def network_digest(net: Any) -> str:
    """Digest of a :class:`~evroute.network.road_network.RoadNetwork`'s arrays (ids, attributes, geometry, turns)."""
    geom = np.concatenate(net.geometry) if len(net.geometry) else np.zeros((0, 2))
    counts = np.array([len(g) for g in net.geometry], dtype=np.int64)
    meta = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in net.meta.items()}
    return _digest(
        net.edge_ids,
        net.from_node,
        net.to_node,
        net.length_m,
        net.speed_mps,
        net.z_from_m,
        net.z_to_m,
        geom,
        counts,
        net.turns,
        np.frombuffer(json.dumps(meta, sort_keys=True, default=str).encode(), dtype=np.uint8),
    )


def measure(
    network: str, seed: int = 0, route: str = "A", environment: str = "consistent", *, collect: bool = True
) -> dict[str, Any]:
    """CPU and wall seconds of each set-up stage (:data:`STAGES`) of one BI-TS run, with nothing cached in the
    process (the runner's per-process caches are cleared first; on-disk caches are as the environment says:
    ``EVROUTE_COMPUTE_CACHE``), and digests of what each stage made.

    Only names that every ``evroute`` version measured here has are used (imported when called, so that the
    package active in ``sys.modules`` then is the one measured).
    """
    from evroute.experiments import ExperimentConfig
    from evroute.experiments import runner as R
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.routes import resolve_route

    R._load_linegraph.cache_clear()
    R._environment.cache_clear()
    if collect:  # the previous run's garbage is not this run's cost
        gc.collect()
    cfg = ExperimentConfig(
        network=network, route=route, model="bi", policy="ts", env=environment, potential="elevation", seeds=(seed,)
    )
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    load0 = os.getloadavg()[0]
    out: dict[str, Any] = {}

    def stage(name: str, fn: Any) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        value = fn()
        cpu[name], wall[name] = time.process_time() - c0, time.perf_counter() - w0
        return value

    net = stage("network", lambda: load_network(network))
    lg = stage("line graph", lambda: build_line_graph(net))
    rs = stage("route", lambda: resolve_route(lg, network, route, None, None))
    env = stage(
        "environment",
        lambda: R._environment(lg, cfg.vehicle, cfg.env, json.dumps(cfg.environment, sort_keys=True), seed),
    )
    bandit = stage("bandit", lambda: R.make_bandit(cfg, R.Problem(lg, env, rs), seed))
    rec = stage("round 1", bandit.step)
    out["cpu_s"] = cpu
    out["wall_s"] = wall
    out["cpu_total_s"] = sum(cpu.values())
    out["wall_total_s"] = sum(wall.values())
    out["load_before"], out["load_after"] = load0, os.getloadavg()[0]
    out["edges"] = int(lg.n_nodes)
    marginal = getattr(env, "marginal_var_wh2", None)
    out["digest"] = {
        "network": network_digest(net),
        "line graph": _digest(lg.parent_index, lg.adjacency.indptr, lg.adjacency.indices),
        "route": f"{rs.start}->{rs.goal}",
        "environment": _digest(env.prior_mean_wh, env.true_mean_wh, *(() if marginal is None else (marginal,))),
        "round 1": _digest(
            np.frombuffer(rec.route.encode(), dtype=np.uint8), np.array([rec.observed_wh, rec.optimal_wh])
        ),
    }
    return out


#: Rows of the profile table: label -> parts ``(file suffix, function name, "tottime"|"cumtime")`` whose CPU seconds
#: add up to the row (the two codes name some parts differently; each names only its own).  ``~`` is cProfile's file
#: of built-in functions.
PROFILE_ROWS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "network: generate the synthetic city": (("network/synthetic.py", "synthetic_city", "cumtime"),),
    "network: load it from the compute cache": (("network/netstore.py", "network_from_arrays", "cumtime"),),
    "line graph": (("evroute/linegraph.py", "build_line_graph", "cumtime"),),
    "route resolution": (("evroute/routes.py", "resolve_route", "cumtime"),),
    "environment: draw (all of it)": (("environments/paper.py", "sample_prior_function_and_variance", "cumtime"),),
    "draw: sparse Cholesky factorisation (cholespy)": (("kernels/sparse_cholesky.py", "__init__", "cumtime"),),
    "draw: 512 graph draws' triangular solves (cholespy)": (("kernels/sparse_cholesky.py", "colour", "tottime"),),
    "draw: their normals (51M)": (
        ("kernels/sparse_cholesky.py", "<listcomp>", "tottime"),
        ("kernels/sparse_cholesky.py", "sample_blocks", "tottime"),
    ),
    "draw: random Fourier features (2 x E x 512)": (
        ("kernels/matern.py", "matern_rff", "cumtime"),
        ("kernels/matern.py", "blocks", "cumtime"),
    ),
    "draw: einsum (sums over features)": (
        ("~", "<built-in method numpy._core._multiarray_umath.c_einsum>", "tottime"),
    ),
    "draw: its own lines (matrix-vector product, sums)": (
        ("environments/paper.py", "sample_prior_function_and_variance", "tottime"),
    ),
    "bandit: model, regret reference": (("experiments/runner.py", "make_bandit", "cumtime"),),
    "round 1": (("evroute/bandit.py", "step", "cumtime"),),
}


def profile(network: str, seed: int = 0, top: int = 20) -> dict[str, Any]:
    """:func:`measure` under :mod:`cProfile` in CPU time (``time.process_time``): the CPU seconds of
    :data:`PROFILE_ROWS` and the ``top`` functions by own time (labels relative to the package folders)."""
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)
    gc.collect()
    prof.enable()
    res = measure(network, seed, collect=False)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]

    def label(key: tuple[str, int, str]) -> str:
        file, line, fn = key
        for marker in ("site-packages/", "/evroute/"):
            if marker in file:
                file = ("evroute/" if marker == "/evroute/" else "") + file.rsplit(marker, 1)[1]
                break
        return f"{file}:{line}({fn})" if file != "~" else fn

    rows: dict[str, float] = {}
    for name, alternatives in PROFILE_ROWS.items():
        rows[name] = 0.0
        for suffix, fn, col in alternatives:
            hits = [v for k, v in stats.items() if k[2] == fn and k[0].endswith(suffix)]
            rows[name] += sum(v[2] if col == "tottime" else v[3] for v in hits)
    by_own = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    res["profile"] = rows
    res["profile_top"] = [[label(k), int(v[1]), float(v[2]), float(v[3])] for k, v in by_own]
    return res


def git_root() -> Path:
    """The git work tree this ``evroute`` package lives in."""
    here = Path(__file__).resolve().parents[2]
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True, check=True)
    return Path(top.stdout.strip())


def commit_of(rev: str) -> str:
    """Full hash of the git revision ``rev`` (a branch, tag or hash) of :func:`git_root`."""
    out = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=git_root(), capture_output=True, text=True
    )
    if out.returncode:
        raise ValueError(f"not a commit of {git_root()}: {rev!r} ({out.stderr.strip()})")
    return out.stdout.strip()


def extract_package(commit: str, dest: Path) -> Path:
    """Write the ``evroute`` package of ``commit`` under ``dest`` (``git archive``); returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit, "evroute"], cwd=git_root(), capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def _is_evroute(name: str) -> bool:
    return name == "evroute" or name.startswith("evroute.")


class CodeTree:
    """One ``evroute`` package in this process: its module objects, swapped into ``sys.modules`` by :meth:`active`.

    Args:
        root: the folder holding the ``evroute`` package folder.
        modules: the package's modules already imported (the current package: ``sys.modules``' ``evroute.*``).
    """

    def __init__(self, root: Path, modules: dict[str, ModuleType] | None = None) -> None:
        self.root = Path(root)
        self.modules = dict(modules or {})

    @classmethod
    def current(cls) -> CodeTree:
        """The package this process imported (its modules stay where they are)."""
        root = Path(__file__).resolve().parents[2]  # the folder holding this evroute package
        return cls(root, {k: v for k, v in sys.modules.items() if _is_evroute(k)})

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make this package the ``evroute`` that imports find (its modules, then its folder first on the path)."""
        saved = {k: sys.modules.pop(k) for k in list(sys.modules) if _is_evroute(k)}
        sys.modules.update(self.modules)
        sys.path.insert(0, str(self.root))
        importlib.invalidate_caches()
        try:
            yield
        finally:
            self.modules = {k: sys.modules.pop(k) for k in list(sys.modules) if _is_evroute(k)}
            sys.modules.update(saved)
            sys.path.remove(str(self.root))
            importlib.invalidate_caches()


_CHILD = r"""
import importlib.util, json, resource, sys, time
c0 = time.process_time()
spec = importlib.util.spec_from_file_location("_evroute_bench_setup", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
import evroute.experiments.runner  # the package's own imports (numpy, scipy, ...), as `evroute run` pays them
imports = time.process_time() - c0
res = mod.measure(sys.argv[2], int(sys.argv[3]))
res["imports_cpu_s"] = imports
res["process_cpu_s"] = time.process_time()
res["evroute_file"] = sys.modules["evroute"].__file__
print("RESULT " + json.dumps(res))
"""


def measure_fresh(root: Path, network: str, seed: int, env: dict[str, str]) -> dict[str, Any]:
    """:func:`measure` in a fresh Python process whose ``evroute`` is the one under ``root``; adds the CPU seconds of
    its imports and of the whole process (interpreter start included)."""
    child_env = {**os.environ, **env, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).resolve()), network, str(seed)],
        env=child_env,
        cwd=root,  # ``python -c`` puts the working folder first on the path
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"set-up child failed ({proc.returncode}): {proc.stderr[-2000:]}")
    res: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    if not Path(res["evroute_file"]).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the child imported {res['evroute_file']}, not the evroute under {root}")
    return res


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check(
    network: str,
    baseline: str,
    *,
    repeats: int = 3,
    fresh_repeats: int = 2,
    warm_repeats: int = 2,
    seed: int = 0,
    warmup_network: str = "synthetic:2000:0",
    profiled: bool = True,
    log: Any = None,
) -> dict[str, Any]:
    """The set-up of the ``baseline`` commit's ``evroute`` and of the current one, side by side (see the module doc).

    Three series, each alternating the two implementations (the order swapped every repeat):

    * ``cold``: in this process, ``EVROUTE_COMPUTE_CACHE=off`` (nothing on disk is used; the runner's per-process
      caches are cleared before each run), after one untimed warm-up run of each on ``warmup_network`` (imports);
    * ``warm``: in this process, with a compute cache in a new temporary folder filled by one untimed run of each
      (the environment draw, and where the code caches it, the generated network, are loaded from disk);
    * ``fresh``: ``EVROUTE_COMPUTE_CACHE=off`` in a fresh process each (imports and first-call costs included);

    and (``profiled``) one cold run of each under :func:`profile` (series ``profile``; not in the timings).

    Returns the raw numbers (every run's stages, digests and load averages) as a JSON-able dict.
    """
    if log is None:

        def log(line: str) -> None:
            print(line, flush=True)

    base_commit = commit_of(baseline)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_root(), capture_output=True, text=True, check=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "evroute"], cwd=git_root(), capture_output=True, text=True, check=True
    )
    new = CodeTree.current()
    result: dict[str, Any] = {
        "network": network,
        "seed": seed,
        "baseline": {"rev": baseline, "commit": base_commit},
        "current": {"commit": head.stdout.strip(), "evroute_modified": bool(dirty.stdout.strip())},
        "blas_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
        "nice": os.nice(0),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="evroute-bench-setup-") as tmp:
        old = CodeTree(extract_package(base_commit, Path(tmp) / "baseline"))
        trees = {"baseline": old, "current": new}

        def one(series: str, name: str, rep: int) -> None:
            with trees[name].active():
                res = measure(network, seed)
            res.update(series=series, code=name, repeat=rep)
            result["runs"].append(res)
            log(
                f"{series:5s} {name:8s} rep {rep}: {res['cpu_total_s']:.2f} s CPU, {res['wall_total_s']:.2f} s wall, "
                f"load {res['load_before']:.1f}"
            )

        def order(rep: int) -> tuple[str, str]:
            return ("baseline", "current") if rep % 2 == 0 else ("current", "baseline")

        with _env(EVROUTE_COMPUTE_CACHE="off"):
            for name in trees:
                with trees[name].active():
                    measure(warmup_network, seed)
            for rep in range(repeats):
                for name in order(rep):
                    one("cold", name, rep)
            for name in order(0) if profiled else ():
                with trees[name].active():
                    res = profile(network, seed)
                res.update(series="profile", code=name, repeat=0)
                result["runs"].append(res)
                log(f"profile {name:8s}: {res['cpu_total_s']:.2f} s CPU under cProfile")
        if warm_repeats:
            with _env(EVROUTE_COMPUTE_CACHE=str(Path(tmp) / "compute")):
                for name in trees:  # fills the cache (not timed)
                    with trees[name].active():
                        measure(network, seed)
                for rep in range(warm_repeats):
                    for name in order(rep):
                        one("warm", name, rep)
        for rep in range(fresh_repeats):
            for name in order(rep):
                res = measure_fresh(trees[name].root, network, seed, {"EVROUTE_COMPUTE_CACHE": "off"})
                res.update(series="fresh", code=name, repeat=rep)
                result["runs"].append(res)
                log(
                    f"fresh {name:8s} rep {rep}: {res['cpu_total_s']:.2f} s CPU set-up, {res['process_cpu_s']:.2f} s "
                    f"CPU process, load {res['load_before']:.1f}"
                )
    digests: dict[tuple[str, str], set[str]] = {}
    for r in result["runs"]:
        digests.setdefault((r["series"], r["code"]), set()).add(json.dumps(r["digest"], sort_keys=True))
    result["identical"] = {
        s: len(digests[s, "baseline"] | digests[s, "current"]) == 1
        for s in ("cold", "warm", "fresh", "profile")
        if (s, "baseline") in digests and (s, "current") in digests
    }
    return result
