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


def test_coverage_goal_within_the_rows_rounding() -> None:
    """Five seeds covering 58, 57, 57, 58 and 55 of 60 trips cover 285 / 300 = 95.0 % exactly; their shares as the
    rows store them (4 decimals) average 0.95002: inside the goal in both reports; 0.9501 (beyond the rounding) is
    not, nor is 0.8499."""
    import numpy as np

    from studies.trip_logs.calibration_report import _inside
    from studies.trip_logs.known_truth_goals import _in_goal

    stored = np.array([float(f"{k / 60:.4f}") for k in (58, 57, 57, 58, 55)])
    assert stored.mean() > 0.95 and _in_goal(stored.mean()) and _inside(stored.mean())
    assert not _in_goal(0.9501) and not _inside(0.9501) and not _in_goal(0.8499) and not _inside(0.8499)
    assert _in_goal(0.85) and _inside(0.85)


def test_cells_one_seed_where_n_draws_the_whole_pool() -> None:
    """N at or above the pool's size draws the whole pool for every seed (the same fit): one cell, seed 0."""
    from studies.trip_logs.known_truth import _cells

    assert _cells([10, 1000, 2000], 3, 1000) == [(10, 0), (10, 1), (10, 2), (1000, 0), (2000, 0)]
    assert sorted(_pick(1000, 0, 1000).tolist()) == sorted(_pick(1000, 7, 1000).tolist()) == list(range(1000))


def test_matches_are_kept_without_pickle_and_read_back_exactly(tmp_path) -> None:  # noqa: ANN001
    """The study folder's matches round-trip through ``.npz`` (no pickle: a study folder can be handed over), with
    and without per-sample pieces; a damaged file reads as no matches (they are re-matched)."""
    import numpy as np

    from evroute.traces.mapmatch import MatchedTrace
    from studies.trip_logs.known_truth_data import _load_matches, _save_matches

    a = MatchedTrace(
        np.array([3, 3, -1, 5]), np.array([0.5, 9.0, 0.0, 1.25]), np.array([3, 4, 5]), np.array([0, 0, -1, 2]), 1
    )
    b = MatchedTrace(np.array([1, 2]), np.array([0.0, 2.0]), np.array([1, 2]), np.array([0, 1]), 2, np.array([0, 1]))
    store = tmp_path / "matched_exact.npz"
    _save_matches(store, {"trip_0": a, "trip/odd": b})
    got = _load_matches(store)
    assert set(got) == {"trip_0", "trip/odd"}
    for want, m in ((a, got["trip_0"]), (b, got["trip/odd"])):
        for f in ("edge", "offset_m", "path", "path_index"):
            np.testing.assert_array_equal(getattr(m, f), getattr(want, f))
        assert m.pieces == want.pieces
        assert (m.piece is None) == (want.piece is None)
    np.testing.assert_array_equal(got["trip/odd"].piece, b.piece)
    store.write_bytes(b"not a zip file")
    assert _load_matches(store) == {}


def test_append_keeps_an_existing_files_columns(tmp_path: Path) -> None:
    """Rows appended to a CSV written before a column was added keep its columns (the new one left out, nothing
    shifted); a new file gets every column."""
    from studies.trip_logs.known_truth_data import _append, _read

    old = tmp_path / "old.csv"
    _append(old, ["a", "b"], [{"a": 1, "b": 2}])
    _append(old, ["a", "b", "c"], [{"a": 3, "b": 4, "c": 5}])
    assert _read(old) == [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]
    new = tmp_path / "new.csv"
    _append(new, ["a", "b", "c"], [{"a": 3, "b": 4, "c": 5}])
    assert _read(new) == [{"a": "3", "b": "4", "c": "5"}]


def test_trip_effect_fit_marks_the_model_so_the_folds_come_out_with_the_effect() -> None:
    """``--trip-effect-fit``: the cell's model is fitted with the effect (``c`` held at 1) and marked as such, so the
    intervals (``trip_learning.route_noise``, as ``evroute learn`` serves them) take each fold out of the posterior
    with the covariance it was learned with (the fitted ``tau``) before fitting ``(k, tau^2)`` to the residuals, not
    without the effect (what the study did before: Luxembourg N = 1000 ``k`` 288, 100 % coverage).  Synthetic: 120
    trips, ``tau = 0.1``; the mixture equals ``out_of_fold_noise`` with the effect exactly (the same computation) and
    differs from it without (``k`` 11.8 vs 18.2 here)."""
    import numpy as np
    from test_trip_effect_fit import _simulate

    from evroute.experiments.trip_learning import route_noise
    from evroute.models.trip_effect import out_of_fold_noise
    from studies.trip_logs.known_truth_fit import fit_trip_effect as _fit_trip_effect

    model, _, _ = _simulate(0.1, 3, n_trips=120)
    phi = _fit_trip_effect(model)
    assert model.trip_effect_fit and model.prior_scale == 1.0 and phi == model.noise_scale
    assert model.trip_tau > 0.05
    post = model.posterior()
    args = (post.mean, post.covariance_of, model.trips, model.noise_scale)
    with_effect = out_of_fold_noise(*args, trip_effect=(model.prior_mean, model.trip_tau**2))
    without = out_of_fold_noise(*args)
    assert with_effect is not None and without is not None
    assert route_noise(model) == with_effect.pruned().to_dict()
    assert not np.isclose(with_effect.k_mean, without.k_mean, rtol=0.05)
