"""studies.common.report / bench / bo_protocols: the shared study code of studies/, on hand-made run folders."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies.bo import protocols as bo_protocols
from studies.common import bench
from studies.common import report as R


def _seed(run: Path, seed: int, final: float, *, expected: list[float] | None = None, optimal_wh: float = 0.0) -> None:
    d = run / f"seed_{seed}"
    d.mkdir(parents=True)
    summary = {"seed": seed, "final_cumulative_regret_wh": final, "optimal_wh": optimal_wh, "optimal_method": "exact"}
    (d / "summary.json").write_text(json.dumps(summary))
    exp = expected if expected is not None else [1.0, 2.0]
    n = len(exp)
    pd.DataFrame(
        {
            "expected_wh": exp,
            "update_ms": np.arange(n) + 1.0,
            "posterior_ms": np.full(n, 2.0),
            "index_ms": np.zeros(n),
            "oracle_ms": np.full(n, 0.5),
        }
    ).to_csv(d / "rounds.csv", index=False)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    for s, v in {0: 10.0, 1: 20.0, 2: 60.0}.items():
        _seed(tmp_path / "A", s, v)
    for s, v in {0: 14.0, 1: 18.0, 3: 5.0}.items():  # seed 3 is beyond --seeds 3
        _seed(tmp_path / "B", s, v)
    return tmp_path


def test_route_and_method_helpers() -> None:
    assert R.parse_routes(["synthetic:2000:0:A", "monaco:B"]) == [("synthetic:2000:0", "A"), ("monaco", "B")]
    assert R.route_key("synthetic:2000:0", "A") == "synthetic_2000_0-A"
    args = argparse.Namespace(gp_model="gp-exact")
    assert R.resolve_method("GP-TS", args) == "gp-exact-ts"
    assert R.resolve_method("bi-ucb", args) == "bi-ucb"
    assert R.resolve_method("gp-ts", argparse.Namespace(gp_model="gp")) == "gp-ts"


def test_method_config_gives_model_params_to_gp_methods_only() -> None:
    ap = argparse.ArgumentParser()
    R.add_common_args(ap, runs="results/x")
    args = ap.parse_args(["--seeds", "2", "--horizon", "7", "--model-param", "n_inducing=50"])
    gp = R.method_config("synthetic:400:2", "A", "gp-ts", args)
    bi = R.method_config("synthetic:400:2", "A", "bi-bucb", args)
    assert (gp.model, gp.policy, gp.horizon, tuple(gp.seeds)) == ("gp", "ts", 7, (0, 1))
    assert gp.model_params == {"n_inducing": 50} and bi.model_params == {}
    assert bi.policy == "bucb" and bi.env == "paper"


def test_seed_finals_regret_row_and_tables(runs: Path) -> None:
    assert R.seed_finals(runs / "A") == {0: 10.0, 1: 20.0, 2: 60.0}
    m, se, n = R.regret_row(runs / "A", seeds=3)
    # 10, 20, 60: mean 30, squared deviations 400 + 100 + 900 = 1400, variance 700, s.e. sqrt(700 / 3)
    assert (m, n) == (30.0, 3) and se == pytest.approx(math.sqrt(700.0 / 3.0), rel=1e-15)
    assert R.fmt(m, se) == "30.0 +- 15.3"
    m1, se1, n1 = R.regret_row(runs / "A", seeds=1)  # one seed: the mean alone
    assert (m1, n1) == (10.0, 1) and math.isnan(se1) and R.fmt(m1, se1) == "10.0"
    assert R.fmt(math.nan, math.nan) == "--"

    per_seed = R.per_seed_lines(runs, ["A", "B", "missing"], 3, "run")
    assert per_seed[0] == "| run | seed 0 | seed 1 | seed 2 | median |"
    assert per_seed[2:] == ["| A | 10 | 20 | 60 | 20 |", "| B | 14 | 18 | -- | 16 |"]

    # paired over the seeds both finished below 3: 0 and 1; differences -4 and 2 -> mean -1, s.e. |(-4) - 2| / 2
    paired = R.paired_lines(runs, [("A", "B")], 3, "pair")
    assert paired[2] == "| A - B | -1.0 +- 3.0 | 1 of 2 |"


def test_timing_row_medians(runs: Path) -> None:
    row = R.timing_row(runs / "A")
    # every seed has update 1, 2; posterior 2; index 0; oracle 0.5 -> totals 3.5 and 4.5 (three seeds each)
    assert row["update_ms"] == 1.5 and row["posterior_ms"] == 2.0 and row["oracle_ms"] == 0.5
    assert row["total_ms"] == 4.0 and row["mean_ms"] == 4.0 and row["rounds"] == 6


def test_common_reference_finals(tmp_path: Path) -> None:
    # seed 0: A drove 5 + 7 Wh (reference 4.5 Wh), B drove 4 + 6 Wh (reference 5 Wh): the cheapest route known
    # is B's first route, 4 Wh, so A's regret is 12 - 2 * 4 = 4 and B's 10 - 2 * 4 = 2.
    _seed(tmp_path / "A", 0, 3.0, expected=[5.0, 7.0], optimal_wh=4.5)
    _seed(tmp_path / "B", 0, 0.0, expected=[4.0, 6.0], optimal_wh=5.0)
    finals, ref = R.common_reference_finals(tmp_path, ["A", "B"], seeds=1)
    assert ref == {0: 4.0}
    assert finals == {"A": [4.0], "B": [2.0]}


def test_write_runs_summary_on_real_runs(tmp_path: Path) -> None:
    from evroute.experiments import ExperimentConfig, run_experiment

    folders = []
    for policy in ("ts", "ucb"):
        cfg = ExperimentConfig(
            network="synthetic:400:2", route="A", model="bi", policy=policy, horizon=10, seeds=(0, 1)
        )
        folders.append(tmp_path / policy)
        run_experiment(cfg, folders[-1], progress=False)
    text = R.write_runs_summary(folders, tmp_path / "out", "t", ["a", "--out", "b"])
    assert text.startswith(f"Command: `python -m {R.SUMMARISE_MODULE} a --out b`")
    assert (tmp_path / "out.png").stat().st_size > 0 and (tmp_path / "out.md").read_text() == text
    for folder, line in zip(folders, [ln for ln in text.splitlines() if ln.startswith("| BI-")], strict=True):
        finals = [json.loads((folder / f"seed_{s}" / "summary.json").read_text()) for s in (0, 1)]
        a, b = (f["final_cumulative_regret_wh"] for f in finals)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[4:6] == ["2", "10"]  # seeds, T
        assert cells[6] == f"{(a + b) / 2:.1f} +- {abs(a - b) / 2:.1f}"  # two values: s.e. = |a - b| / 2


def test_available_networks_and_machine_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("EVROUTE_DATA", raising=False)
    assert bench.available_networks("synthetic:100:0,monaco,,luxembourg") == ["synthetic:100:0"]
    err = capsys.readouterr().err
    assert "skip monaco" in err and "skip luxembourg" in err
    monkeypatch.setenv("EVROUTE_DATA", "/somewhere")
    assert bench.available_networks("monaco,synthetic:100:0") == ["monaco", "synthetic:100:0"]
    line = bench.machine_line()
    assert f"{os.cpu_count()} cores" in line and f"numpy {np.__version__}" in line


def test_bo_protocol_instances() -> None:
    (inst,) = bo_protocols.kb_make_task("rkhs-se", 0)
    # 100 arms in [0, 1], the SE kernel's Gram matrix on them (unit diagonal), noise variance 1 % of f's range
    assert inst["points"].shape == (100, 1) and np.all((inst["points"] >= 0) & (inst["points"] < 1))
    np.testing.assert_allclose(inst["gram"], inst["kernel"](inst["points"], inst["points"]), rtol=0, atol=0)
    assert np.allclose(np.diag(inst["gram"]), 1.0)
    assert inst["r2"] == pytest.approx(0.01 * np.ptp(inst["f"]), rel=1e-15)
    again = bo_protocols.kb_make_task("rkhs-se", 0)[0]
    other = bo_protocols.kb_make_task("rkhs-se", 1)[0]
    assert np.array_equal(inst["f"], again["f"]) and not np.array_equal(inst["f"], other["f"])
    temp = bo_protocols.kb_make_task("temperature", 0)
    light = bo_protocols.kb_make_task("light", 0)
    assert len(temp) == 24 and temp[0]["gram"].shape == (54, 54)  # every 10th of 240 test snapshots, 54 sensors
    assert len(light) == 20 and light[0]["gram"].shape == (41, 41)  # every 10th of 192, 41 sensors


def test_boke_initial_design_is_a_latin_hypercube() -> None:
    from evroute.bo import get_function

    fn = get_function("hartmann3")
    x = bo_protocols.boke_initial_design(fn, seed=4)
    n = 3 * fn.dim
    assert x.shape == (n, fn.dim)
    u = fn.domain.to_unit(x)
    for j in range(fn.dim):  # one point in each of the n strata of every coordinate
        assert sorted(np.floor(u[:, j] * n).astype(int).tolist()) == list(range(n))
    assert np.array_equal(x, bo_protocols.boke_initial_design(fn, seed=4))


def test_one_seed_summary_has_no_standard_error(tmp_path: Path) -> None:
    from evroute.experiments import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(network="synthetic:400:2", route="A", model="bi", policy="ts", horizon=5, seeds=(0,))
    s = run_experiment(cfg, tmp_path / "one", progress=False)
    on_disk = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert s["se_final_regret_wh"] is None and on_disk["se_final_regret_wh"] is None  # JSON null, not 0 or NaN
    assert on_disk["mean_final_regret_wh"] == on_disk["final_cumulative_regret_wh"][0]
