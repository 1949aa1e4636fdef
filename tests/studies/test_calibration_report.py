"""The calibration page's generator (studies/trip_logs/calibration_report.py): coverage means, goal verdicts and bad
input, on rows made up here (the numbers are chosen so every verdict is known by hand)."""

from __future__ import annotations

import csv
from pathlib import Path

from studies.trip_logs.calibration_report import main, report_lines

FIELDS = [
    "network",
    "condition",
    "n_train",
    "seed",
    "model",
    "rmse_wh",
    "n_test",
    "cover90",
    "cover90_learn",
    "sd_mean_wh",
]


def _row(n: int, seed: int, model: str, cover: float, learn: float) -> dict[str, str]:
    return dict(
        network="monaco",
        condition="exact",
        n_train=str(n),
        seed=str(seed),
        model=model,
        rmse_wh="30.0",
        n_test="60",
        cover90=str(cover),
        cover90_learn=str(learn),
        sd_mean_wh="20.0",
    )


def test_report_means_and_verdicts(tmp_path: Path) -> None:
    rows = [
        dict(_row(0, 0, "prior", 0, 0), cover90=""),
        _row(10, 0, "bi", 0.80, 1.0),
        _row(10, 1, "bi", 1.00, 1.0),  # mean 0.90: inside
        _row(10, 0, "gp-exact", 0.70, 0.9),
        _row(10, 1, "gp-exact", 0.80, 0.9),  # mean 0.75: below; as learn 0.90 inside
    ]
    text = "\n".join(report_lines(rows, "x/rows.csv"))
    assert "| monaco | exact | 10 | bi | 2 | 60 | 90.0% (80%-100%) | 100.0% | 32.9 | 30.0 |" in text
    assert "* monaco, exact, N = 10, gp-exact: 75.0% below 85-95 %; as learn 90.0% (inside)." in text
    assert "met by 1 of 2 rows" in text
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "page.md"
    assert main(["--rows", str(path), "--output", str(out)]) == 0
    assert out.read_text() == "\n".join(report_lines(rows, str(path))) + "\n"


def test_bad_input_one_line_exit_2(tmp_path: Path, capsys) -> None:
    out = tmp_path / "page.md"
    assert main(["--rows", str(tmp_path / "none.csv"), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evroute: error:") and not out.exists()
    only_prior = tmp_path / "prior.csv"
    only_prior.write_text("network,model,cover90\nmonaco,prior,\n")
    assert main(["--rows", str(only_prior), "--output", str(out)]) == 2
    assert not out.exists()


def test_report_with_repeats_names_the_drives_and_both_rmses() -> None:
    """Rows of a study with ``--repeats 10``: the page says each held-out route was driven 10 times, the drives per
    seed come from ``n_drives`` and the route-mean RMSE is the mean over seeds (20 and 24: 22.0)."""
    rows = [
        dict(_row(0, 0, "prior", 0, 0), cover90="", repeats="10", n_drives="600", rmse_mean_wh="40.0"),
        dict(_row(100, 0, "bi", 0.9, 0.9), repeats="10", n_drives="600", rmse_mean_wh="20.0"),
        dict(_row(100, 1, "bi", 0.9, 0.9), repeats="10", n_drives="600", rmse_mean_wh="24.0"),
    ]
    text = "\n".join(report_lines(rows, "x/rows.csv"))
    assert "monaco: 60 held-out routes, each driven 10 times in a second SUMO run" in text
    assert "| monaco | exact | 100 | bi | 2 | 600 | 90.0% (90%-90%) | 90.0% | 32.9 | 30.0 | 22.0 |" in text
