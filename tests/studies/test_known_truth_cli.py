"""The known-truth study's command (studies/trip_logs/known_truth.py): bad options give one ``evroute: error:`` line,
exit 2 and nothing written (before any network loads or SUMO runs); the single-process stand-in of the pool maps
like ``Pool.imap_unordered``."""

from __future__ import annotations

from pathlib import Path

import pytest

from studies.trip_logs.known_truth import _pick, _Serial, main


@pytest.mark.parametrize(
    "extra",
    [
        ["--workers", "3"],
        ["--workers", "0"],
        ["--prior", "nope"],
        ["--ns", "10,2000"],
        ["--noise-fracs", "0.1,x"],
        ["--models", "bi,svm"],
    ],
)
def test_bad_options_one_line_exit_2_nothing_written(extra: list[str], tmp_path: Path, capsys) -> None:
    out = tmp_path / "study"
    assert main(["--network", "monaco", "--train", "1000", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("evroute: error:")
    assert not out.exists()


def test_serial_pool_and_cell_draws() -> None:
    """``_Serial`` maps in order; a cell's training trips are the same for the same (N, seed), distinct, in range,
    and the N = 10 draw of a seed is not simply a prefix of another seed's (seeds are independent draws)."""
    with _Serial() as pool:
        assert list(pool.imap_unordered(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]
    a, b = _pick(100, 3, 1000), _pick(100, 3, 1000)
    assert (a == b).all() and len(set(a.tolist())) == 100 and a.min() >= 0 and a.max() < 1000
    assert not (_pick(10, 0, 1000) == _pick(10, 1, 1000)).all()
    assert len(_pick(5000, 0, 1000)) == 1000  # N above the pool: the whole pool
