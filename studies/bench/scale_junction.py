"""The junction-graph CCH's lines on ``docs/benchmark_scale.md`` (:mod:`studies.bench.scale_report`): the served
route query's step (:data:`SERVED`: the junction-graph CCH where a run measured it, else the line graph's), the
sentence on what bounds it, and per size the two engines side by side (:mod:`evroute.cch_junction`)."""

from __future__ import annotations

from typing import Any

#: the steps of the junction-graph CCH (``studies.bench.scale_measure``), in page order
JUNCTION_STEPS = ("junction CCH preprocessing", "junction CCH customization", "junction CCH query")
#: the served-query target's key: the query of the engine ``QueryContext(engine="cch")`` serves
SERVED = "served CCH query"


def served_step(steps: dict[str, Any]) -> dict[str, Any] | None:
    """The served route query's step of a run: the junction-graph CCH's where measured, else the line graph's."""
    got = steps.get("junction CCH query") or steps.get("CCH query")
    return dict(got) if got is not None else None


def served_sentence(r: dict[str, Any], label: str, x: float, fmt_s: Any) -> str | None:
    """What bounds the served query of run ``r`` when it missed its target and the junction-graph CCH answered it
    (None for runs that measured only the line graph's)."""
    j = r.get("junction_cch")
    if j is None or "junction CCH query" not in r["steps"]:
        return None
    return (
        f"* **{label}** ({fmt_s(x)}): the junction-graph CCH (`evroute.cch_junction`: {j['junctions']:,} junctions, "
        f"{j['hybrid_nodes']:,} hybrid nodes, against {int(r['edges']):,} line-graph nodes), "
        f"{j['fallbacks']} of {j['queries']} queries falling back to the line graph's "
        f"({fmt_s(float(r['steps']['CCH query']['cpu_s']))})."
    )


def junction_lines(sizes: list[tuple[int, dict[str, Any]]], fmt_s: Any) -> list[str]:
    """Per size with both engines measured: line graph against junction graph (preprocessing, customization,
    median query) and the junction graph's fallbacks and largest cost gap to Dijkstra."""
    out = []
    for _, e in sizes:
        r = e["cold"]
        j, st = r.get("junction_cch"), r.get("steps", {})
        if r.get("status") != "ok" or j is None or "junction CCH query" not in st:
            continue
        old = [fmt_s(float(st[k]["cpu_s"])) for k in ("CCH preprocessing", "CCH customization", "CCH query")]
        new = [fmt_s(float(st[k]["cpu_s"])) for k in JUNCTION_STEPS]
        out.append(
            f"* {int(r['edges']):,} edges: preprocessing {old[0]} → {new[0]}, customization {old[1]} → {new[1]}, "
            f"query {old[2]} → {new[2]} (line graph → junction graph, {j['hybrid_nodes']:,} nodes); "
            f"{j['fallbacks']} of {j['queries']} queries fell back to the line graph; largest cost gap to Dijkstra "
            f"{j['max_cost_gap']:.3g} Wh (stated bound {j['error_bound']:.3g} Wh)."
        )
    return out or ["No size measured with the junction-graph CCH."]


__all__ = ["JUNCTION_STEPS", "SERVED", "junction_lines", "served_sentence", "served_step"]
