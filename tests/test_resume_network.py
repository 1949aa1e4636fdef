"""A results folder resumed with the same config must hold runs on the same network content: after the network data
or its loader change (e.g. OSM elevations smoothed along the roads), the same command would otherwise mix two networks
in one folder."""

from __future__ import annotations

import json

from evroute.cli import main

ARGS = ["run", "--network", "synthetic:200:1", "--horizon", "2", "--seeds", "1", "--no-progress"]


def test_resume_on_changed_network_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*ARGS, "--out", str(out)]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert len(meta["network_hash"]) == 64
    assert main([*ARGS, "--out", str(out)]) == 0  # same network: resumes (nothing left to do)
    meta["network_hash"] = "0" * 64  # as if the folder had been made on other network data
    (out / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main([*ARGS, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different network data" in err


def test_folder_without_hash_is_compared_by_network_statistics(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*ARGS, "--out", str(out)]) == 0
    meta = json.loads((out / "meta.json").read_text())
    del meta["network_hash"]  # a folder from before the hash existed
    (out / "meta.json").write_text(json.dumps(meta))
    assert main([*ARGS, "--out", str(out)]) == 0  # same statistics: resumes
    meta["network"]["max_abs_incline"] = 0.78  # statistics of another elevation model
    (out / "meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main([*ARGS, "--out", str(out)]) == 2
    assert "different network data" in capsys.readouterr().err
