"""The page's "What bounds each missed target" (:mod:`studies.bench.scale_report`, :mod:`studies.bench.scale_country`):
for every target missed at 1M edges, the measured quantities that bound it, each sentence computed from the JSON."""

from __future__ import annotations

from typing import Any

from studies.bench.scale_junction import SERVED, served_sentence
from studies.bench.scale_measure import SETUP_STAGES
from studies.bench.scale_values import TARGETS, by_size, fmt_q, fmt_s, run_ok, slope, value


def _lazy_sentence(lazy: dict[str, Any] | None, round_s: float, place: str = "city") -> str:
    """What the lazy bidirectional search (``evroute.search``) did on route A, when measured, against the round."""
    if not lazy:
        return ""
    cpu, draws, share = float(lazy["cpu_s"]), int(lazy["draws"]), float(lazy["settled_share"])
    verdict = (
        "more than the round with every edge drawn; BI-TS rounds do not use it here (by default the bandit builds "
        "it only where its geometric estimate of the share settled is at most "
        "`evroute.bandit.LAZY_TS_EXPECTED_SHARE`, and leaves it after a round that settles more than "
        "`LAZY_TS_MAX_SHARE`), so the row is the full draw"
        if cpu > round_s
        else "less than the round with every edge drawn"
    )
    return (
        f"  The lazy bidirectional search with compiled weights (`evroute.search`) settles {share:.1%} of the nodes on "
        f"route A (balls of half the route's cost around both ends cover most of the {place}) and draws {draws:,} "
        f"weights in {fmt_s(cpu)} ({cpu * 1e9 / max(draws, 1):,.0f} ns per drawn edge), {verdict}."
    )


def _round_engine(parts: dict[str, float] | None) -> str:
    """How a round that draws every edge runs at 1M edges, with its parts' CPU when measured."""
    if not parts:  # measured before the compiled full draw (issue 39, ts39)
        return (
            "searches with the compiled engine (`evroute.search.node_weighted_route`, from "
            "`evroute.bandit.LAZY_TS_MIN_ARMS` arms; posterior, draw and rectified weights in NumPy/SciPy)"
        )
    where = ""
    if parts.get("graph") == "junction":
        where = (
            f" on the hybrid junction graph (`evroute.search.junction`: {int(parts['search_nodes']):,} nodes and "
            f"{int(parts['search_arcs']):,} arcs; {int(parts['fallbacks'])} of the measured searches fell back to "
            "the line graph)"
        )
    return (
        "runs in compiled passes (`evroute.search.full_draw`, from `evroute.bandit.LAZY_TS_MIN_ARMS` arms): the "
        f"policy's {fmt_s(parts['normals'])} of normals, {fmt_s(parts['weights'])} for the posterior, draw and "
        f"rectified weights, {fmt_s(parts['search'])} for the bucket search on them{where} (medians of separate "
        "calls)"
    )


def _goal_sentence(g: dict[str, Any] | None) -> str:
    """What an exact goal-directed (A*) round could save on route A (``goal_directed_probe``), when measured."""
    if not g:
        return ""
    lo, med, hi = g["sigma_over_mean"]
    by_k = {float(row["k"]): row for row in g["ks"]}
    k4, k3 = by_k[4.0], by_k[3.0]
    return (
        "  Nor can an exact goal-directed search (A* on the distance to the goal under the lower bounds "
        "g(mu − k sigma) of the draws, the exceptions below them drawn first): at this posterior sigma is "
        f"{med:.0%} of |mu − p| at the median ({lo:.0%}-{hi:.0%} from the 10th to the 90th percentile; the prior's "
        f"sigma0 is 0.16 of the rms physics energy), so the bound from the start is {k4['bound_share']:.1%} of the "
        f"route's cost for k = 4 ({k4['exceptions']:,.0f} exceptions expected per round) and "
        f"{k3['bound_share']:.1%} for k = 3 ({k3['exceptions']:,.0f}), and even with no exception A* would settle "
        f"{k4['settled_share']:.1%} of the nodes (k = 4; `studies.bench.scale_measure.goal_directed_probe`)."
    )


def _separator_growth(d: dict[str, Any]) -> str:
    """The CCH root separator at each measured size and its growth exponent (a grid's is 0.5)."""
    pts = [
        (int(e["cold"]["edges"]), float(e["cold"]["cch_search_space"]["root_separator"]))
        for _, e in by_size(d)
        if run_ok(e["cold"]) and "cch_search_space" in e["cold"]
    ]
    if len(pts) < 2:
        return ""
    k = slope(pts[-2][0], pts[-2][1], pts[-1][0], pts[-1][1])
    sizes = ", ".join(f"{s:,.0f} at {n:,} edges" for n, s in pts)
    return f"; root separators {sizes}" + ("" if k is None else f" (growth exponent {k:.2f}; a grid's is 0.5)")


