"""Regret references as a committed study artefact: export the compute-cache entries of negative-cycle references to
a JSON "reference book" and import them into an empty compute cache.

In the paper's environment a negative-energy cycle rules out a Dijkstra optimum, and the regret reference is an
integer program at its budget followed by a best-known-route search (:func:`evroute.bandit.regret_reference_route`):
~300 s of CPU per (route, seed) on Luxembourg, the same for every method of that (route, seed).  The compute cache
(:mod:`evroute.network.computecache`) makes it a one-off per machine; a reference book makes it a one-off per study:
the entries (their full key inputs -- checksums of the line graph, the true energies, the noise, start, goal, budgets,
the search's version and the library versions -- and the route found) are committed, and :func:`import_references`
writes them into a fresh machine's cache, where runs load them as if they had computed them.  An entry is imported
only under the key of its own inputs, so it is used exactly where the same search on the same inputs would have
been run; a book made with other library versions imports entries no run will ask for (the versions are part of the
key), and nothing is trusted that the cache would not have produced itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from evroute.errors import ParameterError

__all__ = ["BOOK_VERSION", "import_references", "load_book", "reference_record"]

#: Version of the reference book's file format.
BOOK_VERSION = 1
KIND = "regret-reference"


def reference_record(env: Any, start: int, goal: int, potential_wh: np.ndarray | None = None) -> dict[str, Any] | None:
    """The book record of the regret reference of ``(env, start, goal)`` (computed or loaded through the compute
    cache), or ``None`` when the reference needs no search (no negative cycle: one Dijkstra, never cached).

    Returns:
        ``{"key": hex SHA-256, "inputs": the entry's full key inputs, "route": {"edges", "cost", "method"}}``.
    """
    from evroute.bandit import reference_cache_inputs, regret_reference_route
    from evroute.network.computecache import entry_path, full_inputs, key_of

    route = regret_reference_route(env, start, goal, "auto", potential_wh)
    inputs = reference_cache_inputs(env, start, goal, potential_wh)
    if not entry_path(KIND, inputs, blas=False).exists():
        return None
    full = full_inputs(KIND, inputs, blas=False)
    edges = [int(e) for e in np.asarray(route.edges, dtype=np.int64)]
    return {"key": key_of(full), "inputs": full, "route": {"edges": edges, "cost": route.cost, "method": route.method}}


def load_book(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of the reference book at ``path``, checked (format version, each key equal to the SHA-256 of its
    inputs, the kind, a route of integer edges and a finite cost); a bad book raises :class:`ParameterError`."""
    from evroute.network.computecache import key_of

    p = Path(path)
    try:
        book = json.loads(p.read_text())
    except FileNotFoundError:
        raise ParameterError(f"reference book {p} does not exist") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(f"reference book {p} is not readable JSON ({exc})") from None
    if not isinstance(book, dict) or book.get("version") != BOOK_VERSION or not isinstance(book.get("records"), list):
        raise ParameterError(f"reference book {p} is not a version-{BOOK_VERSION} book with a list of records")
    for i, rec in enumerate(book["records"]):
        ok = (
            isinstance(rec, dict)
            and isinstance(rec.get("inputs"), dict)
            and rec["inputs"].get("kind") == KIND
            and rec.get("key") == key_of(rec["inputs"])
            and isinstance(rec.get("route"), dict)
            and isinstance(rec["route"].get("edges"), list)
            and all(isinstance(e, int) for e in rec["route"]["edges"])
            and isinstance(rec["route"].get("cost"), int | float)
            and np.isfinite(rec["route"]["cost"])
        )
        if not ok:
            raise ParameterError(f"reference book {p}: record {i} is malformed or its key is not that of its inputs")
    return list(book["records"])


def import_references(path: str | os.PathLike[str]) -> int:
    """Write the references of the book at ``path`` into the compute cache (entries already there and verified are
    kept); returns the number of records.  Does nothing (returns 0) when the compute cache is switched off."""
    from evroute.network.cachefiles import cached
    from evroute.network.computecache import cache_enabled, compute_cache_dir, save_tree

    records = load_book(path)
    if not cache_enabled():
        return 0
    for rec in records:
        value = {
            "edges": np.asarray(rec["route"]["edges"], dtype=np.int64),
            "cost": float(rec["route"]["cost"]),
            "method": str(rec["route"]["method"]),
        }

        def build(entry: Path, value: dict[str, Any] = value) -> None:
            tmp = entry.with_name(f".{entry.name}.pid{os.getpid()}-.tmp")
            try:
                save_tree(value, tmp)  # data, as the compute cache writes it (evroute.network.datatree)
                os.replace(tmp, entry)
            finally:
                tmp.unlink(missing_ok=True)

        cached(compute_cache_dir() / KIND / f"{rec['key']}.npz", rec["inputs"], build, "regret reference")
    return len(records)


def write_book(path: str | os.PathLike[str], records: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Write ``records`` (from :func:`reference_record`) and ``meta`` (what made them) as a reference book."""
    from evroute.io import atomic_write_text

    atomic_write_text(
        Path(path), json.dumps({"version": BOOK_VERSION, "meta": meta, "records": records}, indent=1) + "\n"
    )
