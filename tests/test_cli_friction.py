"""CLI friction: light imports, ``python -m evroute``, progress only on a terminal, ``demo --overwrite``, ``info``
loads the network once, the run summary names the regret reference, negative values as plain arguments."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import evroute.network.registry as registry
from evroute.cli import build_parser, main
from evroute.cli.args import split_negative_values as _split_negative_values

NET = "synthetic:300:2"
HEAVY = ("torch", "gpytorch", "osmnx", "geopandas", "matplotlib", "pandas", "scipy", "numpy", "pydantic", "folium")


def test_cli_import_is_light():
    code = f"import sys, evroute.cli; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_python_dash_m_and_help():
    res = subprocess.run([sys.executable, "-m", "evroute", "--help"], capture_output=True, text=True, check=True)
    assert "demo" in res.stdout and "config" in res.stdout
    res = subprocess.run([sys.executable, "-m", "evroute", "--version"], capture_output=True, text=True, check=True)
    assert res.stdout.startswith("evroute ")


@pytest.mark.slow
def test_no_progress_bars_when_stderr_is_not_a_terminal(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "evroute",
            "run",
            "--network",
            NET,
            "--horizon",
            "30",
            "--seeds",
            "2",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.slow
def test_demo_overwrite(tmp_path, capsys):
    out = str(tmp_path / "demo")
    args = ["demo", "--network", NET, "--seeds", "1", "--policies", "ts", "--out", out]
    assert main([*args, "--horizon", "4"]) == 0
    assert main([*args, "--horizon", "5"]) == 2
    assert "different experiment" in capsys.readouterr().err
    assert main([*args, "--horizon", "5", "--overwrite"]) == 0
    assert json.loads((tmp_path / "demo" / "bi-ts" / "config.json").read_text())["horizon"] == 5


def test_info_loads_the_network_once(monkeypatch, capsys):
    calls = []
    original = registry.load_network

    def counting(*a, **kw):
        calls.append(a)
        return original(*a, **kw)

    monkeypatch.setattr(registry, "load_network", counting)
    assert main(["info", "--network", "synthetic:250:7"]) == 0
    assert len(calls) == 1
    assert "lcc_edges" in capsys.readouterr().out


def test_run_summary_names_the_regret_reference(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--network", NET, "--horizon", "3", "--seeds", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    ref = json.loads((out / "summary.json").read_text())["regret_reference"]
    assert ref["methods"] == [json.loads((out / "seed_0" / "summary.json").read_text())["optimal_method"]]
    assert f"regret reference: {ref['text']} ({ref['methods'][0]})" in text


@pytest.mark.parametrize(
    ("argv", "attr", "value"),
    [
        (["route", "--from", "-0.1,51.5", "--to", "-2.3,40"], "origin", "-0.1,51.5"),
        (["route", "--from", "1,2", "--to", "-2.3,40"], "dest", "-2.3,40"),
        (["run", "--from", "-271#3", "--to", "-5"], "origin", "-271#3"),
        (["run", "--from", "-271#3", "--to", "-5"], "dest", "-5"),
        (["run", "--env-seed", "-1"], "env_seed", -1),
    ],
)
def test_negative_values_need_no_equals_sign(argv, attr, value):
    parser = build_parser()
    assert getattr(parser.parse_args(_split_negative_values(parser, argv)), attr) == value


def test_negative_edge_id_reaches_the_route_resolver(capsys):
    from evroute.experiments.runner import load_linegraph

    goal = load_linegraph(NET).network.edge_ids[0]
    assert main(["run", "--network", NET, "--from", "-271#3", "--to", goal, "--horizon", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evroute: error:") and "'-271#3'" in err and "expected one argument" not in err


def test_regret_reference_text_prefers_the_summarys_own_reference(tmp_path):
    from evroute.cli.text import regret_reference_text

    ref = {"text": "best known route", "methods": ["ilp", "best-known"]}
    assert (
        regret_reference_text({"regret_reference": ref, "seeds": [0]}, tmp_path) == "best known route (ilp, best-known)"
    )
    assert regret_reference_text({"reference": "exact optimum", "seeds": [0]}, tmp_path) == "exact optimum"
    for s, m in ((0, "johnson"), (1, "rectified"), (2, "johnson")):
        (tmp_path / f"seed_{s}").mkdir()
        (tmp_path / f"seed_{s}" / "summary.json").write_text(json.dumps({"optimal_method": m}))
    assert regret_reference_text({"seeds": [0, 1, 2]}, tmp_path) == "johnson (seeds 0, 2); rectified (seeds 1)"
