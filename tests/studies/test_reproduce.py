"""``python -m studies.reproduce.run`` (issue 38, item 4): every committed results row has its command and commit, and
a seeded sample of the rows that reproduce at HEAD is re-run and compared (the CI drift check)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from studies.reproduce.compare import compare, read_rows, same, tolerance
from studies.reproduce.run import cpu_estimate, head_rows, list_lines, rerun_file, sample_rows
from studies.reproduce.table import BY_DATA, DATA, EXPENSIVE_S, ROOT, SOURCES, Source, commands

RESULTS = ROOT / "docs" / "results"
pytestmark = pytest.mark.skipif(not (RESULTS / "data").is_dir(), reason="needs the source checkout")


def test_every_data_file_has_exactly_one_source() -> None:
    files = sorted(p.name for p in (ROOT / DATA).iterdir())
    listed = [s.data for s in SOURCES]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == files, "docs/results/data and studies/reproduce/table.py disagree"


def test_every_source_names_its_page_commands_and_how_it_is_rerun() -> None:
    for s in SOURCES:
        assert (RESULTS / f"{s.page}.md").is_file(), s
        assert s.rerun in ("rows", "file", ""), s
        assert bool(s.why) == (s.rerun == ""), f"{s.data}: a source not re-run says why, a re-run one does not"
        assert (s.rerun == "file") == bool(s.regen), s
        if not s.data.endswith("_commands.txt"):
            assert commands(s), f"{s.data}: no producing command"
        if s.key:  # the key identifies each row
            rows = read_rows(s, s.path)
            assert rows, s.data
            keys = [tuple(r[k] for k in s.key) for r in rows]
            assert len(keys) == len(set(keys)), f"{s.data}: key {s.key} is not unique"


def test_pages_with_rows_from_an_older_commit_name_it() -> None:
    """Item 4: no row from an older commit stays unlabelled: its page names the commit."""
    older = {s.page: s.at for s in SOURCES if s.at != "HEAD"}
    for page, commit in older.items():
        assert f"`{commit}`" in (RESULTS / f"{page}.md").read_text(), f"{page}.md does not name commit {commit}"


def test_every_committed_row_reproduces_at_head() -> None:
    """Issue 38's done-when: every committed results row is at HEAD (``head_rows`` is all of a source's rows), so
    the regeneration command reproduces each of them; a row left from an older commit fails here until its block is
    regenerated (or, deliberately, until this test names it)."""
    for s in SOURCES:
        assert s.at == "HEAD", f"{s.data}: reproduces at {s.at}"
        if s.rerun in ("rows", "file") and s.key:
            rows = read_rows(s, s.path)
            assert len(head_rows(s)) == len(rows), f"{s.data}: {len(rows) - len(head_rows(s))} rows not at HEAD"


def test_rows_not_rerun_at_head_carry_their_commit() -> None:
    for s in SOURCES:
        if s.rerun != "rows":
            continue
        rows = read_rows(s, s.path)
        stale = [r for r in rows if s.head is not None and not s.head(r)]
        assert len(stale) < len(rows), f"{s.data}: no row re-run at HEAD"  # none stale: every row reproduces
        assert all(len(r["commit"]) >= 7 for r in stale), f"{s.data}: a row without its commit"
        page = (RESULTS / f"{s.page}.md").read_text()
        assert all(f"`{c}`" in page for c in {r["commit"] for r in stale}), f"{s.page}.md misses a row's commit"


def test_gp_vs_bi_routes_are_at_head_whole_and_older_rows_predate_issue_34() -> None:
    """The gp_vs_bi page pairs BI and GP rows of a route by seed: a route's rows are all at HEAD or all older (never
    a pair of different code), and the older ones were recorded before issue 34 (merged at 7991dbd), as the page
    says."""
    from studies.reproduce.table import gp_vs_bi_at_head

    s = next(x for x in SOURCES if x.data == "gp_vs_bi_finals.csv")
    rows = read_rows(s, s.path)
    per: dict[str, set[bool]] = {}
    for r in rows:
        per.setdefault(r["route"], set()).add(gp_vs_bi_at_head(r))
    assert all(len(v) == 1 for v in per.values()), per
    assert any(v == {True} for v in per.values())
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git history")
    for c in {r["commit"] for r in rows if not gp_vs_bi_at_head(r)}:
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", c, "7991dbd"], cwd=ROOT, capture_output=True)
        assert proc.returncode == 0, f"{c} is not an ancestor of 7991dbd (issue 34's merge)"


def test_every_data_file_with_rows_is_regenerated_by_the_command() -> None:
    """Item 4: one command regenerates every committed row from scratch: no source with rows is left out; the files
    not re-run are commands files (no rows), which their study's regeneration writes again."""
    for s in SOURCES:
        if s.key:
            assert s.rerun in ("rows", "file"), f"{s.data}: rows that the regeneration does not re-run"
        else:
            assert s.rerun == "file" or s.data.endswith("_commands.txt"), s.data


def _module_file(argv: tuple[str, ...]) -> Path:
    if argv[0] == "-m":
        return ROOT / (argv[1].replace(".", "/") + ".py")
    return ROOT / argv[0]


