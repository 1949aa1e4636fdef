"""The charging plan: least cost subject to a probability of arriving, by label setting over (site, charge).

Problem.  A plan drives legs ``0 = v_0 -> v_1 -> ... -> v_m = dest`` (:mod:`evroute.charging.legs`), stopping at
the chargers ``v_1..v_{m-1}`` (``m - 1 <= max_stops``, each charger at most once).  At stop ``k`` it charges to a
target ``t_k`` (a grid level, ``reserve <= t_k <= max_soc``): the battery leaves with ``max(A_k, t_k)`` where
``A_k`` is the arrival charge; the plan counts on ``t_k`` (leaving with more only helps).  With the departure
charge ``d`` of a leg (``c0`` at the origin, ``t_k`` after stop ``k``) and its energy ``E ~ N(mu, s^2)`` the arrival
charge is ``A = d - E / C``; the leg's risk is ``eps = P(A < r) = Phi((mu - (d - r) C) / s)``.

    minimise    sum_legs (time + w reduced energy) + sum_stops (stop_s + E[T_stop(A_k -> t_k)])
    subject to  sum_legs eps <= delta,    stops <= max_stops

``stop_s`` is the time a stop takes besides charging (default 3 min: parking, plugging in, paying; it keeps plans
from stopping where they need not).  ``T_stop`` is the charging time of :mod:`evroute.charging.curves` (0 if
``A_k >= t_k``) and its expectation over the Gaussian ``A_k`` is taken by Gauss-Hermite quadrature
(:data:`GH_NODES` nodes).  ``w`` (s per kWh) weighs the energy; the reduced energy (mean minus the elevation
potential, ``>= 0``) differs from the mean energy by a constant over all plans with the same ends, so the blend is
a blend with the energy itself.

Why this bounds the probability of arriving.  ``P(some arrival < r) <= sum_legs P(A_k < r) = sum eps <= delta``
(the union bound: it holds whatever the correlation of the legs, which the trip-level effect and the GP make
positive).  The answer reports the exact joint probability of the found plan as well (a multivariate normal
integral, :func:`evroute.charging.answers.joint_probability`).  The mean + buffer planner the anchors use is the
same search with ``buffer``: each leg needs ``d - mu / C >= r + buffer`` and the risk is not bounded.

Search.  A label is (site, departure charge ``d``, cost, risk, stops); labels are settled in increasing
``cost + h(site)`` (A*), ``h`` the least remaining leg cost to the destination with no charging and no energy limit
(admissible and consistent: leg and charging costs are ``>= 0``).  Label ``a`` dominates ``b`` at the same site if
``d_a >= d_b``, ``cost_a <= cost_b``, ``risk_a <= risk_b``, ``stops_a <= stops_b``: every completion of ``b`` is
open to ``a`` at no more cost and risk (a higher departure charge lowers each later risk and the expected
charging time of every target).  The first destination label settled is optimal: the plan is exact for the
problem with targets on the grid.

The bound of the grid.  Let ``P*`` be the optimum with targets anywhere in ``[r, max_soc]``.  Raising each of its
targets to the grid level above keeps it feasible (more charge: less risk) and changes only charging: each stop's
expected charging time grows by at most ``T(t, t + step)``.  So the grid plan costs at most ``cost(P*) +
max_stops * max_{site, t} T_site(t, t + step)`` (:meth:`PlanProblem.grid_bound_s`: about ``step C / P_min``).
Also exact only over the candidate legs (the fastest and the least-energy route of each pair of sites).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.csgraph import dijkstra
from scipy.stats import norm

from evroute.charging.curves import ChargeTimer, ChargingCurve
from evroute.charging.legs import LegTable
from evroute.errors import ParameterError

#: Gauss-Hermite nodes of the expected charging time over the Gaussian arrival charge
GH_NODES = 24


@dataclass(frozen=True)
class PlanSettings:
    """Battery, risk and search settings (charges as fractions of ``capacity_wh``).

    Attributes:
        buffer: None for the chance-constrained plan; a fraction for the mean + buffer planner.
        energy_weight: seconds one kWh of (reduced) energy is worth in the blend (0: least time).
        step: grid of charging targets; max_labels: settled labels before giving up (the answer is then
            not certified); stop_s: time of a stop besides charging (parking, plugging in, paying; s).
    """

    capacity_wh: float
    charge: float
    reserve: float
    max_soc: float = 1.0
    delta: float = 0.05
    max_stops: int = 3
    step: float = 0.01
    energy_weight: float = 0.0
    buffer: float | None = None
    max_labels: int = 200_000
    stop_s: float = 180.0

    def __post_init__(self) -> None:
        if self.buffer is None and not 0 < self.delta < 0.5:
            raise ParameterError(f"delta must be in (0, 0.5), got {self.delta}")
        if not 0 < self.step <= 0.5:
            raise ParameterError(f"the charge step must be in (0, 0.5], got {self.step}")
        if self.max_stops < 0:
            raise ParameterError(f"the maximum number of stops must be >= 0, got {self.max_stops}")
        if not 0 <= self.stop_s < 86400:
            raise ParameterError(f"the stop time must be in [0, 86400) s, got {self.stop_s}")
        if self.energy_weight < 0:
            raise ParameterError(f"the energy weight must be >= 0 s/kWh, got {self.energy_weight}")
        if not 0 <= self.reserve <= self.charge <= self.max_soc <= 1:
            raise ParameterError(
                f"need 0 <= reserve <= charge <= max_soc <= 1, got {self.reserve}, {self.charge}, {self.max_soc}"
            )


@dataclass
class Plan:
    """A plan (module doc): legs and the target charge at each stop.

    Attributes:
        legs: leg indices of :class:`LegTable`, in order; targets: ``(m - 1,)`` target charge at each stop.
        depart: ``(m,)`` departure charge of each leg; arrive_mean, arrive_sd: ``(m,)`` arrival charge (fractions);
        eps: ``(m,)`` each leg's risk; charge_s: ``(m - 1,)`` expected charging time per stop;
        cost: the objective (s); feasible: a plan satisfies the constraints; certified: the search finished.
        labels: labels settled; farthest: for no feasible plan, the partial plan (legs, targets) to the reachable
        charger nearest the destination (by remaining time), else None.
    """

    legs: list[int]
    targets: list[float]
    depart: np.ndarray
    arrive_mean: np.ndarray
    arrive_sd: np.ndarray
    eps: np.ndarray
    charge_s: np.ndarray
    cost: float
    feasible: bool
    certified: bool
    labels: int = 0
    farthest: Plan | None = field(default=None, repr=False)

    @property
    def risk(self) -> float:
        return float(self.eps.sum())

    @property
    def stops(self) -> int:
        return len(self.targets)


class PlanProblem:
    """What the search and the brute force share: targets grid, charging times, leg risks, leg costs."""

    def __init__(self, table: LegTable, curve: ChargingCurve, settings: PlanSettings) -> None:
        self.t, self.s = table, settings
        s = settings
        lo = np.ceil(s.reserve / s.step - 1e-9) * s.step
        self.grid = np.unique(np.concatenate([np.arange(lo, s.max_soc - 1e-9, s.step), [s.max_soc]]))
        self.grid = self.grid[self.grid >= s.reserve - 1e-12]
        sites = table.sites
        timers: dict[float, ChargeTimer] = {}
        self.timer: dict[int, ChargeTimer] = {}
        for j in range(1, sites.n - 1):
            p = float(sites.power_kw[j])
            self.timer[j] = timers.setdefault(p, timers.get(p) or ChargeTimer(curve, s.capacity_wh, p))
        self.tgrid = {j: tm.time_to(self.grid) for j, tm in self.timer.items()}
        x, w = np.polynomial.hermite_e.hermegauss(GH_NODES)
        self.gh_x, self.gh_w = x, w / w.sum()
        self.mu = table.mean_wh / s.capacity_wh
        self.sd = np.sqrt(table.var_wh2) / s.capacity_wh
        to_charger = (table.dst > 0) & (table.dst < sites.dest)
        self.leg_cost = table.time_s + s.energy_weight * table.reduced_wh / 1000.0 + s.stop_s * to_charger
        order = np.argsort(table.src, kind="stable")
        self.by_src = {int(i): order[table.src[order] == i] for i in np.unique(table.src)}
        m = np.full((sites.n, sites.n), np.inf)
        np.minimum.at(m, (table.src, table.dst), self.leg_cost)
        graph = np.where(np.isfinite(m), np.maximum(m, 1e-12), 0.0)  # dense csgraph: 0 = no arc
        self.h = dijkstra(graph.T, directed=True, indices=sites.dest)

    def leg_risk(self, depart: float, legs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(arrival mean, risk eps)`` of ``legs`` left with charge ``depart`` (module doc)."""
        a = depart - self.mu[legs]
        sd = self.sd[legs]
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.where(
                sd > 0, norm.cdf((self.s.reserve - a) / np.where(sd > 0, sd, 1.0)), (a < self.s.reserve) * 1.0
            )
        return a, eps

    def allowed(self, risk: float, a: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Which legs keep the constraint: total risk ``<= delta``, or the mean + buffer rule."""
        if self.s.buffer is None:
            return risk + eps <= self.s.delta * (1 + 1e-12)
        return a >= self.s.reserve + self.s.buffer - 1e-12

    def charge_time(self, site: int, a: float, sd: float) -> np.ndarray:
        """``(G,)`` expected charging time (s) to each grid target at ``site`` with arrival ``N(a, sd^2)``."""
        ta = self.timer[site].time_to(a + sd * self.gh_x)
        return (self.gh_w[:, None] * np.maximum(self.tgrid[site][None, :] - ta[:, None], 0.0)).sum(axis=0)

    def grid_bound_s(self) -> float:
        """``max_stops * max_{site, t} T_site(t, t + step)``: the most the grid adds to the optimum (module doc)."""
        if not self.timer:
            return 0.0
        g = np.linspace(self.s.reserve, self.s.max_soc, 200)
        worst = max(float(np.max(tm.time(g, np.minimum(g + self.s.step, 1.0)))) for tm in self.timer.values())
        return self.s.max_stops * worst

    def make_plan(self, legs: list[int], targets: list[float], *, certified: bool, labels: int = 0) -> Plan:
        """The :class:`Plan` of ``legs`` with ``targets``: arrivals, risks, expected charging and its cost."""
        s = self.s
        depart = np.asarray([s.charge, *targets], dtype=np.float64)
        k = np.asarray(legs, dtype=np.int64)
        a = depart - self.mu[k]
        eps = np.array([self.leg_risk(float(d), np.asarray([i]))[1][0] for d, i in zip(depart, k, strict=True)])
        ch = np.array(
            [
                self.charge_time(int(self.t.dst[i]), float(a[n]), float(self.sd[i]))[
                    int(np.argmin(np.abs(self.grid - targets[n])))
                ]
                for n, i in enumerate(k[:-1])
            ]
        )
        ok = bool(np.all(self.allowed(0.0, a, eps)) and (s.buffer is not None or eps.sum() <= s.delta * (1 + 1e-12)))
        ok = ok and len(targets) <= s.max_stops and int(self.t.dst[k[-1]]) == self.t.sites.dest
        cost = float(self.leg_cost[k].sum() + ch.sum())
        return Plan(list(map(int, k)), list(targets), depart, a, self.sd[k], eps, ch, cost, ok, certified, labels)


def plan_search(problem: PlanProblem) -> Plan:
    """The optimal plan on the grid (module doc), or, when none is feasible, an infeasible :class:`Plan` of the
    direct leg with :attr:`Plan.farthest` set.

    The targets of one stop are generated lazily: the label of target ``g + 1`` enters the queue when the label of
    target ``g`` leaves it (its cost is higher: charging longer), so only the targets cheaper than the optimum are
    ever made."""
    t, s = problem.t, problem.s
    dest = t.sites.dest
    lab = _Labels()
    lab.add(0, s.charge, 0.0, 0.0, 0, -1, -1, None, 0, 0.0)
    heap = [(float(problem.h[0]), 0)]
    closed: dict[int, list[tuple[float, float, float, int]]] = {}
    best = np.inf
    settled = 0
    certified = True
    while heap:
        _, i = heapq.heappop(heap)
        site = lab.site[i]
        if site == dest:
            legs, targets = _chain(i, lab)
            return problem.make_plan(legs, targets[:-1], certified=True, labels=settled)
        times = lab.times[i]
        if times is not None and lab.g[i] + 1 < len(problem.grid):  # the next target of the same stop
            g = lab.g[i] + 1
            cost = lab.base[i] + float(times[g])
            if cost + problem.h[site] < best:
                j = lab.add(
                    site,
                    problem.grid[g],
                    cost,
                    lab.risk[i],
                    lab.stops[i],
                    lab.parent[i],
                    lab.leg[i],
                    times,
                    g,
                    lab.base[i],
                )
                heapq.heappush(heap, (cost + problem.h[site], j))
        d, c, r, k = lab.depart[i], lab.cost[i], lab.risk[i], lab.stops[i]
        if _dominated(closed.get(site, []), d, c, r, k):
            continue
        closed.setdefault(site, []).append((d, c, r, k))
        settled += 1
        if settled > s.max_labels:
            certified = False
            break
        legs = problem.by_src.get(site, np.zeros(0, np.int64))
        a, eps = problem.leg_risk(d, legs)
        ok = problem.allowed(r, a, eps)
        used = eps if s.buffer is None else np.zeros_like(eps)
        for n in np.flatnonzero(ok):
            leg, dst = int(legs[n]), int(t.dst[legs[n]])
            c1 = c + float(problem.leg_cost[leg])
            r1 = r + float(used[n])
            if dst == dest:
                if c1 < best:
                    best = c1
                    heapq.heappush(heap, (c1, lab.add(dest, float(a[n]), c1, r1, k, i, leg, None, 0, c1)))
            elif k < s.max_stops and c1 + problem.h[dst] < best:
                ct = problem.charge_time(dst, float(a[n]), float(problem.sd[leg]))
                j = lab.add(dst, problem.grid[0], c1 + float(ct[0]), r1, k + 1, i, leg, ct, 0, c1)
                heapq.heappush(heap, (lab.cost[j] + problem.h[dst], j))
    return _infeasible(problem, closed, lab, settled, certified)


class _Labels:
    """Labels as parallel lists: site, departure charge, cost, risk, stops, parent, leg; for a stop's label also the
    expected charging times of every target (``times``), its target index ``g`` and its cost before charging."""

    def __init__(self) -> None:
        self.site: list[int] = []
        self.depart: list[float] = []
        self.cost: list[float] = []
        self.risk: list[float] = []
        self.stops: list[int] = []
        self.parent: list[int] = []
        self.leg: list[int] = []
        self.times: list[np.ndarray | None] = []
        self.g: list[int] = []
        self.base: list[float] = []

    def add(
        self,
        site: int,
        depart: float,
        cost: float,
        risk: float,
        stops: int,
        parent: int,
        leg: int,
        times: np.ndarray | None,
        g: int,
        base: float,
    ) -> int:
        self.site.append(int(site))
        self.depart.append(float(depart))
        self.cost.append(float(cost))
        self.risk.append(float(risk))
        self.stops.append(int(stops))
        self.parent.append(int(parent))
        self.leg.append(int(leg))
        self.times.append(times)
        self.g.append(int(g))
        self.base.append(float(base))
        return len(self.site) - 1


def _dominated(closed: list[tuple[float, float, float, int]], d: float, cost: float, risk: float, stops: int) -> bool:
    """Whether a settled label ``(d, cost, risk, stops)`` of the site dominates the new one (module doc)."""
    for cd, cc, cr, cs in closed:
        if cd >= d - 1e-12 and cc <= cost + 1e-9 and cr <= risk + 1e-15 and cs <= stops:
            return True
    return False


def _chain(i: int, lab: _Labels) -> tuple[list[int], list[float]]:
    legs, targets = [], []
    while lab.parent[i] >= 0:
        legs.append(lab.leg[i])
        targets.append(lab.depart[i])
        i = lab.parent[i]
    return legs[::-1], targets[::-1]


def _infeasible(problem: PlanProblem, closed: dict, lab: _Labels, settled: int, certified: bool) -> Plan:
    """No feasible plan: the direct leg of least cost as the answer, and the partial plan to the settled charger
    with the least remaining cost to the destination (:attr:`Plan.farthest`)."""
    t = problem.t
    direct = [int(i) for i in problem.by_src.get(0, []) if int(t.dst[i]) == t.sites.dest]
    plan = problem.make_plan([min(direct, key=lambda i: problem.leg_cost[i])], [], certified=certified, labels=settled)
    plan.feasible = False
    settled_sites = {int(x) for x in closed} - {0}
    cand = [i for i in range(1, len(lab.site)) if lab.site[i] in settled_sites and lab.parent[i] >= 0]
    if cand:
        best = min(cand, key=lambda i: (problem.h[lab.site[i]], lab.cost[i]))
        legs, targets = _chain(best, lab)
        sub = problem.make_plan(legs, targets[:-1], certified=certified)
        sub.feasible = False
        plan.farthest = sub
    return plan


def brute_force(problem: PlanProblem) -> Plan | None:
    """Every plan: each ordered choice of at most ``max_stops`` distinct chargers, each candidate leg between
    them and each grid target (exponential: for tests on small instances).  The least-cost feasible one, or None."""
    import itertools

    t, s = problem.t, problem.s
    chargers = list(range(1, t.sites.n - 1))
    pair: dict[tuple[int, int], list[int]] = {}
    for i in range(len(t)):
        pair.setdefault((int(t.src[i]), int(t.dst[i])), []).append(i)
    best: Plan | None = None
    for m in range(0, s.max_stops + 1):
        for seq in itertools.permutations(chargers, m):
            path = [0, *seq, t.sites.dest]
            options = [pair.get((u, v), []) for u, v in zip(path[:-1], path[1:], strict=True)]
            for legs in itertools.product(*options):
                for targets in itertools.product(problem.grid, repeat=m):
                    p = problem.make_plan(list(legs), [float(x) for x in targets], certified=True)
                    if p.feasible and (best is None or p.cost < best.cost - 1e-9):
                        best = p
    return best


__all__ = ["GH_NODES", "Plan", "PlanProblem", "PlanSettings", "brute_force", "plan_search"]
