import json
import os
import subprocess
import sys

import pytest

from evroute.cli import main
from evroute.experiments.runner import load_linegraph

NET = "synthetic:400:3"


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("evroute: error:")
    return err


def test_info(capsys):
    assert main(["info", "--network", NET]) == 0
    out = capsys.readouterr().out
    assert "lcc_edges" in out and "energy_mean_wh" in out


def test_route_compares_energy_shortest_fastest_and_writes_geojson(tmp_path, capsys):
    lg = load_linegraph(NET)
    a, b = lg.network.edge_ids[0], lg.network.edge_ids[lg.n_nodes // 2]
    out = tmp_path / "r.geojson"
    assert main(["route", "--network", NET, "--from", a, "--to", b, "--geojson", str(out)]) == 0
    gj = json.loads(out.read_text())
    props = {f["properties"]["route"]: f["properties"] for f in gj["features"]}
    assert set(props) == {"energy-optimal", "shortest", "fastest"}
    assert props["energy-optimal"]["energy_wh"] <= min(p["energy_wh"] for p in props.values()) + 1e-9
    assert props["shortest"]["length_m"] <= min(p["length_m"] for p in props.values()) + 1e-9
    assert props["fastest"]["time_s"] <= min(p["time_s"] for p in props.values()) + 1e-9
    # points instead of edge ids
    mid = lg.network.geometry[5].mean(axis=0)
    assert main(["route", "--network", NET, "--from", f"{mid[0]},{mid[1]}", "--to", b]) == 0
    assert "energy-optimal" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["info", "--network", "atlantis"],
        ["info", "--network", "/nonexistent/file.net.xml"],
        ["route", "--network", NET, "--from", "no-such-edge", "--to", "x"],
        ["run", "--network", NET, "--policy", "ucb", "--policy-param", "beta_scale=-2"],
        ["run", "--network", NET, "--seeds", "zero"],
        ["run", "--network", NET, "--model", "nope"],
        ["run", "--network", NET, "--route", "Z"],
        ["sweep", "/nonexistent/grid.json", "--out", "results/sweep"],
        ["run", "--network", NET, "--executor", "ray", "--address", "127.0.0.1:9", "--out", "results/r"],
        ["sweep", "BAD_GRID", "--out", "results/sweep"],
        ["sweep", "MALFORMED_GRID", "--out", "results/sweep"],
        ["sweep", "EMPTY_GRID", "--out", "results/sweep"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "BAD_GRID").write_text(json.dumps({"base": {"network": NET, "horizon": -3}, "grid": {}}))
    (tmp_path / "MALFORMED_GRID").write_text("{not json")
    (tmp_path / "EMPTY_GRID").write_text(json.dumps({"base": {"network": NET}, "grid": {"policy": []}}))
    assert main(argv) == 2
    _one_line_error(capsys)
    assert not (tmp_path / "results").exists()


def test_malformed_file(tmp_path, capsys):
    bad = tmp_path / "broken.net.xml"
    bad.write_text("<net><edge id='a'")
    assert main(["info", "--network", str(bad)]) == 2
    _one_line_error(capsys)


@pytest.mark.slow
def test_run_and_demo_write_results(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--network", NET, "--horizon", "8", "--seeds", "2", "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["seeds"] == [0, 1]
    # same command again: nothing to do, same summary (resume)
    assert main(["run", "--network", NET, "--horizon", "8", "--seeds", "2", "--out", str(out), "--no-progress"]) == 0
    demo = tmp_path / "demo"
    assert (
        main(
            [
                "demo",
                "--network",
                NET,
                "--horizon",
                "10",
                "--seeds",
                "1",
                "--policies",
                "ts,greedy",
                "--out",
                str(demo),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (demo / "regret.png").stat().st_size > 1000
    assert "BI-TS" in capsys.readouterr().out


@pytest.mark.slow
def test_console_script_has_help_everywhere():
    exe = os.path.join(os.path.dirname(sys.executable), "evroute")
    for args in ([], ["demo"], ["run"], ["route"], ["info"], ["data"], ["data", "fetch"]):
        r = subprocess.run([exe, *args, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "usage: evroute" in r.stdout
    r = subprocess.run([exe, "info", "--network", "atlantis"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "atlantis" in r.stderr


def test_data_convert(tmp_path, capsys):
    from pathlib import Path

    src = Path(__file__).parent / "fixtures" / "tiny.osm.xml"
    out = tmp_path / "tiny.net.xml"
    assert main(["data", "convert", str(src), str(out)]) == 0
    assert out.exists() and "passenger edges" in capsys.readouterr().out
    assert main(["data", "convert", str(tmp_path / "missing.osm"), str(tmp_path / "x.net.xml")]) == 2
    _one_line_error(capsys)
    assert not (tmp_path / "x.net.xml").exists()


@pytest.mark.slow
def test_sweep_command_runs_a_grid_and_resumes(tmp_path, capsys):
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps(
            {
                "base": {"network": NET, "route": "A", "horizon": 4, "seeds": [0, 1]},
                "grid": {"model": ["bi"], "policy": ["ts", "ucb"]},
            }
        )
    )
    out = tmp_path / "sweep"
    assert main(["sweep", str(grid), "--out", str(out), "--executor", "serial", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "bi-ts" in text and "BI-UCB" in text
    first = json.loads((out / "bi-ucb" / "summary.json").read_text())
    assert len(first["final_cumulative_regret_wh"]) == 2
    (out / "bi-ucb" / "seed_1" / "summary.json").unlink()  # resume re-runs only that seed, same numbers
    assert (
        main(["sweep", str(grid), "--out", str(out), "--executor", "process", "--workers", "2", "--no-progress"]) == 0
    )
    assert json.loads((out / "bi-ucb" / "summary.json").read_text()) == first
