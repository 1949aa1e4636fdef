"""Print how far the two OSM loaders disagree on fastest-route time and energy (``docs/speeds.md``).

    python -m studies.energy_validation.loader_agreement --networks monaco,luxembourg --trips 20

Per network: the default prior's edge time over the free-flow time on the default loader; the share of road length
posted above 90 km/h on the default loader; trips; median and worst |osmnx / netconvert - 1| of time, of energy and
of the route's mean free-flow speed (:mod:`studies.energy_validation.agreement`).
"""

from __future__ import annotations

import argparse
import sys
import warnings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default="monaco,luxembourg")
    p.add_argument("--trips", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.trips < 1:
        print("evroute: error: --trips must be >= 1", file=sys.stderr)
        return 2
    import numpy as np

    from evroute.energy import VehicleProfile, edge_prior
    from evroute.network import load_network
    from studies.energy_validation.agreement import loader_agreement, summary

    warnings.simplefilter("ignore", UserWarning)
    for name in a.networks.split(","):
        net = load_network(name)
        fast = net.length_m[net.speed_limit_mps * 3.6 > 90.05].sum() / net.length_m.sum()
        prior = edge_prior(net, VehicleProfile.load())
        slow = prior.time_s / (net.length_m / net.speed_mps)
        q10, q50, q90 = np.quantile(slow, [0.1, 0.5, 0.9])
        total = prior.time_s.sum() / (net.length_m / net.speed_mps).sum()
        print(
            f"{name}: default loader, default prior's edge time / free-flow time: median {q50:.2f} "
            f"(10-90 % {q10:.2f}-{q90:.2f}), network total {total:.2f}"
        )
        s = summary(loader_agreement(name, a.trips, seed=a.seed))
        print(
            f"{name}: road length posted above 90 km/h {fast:.1%}; {int(s['trips'])} trips; "
            f"time |diff| median {s['time_s_median_abs']:.1%} worst {s['time_s_worst_abs']:.1%}; "
            f"energy |diff| median {s['energy_wh_median_abs']:.1%} worst {s['energy_wh_worst_abs']:.1%}; "
            f"route free-flow speed |diff| median {s['speed_median_abs']:.1%} worst {s['speed_worst_abs']:.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
