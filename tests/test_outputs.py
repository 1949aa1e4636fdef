"""Outputs people use (issue 25 item 4): default results folders inside ``results/``, ``evroute plot OUT``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from evroute.cli import main
from evroute.experiments.output import default_results_dir, network_label, safe_name

TINY = Path(__file__).resolve().parent.parent / "data" / "sumo-tiny" / "grid.net.xml"


@pytest.mark.parametrize(
    "network",
    ["/data/x.osm.gz", "../../data/x.osm.gz", "..", "../..", "a b/ü.osm.pbf", "/", "synthetic:500:0", "~/n.net.xml"],
)
def test_default_results_dir_is_one_folder_inside_results(network):
    d = default_results_dir(network, "A", "bi", "ts")
    assert d.parent == Path("results") and len(d.parts) == 2
    assert d.name not in ("", ".", "..") and not d.name.startswith(".") and "/" not in d.name
    assert set(d.name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def test_network_labels_are_readable_and_distinct():
    assert network_label("synthetic:500:0") == "synthetic_500_0"  # the names results folders had before
    assert network_label("monaco") == "monaco"
    assert network_label("x.osm.gz") == "x"
    a, b = network_label("/data/x.osm.gz"), network_label("/other/x.osm.gz")
    assert a.startswith("x-") and b.startswith("x-") and a != b  # same file name, other folder: other results
    assert safe_name("../evil") == "evil" and safe_name("...") == "x"


def test_run_with_a_network_path_outside_writes_inside_results(tmp_path, monkeypatch, capsys):
    """Issue 25: ``--network ../../data/x.osm.gz`` wrote its results outside ``results/``."""
    (tmp_path / "nets").mkdir()
    shutil.copy(TINY, tmp_path / "nets" / "grid.net.xml")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    argv = ["run", "--network", "../../nets/grid.net.xml", "--horizon", "2", "--no-progress"]
    argv += ["--from", _edges()[0], "--to", _edges()[1]]
    assert main(argv) == 0, capsys.readouterr().err
    (folder,) = (work / "results").iterdir()
    assert folder.name.startswith("grid-") and folder.name.endswith("-custom-bi-ts")
    assert f"(figures: evroute plot results/{folder.name})" in capsys.readouterr().out  # run names the plot command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "nets"]  # nothing written beside the work folder
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


def _edges() -> tuple[str, str]:
    from evroute.linegraph import build_line_graph
    from evroute.network import load_network

    net = build_line_graph(load_network(TINY)).network
    return str(net.edge_ids[0]), str(net.edge_ids[-1])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("plot") / "r"
    argv = ["run", "--network", "synthetic:400:3", "--horizon", "6", "--seeds", "2", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    return out


@pytest.mark.slow
def test_plot_draws_the_regret_plot_and_the_exploration_map(results, capsys):
    from evroute.maps import external_assets

    assert main(["plot", str(results), "--no-tiles"]) == 0
    out = capsys.readouterr().out
    for name in ("regret.png", "exploration.png"):
        assert (results / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (results / "exploration.html").read_text()
    assert "evroute-legend" in page and external_assets(page) == []
    assert "BI-TS, synthetic:400:3 A: edges driven (2 seeds x T = 6)" in page
    # distinct edges driven, counted by hand from the rounds the run wrote
    driven = set()
    for s in (0, 1):
        for route in pd.read_csv(results / f"seed_{s}" / "rounds.csv")["route"]:
            driven.update(route.split())
    assert f"distinct edges driven: {len(driven)}\n" in out
    for edge in sorted(driven)[:5]:  # every driven edge has a tooltip with its count
        assert f"{edge}: driven " in page


@pytest.mark.slow
def test_plot_into_another_folder_with_a_prefix(results, tmp_path, capsys):
    assert main(["plot", str(results), "--into", str(tmp_path / "figs"), "--prefix", "a_", "--no-html"]) == 0
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["a_exploration.png", "a_regret.png"]


def test_plot_of_a_folder_that_is_no_results_folder_is_one_line(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"evroute: error: {tmp_path} is not an evroute results folder (no config.json; make one with `evroute run`)"
    )
    assert list(tmp_path.iterdir()) == []


DOCS = Path(__file__).resolve().parent.parent / "docs" / "results" / "archive"  # the maps are archived results


def test_committed_maps_load_nothing_from_a_cdn():
    """Issue 25: the committed HTML maps loaded Leaflet from a CDN; every one now inlines it."""
    from evroute.maps import external_assets

    pages = sorted((DOCS / "maps").glob("*.html"))
    assert len(pages) >= 12
    for p in pages:
        text = p.read_text()
        assert external_assets(text) == [], p.name
        assert "leaflet" in text.lower() and "evroute-legend" in text, p.name


def test_maps_doc_links_exist_and_names_its_command():
    import re

    doc = (DOCS / "maps.md").read_text()
    links = re.findall(r"\]\((maps/[^)]+)\)", doc)
    assert links and all((DOCS / link).is_file() for link in links), [x for x in links if not (DOCS / x).is_file()]
    assert "evroute plot $out --into docs/results/archive/maps" in doc and "--horizon 40 --seeds 1" in doc
