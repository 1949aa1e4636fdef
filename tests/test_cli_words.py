"""Words that are true (issue 25 item 6): README, help texts and messages say what the program does."""

from __future__ import annotations

import errno
import os
import re
import warnings
from pathlib import Path

import pytest

from evroute.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
TINY = ROOT / "data" / "sumo-tiny" / "grid.net.xml"


def test_readme_points_to_files_that_exist():
    for path in re.findall(r"`((?:data|evroute)/[\w./*-]+)`", README):
        matches = list(ROOT.glob(path)) if "*" in path else [ROOT / path] if (ROOT / path).exists() else []
        assert matches, f"README names {path}, which does not exist"
    assert "data/vehicles" not in README


def test_readme_names_the_cache_variable_and_a_plain_pip_install():
    assert "EVROUTE_CACHE" in README
    assert re.search(r"^pip install .*\.\s", README, re.M) or "pip install ." in README


def test_readme_demo_time_is_the_measured_range():
    """The demo's time is quoted as measured (issue 25: 42-57 s measured against a claimed 30 s)."""
    m = re.search(r"evroute demo` learns .*?\(offline; ([^)]*)\)", README, re.S)
    assert m and "30 s" not in m.group(1) and "measured" in m.group(1)


def _help(command: str) -> str:
    action = next(a for a in build_parser()._actions if a.dest == "command")
    assert isinstance(action.choices, dict)  # the subparsers action: command name -> parser
    sub = action.choices[command]
    return " ".join(sub.format_help().split())


def test_start_goal_help_says_points_work():
    text = _help("run")
    assert "--from FROM start edge id, or a point LON,LAT" in text
    assert "--to TO goal edge id, or a point LON,LAT" in text


def test_unknown_id_is_not_called_outside_the_component(capsys):
    code = main(["route", "--network", "synthetic:300:2", "--from", "e0", "--to", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and "goal edge 'nope' is not an edge of network 'synthetic:300:2'" in err
    assert "strongly connected" not in err


def test_id_outside_the_component_says_so():
    """An edge that exists but cannot be returned from: named as such, with the component's size."""
    from netfixtures import grid_network

    from evroute.errors import UnknownEdgeError
    from evroute.linegraph import build_line_graph
    from evroute.routes import resolve_endpoint

    net = grid_network(3, 2)
    # a one-way spur: an edge into a new dead-end junction cannot be left again, so it is outside the component
    import dataclasses

    import numpy as np

    spur = dataclasses.replace(
        net,
        edge_ids=np.append(net.edge_ids, "spur"),
        from_node=np.append(net.from_node, net.to_node[0]),
        to_node=np.append(net.to_node, "dead-end"),
        length_m=np.append(net.length_m, 50.0),
        speed_mps=np.append(net.speed_mps, 10.0),
        z_from_m=np.append(net.z_from_m, net.z_to_m[0]),
        z_to_m=np.append(net.z_to_m, net.z_to_m[0]),
        geometry=[*net.geometry, net.geometry[0][::-1]],
        turns=np.vstack([net.turns, [[0, net.n_edges]]]),
    )
    lg = build_line_graph(spur)
    assert lg.n_nodes == net.n_edges
    with pytest.raises(UnknownEdgeError, match=rf"outside its largest strongly connected component \({net.n_edges} of"):
        resolve_endpoint(lg, "spur", "goal")


def test_one_seed_prints_no_standard_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--network", "synthetic:300:2", "--horizon", "3", "--no-progress", "--out", "r"]) == 0
    out = capsys.readouterr().out
    assert "+-" not in out and "(one seed)" in out
    assert main(["run", "--network", "synthetic:300:2", "--horizon", "3", "--seeds", "2", "--no-progress"]) == 0
    assert "+- " in capsys.readouterr().out  # two seeds: mean +- s.e.


def _flat_copy(tmp_path: Path) -> Path:
    text = TINY.read_text()
    text = re.sub(r' z="[^"]*"', "", text)
    text = re.sub(r"(-?\d+\.\d+),(-?\d+\.\d+),(-?\d+\.\d+)", r"\1,\2", text)  # x,y,z shape points -> x,y
    p = tmp_path / "flat.net.xml"
    p.write_text(text)
    return p


def test_sumo_net_without_elevation_warns_like_an_osm_file(tmp_path):
    from evroute.network import load_network

    with pytest.warns(UserWarning, match="flat has no elevation data: the network is flat"):
        net = load_network(_flat_copy(tmp_path))
    assert net.meta["warning"] == "no elevation data: the network is flat"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_network(TINY)  # with elevation: no warning


def test_route_sumo_routes_names_the_net_to_pair_with(tmp_path, capsys):
    from evroute.network import load_network

    net = load_network(TINY)
    rou = tmp_path / "r.rou.xml"
    a, b = net.edge_ids[0], net.edge_ids[-1]
    assert main(["route", "--network", str(TINY), "--from", a, "--to", b, "--sumo-routes", str(rou)]) == 0
    out = capsys.readouterr().out
    assert f"SUMO net: {TINY}  (run: sumo-gui -n {TINY} -r {rou})" in out
    assert main(["route", "--network", "synthetic:300:2", "--from", "e0", "--to", "e5", "--sumo-routes", str(rou)]) == 0
    assert "SUMO net: none" in capsys.readouterr().out  # synthetic ids are no SUMO ids


@pytest.mark.parametrize("target", ["dir", "readonly"])
def test_sumo_routes_errors_name_the_file_not_a_temp_file(target, tmp_path, capsys):
    if target == "dir":
        rou = tmp_path / "d.rou.xml"
        rou.mkdir()
    else:
        if os.geteuid() == 0:
            rou = Path("/sys/evroute-test.rou.xml")  # root ignores modes; sysfs refuses new files
        else:
            (tmp_path / "ro").mkdir(mode=0o555)
            rou = tmp_path / "ro" / "r.rou.xml"
    code = main(["route", "--network", "synthetic:300:2", "--from", "e0", "--to", "e5", "--sumo-routes", str(rou)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("evroute: error: ") and len(err.splitlines()) == 1
    assert ".tmp" not in err and str(rou.name) in err


def test_disk_full_names_the_path(tmp_path, monkeypatch, capsys):
    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "fsync", full)
    code = main(["route", "--network", "synthetic:300:2", "--from", "e0", "--to", "e5", "--geojson", "r.geojson"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("evroute: error: disk full writing r.geojson: No space left on device")
    assert ".tmp" not in err and len(err.splitlines()) == 1


def test_disk_full_during_a_run_names_the_results_file(tmp_path, monkeypatch, capsys):
    """A full disk while the first files are staged: the message names the results folder, not its staging copy."""

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "fsync", full)
    code = main(["run", "--network", "synthetic:300:2", "--horizon", "3", "--out", "res", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "disk full writing res/" in err and ".claim" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_run_sumo_routes_names_the_net_too(tmp_path, monkeypatch, capsys):
    from evroute.network import load_network

    net = load_network(TINY)
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--network", str(TINY), "--from", net.edge_ids[0], "--to", net.edge_ids[-1], "--horizon", "2"]
    assert main([*argv, "--out", "r", "--sumo-routes", "--no-progress"]) == 0
    assert f"SUMO net: {TINY}  (run: sumo-gui -n {TINY} -r r/routes.rou.xml)" in capsys.readouterr().out
