"""Every bad input is one line ``evroute: error: ...`` on stderr, exit status 2, no traceback, and no new file.

Runs the CLI in-process (``main``) with the working directory in a temporary folder, so default outputs
(``results/...``) would land there; the folder's file list is compared before and after each case.  Cases cover the
issue's list (types, ranges, unknown keys, files that are folders / lists / read-only / full, parameter errors that
used to appear after the results folder existed) and more.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import urllib.error
import warnings
from pathlib import Path

import pytest

from evroute.cli import main

NET = "synthetic:300:2"
ROUTE = ["route", "--network", NET, "--from", "@EDGE0", "--to", "@EDGE1"]
RUN = ["run", "--network", NET, "--horizon", "3"]
FIXTURE_OSM = Path(__file__).parent / "fixtures" / "tiny.osm.xml"


def _readonly_dir(tmp: Path) -> str:
    """A folder nobody may write into: chmod 555, or for root (who ignores modes) a path in sysfs."""
    if os.geteuid() == 0:
        return "/sys/evroute-readonly-test"
    d = tmp / "ro"
    d.mkdir()
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return str(d)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _write(root: Path, name: str, obj: object) -> str:
    p = root / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return name


GRID_OK_BASE = {"network": NET, "horizon": 2}

CASES: dict[str, object] = {
    # --- issue list
    "model-param float for int": RUN + ["--model", "gp", "--model-param", "n_inducing=1.5"],
    "env-seed negative": RUN + ["--env-seed=-1"],
    "vehicle file is a list": RUN + ["--vehicle", "@vehicle_list.json"],
    "config is a directory": RUN + ["--config", "@cfgdir"],
    "config holds a list": RUN + ["--config", "@cfg_list.json"],
    "config seeds an int": RUN + ["--config", "@cfg_seeds_int.json"],
    "config horizon abc": ["run", "--config", "@cfg_horizon_abc.json"],
    "config policy_params list": ["run", "--config", "@cfg_pp_list.json"],
    "out is a file": RUN + ["--out", "@afile.txt"],
    "out read-only": RUN + ["--out", "@RO/out"],
    "out full disk": RUN + ["--out", "full"],
    "sweep grid a list": ["sweep", "@grid_list.json", "--out", "sw"],
    "data fetch read-only": ["data", "fetch", "monaco", "--cache-dir", "@RO/data"],
    "data convert read-only": ["data", "convert", str(FIXTURE_OSM), "@RO/x.net.xml"],
    "seeds huge range": RUN + ["--seeds", "0-100000000000"],
    "vehicle mass_kg true": RUN + ["--vehicle", "@vehicle_bool.json"],
    "config horizon 10.7": ["run", "--config", "@cfg_horizon_float.json"],
    "seeds count huge": RUN + ["--seeds", "1000000000"],
    "start equals goal": ["run", "--network", NET, "--from", "@EDGE0", "--to", "@EDGE0"],
    "workers 0 on run": RUN + ["--workers", "0"],
    "route from nan": ["route", "--network", NET, "--from", "nan,nan", "--to", "@EDGE0"],
    "sweep misspelt grid key": ["sweep", "@grid_misspelt.json", "--out", "sw"],
    "sweep misspelt base key": ["sweep", "@grid_misspelt_base.json", "--out", "sw"],
    "data convert full disk": ["data", "convert", str(FIXTURE_OSM), "conv.net.xml"],
    "model param range (kr hops -1)": RUN + ["--model", "kr", "--model-param", "hops=-1"],
    "env param range": RUN + ["--env-param", "noise_frac=-1"],
    # --- issue 25: validated too late / accepted silently
    "gp graph_nu -1": RUN + ["--model", "gp", "--model-param", "graph_nu=-1"],
    "ucb beta_scale 1e308": RUN + ["--policy", "ucb", "--policy-param", "beta_scale=1e308"],
    "bucb beta_scale 1e308": RUN + ["--policy", "bucb", "--policy-param", "beta_scale=1e308"],
    "vehicle mass 1e300": RUN + ["--vehicle", "@vehicle_mass_huge.json"],
    "vehicle front area 1e6": RUN + ["--vehicle", "@vehicle_area_huge.json"],
    "vehicle drag 50": RUN + ["--vehicle", "@vehicle_drag_huge.json"],
    "route vehicle mass 1e300": ROUTE + ["--vehicle", "@vehicle_mass_huge.json"],
    "gp-exact dense_max -1": RUN + ["--model", "gp-exact", "--model-param", "dense_max=-1"],
    "gp-exact diag_hops -1": RUN + ["--model", "gp-exact", "--model-param", "diag_hops=-1"],
    "gp-exact graph_tol NaN": RUN + ["--model", "gp-exact", "--model-param", "graph_tol=NaN"],
    "gp-exact graph_tol inf": RUN + ["--model", "gp-exact", "--model-param", "graph_tol=Infinity"],
    "gp-exact seed -1": RUN + ["--model", "gp-exact", "--model-param", "seed=-1"],
    "paper env dense_max -1": RUN + ["--env", "paper", "--env-param", "dense_max=-1"],
    "paper env n_features 0": RUN + ["--env", "paper", "--env-param", "n_features=0"],
    "paper env graph_nu -1": RUN + ["--env", "paper", "--env-param", "graph_nu=-1"],
    "drift_period with drift slow": RUN
    + ["--env", "drifting", "--env-param", "drift=slow", "--env-param", "drift_period=5"],
    "drift_period on a static env": RUN + ["--env", "paper", "--env-param", "drift_period=5"],
    "sumo-replay demand_seed -1": RUN + ["--env", "sumo-replay", "--env-param", "demand_seed=-1"],
    "route max-snap-m inf": ROUTE + ["--max-snap-m", "inf"],
    "route max-snap-m nan": ROUTE + ["--max-snap-m", "nan"],
    "route max-snap-m 0": ROUTE + ["--max-snap-m", "0"],
    # --- types and ranges of flags
    "horizon 0": RUN + ["--horizon", "0"],
    "horizon float": ["run", "--network", NET, "--horizon", "2.5"],
    "horizon text": ["run", "--network", NET, "--horizon", "abc"],
    "seeds zero": RUN + ["--seeds", "0"],
    "seeds negative count": RUN + ["--seeds", "-3"],
    "seeds backwards range": RUN + ["--seeds", "5-2"],
    "seeds text": RUN + ["--seeds", "a,b"],
    "seeds duplicate": RUN + ["--seeds", "1,1"],
    "seeds too large": RUN + ["--seeds", "5000000000,1"],
    "env-seed text": RUN + ["--env-seed", "x"],
    "env-seed huge": RUN + ["--env-seed", str(2**40)],
    "workers negative": RUN + ["--workers", "-2"],
    "sweep workers 0": ["sweep", "@grid_ok.json", "--out", "sw", "--workers", "0"],
    "demo workers 0": ["demo", "--workers", "0"],
    "demo horizon 0": ["demo", "--horizon", "0"],
    "demo bad policy": ["demo", "--network", NET, "--policies", "ts,nope", "--horizon", "2"],
    "demo empty policies": ["demo", "--network", NET, "--policies", ",", "--horizon", "2"],
    "demo out is a file": ["demo", "--network", NET, "--horizon", "2", "--seeds", "1", "--out", "@afile.txt"],
    "unknown model": RUN + ["--model", "nope"],
    "unknown policy": RUN + ["--policy", "nope"],
    "policy param unknown": RUN + ["--policy", "ucb", "--policy-param", "betascale=1"],
    "policy param text": RUN + ["--policy", "ucb", "--policy-param", "beta_scale=abc"],
    "policy param bool": RUN + ["--policy", "bucb", "--policy-param", "xi=true"],
    "policy param negative": RUN + ["--policy", "ucb", "--policy-param", "beta_scale=-2"],
    "policy param nan": RUN + ["--policy", "ucb", "--policy-param", "beta_scale=NaN"],
    "policy param not NAME=VALUE": RUN + ["--policy", "ucb", "--policy-param", "beta_scale"],
    "policy params on a learner": RUN + ["--model", "routeset", "--policy-param", "beta_scale=1"],
    "learner with unsupported policy": RUN + ["--model", "routeset", "--policy", "bucb"],
    "model param unknown": RUN + ["--model-param", "nope=1"],
    "model param bool for float": RUN + ["--model-param", "prior_var_scale=true"],
    "gp param unknown": RUN + ["--model", "gp", "--model-param", "n_inducng=10"],
    "gp param zero": RUN + ["--model", "gp", "--model-param", "n_inducing=0"],
    "gp dtype": RUN + ["--model", "gp", "--model-param", "dtype=float16"],
    "kr param text": RUN + ["--model", "kr", "--model-param", "hops=two"],
    "routeset k float": RUN + ["--model", "routeset", "--model-param", "k=2.5"],
    "env param unknown": RUN + ["--env-param", "lenghtscale=1"],
    "env param bool": RUN + ["--env-param", "lengthscale=true"],
    "env param product weight": RUN + ["--env-param", "product_weight=2"],
    "env drift unknown": RUN + ["--env-param", "drift=weekly"],
    "env drift param without drift": RUN + ["--env-param", "drift_period=5"],
    "env drift param text": RUN + ["--env-param", "drift=daily", "--env-param", "drift_period=x"],
    "regret reference bad": RUN + ["--regret-reference", "best"],
    "potential bad": RUN + ["--potential", "gravity"],
    "unknown network": RUN[:1] + ["--network", "atlantis"],
    "synthetic bad size": ["run", "--network", "synthetic:abc"],
    "missing network file": ["run", "--network", "/nonexistent/x.net.xml"],
    "unknown route": RUN + ["--route", "Z"],
    "unknown start edge": ["run", "--network", NET, "--from", "nope", "--to", "@EDGE0"],
    "start without goal": ["run", "--network", NET, "--from", "@EDGE0"],
    "vehicle unknown": RUN + ["--vehicle", "tesla"],
    "vehicle missing file": RUN + ["--vehicle", "/nonexistent/v.json"],
    "vehicle unknown key": RUN + ["--vehicle", "@vehicle_unknown_key.json"],
    "vehicle negative mass": RUN + ["--vehicle", "@vehicle_negative.json"],
    "vehicle malformed": RUN + ["--vehicle", "@malformed.json"],
    "vehicle efficiency > 1": RUN + ["--vehicle", "@vehicle_eff.json"],
    # --- config files
    "config missing": ["run", "--config", "/nonexistent/c.json"],
    "config malformed": ["run", "--config", "@malformed.json"],
    "config unknown key": ["run", "--config", "@cfg_unknown.json"],
    "config horizon bool": ["run", "--config", "@cfg_horizon_bool.json"],
    "config seeds text": ["run", "--config", "@cfg_seeds_text.json"],
    "config env not object": ["run", "--config", "@cfg_env_list.json"],
    "config model params wrong type": ["run", "--config", "@cfg_mp_type.json"],
    "config network empty": ["run", "--config", "@cfg_network_empty.json"],
    "config binary file": ["run", "--config", "@binary.bin"],
    # --- sweep grids
    "sweep grid missing": ["sweep", "/nonexistent/g.json", "--out", "sw"],
    "sweep grid malformed": ["sweep", "@malformed.json", "--out", "sw"],
    "sweep grid empty": ["sweep", "@grid_empty.json", "--out", "sw"],
    "sweep grid values not a list": ["sweep", "@grid_scalar.json", "--out", "sw"],
    "sweep grid empty list": ["sweep", "@grid_empty_list.json", "--out", "sw"],
    "sweep grid bad value at point 2": ["sweep", "@grid_bad_point.json", "--out", "sw"],
    "sweep grid top-level typo": ["sweep", "@grid_top_typo.json", "--out", "sw"],
    "sweep out is a file": ["sweep", "@grid_ok.json", "--out", "@afile.txt"],
    "sweep out read-only": ["sweep", "@grid_ok.json", "--out", "@RO/sw"],
    # --- route / info / data
    "route from out of range": ["route", "--network", NET, "--from", "500,100", "--to", "@EDGE0"],
    "route from inf": ["route", "--network", NET, "--from", "inf,0", "--to", "@EDGE0"],
    "route from three numbers": ["route", "--network", NET, "--from", "1,2,3", "--to", "@EDGE0"],
    "route unknown edge": ["route", "--network", NET, "--from", "nope", "--to", "@EDGE0"],
    "route vehicle bad": ROUTE + ["--vehicle", "@vehicle_bool.json"],
    "route geojson read-only": ROUTE + ["--geojson", "@RO/r.geojson"],
    "route geojson full disk": ROUTE + ["--geojson", "r.geojson"],
    "info unknown network": ["info", "--network", "atlantis"],
    "data fetch unknown": ["data", "fetch", "atlantis"],
    "data convert missing input": ["data", "convert", "/nonexistent/x.osm", "x.net.xml"],
    "data convert into a file's folder": ["data", "convert", str(FIXTURE_OSM), "@afile.txt/x.net.xml"],
    # --- argparse
    "unknown command": ["fly"],
    "unknown option": RUN + ["--speed", "3"],
    "missing option value": ["run", "--network"],
    "bad executor": RUN + ["--executor", "cloud"],
    "bad regret choice": RUN + ["--regret-reference", "exactly"],
}

FULL_DISK = {"out full disk", "data convert full disk", "route geojson full disk"}


@pytest.fixture(scope="module")
def edges():
    from evroute.experiments.runner import load_linegraph

    lg = load_linegraph(NET)
    return lg.network.edge_ids[0], lg.network.edge_ids[lg.n_nodes // 2]


def _setup(root: Path) -> None:
    _write(root, "vehicle_list.json", [1, 2, 3])
    _write(root, "vehicle_bool.json", {"mass_kg": True})
    _write(root, "vehicle_unknown_key.json", {"mass": 1000})
    _write(root, "vehicle_negative.json", {"mass_kg": -5})
    _write(root, "vehicle_eff.json", {"propulsion_efficiency": 1.5})
    _write(root, "vehicle_mass_huge.json", {"mass_kg": 1e300})
    _write(root, "vehicle_area_huge.json", {"front_area_m2": 1e6})
    _write(root, "vehicle_drag_huge.json", {"drag_coefficient": 50})
    _write(root, "malformed.json", "{not json")
    (root / "binary.bin").write_bytes(b"\xff\xfe\x00\x81")
    (root / "cfgdir").mkdir()
    (root / "afile.txt").write_text("x")
    _write(root, "cfg_list.json", [1, 2])
    _write(root, "cfg_seeds_int.json", {"network": NET, "seeds": 5})
    _write(root, "cfg_horizon_abc.json", {"network": NET, "horizon": "abc"})
    _write(root, "cfg_horizon_float.json", {"network": NET, "horizon": 10.7})
    _write(root, "cfg_horizon_bool.json", {"network": NET, "horizon": True})
    _write(root, "cfg_pp_list.json", {"network": NET, "policy_params": [1, 2]})
    _write(root, "cfg_unknown.json", {"network": NET, "hoizon": 3})
    _write(root, "cfg_seeds_text.json", {"network": NET, "seeds": ["a"]})
    _write(root, "cfg_env_list.json", {"network": NET, "environment": [1]})
    _write(root, "cfg_mp_type.json", {"network": NET, "model": "gp", "model_params": {"batch_size": "big"}})
    _write(root, "cfg_network_empty.json", {"network": ""})
    _write(root, "grid_list.json", [{"policy": "ts"}])
    _write(root, "grid_ok.json", {"base": GRID_OK_BASE, "grid": {"policy": ["ts"]}})
    _write(root, "grid_misspelt.json", {"base": GRID_OK_BASE, "grid": {"polcy": ["ts", "ucb"]}})
    _write(root, "grid_misspelt_base.json", {"base": {**GRID_OK_BASE, "horizn": 3}, "grid": {"policy": ["ts"]}})
    _write(root, "grid_empty.json", {})
    _write(root, "grid_scalar.json", {"base": GRID_OK_BASE, "grid": {"policy": "ts"}})
    _write(root, "grid_empty_list.json", {"base": GRID_OK_BASE, "grid": {"policy": []}})
    _write(root, "grid_bad_point.json", {"base": GRID_OK_BASE, "grid": {"horizon": [2, 0]}})
    _write(root, "grid_top_typo.json", {"bsae": GRID_OK_BASE, "grid": {"policy": ["ts"]}})


def _resolve(argv: list[str], root: Path, ro: str, edges: tuple[str, str]) -> list[str]:
    out = []
    for a in argv:
        a = a.replace("@EDGE0", edges[0]).replace("@EDGE1", edges[1])
        if a.startswith("@RO"):
            a = ro + a[3:]
        elif a.startswith("@"):
            a = str(root / a[1:])
        out.append(a)
    return out


def _no_space(*_args, **_kw):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fake_netconvert(tmp_path: Path) -> Path:
    """A netconvert that succeeds but writes a truncated network (what a full disk did)."""
    exe = tmp_path / "fake_netconvert"
    exe.write_text(
        f"#!{sys.executable}\nimport sys\nout = sys.argv[sys.argv.index('-o') + 1]\n"
        "open(out, 'w').write('<net version=\"1.20\">\\n<edge id=\"a\"')\n"
    )
    exe.chmod(0o755)
    return exe


def test_at_least_60_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_clean_line(name, tmp_path, monkeypatch, capsys, edges):
    root = tmp_path / "work"
    root.mkdir()
    _setup(root)
    monkeypatch.chdir(root)
    ro = _readonly_dir(tmp_path)
    argv = _resolve(CASES[name], root, ro, edges)
    if name in FULL_DISK:
        monkeypatch.setattr(os, "fsync", _no_space)
        import evroute.network.netconvert as nc

        monkeypatch.setattr(nc, "netconvert_binary", lambda: _fake_netconvert(tmp_path))
    before = _files(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
    captured = capsys.readouterr()
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    err = captured.err.strip()
    assert code == 2, (name, captured.out, err)
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("evroute: error: "), err
    assert _files(root) == before, f"{name} left files: {_files(root) - before}"
    assert not Path(ro).exists() or not any(Path(ro).iterdir())


#: messages that must name the problem, not a Python internal
MESSAGES = {
    "gp-exact graph_tol NaN": "'graph_tol': must be a finite number",
    "vehicle mass 1e300": "mass_kg must be in (0, 100000]",
    "ucb beta_scale 1e308": "beta_scale must be in [0, 1e+06]",
    "gp graph_nu -1": "graph_nu must be > 0",
    "drift_period on a static env": "needs --env drifting",
    "sumo-replay demand_seed -1": "demand_seed must be in [0, 2**32 - 1]",
    "route max-snap-m inf": "finite distance > 0",
}


@pytest.mark.parametrize("name", list(MESSAGES))
def test_message_names_the_problem(name, tmp_path, monkeypatch, capsys, edges):
    root = tmp_path / "work"
    root.mkdir()
    _setup(root)
    monkeypatch.chdir(root)
    try:
        main(_resolve(CASES[name], root, _readonly_dir(tmp_path), edges))
    except SystemExit:
        pass
    assert MESSAGES[name] in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        (
            ["--policy", "ucb", "--policy-param", "beta_scale=1e308"],
            ["--policy", "ucb", "--policy-param", "beta_scale=0.5"],
        ),
        (["--vehicle", "@vehicle_mass_huge.json"], ["--vehicle", "compact_ev"]),
        (
            ["--model", "gp-exact", "--model-param", "dense_max=-1"],
            ["--model", "gp-exact", "--model-param", "dense_max=10"],
        ),
    ],
)
def test_rerun_with_a_good_value_after_a_rejected_one(bad, good, tmp_path, monkeypatch, capsys, edges):
    """The README's promise: a rejected value leaves nothing behind, so the corrected command (same default --out)
    runs instead of being refused as "a different experiment"."""
    root = tmp_path / "work"
    root.mkdir()
    _setup(root)
    monkeypatch.chdir(root)
    ro = _readonly_dir(tmp_path)
    assert main(_resolve(RUN + ["--no-progress"] + bad, root, ro, edges)) == 2
    assert not (root / "results").exists()
    assert main(_resolve(RUN + ["--no-progress"] + good, root, ro, edges)) == 0, capsys.readouterr().err
    assert len(list((root / "results").iterdir())) == 1


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gp-exact", "gp"])
def test_seed_model_parameter_runs(model, tmp_path, monkeypatch, capsys):
    """``--model-param seed=1`` (issue 25: a traceback, ``call_checked() got multiple values for keyword argument
    'seed'``) runs, and the config records the seed."""
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--network", "synthetic:500:0", "--horizon", "3", "--model", model, "--model-param", "seed=1"]
    assert main([*argv, "--no-progress", "--out", "r"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "r" / "config.json").read_text())["model_params"] == {"seed": 1}
    assert (tmp_path / "r" / "summary.json").is_file()


def test_data_fetch_offline_leaves_no_folder(tmp_path, monkeypatch, capsys):
    """A failed download removes the cache folders it created (issue 25: an empty folder stayed behind)."""
    import evroute.network.registry as reg

    def offline(url, dest, timeout_s=120.0):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(reg, "_download", offline)
    target = tmp_path / "new" / "cache"
    assert main(["data", "fetch", "monaco", "--cache-dir", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evroute: error: cannot download monaco") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
