"""Speed of the SUMO ground truth: one simulated day of traffic, and a replay round against a simulated-GP round.

1. Day: background demand of the daily profile (``--peak`` vehicles/hour in the busiest hour) on ``--network``,
   every vehicle an EV with a battery device, simulated by ``sumo`` and cut into edge traversals
   (:func:`evroute.sumo.record.record_traversals`; demand generation timed separately).  Target: <= 5 min.
2. Round overhead: BI-TS rounds on route A in the ``sumo-replay`` environment and in the ``consistent`` (simulated
   GP) environment, side by side in the same process; medians of the per-round environment cost (``observe`` +
   the regret's expected energy) and of the whole round.  Target: replay overhead < 1 ms.

    nice -n 10 .venv/bin/python -m studies.bench.bench_sumo --network monaco
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evroute.bandit import RoutingBandit
from evroute.energy import VehicleProfile, elevation_potential_wh
from evroute.environments import make_environment
from evroute.experiments.registry import make_model
from evroute.experiments.runner import load_linegraph
from evroute.policies import make_policy
from evroute.routes import resolve_route
from evroute.sumo.record import record_traversals
from evroute.sumo.replay import sumo_net_file
from evroute.sumo.scenario import background_demand
from studies.common.bench import machine_line


def bench_day(network: str, peak: float, hours: tuple[int, int]) -> None:
    lg = load_linegraph(network)
    net_file = sumo_net_file(lg)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        demand = background_demand(net_file, peak_per_hour=peak, hours=hours, seed=0, cache_dir=Path(tmp))
        t1 = time.perf_counter()
        cpu0 = time.process_time()
        child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        tr = record_traversals(net_file, [demand], begin=hours[0] * 3600.0)
        t2 = time.perf_counter()
        child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        sumo_cpu = (child1.ru_utime + child1.ru_stime) - (child0.ru_utime + child0.ru_stime)
        n_veh = demand.read_text().count("<vehicle ")
    print(
        f"day {hours[0]}-{hours[1]} h on {network}: {n_veh} vehicles, {len(tr)} traversals; demand "
        f"(randomTrips + duarouter) {t1 - t0:.1f} s, simulation + recording {t2 - t1:.1f} s wall "
        f"(CPU: sumo {sumo_cpu:.1f} s, this process {time.process_time() - cpu0:.1f} s); total {t2 - t0:.1f} s"
    )


def bench_rounds(network: str, rounds: int, env_params: dict[str, object]) -> None:
    lg = load_linegraph(network)
    route = resolve_route(lg, network, "A")
    vehicle = VehicleProfile()
    pot = elevation_potential_wh(lg.network, vehicle)
    envs = {
        "consistent": make_environment(lg, "consistent", {}, seed=0),
        "sumo-replay": make_environment(lg, "sumo-replay", env_params, vehicle=vehicle),
    }
    bandits = {
        name: RoutingBandit(
            env, make_model("bi", env), make_policy("ts"), route.start, route.goal, seed=0, potential_wh=pot
        )
        for name, env in envs.items()
    }
    env_ms: dict[str, list[float]] = {n: [] for n in envs}
    round_ms: dict[str, list[float]] = {n: [] for n in envs}
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for name, b in bandits.items():  # interleaved: same machine state for both
            t0 = time.perf_counter()
            rec = b.step()
            round_ms[name].append(1e3 * (time.perf_counter() - t0))
            edges = np.array([lg.network.index_of(e) for e in rec.route.split()])
            t1 = time.perf_counter()
            envs[name].observe(edges, rng)
            envs[name].expected_energy(edges)
            env_ms[name].append(1e3 * (time.perf_counter() - t1))
    for name in envs:
        print(
            f"{name:12s} BI-TS on {network} A: round median {statistics.median(round_ms[name]):.3f} ms, "
            f"environment (observe + expected energy) median {statistics.median(env_ms[name]) * 1e3:.1f} us "
            f"over {rounds} rounds"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="monaco")
    ap.add_argument("--peak", type=float, default=1800.0)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--skip-day", action="store_true")
    args = ap.parse_args()
    print(machine_line())
    if not args.skip_day:
        bench_day(args.network, args.peak, (0, 24))
    bench_rounds(args.network, args.rounds, {"peak_per_hour": args.peak})
    print(machine_line())


if __name__ == "__main__":
    main()