def test_regeneration_commands_name_real_modules_and_options() -> None:
    """Every regeneration command runs a module or script of this checkout and each of its ``--options`` is one the
    module (or the one it delegates its arguments to) declares; its outputs go to ``{dir}`` (or its raw runs to
    ``{raw}``), never into docs/."""
    for s in SOURCES:
        for argv in s.regen:
            path = _module_file(argv)
            assert path.is_file(), f"{s.data}: {' '.join(argv)}: no {path}"
            text = path.read_text()
            for opt in (a for a in argv if a.startswith("--")):
                assert f'"{opt}"' in text, f"{s.data}: {path.name} declares no option {opt}"
            assert not any("docs/" in a for a in argv), f"{s.data}: writes into docs/: {' '.join(argv)}"
        if s.regen:
            assert any("{dir}" in a for argv in s.regen for a in argv), f"{s.data}: its regeneration writes nowhere"


def test_cpu_estimate_sums_the_recorded_cpu_and_the_stated_extra() -> None:
    import csv
    import json

    s = BY_DATA["sumo_bandit_finals.csv"]
    with s.path.open() as f:
        recorded = sum(float(r["cpu_s"]) for r in csv.DictReader(f))
    assert cpu_estimate(s) == pytest.approx(recorded + s.cpu_extra_s, rel=1e-12)
    b = BY_DATA["bo_timing.json"]  # a JSON field of medians of timed repeats: each repeat counts
    d = json.loads(b.path.read_text())
    timed = sum(sum(v) for v in d["seconds"].values()) * d["repeats"]
    assert cpu_estimate(b) == pytest.approx(timed + b.cpu_extra_s, rel=1e-12)
    assert cpu_estimate(BY_DATA["gp_vs_bi_commands.txt"]) == 0.0


def test_list_states_the_estimated_cpu_of_every_source_with_rows() -> None:
    lines = list_lines(list(SOURCES))
    assert len(lines) == len(SOURCES)
    for s, line in zip(SOURCES, lines, strict=True):
        assert line.startswith(f"{s.data} -> ")
        if s.key:
            cpu = cpu_estimate(s)
            assert cpu > 0 or s.cpu_note, f"{s.data}: no CPU estimate and no note naming where it is counted"
            if cpu:
                assert f"~{cpu:,.0f} CPU s" in line
                assert ("(expensive)" in line) == (cpu > EXPENSIVE_S)


def test_expensive_sources_never_enter_the_sample() -> None:
    """The CI drift check keeps to cheap rows: only row sources with a cheap-row rule, never a whole-file source."""
    drawn = sample_rows(list(SOURCES), 10_000, 0)
    assert drawn
    assert {s.rerun for s, _ in drawn} == {"rows"}
    assert all(s.cheap is not None and s.cheap(r) for s, r in drawn)


def test_rerun_file_runs_its_commands_in_order_into_dir_and_resumes(tmp_path: Path) -> None:
    first = ("-c", "import sys, pathlib; pathlib.Path(sys.argv[1], 'a.txt').write_text(sys.argv[2])", "{dir}", "{raw}")
    second = (
        "-c",
        "import sys, pathlib; p = pathlib.Path(sys.argv[1]); (p / 'b.txt').write_text((p / 'a.txt').read_text() + '+')",
        "{dir}",
    )
    folder = Path(rerun_file("page", [list(first), list(second)], str(tmp_path)))
    assert folder == tmp_path / "files" / "page"
    assert (folder / "b.txt").read_text() == str(tmp_path / "raw") + "+"  # the second ran after the first
    (folder / "b.txt").unlink()
    assert rerun_file("page", [list(first), list(second)], str(tmp_path)) == str(folder)
    assert not (folder / "b.txt").exists()  # resumable: a finished regeneration is not run again
    with pytest.raises(RuntimeError, match="failed"):
        rerun_file("bad", [["-c", "raise SystemExit(3)"]], str(tmp_path))


def test_a_file_source_at_an_older_commit_compares_only_the_rows_at_head() -> None:
    import dataclasses

    from studies.reproduce.table import SUMO_BANDIT_AT_HEAD, sumo_live_networks_at_head

    s = BY_DATA["sumo_bandit_live_trips.csv"]
    rows = read_rows(s, s.path)
    assert s.at == "HEAD" and s.rerun == "file" and head_rows(s) == rows  # every committed live trip is at HEAD
    older = dataclasses.replace(s, at="40a3992")  # as the file was before Luxembourg's drives were regenerated
    assert head_rows(older) == [r for r in rows if r["commit"] in SUMO_BANDIT_AT_HEAD]
    stale = dataclasses.replace(older, head=lambda r: r["network"] == "monaco")
    assert head_rows(stale) == [r for r in rows if r["network"] == "monaco"] != rows
    live = BY_DATA["sumo_live_routes_trips.csv"]  # a network's rows at HEAD when all its trips are (the rule)
    assert head_rows(live) == [r for r in read_rows(live, live.path) if r["network"] in sumo_live_networks_at_head()]
    t = BY_DATA["turn_coverage.json"]
    assert head_rows(t) == read_rows(t, t.path)  # at HEAD: every row


