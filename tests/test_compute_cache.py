"""The compute cache (environment draws, regret references, graph Grams): cached values equal recomputed ones, a
damaged entry is rebuilt, keys change with every input, and the opt-out computes afresh and writes nothing."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from evroute.bandit import regret_reference_route
from evroute.environments import make_environment
from evroute.environments.paper import EnvironmentConfig, sample_prior_function_and_variance, seeded_prior_draw
from evroute.experiments.runner import load_linegraph
from evroute.kernels import graph_gram
from evroute.network import computecache as cc
from evroute.routes import resolve_route

NET = "synthetic:150:0"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "compute"
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", str(folder))
    return folder


def _entries(folder: Path, kind: str) -> list[Path]:
    return sorted(p for p in (folder / kind).glob("*") if p.suffix in (".npy", ".npz"))


def _negative_cycle_case():  # noqa: ANN202
    lg = load_linegraph(NET)
    route = resolve_route(lg, NET, "A", None, None)
    env = make_environment(lg, "paper", {"outputscale_frac": 2.0}, seed=0)  # many negative cycles
    return lg, route, env


def _uncached_reference(env, start: int, goal: int):  # noqa: ANN001, ANN202
    import os

    old = os.environ.get("EVROUTE_COMPUTE_CACHE")
    os.environ["EVROUTE_COMPUTE_CACHE"] = "off"
    try:
        return regret_reference_route(env, start, goal, "auto")
    finally:
        if old is None:
            del os.environ["EVROUTE_COMPUTE_CACHE"]
        else:
            os.environ["EVROUTE_COMPUTE_CACHE"] = old


@pytest.mark.slow
def test_cached_reference_equals_a_recomputed_one(cache: Path) -> None:
    _, route, env = _negative_cycle_case()
    fresh = _uncached_reference(env, route.start, route.goal)
    assert fresh.method in ("milp", "best-known")  # the negative-cycle search ran (the cached part)
    assert not (cache / "regret-reference").exists()  # the opt-out wrote nothing
    first = regret_reference_route(env, route.start, route.goal, "auto")  # computes and stores
    (entry,) = _entries(cache, "regret-reference")
    second = regret_reference_route(env, route.start, route.goal, "auto")  # loads
    for r in (first, second):
        assert r.method == fresh.method and r.cost == fresh.cost
        np.testing.assert_array_equal(r.edges, fresh.edges)
    assert _entries(cache, "regret-reference") == [entry]


@pytest.mark.slow
def test_a_corrupted_entry_is_rebuilt_with_one_warning(cache: Path) -> None:
    _, route, env = _negative_cycle_case()
    first = regret_reference_route(env, route.start, route.goal, "auto")
    (entry,) = _entries(cache, "regret-reference")
    entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    with pytest.warns(UserWarning, match="does not match its checksum") as rec:
        again = regret_reference_route(env, route.start, route.goal, "auto")
    assert len([w for w in rec if "regret reference" in str(w.message)]) == 1
    assert again.cost == first.cost and np.array_equal(again.edges, first.edges)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # healed: read without a warning
        regret_reference_route(env, route.start, route.goal, "auto")


def test_a_truncated_prior_draw_is_rebuilt(cache: Path) -> None:
    lg = load_linegraph(NET)
    cfg = EnvironmentConfig()
    g, v = seeded_prior_draw(lg, cfg, 3)
    (entry,) = _entries(cache, "prior-draw")
    entry.write_bytes(entry.read_bytes()[:100])
    with pytest.warns(UserWarning, match="environment draw"):
        g2, v2 = seeded_prior_draw(lg, cfg, 3)
    np.testing.assert_array_equal(g2, g)
    np.testing.assert_array_equal(v2, v)


def test_cached_prior_draw_equals_the_direct_draw_and_both_environments_share_it(cache: Path) -> None:
    from threadpoolctl import threadpool_limits

    lg = load_linegraph(NET)
    with threadpool_limits(1, user_api="blas"):
        g, v = sample_prior_function_and_variance(lg, EnvironmentConfig(), np.random.default_rng(5))
    paper = make_environment(lg, "paper", {}, seed=5)
    consistent = make_environment(lg, "consistent", {}, seed=5)
    assert len(_entries(cache, "prior-draw")) == 1  # one draw for both environments of the seed
    gc, vc = seeded_prior_draw(lg, EnvironmentConfig(), 5)
    np.testing.assert_array_equal(gc, g)
    np.testing.assert_array_equal(vc, v)
    # the paper environment's truth is E_det + sigma0 g (its definition), with g the direct draw
    np.testing.assert_array_equal(paper.true_mean_wh, paper.prior_mean_wh + np.sqrt(paper.prior_var) * g)
    assert consistent.true_mean_wh.shape == g.shape
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVROUTE_COMPUTE_CACHE", "off")
        fresh = make_environment(lg, "consistent", {}, seed=5)
    np.testing.assert_array_equal(fresh.true_mean_wh, consistent.true_mean_wh)


def test_graph_gram_from_disk_equals_the_computed_one(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_gram, "DISK_MIN_EDGES", 1)
    lap = load_linegraph(NET).laplacian()
    made = graph_gram.dense_graph_gram(lap, 2.0, 1.0, memo=False)
    (entry,) = _entries(cache, "graph-gram")
    loaded = graph_gram.dense_graph_gram(lap, 2.0, 1.0, memo=False)
    np.testing.assert_array_equal(loaded, made)
    assert loaded is not made
    monkeypatch.setenv("EVROUTE_COMPUTE_CACHE", "off")
    np.testing.assert_array_equal(graph_gram.dense_graph_gram(lap, 2.0, 1.0, memo=False), made)
    assert _entries(cache, "graph-gram") == [entry]


def test_keys_change_when_an_input_changes(cache: Path) -> None:
    lg, route, env = _negative_cycle_case()
    from evroute.bandit import reference_cache_inputs

    base = reference_cache_inputs(env, route.start, route.goal, None)
    key = cc.key_of(cc.full_inputs("regret-reference", base, blas=False))
    f = env.true_mean_wh.copy()
    f[7] = np.nextafter(f[7], np.inf)  # one ulp of one edge
    changed = [
        {**base, "true_mean_wh": cc.array_digest(f)},
        reference_cache_inputs(env, route.goal, route.start, None),
        reference_cache_inputs(env, route.start, route.goal, np.zeros(lg.n_nodes)),
        {**base, "version": base["version"] + 1},
        {**base, "budget": [base["budget"][0] + 1, base["budget"][1]]},
    ]
    keys = {cc.key_of(cc.full_inputs("regret-reference", c, blas=False)) for c in changed}
    assert key not in keys and len(keys) == len(changed)
    assert cc.key_of(cc.full_inputs("regret-reference", dict(base), blas=False)) == key  # deterministic
    # the draw's key: each parameter, the seed and the version
    cfg = EnvironmentConfig()
    seeded_prior_draw(lg, cfg, 0)
    seeded_prior_draw(lg, cfg, 1)
    seeded_prior_draw(lg, EnvironmentConfig(lengthscale=2.0), 0)
    assert len(_entries(cache, "prior-draw")) == 3  # outputscale_frac = 2 only scales the draw: seed 0's is shared


def test_array_digest_sees_dtype_shape_and_every_byte() -> None:
    a = np.arange(6, dtype=np.float64)
    digests = {
        cc.array_digest(a),
        cc.array_digest(a.astype(np.float32)),
        cc.array_digest(a.reshape(2, 3)),
        cc.array_digest(np.r_[a[:5], np.nextafter(a[5], 9.0)]),
        cc.array_digest(None),
    }
    assert len(digests) == 5
    assert cc.array_digest(a) == cc.array_digest(a.copy())


def test_manifests_are_checked_by_blake2b_and_old_sha256_manifests_still_verify(tmp_path, monkeypatch):
    """New manifests carry both digests, each with its MAC, and are checked by BLAKE2b; a manifest with only SHA-256
    (an older evroute's) verifies by SHA-256 and is upgraded in place; an edit of the entry fails either way."""
    import hashlib
    import json

    from evroute.network.cachefiles import cached, check_entry, manifest_path

    monkeypatch.setenv("EVROUTE_CACHE_KEY_FILE", str(tmp_path / "cache.key"))
    entry = tmp_path / "e.bin"
    payload = b"x" * 5000

    def build(p):
        p.write_bytes(payload)

    cached(entry, {"k": 1}, build, "demo")
    man = json.loads(manifest_path(entry).read_text())
    assert man["blake2b"] == hashlib.blake2b(payload).hexdigest()
    assert man["sha256"] == hashlib.sha256(payload).hexdigest()
    assert check_entry(entry, {"k": 1}) is None
    # an older manifest: SHA-256 and its MAC only
    old = {k: man[k] for k in ("version", "sha256", "inputs", "hmac")}
    manifest_path(entry).write_text(json.dumps(old))
    assert check_entry(entry, {"k": 1}) is None
    cached(entry, {"k": 1}, build, "demo")  # verified, and its manifest upgraded
    assert json.loads(manifest_path(entry).read_text())["blake2b"] == man["blake2b"]
    # a forged fast digest without the key's MAC is refused, as is stripping it to fall back on a forged SHA-256
    entry.write_bytes(b"y" * 5000)
    forged = dict(man, blake2b=hashlib.blake2b(b"y" * 5000).hexdigest())
    manifest_path(entry).write_text(json.dumps(forged))
    assert "cache key" in (check_entry(entry, {"k": 1}) or "")
    stripped = dict(old, sha256=hashlib.sha256(b"y" * 5000).hexdigest())
    manifest_path(entry).write_text(json.dumps(stripped))
    assert "cache key" in (check_entry(entry, {"k": 1}) or "")
    manifest_path(entry).write_text(json.dumps(man))
    assert "does not match" in (check_entry(entry, {"k": 1}) or "")
