import json

import numpy as np
import pandas as pd
import pytest

from evroute.bandit import RoutingBandit
from evroute.errors import ParameterError, UnknownEdgeError, UnknownNetworkError
from evroute.experiments import ExperimentConfig, load_rounds, run_experiment

TIMING = ["posterior_ms", "index_ms", "oracle_ms", "update_ms"]


def _cfg(**kw):
    base = {"network": "synthetic:400:2", "route": "A", "model": "bi", "policy": "ts", "horizon": 25, "seeds": (0, 1)}
    base.update(kw)
    return ExperimentConfig(**base)


def _rounds(d):
    return load_rounds(d).drop(columns=TIMING)


def test_results_layout_and_reproducibility(tmp_path):
    s1 = run_experiment(_cfg(), tmp_path / "a", progress=False)
    s2 = run_experiment(_cfg(), tmp_path / "b", progress=False)
    for name in ("config.json", "meta.json", "summary.json", "seed_0/rounds.csv", "seed_1/summary.json"):
        assert (tmp_path / "a" / name).exists()
    assert not (tmp_path / "a" / "seed_0" / "checkpoint.npz").exists()
    pd.testing.assert_frame_equal(_rounds(tmp_path / "a"), _rounds(tmp_path / "b"))
    assert s1["final_cumulative_regret_wh"] == s2["final_cumulative_regret_wh"]
    df = _rounds(tmp_path / "a")
    assert len(df) == 50 and set(df.seed) == {0, 1}
    g = df[df.seed == 0]
    np.testing.assert_allclose(g.regret_wh.cumsum(), g.cumulative_regret_wh)
    np.testing.assert_allclose(g.regret_wh, g.expected_wh - g.optimal_wh)
    assert (g.regret_wh > -1e-9).all() or json.loads((tmp_path / "a/seed_0/summary.json").read_text())[
        "optimal_method"
    ] == "rectified"
    # different seeds differ
    assert not g.route.equals(df[df.seed == 1].route.reset_index(drop=True))


def test_killed_run_resumes_to_identical_results(tmp_path, monkeypatch):
    cfg = _cfg(seeds=(0,), horizon=30)
    run_experiment(cfg, tmp_path / "full", progress=False, checkpoint_every=5)
    original = RoutingBandit.step

    def dying_step(self):
        if self.t == 17:
            raise KeyboardInterrupt
        return original(self)

    monkeypatch.setattr(RoutingBandit, "step", dying_step)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "resumed", progress=False, checkpoint_every=5)
    assert len(pd.read_csv(tmp_path / "resumed/seed_0/rounds.csv")) == 17
    assert (tmp_path / "resumed/seed_0/checkpoint.npz").exists()
    monkeypatch.setattr(RoutingBandit, "step", original)
    run_experiment(cfg, tmp_path / "resumed", progress=False, checkpoint_every=5)
    pd.testing.assert_frame_equal(_rounds(tmp_path / "full"), _rounds(tmp_path / "resumed"))


@pytest.mark.parametrize(
    ("kw", "err"),
    [
        ({"network": "atlantis"}, UnknownNetworkError),
        ({"route": None, "start": "nope", "goal": "nope2"}, UnknownEdgeError),
        ({"model": "oracle"}, ParameterError),
    ],
)
def test_bad_input_leaves_no_results_directory(tmp_path, kw, err):
    with pytest.raises(err):
        run_experiment(_cfg(**kw), tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_config_validation():
    with pytest.raises(ParameterError):
        _cfg(policy="ucb", policy_params={"beta_scale": -1.0})
    with pytest.raises(ParameterError):
        _cfg(horizon=0)
    with pytest.raises(ParameterError):
        _cfg(seeds=(1, 1))
    with pytest.raises(ParameterError):
        ExperimentConfig.from_dict({"networkk": "x"})


def test_other_experiment_in_same_directory_is_refused(tmp_path):
    run_experiment(_cfg(horizon=5, seeds=(0,)), tmp_path / "o", progress=False)
    with pytest.raises(ParameterError, match="different experiment"):
        run_experiment(_cfg(horizon=6, seeds=(0,)), tmp_path / "o", progress=False)


@pytest.mark.slow
def test_thompson_sampling_regret_grows_sublinearly(tmp_path):
    cfg = _cfg(network="synthetic:600:1", horizon=150, seeds=(0, 1, 2))
    run_experiment(cfg, tmp_path / "ts", progress=False)
    df = load_rounds(tmp_path / "ts")
    per_round = df.groupby("round").regret_wh.mean().to_numpy()
    first, last = per_round[:50].mean(), per_round[-50:].mean()
    assert first > 0
    assert last < 0.5 * first  # the per-round regret falls: cumulative regret flattens
