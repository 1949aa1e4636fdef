"""Parallel requests against a real uvicorn server: answers equal the serial ones, and a model swapped in while
clients query loses no request and never mixes two versions (each answer equals the one of the version it names)."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
from servefixtures import running, state

from evroute.driver.answers import BatteryState, answer_route
from evroute.driver.query import make_belief
from evroute.service.app import create_app

PAIRS = [(0, 50), (3, 120), (10, 150), (7, 77), (20, 250), (33, 5), (90, 12), (140, 60)]


def _route_body(ids: np.ndarray, a: int, b: int) -> dict:
    return {"origin": str(ids[a]), "destination": str(ids[b]), "charge": 0.3, "reserve": 0.1}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bi", "gp-exact"])
def test_parallel_answers_equal_serial_answers(kind: str) -> None:
    gp = {"method": "dense", "learn_hyper": False} if kind == "gp-exact" else {}
    s = state(kind, **gp)
    ids = s.lg.network.edge_ids
    with running(create_app(s)) as url, httpx.Client(base_url=url, timeout=60) as c:
        serial = [c.post("/route", json=_route_body(ids, a, b)).json()["routes"] for a, b in PAIRS]
        s.current.ctx.belief.cov(np.arange(3))  # the GP's kernel-column cache is shared and filled concurrently
        jobs = [PAIRS[i % len(PAIRS)] for i in range(64)]

        def one(pair: tuple[int, int]) -> list:
            with httpx.Client(base_url=url, timeout=60) as cc:
                r = cc.post("/route", json=_route_body(ids, *pair))
                assert r.status_code == 200, r.text
                return r.json()["routes"]

        with ThreadPoolExecutor(8) as pool:
            parallel = list(pool.map(one, jobs))
    for i, routes in enumerate(parallel):
        assert routes == serial[i % len(PAIRS)]


@pytest.mark.slow
def test_model_swap_under_load_loses_no_request_and_mixes_no_version() -> None:
    s = state("bi")
    ids = s.lg.network.edge_ids
    net = s.lg.network
    path = [str(x) for x in s.lg.network.edge_ids[_a_path(s)]]
    p_idx = np.array([net.index_of(e) for e in path])
    n_swaps = 12
    batches = [(p_idx[: 2 + k % 3], 40.0 + 5.0 * k) for k in range(n_swaps)]
    # the answer each version must give, by replaying the observations on copies of the start model
    battery = BatteryState.from_vehicle(s.vehicle, 0.5, None)
    expected: dict[int, tuple[float, Any]] = {}
    model: Any = copy.deepcopy(s.current.model)
    for v in range(1, n_swaps + 2):
        belief = make_belief(s.lg, model, s.vehicle)
        expected[v] = (answer_route("path", p_idx, belief, net, battery).energy_wh, belief)
        if v <= n_swaps:
            e, y = batches[v - 1]
            model.update(e, np.full(len(e), y))
    with running(create_app(s)) as url:

        def reader(i: int) -> list[tuple[int, float, str, dict]]:
            out: list[tuple[int, float, str, dict]] = []
            with httpx.Client(base_url=url, timeout=60) as c:
                for j in range(25):
                    if j % 2:
                        r = c.post("/energy", json={"edges": path, "charge": 0.5})
                        assert r.status_code == 200, r.text
                        out.append((r.json()["model_version"], r.json()["answer"]["energy_wh"], "energy", {}))
                    else:
                        r = c.post("/route", json=_route_body(ids, *PAIRS[(i + j) % len(PAIRS)]))
                        assert r.status_code == 200, r.text
                        out.append((r.json()["model_version"], 0.0, "route", r.json()["routes"][0]))
            return out

        def writer() -> list[int]:
            versions = []
            with httpx.Client(base_url=url, timeout=60) as c:
                for e, y in batches:
                    r = c.post("/observe", json={"edges": [str(ids[x]) for x in e], "energies_wh": [y] * len(e)})
                    assert r.status_code == 200, r.text
                    versions.append(r.json()["model_version"])
            return versions

        with ThreadPoolExecutor(9) as pool:
            readers = [pool.submit(reader, i) for i in range(8)]
            w = pool.submit(writer)
            results = [x for f in readers for x in f.result()]
            assert w.result() == list(range(2, n_swaps + 2))
        metrics = httpx.get(f"{url}/metrics").json()["endpoints"]
    assert len(results) == 8 * 25  # no request lost
    assert sum(m["errors"] for m in metrics.values()) == 0
    seen = {v for v, *_ in results}
    assert len(seen) > 1  # the swaps happened while the readers ran
    for version, energy, what, route in results:
        if what == "energy":  # float sums in the same order: equal to the last bit
            assert energy == expected[version][0]
        else:  # the energy-optimal route's energy is that version's posterior mean along it
            e = np.array([net.index_of(x) for x in route["edges"]])
            assert route["energy_wh"] == pytest.approx(expected[version][1].mean[e].sum(), rel=1e-12)


def _a_path(s) -> np.ndarray:
    from evroute.driver.query import route_query

    b = BatteryState.from_vehicle(s.vehicle, 0.5, None)
    return route_query(s.current.ctx, 0, 150, b, kinds=("shortest",)).routes["shortest"]
