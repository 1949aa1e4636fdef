"""Reference books: a negative-cycle regret reference exported from one compute cache and imported into an empty one
is loaded by the run (no search) and equals a recomputed reference; a book whose key is not that of its inputs, or
that is not a book, is refused with one error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evroute import bandit
from evroute.bandit import regret_reference_route
from evroute.environments import make_environment
from evroute.errors import ParameterError
from evroute.experiments.runner import load_linegraph
from evroute.routes import resolve_route
from studies.bench.reference_book import import_references, load_book, reference_record, write_book

NET = "synthetic:150:0"


def _case():  # noqa: ANN202
    lg = load_linegraph(NET)
    route = resolve_route(lg, NET, "A", None, None)
    env = make_environment(lg, "paper", {"outputscale_frac": 2.0}, seed=0)  # many negative cycles
    return route, env


@pytest.mark.slow
def test_an_imported_reference_is_loaded_without_a_search_and_equals_a_recomputed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    route, env = _case()
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "first"))
    rec = reference_record(env, route.start, route.goal)
    assert rec is not None  # a negative cycle: the search ran and was cached
    computed = regret_reference_route(env, route.start, route.goal, "auto")
    book = tmp_path / "book.json"
    write_book(book, [rec], {"command": "test"})

    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "second"))  # a fresh machine's empty cache
    assert import_references(book) == 1

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the imported reference was not used")

    monkeypatch.setattr(bandit, "optimal_route", no_search)  # the integer program as well
    with monkeypatch.context() as m:
        m.setattr("evroute.oracle.best_known_route", no_search)
        loaded = regret_reference_route(env, route.start, route.goal, "auto")
    np.testing.assert_array_equal(loaded.edges, computed.edges)
    assert loaded.cost == computed.cost and loaded.method == computed.method
    # the route is a path from start to goal whose cost is the sum of its true energies
    assert loaded.edges[0] == route.start and loaded.edges[-1] == route.goal
    assert loaded.cost == pytest.approx(float(env.true_mean_wh[loaded.edges].sum()), rel=1e-12, abs=1e-9)


def test_a_reference_without_a_search_has_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = load_linegraph(NET)
    route = resolve_route(lg, NET, "A", None, None)
    env = make_environment(lg, "consistent", {}, seed=0)  # no negative cycle: one Dijkstra, nothing cached
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "c"))
    assert reference_record(env, route.start, route.goal) is None


def test_a_book_with_a_wrong_key_or_no_records_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    route, env = _case()
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(tmp_path / "c"))
    rec = reference_record(env, route.start, route.goal)
    assert rec is not None
    bad = dict(rec, inputs={**rec["inputs"], "goal": int(route.goal) + 1})  # the key no longer matches its inputs
    book = tmp_path / "bad.json"
    write_book(book, [bad], {})
    with pytest.raises(ParameterError, match="key is not that of its inputs"):
        load_book(book)
    (tmp_path / "list.json").write_text(json.dumps([rec]))
    with pytest.raises(ParameterError, match="version-1 book"):
        load_book(tmp_path / "list.json")
    with pytest.raises(ParameterError, match="does not exist"):
        load_book(tmp_path / "missing.json")
