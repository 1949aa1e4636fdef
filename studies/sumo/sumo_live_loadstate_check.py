"""Why a live round restarts SUMO: reloading saved states into one running simulation is not reproducible.

Drives the same EV trip (Monaco route A's regret-reference route, speed factor 1) from the saved states of
``sumo-live`` (rounds_per_day 500) three ways and prints, per trip, the EV's energy, the collisions in the
simulation and whether it arrived:

* ``restart``: a fresh SUMO per trip (``--load-state`` at start; what evroute does);
* ``loadState``: one SUMO, ``simulation.loadState`` before every trip;
* ``clear+loadState``: one SUMO, every vehicle removed and one step run before every ``loadState``.

The same state is visited twice (slots 150, 170, 150): a correct reload gives the same energy both times::

    python -m studies.sumo.sumo_live_loadstate_check
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no options; --help
    from evroute.bandit import regret_reference_route
    from evroute.environments import make_environment
    from evroute.experiments.runner import load_linegraph
    from evroute.routes import resolve_route
    from evroute.sumo.live import EV_ID, EV_ROUTE_ID

    lg = load_linegraph("monaco")
    r = resolve_route(lg, "monaco", "A")
    env = make_environment(lg, "sumo-live", {})
    ids = lg.network.edge_ids
    route = regret_reference_route(env, r.start, r.goal)
    pred, succ = env.sim.end_edges(str(ids[route.edges[0]]), str(ids[route.edges[-1]]))
    driven = [pred, *ids[route.edges].tolist(), succ]
    sim, ls = env.sim, env.sim.libsumo
    slots = [150, 170, 150]

    def trip(k: int) -> tuple[float, int, bool]:
        ls.route.add(f"{EV_ROUTE_ID}{k}", driven)
        vid = f"{EV_ID}{k}"
        ls.vehicle.add(
            vid,
            f"{EV_ROUTE_ID}{k}",
            typeID="DEFAULT_VEHTYPE",
            depart="now",
            departPos="base",
            departSpeed="max",
            arrivalPos="max",
        )
        ls.vehicle.setSpeedFactor(vid, 1.0)
        energy, collisions = 0.0, 0
        for _ in range(1500):
            ls.simulationStep()
            collisions += len(ls.simulation.getCollidingVehiclesIDList())
            if vid in ls.simulation.getArrivedIDList():
                return energy, collisions, True
            energy += ls.vehicle.getElectricityConsumption(vid) * sim.step_length
        return energy, collisions, False

    print("| method | slot | EV energy (Wh) | collisions | arrived |")
    print("|---|---|---|---|---|")
    for k in slots:
        t = sim.drive(driven, k, speed_factor=1.0)
        print(f"| restart (evroute) | {k} | {t.battery_wh:.2f} (battery) | - | {t.ok} |")
    for method in ("loadState", "clear+loadState"):
        ls.start(
            [*sim._args, "--load-state", str(sim.snapshots[slots[0]]), "-b", f"{sim.snapshot_times_s[slots[0]]:g}"]
        )
        try:
            for i, k in enumerate(slots):
                if method == "clear+loadState":
                    for v in ls.vehicle.getIDList():
                        ls.vehicle.remove(v)
                    ls.simulationStep()
                if i > 0 or method == "clear+loadState":
                    ls.simulation.loadState(str(sim.snapshots[k]))
                e, c, ok = trip(i)
                print(f"| {method} | {k} | {e:.2f} (electricity) | {c} | {ok} |")
        finally:
            ls.close()
    print(
        f"\nslot times (s): {', '.join(f'{sim.snapshot_times_s[k]:g}' for k in slots)}; state files "
        f"{', '.join(sim.snapshots[k].name for k in slots)}; {np.unique(slots).size} distinct states"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
