"""``POST /plan``: the charging plan of ``evroute serve --chargers`` is the one ``evroute plan --json`` gives for the
same network, chargers and battery (the same search, loaded once); without chargers, and with bad values, a 422
naming the field."""

from __future__ import annotations

import json
import warnings

from test_charging_cli import NET, _chargers, _ends

from evroute.cli import main
from evroute.service.app import create_app
from evroute.service.state import load_state

warnings.filterwarnings("ignore", message=".*httpx2.*")
from fastapi.testclient import TestClient  # noqa: E402


def test_plan_endpoint_answers_what_the_command_line_answers(tmp_path, capsys) -> None:
    path = _chargers(tmp_path)
    s, g = _ends()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = load_state(NET, chargers=str(path))
    client = TestClient(create_app(state))
    body = {"origin": s, "destination": g, "charge": 0.015, "reserve": 0.01}
    r = client.post("/plan", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    rc = main(
        ["plan", "--network", NET, f"--from={s}", f"--to={g}", "--chargers", str(path)]
        + ["--charge", "1.5%", "--reserve", "1%", "--json"]
    )
    cli = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["chargers_used"] == cli["chargers_used"] == 8
    plan = out["plan"]
    assert plan["feasible"] and len(plan["stops"]) >= 1
    for key in ("feasible", "certified", "stops", "legs", "total_time_s", "energy_wh", "p_all_reserve", "cost"):
        assert plan[key] == cli[key], key  # same search on the same inputs: the same numbers, bit for bit
    assert out["model_version"] == 1 and out["start"] == s and out["goal"] == g
    # fewer stops allowed than the trip needs: an answer, not an error, and it says so
    r = client.post("/plan", json=body | {"max_stops": 0})
    assert r.status_code == 200 and r.json()["plan"]["feasible"] is False


def test_plan_without_chargers_or_with_bad_values_is_a_422_naming_the_field(tmp_path) -> None:
    s, g = _ends()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bare = TestClient(create_app(load_state(NET)))
        full = TestClient(create_app(load_state(NET, chargers=str(_chargers(tmp_path)))))
    r = bare.post("/plan", json={"origin": s, "destination": g, "charge": 0.5})
    assert r.status_code == 422 and "--chargers" in r.json()["detail"][0]["msg"]
    assert r.json()["detail"][0]["loc"] == ["body"]
    for field, value in (("max_stops", 11), ("delta", 0.5), ("step", 0.0), ("trip_rho", 1.5), ("charge", 2)):
        r = full.post("/plan", json={"origin": s, "destination": g, "charge": 0.5} | {field: value})
        assert r.status_code == 422, field
        assert r.json()["detail"][0]["loc"][-1] == field
    r = full.post("/plan", json={"origin": "no-such-edge", "destination": g, "charge": 0.5})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "origin"
