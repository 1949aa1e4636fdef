"""Set-up time of a BI-TS ``evroute run``: environment sampling and regret reference, paper vs consistent environment.

Usage::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python scripts/bench/bench_env_setup.py --markdown docs/bench_env_setup.md
    python scripts/bench/bench_env_setup.py --network synthetic:10000:0 --repeats 3

For each environment (``paper``: the paper's GP draw, regret reference by Johnson's algorithm, which is what
``evroute run`` did before; ``consistent``: the same GP draw turned into non-negative reduced costs, exact
reference by one Dijkstra; ``consistent, 1 solve thread``: the same with the graph draws' sparse solves on one
thread, as before ``GraphMaternKernel.sample_blocks``: the same numbers) it times, ``--repeats`` times each, the
parts of a run's set-up before its first round: loading the network and line graph (cached after the first load,
as in a run), drawing the environment (``make_environment``, with its CPU share) and the regret reference
(``regret_reference_route``); and the whole set-up as ``evroute run`` does it (``build_problem`` + ``make_bandit``
with fresh caches; the compute cache is off unless ``EVROUTE_COMPUTE_CACHE`` is set).  Medians are reported;
the variants are measured alternately in the same process.  Johnson's
reference is timed ``--johnson-repeats`` times (it is slow and not the default any more).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import time
from pathlib import Path

from evroute.bandit import regret_reference_route
from evroute.environments import make_environment
from evroute.experiments import ExperimentConfig
from evroute.experiments import runner as R
from evroute.experiments.bench import machine_line
from evroute.io import atomic_write_text
from evroute.kernels.graph_matern import GraphMaternKernel
from evroute.routes import resolve_route


@contextlib.contextmanager
def _solve_threads(threads: int | None):  # noqa: ANN202
    """Run the environment's graph draws with ``threads`` solve threads (``None``: the default)."""
    orig = GraphMaternKernel.sample_blocks
    if threads is not None:
        GraphMaternKernel.sample_blocks = functools.partialmethod(orig, threads=threads)  # type: ignore[method-assign]
    try:
        yield
    finally:
        GraphMaternKernel.sample_blocks = orig  # type: ignore[method-assign]


def _t(fn):  # noqa: ANN001, ANN202
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def cpu_profile(network: str, top: int = 10) -> str:
    """CPU-time profile (``time.process_time``: what an idle core would take) of one whole BI-TS set-up
    (``build_problem`` + ``make_bandit``, fresh caches, the environment's solves on one thread)."""
    import cProfile
    import io
    import pstats

    cfg = ExperimentConfig(
        network=network, route="A", model="bi", policy="ts", env="consistent", potential="elevation", seeds=(0,)
    )
    with _solve_threads(1):
        prof = cProfile.Profile(time.process_time)
        c0, w0 = time.process_time(), time.perf_counter()
        prof.enable()
        R.make_bandit(cfg, R.build_problem(cfg, 0), 0)
        prof.disable()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return (
        f"{machine_line()}\n`scripts/bench/bench_env_setup.py --network {network} --profile`\n\nwhole set-up: "
        f"{cpu:.1f} s CPU, {wall:.1f} s wall\n\n" + "\n".join(out.getvalue().splitlines()[4:])
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="synthetic:100000:0")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--johnson-repeats", type=int, default=1)
    ap.add_argument("--markdown", default=None)
    # every repeat computes: the compute cache (evroute.network.computecache) would turn repeats into loads
    os.environ.setdefault("EVROUTE_COMPUTE_CACHE", "off")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="only profile one whole consistent BI-TS set-up in CPU time (one solve thread)",
    )
    args = ap.parse_args()
    if args.profile:
        print(cpu_profile(args.network))
        return

    t_load, lg = _t(lambda: R.load_linegraph(args.network))
    route = resolve_route(lg, args.network, "A", None, None)
    names = ("consistent", "consistent, 1 solve thread", "paper")
    times: dict[str, dict[str, list[float]]] = {e: {"env": [], "ref": [], "setup": [], "share": []} for e in names}
    loads = [os.getloadavg()[0]]
    for rep in range(args.repeats):
        for name in names:  # alternately, in the same process: the same load for all
            env_name = name.split(",")[0]
            threads = 1 if "1 solve thread" in name else None
            with _solve_threads(threads):
                c0 = time.process_time()
                dt, env = _t(lambda env_name=env_name, rep=rep: make_environment(lg, env_name, seed=rep))
                times[name]["env"].append(dt)
                times[name]["share"].append((time.process_time() - c0) / dt)
                if env_name == "consistent" or rep < args.johnson_repeats:
                    dt, _ = _t(lambda env=env: regret_reference_route(env, route.start, route.goal, "auto"))
                    times[name]["ref"].append(dt)
                    R._environment.cache_clear()
                    cfg = ExperimentConfig(
                        network=args.network,
                        route="A",
                        model="bi",
                        policy="ts",
                        env=env_name,
                        potential="elevation",
                        seeds=(rep,),
                    )
                    dt, _ = _t(lambda cfg=cfg, rep=rep: R.make_bandit(cfg, R.build_problem(cfg, rep), rep))
                    times[name]["setup"].append(dt)
            loads.append(os.getloadavg()[0])
            print(name, rep, {k: round(v[-1], 2) for k, v in times[name].items() if v}, flush=True)

    def med(v: list[float]) -> str:
        return f"{statistics.median(v):.1f} (n = {len(v)})" if v else "--"

    lines = [
        f"# Set-up time of a BI-TS run on {args.network} ({lg.n_nodes} edges)",
        "",
        f"Command: `OMP_NUM_THREADS=1 python scripts/bench/bench_env_setup.py --network {args.network} "
        f"--repeats {args.repeats} --johnson-repeats {args.johnson_repeats}`",
        "",
        f"Machine: {machine_line()}.",
        "",
        f"Network + line graph load (first load, cached afterwards in a run): {t_load:.1f} s.",
        "",
        f"Load average (1 min) over the measurements: {min(loads):.1f}-{max(loads):.1f}.",
        "",
        "| environment | draw the environment (s) | CPU share of the draw | regret reference (s) | whole set-up: "
        "build_problem + make_bandit (s) |",
        "|---|---|---|---|---|",
    ]
    ref_name = {"paper": "Johnson (no negative cycle on the synthetic city)", "consistent": "one Dijkstra"}
    for name in names:
        t = times[name]
        lines.append(
            f"| {name} | {med(t['env'])} | {statistics.median(t['share']):.2f} | {med(t['ref'])}: "
            f"{ref_name[name.split(',')[0]]} | {med(t['setup'])} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        atomic_write_text(Path(args.markdown), text)


if __name__ == "__main__":
    main()
