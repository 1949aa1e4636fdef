"""The Twizy page (docs/results/twizy_trace_energy.md, issue 35 item 3): every fitted parameter lies inside its
bounds, or the page states a warning for it on its row; and its count sentence matches the table."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "results" / "twizy_trace_energy.md"


def _fitted_rows() -> list[list[str]]:
    lines = PAGE.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| fit set | predicts | parameter | value | bounds"))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows


def test_every_fitted_parameter_inside_its_bounds_or_warned() -> None:
    rows = _fitted_rows()
    assert rows
    inside = at_bound = 0
    for fit_set, _, param, value, bounds, warning in rows:
        v = float(value.split("+-")[0])
        lo, hi = (float(x) for x in bounds.strip("[]").split(","))
        assert lo <= v <= hi, (fit_set, param, v, bounds)  # the fit never leaves its bounds
        # a value that prints as its bound (4 significant digits on the page) must carry the warning
        printed_at_bound = abs(v - lo) <= 5e-4 * max(abs(lo), 1) or abs(v - hi) <= 5e-4 * max(abs(hi), 1)
        if printed_at_bound:
            assert warning.startswith("yes:") and param in warning, (fit_set, param, warning)
            at_bound += 1
        else:
            assert warning == "-", (fit_set, param, warning)
            inside += 1
    m = re.search(r"(\d+) fitted values lie inside their bounds; (\d+) are at a bound", PAGE.read_text())
    assert m and (int(m.group(1)), int(m.group(2))) == (inside, at_bound)
