"""The page ``docs/benchmark_scale.md``, rendered from ``docs/data/benchmark_scale.json`` alone
(:mod:`studies.bench.benchmark_scale`): tables, growth exponents, the extrapolation to a country and the issue's
targets, each "met" / "missed" computed from the numbers here."""

from __future__ import annotations

from typing import Any

from studies.bench.scale_bounds import bounds_lines
from studies.bench.scale_junction import JUNCTION_STEPS, junction_lines
from studies.bench.scale_measure import SETUP_STAGES
from studies.bench.scale_values import TARGETS, by_size, edge_count, fmt_q, fmt_s, run_ok, slope, value

#: edges of the country the numbers are extrapolated to (Germany's road graph, issue 39)
COUNTRY_EDGES = 27_500_000
#: the measured steps after the set-up, in page order
LATER_STEPS = (
    "BI-TS round",
    "reduced costs",
    "CCH preprocessing",
    "CCH customization",
    "CCH query",
    *JUNCTION_STEPS,
    "Dijkstra query",
    "reach",
)
#: quantities of the growth and extrapolation tables: label -> (run, key); key is a step name, "setup" (the set-up
#: stages' CPU sum) or "setup_peak_mb" / "peak_mb"
QUANTITIES: dict[str, tuple[str, str]] = {
    "cold set-up (CPU s)": ("cold", "setup"),
    "warm set-up (CPU s)": ("warm", "setup"),
    "cold set-up peak memory (MB)": ("cold", "setup_peak_mb"),
    "peak memory, all steps (MB)": ("cold", "peak_mb"),
    **{f"{name} (CPU s)": ("cold", name) for name in LATER_STEPS},
}


def _memory_bound(key: str, d: dict[str, Any]) -> str:
    """The step whose peak memory grew the most at the largest measured size (set-up stages only for the set-up
    peak)."""
    runs = [e["cold"] for _, e in by_size(d) if run_ok(e["cold"])]
    if not runs:
        return "—"
    run = runs[-1]
    names = SETUP_STAGES if key == "setup_peak_mb" else SETUP_STAGES + LATER_STEPS
    prev, best, grown = 0.0, "", -1.0
    for name in (n for n in names if n in run["steps"]):
        peak = float(run["steps"][name]["peak_mb"])
        if peak - prev > grown:
            best, grown = name, peak - prev
        prev = max(prev, peak)
    return f"memory: step `{best}` raises the peak most (+{grown:,.0f} MB at {run['edges']:,} edges)"


def _bound(step: str, d: dict[str, Any]) -> str:
    """What dominates ``step`` in the profile (its top function by own CPU time), or a dash without a profile."""
    if step.endswith("_mb"):
        return _memory_bound(step, d)
    prof = d.get("profile")
    if not run_ok(prof):
        return "—"
    assert prof is not None
    names = [s for s in SETUP_STAGES] if step == "setup" else [step]
    tops = [t for s in names for t in prof["steps"].get(s, {}).get("top", [])[:1]]
    if not tops:
        return "—"
    t = max(tops, key=lambda r: r["tottime_s"])
    kind = "compiled call" if t["where"] == "~" else "own lines of"
    where = "" if t["where"] == "~" else f" ({t['where']})"
    return f"{kind}: `{t['function']}`{where}, {fmt_s(t['tottime_s'])}"


