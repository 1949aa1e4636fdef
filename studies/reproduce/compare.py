"""Reading a data file's rows and comparing re-run rows with the committed ones (issue 38, item 4).

Rows are dicts of strings (CSV cells, or JSON values written as :func:`cell` writes them), identified by the
source's ``key`` columns.  A value is compared to the precision it is stored at: numbers may differ by one unit in
the committed value's last decimal (:func:`tolerance`) plus the source's per-column ``atol``; everything else must
be equal; columns in ``excluded`` (timings) and the provenance column ``commit`` are not compared.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studies.reproduce.table import Source

Row = dict[str, str]


def cell(v: Any) -> str:
    """A JSON value as a table cell: floats with ``repr`` (every digit), booleans ``True``/``False``, nested values
    as compact JSON."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return str(v)


def read_rows(s: Source, path: Path) -> list[Row]:
    """The rows of ``s``'s data file at ``path`` (a CSV, gzipped CSV, or the ``s.rows`` list of a JSON file; a JSON
    dict of records becomes one row per entry with its key in ``s.key[0]``)."""
    if path.suffix == ".json":
        d = json.loads(path.read_text())
        items = d.get(s.rows, []) if isinstance(d, dict) else []
        if isinstance(items, dict):
            items = [{s.key[0]: k, **(v if isinstance(v, dict) else {"value": v})} for k, v in items.items()]
        return [{k: cell(v) for k, v in r.items()} for r in items if isinstance(r, dict)]
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return list(csv.DictReader(io.StringIO(text)))


def tolerance(committed: str) -> float:
    """One unit in the last stored decimal of the number ``committed`` (``0.25`` -> 0.01, ``12`` -> 1; a number
    in exponent notation or written with every digit (``repr``, 15 or more significant digits): 1e-9 relative)."""
    t = committed.strip().lstrip("+-")
    mant = t.split("e")[0].split("E")[0]
    digits = len(mant.replace(".", "").lstrip("0"))
    if "e" in t.lower() or digits >= 15:
        return 1e-9 * max(abs(float(committed)), 1e-300)
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 10.0**-decimals


def _number(v: str) -> float | None:
    try:
        x = float(v)
    except ValueError:
        return None
    return x if v.strip().lower() not in ("true", "false") else None


def same(committed: str, rerun: str, atol: float = 0.0) -> bool:
    """Whether ``rerun`` reproduces ``committed`` (module doc): numbers within :func:`tolerance` + ``atol`` (NaN
    equals NaN), anything else equal as text."""
    a, b = _number(committed), _number(rerun)
    if a is None or b is None:
        return committed == rerun
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tolerance(committed) + atol + 1e-12 * abs(a)


@dataclass
class Drift:
    """One row that does not reproduce: its key, and per differing column (committed, re-run)."""

    key: tuple[str, ...]
    columns: dict[str, tuple[str, str]]

    def line(self) -> str:
        cols = "; ".join(f"{c}: {a} committed, {b} re-run" for c, (a, b) in self.columns.items())
        return f"{'/'.join(self.key)}: {cols}"


def key_of(s: Source, r: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(str(r.get(k, "")) for k in s.key)


def compare(s: Source, committed: Sequence[Row], rerun: Sequence[Row]) -> tuple[int, list[Drift]]:
    """Rows of ``committed`` that ``rerun`` has (by key), and the drifts among them: columns the re-run lacks or
    that differ beyond tolerance; a committed row the re-run does not have at all is a drift too (column
    ``<row>``).  Excluded columns are skipped."""
    by_key = {key_of(s, r): r for r in rerun}
    drifts: list[Drift] = []
    checked = 0
    for r in committed:
        k = key_of(s, r)
        got = by_key.get(k)
        if got is None:
            drifts.append(Drift(k, {"<row>": ("present", "missing")}))
            continue
        checked += 1
        bad = {
            c: (v, got.get(c, "<missing>"))
            for c, v in r.items()
            if c not in s.excluded
            and c not in s.key
            and c != "commit"
            and not same(v, got.get(c, "<missing>"), s.atol.get(c, 0.0))
        }
        if bad:
            drifts.append(Drift(k, bad))
    return checked, drifts