def bounds_lines(d: dict[str, Any], place: str = "city") -> list[str]:
    """For every missed target at 1M edges, the measured quantities that bound it (computed from the JSON);
    ``place`` names the network in the sentences (``city`` or ``country``)."""
    one = dict(by_size(d)).get(1_000_000)
    if one is None or not run_ok(one["cold"]):
        return ["1M edges not measured."]
    r, out = one["cold"], []
    steps = r["steps"]
    turns, edges = int(r["turns"]), int(r["edges"])
    dj = float(steps["Dijkstra query"]["cpu_s"])
    rate = turns / (dj * 1e3)  # arcs a full Dijkstra scans per ms of CPU
    for label, run, key, limit in TARGETS:
        x = value(one[run], key)
        if x is None or x <= limit:
            continue
        if key == "BI-TS round" and "route_settled_share" in r:
            share = float(r["route_settled_share"])
            parts = r.get("round_parts") or {}
            junction = parts.get("graph") == "junction"
            arcs = int(parts["search_arcs"]) if junction else turns
            what = "arc of the junction graph" if junction else "turn"
            out.append(
                f"* **{label}** ({fmt_s(x)}): route A crosses the {place}, so an exact one-directional search settles "
                f"{share:.1%} of the {edges:,} line-graph nodes before the goal.  A round that draws every edge "
                f"{_round_engine(r.get('round_parts'))}; the round's whole CPU, search and O(E) array work on every "
                f"edge, is {fmt_s(x)}, that is "
                f"{x * 1e9 / max(share * arcs, 1):,.0f} ns per {what} its search must scan, against "
                f"{1e9 * dj / turns:,.0f} ns per turn for SciPy's Dijkstra alone on the line graph (all {turns:,} "
                f"turns in {fmt_s(dj)}, the Dijkstra query row).  Within {fmt_s(limit)} an exact search would have to "
                f"scan {arcs * share / (limit * 1e3):,.0f} arcs per ms, or settle only the edges it "
                "needs (lazily sampled weights in a compiled search)."
                + _lazy_sentence(r.get("route_lazy"), x, place)
                + _goal_sentence(r.get("route_goal_directed"))
            )
        elif key == "reach" and "reach_reached_share" in r:
            share = float(r["reach_reached_share"])
            out.append(
                f"* **{label}** ({fmt_s(x)}): the budget reaches {share:.1%} of the network, so the one Dijkstra "
                f"settles all of it at {rate:,.0f} arcs per ms ({fmt_s(dj)}); a budget-limited search (`limit=`) "
                "saves nothing when everything is in range."
            )
        elif key == "setup" or key == "setup_peak_mb":
            stages = one[run]["steps"]
            top = max(SETUP_STAGES, key=lambda s: float(stages[s]["cpu_s"]))
            parts = ", ".join(f"{s} {fmt_s(float(stages[s]['cpu_s']))}" for s in SETUP_STAGES)
            out.append(
                f"* **{label}** ({fmt_q(label + (' MB' if key.endswith('_mb') else ''), x)}): {parts}; "
                f"the largest stage is `{top}`."
            )
        elif key == SERVED and served_sentence(r, label, x, fmt_s) is not None:
            out.append(str(served_sentence(r, label, x, fmt_s)))
        elif key == SERVED:
            space = r.get("cch_search_space")
            tail = (
                "(the road edges a straight cut through the grid crosses)"
                if place == "city"
                else f"(the road edges a straight cut through the {place} crosses){_separator_growth(d)}"
            )
            ending = (
                "a grid's separators grow as sqrt(E), a road network's more slowly"
                if place == "city"
                else "a road network's separators grow more slowly than a grid's"
            )
            why = (
                f"; the nested dissection's root separator alone holds {space['root_separator']:,.0f} line-graph nodes "
                f"{tail}, and a query's elimination-tree search "
                f"visits at least the separators of every cell enclosing its start, a median of "
                f"{space['ancestor_separator_nodes_median']:,.0f} nodes, each relaxing its upward arcs (the top "
                f"separators are near-cliques after contraction): {ending}"
                if space
                else ""
            )
            out.append(
                f"* **{label}** ({fmt_s(x)}): RoutingKit's CCH query on the turn-expanded line graph "
                f"({edges:,} nodes, {turns:,} arcs){why}."
            )
        else:
            out.append(f"* **{label}** ({fmt_s(x)}).")
    return out or ["Every target at 1M edges is met."]


__all__ = ["bounds_lines"]