def test_sumo_bandit_blocks_are_at_head_whole_and_older_rows_predate_issue_34() -> None:
    """The SUMO bandit page pairs methods of a route: each comparison block (network, route, arm kind; every model
    and policy) is all at HEAD or all older, and the older rows were recorded before issue 34 (7991dbd)."""
    from studies.reproduce.table import sumo_bandit_at_head

    s = BY_DATA["sumo_bandit_finals.csv"]
    rows = read_rows(s, s.path)
    per: dict[tuple[str, str, str], set[bool]] = {}
    for r in rows:
        per.setdefault((r["network"], r["route"], r["arms"]), set()).add(sumo_bandit_at_head(r))
    assert all(len(v) == 1 for v in per.values()), per
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git history")
    for c in {r["commit"] for r in rows if not sumo_bandit_at_head(r)}:
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", c, "7991dbd"], cwd=ROOT, capture_output=True)
        assert proc.returncode == 0, f"{c} is not an ancestor of 7991dbd (issue 34's merge)"


def test_tolerance_is_one_unit_of_the_last_stored_decimal() -> None:
    assert tolerance("0.25") == pytest.approx(0.01)
    assert tolerance("12") == 1.0
    assert tolerance("-3302.622674") == pytest.approx(1e-6)
    assert tolerance("3302.6226741431783") == pytest.approx(3302.6226741431783e-9)  # every digit (repr)
    assert same("3302.622674", "3302.6226741431783")
    assert not same("3302.622674", "3302.622690")
    assert same("nan", "nan") and not same("nan", "1.0")
    assert same("True", "True") and not same("True", "False") and not same("dijkstra", "eq8")


def test_compare_finds_a_changed_digit_a_missing_row_and_skips_timings() -> None:
    s = Source("x.csv", "gp_vs_bi", key=("seed",), excluded={"cpu_s": "timing"})
    committed = [{"seed": "0", "wh": "10.5", "cpu_s": "1.0"}, {"seed": "1", "wh": "11.0", "cpu_s": "1.0"}]
    rerun = [{"seed": "0", "wh": "10.5", "cpu_s": "9.0"}]
    checked, drifts = compare(s, committed, rerun)
    assert checked == 1 and [d.key for d in drifts] == [("1",)]
    checked, drifts = compare(s, committed[:1], [{"seed": "0", "wh": "10.7", "cpu_s": "1.0"}])
    assert checked == 1 and drifts[0].columns == {"wh": ("10.5", "10.7")}


def test_the_sample_draws_from_every_row_source_with_cheap_rows_at_head() -> None:
    with_cheap = [s.data for s in SOURCES if s.rerun == "rows" and s.cheap and any(map(s.cheap, head_rows(s)))]
    assert "sumo_bandit_finals.csv" in with_cheap  # the SUMO blocks regenerated at HEAD are in the CI check
    for seed in range(3):
        drawn = sample_rows(list(SOURCES), len(with_cheap), seed)
        assert sorted(s.data for s, _ in drawn) == sorted(with_cheap)


def test_the_sample_is_fixed_by_its_seed_and_drawn_from_rows_at_head() -> None:
    a, b = sample_rows(list(SOURCES), 5, 3), sample_rows(list(SOURCES), 5, 3)
    assert [r for _, r in a] == [r for _, r in b] and len(a) == 5
    assert [r for _, r in a] != [r for _, r in sample_rows(list(SOURCES), 5, 4)]
    for s, r in a:
        assert r in head_rows(s) and s.cheap is not None and s.cheap(r)


def _run(*args: str, runs: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run(
        [sys.executable, "-m", "studies.reproduce", *args, "--runs", str(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_bad_input_is_one_error_line(tmp_path: Path) -> None:
    for bad in (("--pages", "no_such_page"), ("--max-cpu", "0")):
        proc = _run(*bad, runs=tmp_path / "r")
        assert proc.returncode == 2 and proc.stderr.startswith("evroute: error: ") and proc.stderr.count("\n") == 1
        assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_seeded_sample_of_committed_rows_reproduces_at_head(tmp_path: Path) -> None:
    """The CI drift check: three rows re-run from scratch at this checkout equal the committed ones (about 10 CPU
    seconds each).  ``EVROUTE_REPRODUCE_SEED`` picks another sample."""
    seed = os.environ.get("EVROUTE_REPRODUCE_SEED", "0")
    proc = _run("--sample", "3", "--seed", seed, "--workers", "1", runs=tmp_path / "r")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+) row\(s\) re-run at HEAD, (\d+) drift", proc.stdout)]
    assert counts and sum(n for n, _ in counts) == 3 and all(d == 0 for _, d in counts), proc.stdout
    # resumable: a second call reads the re-run rows back
    again = _run("--sample", "3", "--seed", seed, "--workers", "1", runs=tmp_path / "r")
    assert again.returncode == 0 and again.stdout == proc.stdout