def _measured_table(d: dict[str, Any]) -> list[str]:
    sizes = by_size(d)
    lines = [
        "| step | " + " | ".join(f"{edge_count(e):,} edges: CPU / wall" for _, e in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for run, steps in (("cold", SETUP_STAGES + LATER_STEPS), ("warm", SETUP_STAGES)):
        for st in steps:
            cells = []
            for _, e in sizes:
                r = e[run]
                if not run_ok(r):
                    cells.append("—")
                    continue
                row = r["steps"].get(st)
                cells.append("—" if row is None else f"{fmt_s(row['cpu_s'])} / {fmt_s(row['wall_s'])}")
            label = st if run == "cold" else f"{st} (warm cache)"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, fn in (
        ("turns (line-graph arcs)", lambda r: f"{r['turns']:,}"),
        ("cold set-up peak memory", lambda r: f"{r['setup_peak_mb']:,.0f} MB"),
        ("peak memory, all steps", lambda r: f"{r['peak_mb']:,.0f} MB"),
        ("warm set-up peak memory", None),
        ("load average at start / end", lambda r: f"{r['load_start']:.1f} / {r['load_end']:.1f}"),
        ("child CPU total / wall", lambda r: f"{r['cpu_total_s']:.1f} s / {r['child_wall_s']:.1f} s"),
    ):
        cells = []
        for _, e in sizes:
            r = e["warm"] if fn is None else e["cold"]
            if not run_ok(r):
                cells.append("—")
            else:
                cells.append(f"{r['peak_mb']:,.0f} MB" if fn is None else fn(r))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for _, e in sizes:
        for run in ("cold", "warm"):
            if not run_ok(e[run]):
                lines += ["", f"{e['requested_edges']:,} edges, {run} run: {e[run].get('status', 'no record')}."]
    return lines


def _growth_table(d: dict[str, Any]) -> list[str]:
    sizes = [(edge_count(e), e) for _, e in by_size(d) if run_ok(e["cold"])]
    pairs = list(zip(sizes[:-1], sizes[1:], strict=False))
    head = " | ".join(f"{a[0]:,} → {b[0]:,}" for a, b in pairs)
    lines = [
        f"| quantity | growth exponent {head} | extrapolated to {COUNTRY_EDGES / 1e6:g} M edges | what bounds it "
        "(top function at the profiled size) |",
        "|---|" + "---|" * len(pairs) + "---|---|",
    ]
    for label, (run, key) in QUANTITIES.items():
        bound = "— (the profile is of a cold set-up)" if run == "warm" else _bound(key, d)
        ks = []
        pts = []
        for (e0, a), (e1, b) in pairs:
            y0, y1 = value(a[run], key), value(b[run], key)
            k = None if y0 is None or y1 is None else slope(e0, y0, e1, y1)
            ks.append("—" if k is None else f"{k:.2f}")
            if k is not None and y1 is not None:
                pts.append((e1, y1, k))
        if pts:
            e1, y1, k = pts[-1]
            extra = fmt_q(label, y1 * (COUNTRY_EDGES / e1) ** max(k, 1.0 if "MB" in label else 0.0))
        else:
            extra = "—"
        lines.append(f"| {label} | " + " | ".join(ks) + f" | {extra} | {bound} |")
    return lines


def _targets_table(d: dict[str, Any]) -> list[str]:
    sizes = dict(by_size(d))
    lines = ["| target (issue 39, Done when) | measured | verdict |", "|---|---|---|"]
    one = sizes.get(1_000_000)
    for label, run, key, limit in TARGETS:
        x = None if one is None else value(one[run], key)
        shown = fmt_q(label + (" MB" if key.endswith("_mb") else ""), x)
        if x is None:
            why = "" if one is None else f" ({one[run].get('status', '')})"
            lines.append(f"| {label} | — | not measured{why} |")
        else:
            lines.append(f"| {label} | {shown} | {'met' if x <= limit else 'missed'} |")
    five = sizes.get(5_000_000)
    if five is None:
        lines.append("| 5M edges run in ≤ 8 GB | — | not measured |")
    elif run_ok(five["cold"]):
        x = float(five["cold"]["peak_mb"])
        lines.append(f"| 5M edges run in ≤ 8 GB | {x:,.0f} MB | {'met' if x <= 8192 else 'missed'} |")
    else:
        lines.append(f"| 5M edges run in ≤ 8 GB | {five['cold']['status']} | missed |")
    gaps = [
        (e, e["cold"]["cch_vs_dijkstra"]) for _, e in by_size(d) if run_ok(e["cold"]) and "cch_vs_dijkstra" in e["cold"]
    ]
    agree = all(g["max_cost_gap"] <= g["error_bound"] for _, g in gaps)
    worst = max((g["max_cost_gap"] for _, g in gaps), default=0.0)
    bounds = [g["error_bound"] for _, g in gaps]
    span = f" (stated bounds {min(bounds):,.3g} to {max(bounds):,.0f} Wh)" if bounds else ""
    lines.append(
        f"| CCH and Dijkstra agree (route cost within the CCH's quantization bound, 3 pairs per size) | "
        f"largest gap {worst:.3g} Wh{span} | {'met' if gaps and agree else 'missed'} |"
    )
    return lines


def commits_line(d: dict[str, Any]) -> str:
    """Which commit's code measured each size (the ``commit`` of its entry; entries written before that field
    existed are said to be unrecorded, never guessed)."""
    by: dict[str, list[str]] = {}
    for key in sorted(d.get("sizes", {}), key=int):
        by.setdefault(d["sizes"][key].get("commit") or "not recorded", []).append(f"{int(key):,}")
    parts = [
        f"{', '.join(sizes)} edges at `{c}`"
        if c != "not recorded"
        else f"{', '.join(sizes)} edges: commit not recorded (measured before the benchmark stored it)"
        for c, sizes in by.items()
    ]
    return "Code measured: " + ("; ".join(parts) if parts else "no size measured") + "."


def render(d: dict[str, Any]) -> str:
    """The whole page (Markdown) from the benchmark JSON."""
    out = [
        "# Country scale: set-up, memory, rounds and queries from 10k to 1M edges",
        "",
        f"Generated by `{d['command']}` (data: `docs/data/benchmark_scale.json`; "
        "`python -m studies.bench.benchmark_scale --report-only` rebuilds this page from it).  Issue 39, item 6.",
        "",
        f"Machine: {d['machine']}.  Every size runs in fresh processes with `nice -n 10`, one BLAS thread, under an "
        "address-space cap; the machine is shared, so **CPU time** (`time.process_time` of the child) is the "
        "measure and wall time is shown next to it with the load average.  Networks: `synthetic:EDGES:0`, the "
        "synthetic city (jittered irregular grid with arterials, expressways, one-way streets, diagonals, curves "
        "and hills), loaded as `evroute run` loads it.  Cold: an empty compute cache; warm: a second process "
        "reusing the cache the first filled.  Repeated steps report the median: BI-TS rounds over 15 (5 at 1M), "
        "CCH queries over 200 random pairs, Dijkstra queries and reach over 3.  Memory is the child's `ru_maxrss`.  "
        "The CCH (`evroute.cch`) orders the line graph by nested dissection with straight cuts between junctions "
        f"(`dissection_order`; before issue 39's core work, RoutingKit's inertial flow: 266 s of CPU at 1M edges); "
        f"{cut_words(d)}.",
        "",
        commits_line(d),
        "",
        "## Measured (CPU / wall per step)",
        "",
        *_measured_table(d),
        "",
        "## Targets at 1M edges",
        "",
        "Each verdict is computed from the numbers above (CPU time against the target).",
        "",
        *_targets_table(d),
        "",
        "## What bounds each missed target at 1M edges",
        "",
        *bounds_lines(d),
        "",
        "## Growth and the extrapolation to a country",
        "",
        "Growth exponent: the log-log slope between consecutive sizes whose cold run finished (1 = linear).  "
        "Extrapolation: the largest "
        f"measured value times (27.5 M / its edges) to the last exponent (at least 1 for memory).  The last column "
        "names the function with the most own CPU time in that step at the profiled size "
        f"({_profiled(d)}): *own lines of* a Python function count the array operators and the constructors of "
        "compiled classes on those lines (cProfile lists neither separately), so they are Python-level work or "
        "vectorised NumPy/SciPy or library work called there; a *compiled call* is a library function (bounded by "
        "its memory traffic or flops).  The profile is a separate run (its seconds rank functions; they are not the "
        "timings above).  Memory rows name the step that raises the peak most.  The environment draw changes method "
        "at 250,000 edges (`sparse` below, `scale` from there: `docs/graph_kernel.md`), so an exponent across that "
        "size compares two methods; the extrapolation uses the last pair of sizes.",
        "",
        *_growth_table(d),
        "",
        "## CCH against Dijkstra",
        "",
        *_cch_lines(d),
        "",
        "## Junction graph against line graph",
        "",
        '`QueryContext(engine="cch")` answers weights without turn terms (the least-mean route\'s reduced costs, '
        "lengths, times) on line graphs of 30,000 nodes or more (`evroute.cch_junction.JUNCTION_MIN_NODES`) on the "
        "junction graph, turn-expanded only at junctions with turn restrictions, and falls back to a Dijkstra for a "
        "query it cannot certify (`evroute.cch_junction`); these rows: the same 200 pairs and turn weights as the "
        "CCH rows, falling back to the line graph's CCH, medians of CPU time.",
        "",
        *junction_lines(by_size(d), fmt_s),
        "",
    ]
    if d.get("country", {}).get("sizes"):  # the synthetic country beside the city (studies.bench.scale_country)
        from studies.bench.scale_country import country_lines, side_by_side

        at = out.index("## Targets at 1M edges") + 4
        end = out.index("## What bounds each missed target at 1M edges") - 1
        out[at:end] = side_by_side(_targets_table(d), _targets_table(country_view(d)))
        out += country_lines(d)
    if d.get("cch_orders"):  # the CCH orders side by side (studies.bench.cch_orders)
        from studies.bench.scale_country import orders_lines

        out += orders_lines(d)
    return "\n".join(out)


def cut_words(d: dict[str, Any]) -> str:
    """Where the measured CCH rows put each cell's cut: recorded by the runs (``cch_cut_quantiles``), else the median
    (runs before :data:`evroute.cch.CUT_QUANTILES`)."""
    cuts: set[tuple[float, ...]] = {
        tuple(e["cold"].get("cch_cut_quantiles", [0.5]))
        for _, e in by_size(d)
        if run_ok(e["cold"]) and "CCH query" in e["cold"]["steps"]
    }
    if not cuts:
        return "no CCH rows"
    if cuts == {(0.5,)}:
        return "these rows cut each cell through the median of its edges (measured before the refined cut)"
    widest: tuple[float, ...] = sorted(cuts, key=len)[-1]
    words = ", ".join(f"{q:g}" for q in sorted(widest))
    mixed = " (some sizes with the median only)" if len(cuts) > 1 else ""
    return f"these rows cut each cell at the best of the quantiles {words} of its edges{mixed}"


def country_view(d: dict[str, Any]) -> dict[str, Any]:
    """The country's results in the layout of the city's (``sizes``, ``profile``, ``command``, ``machine``)."""
    c = d["country"]
    return {"sizes": c["sizes"], "profile": c.get("profile"), "command": c.get("command", ""), "machine": d["machine"]}


def _cch_lines(d: dict[str, Any]) -> list[str]:
    """Per size: the CCH query's speed-up over a Dijkstra and how many Dijkstra queries one customization costs."""
    out = []
    for _, e in by_size(d):
        r = e["cold"]
        if not run_ok(r) or "CCH query" not in r["steps"]:
            continue
        q, dj, cu = (float(r["steps"][k]["cpu_s"]) for k in ("CCH query", "Dijkstra query", "CCH customization"))
        out.append(
            f"* {r['edges']:,} edges: a CCH query {fmt_s(q)} against {fmt_s(dj)} for a Dijkstra ({dj / q:.1f}× "
            f"faster); one customization (once per model version) costs {cu / dj:.0f} Dijkstra queries, "
            f"preprocessing (once per network) {float(r['steps']['CCH preprocessing']['cpu_s']) / dj:.0f}."
        )
    skipped = [f"* {edge_count(e):,} edges: {e['cch_skipped']}." for _, e in by_size(d) if e.get("cch_skipped")]
    return (out or ["No size measured."]) + skipped


def _profiled(d: dict[str, Any]) -> str:
    prof = d.get("profile")
    if not run_ok(prof):
        return "no profile recorded" if prof is None else f"profile run {prof['status']}"
    assert prof is not None
    return f"{prof['edges']:,} edges, cProfile of one call of each step"


__all__ = ["COUNTRY_EDGES", "QUANTITIES", "TARGETS", "country_view", "cut_words", "render", "slope", "value"]
