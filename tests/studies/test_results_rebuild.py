"""Results that cannot drift (issue 24, item 4): every Markdown file under ``docs/results/`` is one of

* **rebuilt**: listed in :data:`REBUILT` with its report-only command, which regenerates it from the committed data
  under ``docs/results/data/`` (no raw runs, no real data, no simulator); the regenerated file must equal the
  committed one byte for byte, so a table edited by hand, or a sentence that no longer follows from its data, fails;
* **archived**: under ``docs/results/archive/``, its header naming the commit that reproduces it and why it is not
  regenerated at HEAD (:data:`ARCHIVE_HEADER`);
* **pending**: owned by work in progress on another branch (:data:`PENDING`; the lead empties it at merge).

A results file that is none of these, or more than one, fails
:func:`test_every_results_file_is_rebuilt_archived_or_pending`.  ``index.md`` (the list of files, checked by
``tests/test_docs_site.py``) is the one exception.  Figures and data files are not Markdown: figures are written with
their table, data files are the inputs.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
DATA = RESULTS / "data"

pytestmark = pytest.mark.skipif(not (RESULTS / "index.md").is_file(), reason="needs the source checkout")

#: results file (relative to docs/results) -> its report-only command (``-m``, the study module and its arguments, run
#: from the repository root); ``{out}`` is replaced by the path the rebuilt file is written to.  Every command reads
#: only committed data.
REBUILT: dict[str, list[str]] = {
    "bo_timing.md": [
        "-m",
        "studies.bo.bo_timing",
        "--report-only",
        "--data",
        "docs/results/data/bo_timing.json",
        "--out",
        "{out}",
        "--fig",
        "{out}.png",
    ],
    "bench_round_turns.md": [
        "-m",
        "studies.bench.bench_round",
        "--report-only",
        "--data",
        "docs/results/data/bench_round_turns.json",
        "--out",
        "{out}",
    ],
    "charging.md": [
        "-m",
        "studies.charging.charging_study",
        "--report-only",
        "--data",
        "docs/results/data",
        "--out",
        "{out}",
    ],
    "calibration.md": [
        "-m",
        "studies.trip_logs.calibration_report",
        "--rows",
        "docs/results/data/trip_logs_known_truth.csv",
        "--output",
        "{out}",
    ],
    "energy_validation.md": [
        "-m",
        "studies.energy_validation.energy_validation",
        "--report-only",
        "--data",
        "docs/results/data",
        "--out",
        "{out}",
    ],
    "gp_vs_bi.md": [
        "-m",
        "studies.gp_vs_bi.run",
        "--report-only",
        "--data",
        "docs/results/data/gp_vs_bi_finals.csv",
        "--commands",
        "docs/results/data/gp_vs_bi_commands.txt",
        "--out",
        "{out}",
    ],
    "calibration_traversals.md": [
        "-m",
        "studies.driver.calibration",
        "--report-only",
        "--data",
        "docs/results/data/calibration.json",
        "--out",
        "{out}",
    ],
    "misspecification.md": [
        "-m",
        "studies.misspecification.run",
        "--report-only",
        "--data",
        "docs/results/data/misspecification_finals.csv",
        "--commands",
        "docs/results/data/misspecification_commands.txt",
        "--out",
        "{out}",
    ],
    "map_matching_compare.md": [
        "-m",
        "studies.trip_logs.compare_matchers",
        "--report-only",
        "--data",
        "docs/results/data/map_matching_compare.json",
        "--out",
        "{out}",
    ],
    "sumo_bandit.md": [
        "-m",
        "studies.sumo_bandit.run",
        "--report-only",
        "--data",
        "docs/results/data/sumo_bandit_finals.csv",
        "--meta",
        "docs/results/data/sumo_bandit_meta.json",
        "--extra-data",
        "docs/results/data",
        "--out",
        "{out}",
    ],
    "sumo_live_routes_at_head.md": [  # needs the git history (the old tables at d5ee1c3)
        "-m",
        "studies.sumo_live_routes.compare",
        "--old",
        "d5ee1c3",
        "--data",
        "docs/results/data",
        "--out",
        "{out}",
    ],
    "sumo_live_routes.md": [
        "-m",
        "studies.sumo_live_routes.run",
        "--report-only",
        "--data",
        "docs/results/data",
        "--doc",
        "{out}",
    ],
    "trip_logs_known_truth.md": [
        "-m",
        "studies.trip_logs.known_truth_report",
        "--rows",
        "docs/results/data/trip_logs_known_truth.csv",
        "--matching",
        "docs/results/data/trip_logs_known_truth_matching.csv",
        "--coverage",
        "docs/results/data/trip_logs_known_truth_coverage.csv",
        "--bias",
        "docs/results/data/trip_logs_known_truth_bias.csv",
        "--floor",
        "docs/results/data/trip_logs_known_truth_floor.csv",
        "--commands",
        "docs/results/data/trip_logs_known_truth_commands.txt",
        "--output",
        "{out}",
    ],
    "turn_coverage.md": [
        "-m",
        "studies.sumo.turn_coverage",
        "--report-only",
        "--data",
        "docs/results/data/turn_coverage.json",
        "--out",
        "{out}",
    ],
    "turn_coverage_probe_turns.md": [
        "-m",
        "studies.sumo.turn_coverage",
        "--report-only",
        "--data",
        "docs/results/data/turn_coverage_probe_turns.json",
        "--out",
        "{out}",
    ],
    "twizy_trace_energy.md": [
        "-m",
        "studies.trip_logs.twizy_trace_energy",
        "--report-only",
        "--data",
        "docs/results/data/twizy_trace_energy.json",
        "--out",
        "{out}",
    ],
    "travel_time_validation.md": [
        "-m",
        "studies.energy_validation.travel_time_validation",
        "report",
        "--data",
        "docs/results/data/travel_time_validation.csv",
        "--out",
        "{out}",
    ],
}

#: Results files that another branch is rewriting now (issue 24's other items); fnmatch patterns relative to
#: docs/results, except the one benchmark page outside it.  The lead empties this set when those branches merge,
#: moving each file to REBUILT or to the archive.
PENDING: frozenset[str] = frozenset({})

#: The first line of an archived file's header (after its title, if any): the commit that reproduces it.  The rest
#: of the header (the same blockquote) says why it is not regenerated at HEAD.
ARCHIVE_HEADER = re.compile(r"^> \*\*Archived result, reproducible (?:only )?at commit `([0-9a-f]{7,40})`\.\*\* \S")


def archive_commit(path: Path) -> str | None:
    """The commit an archived file's header names, or None if it has no such header in its first 5 lines."""
    for line in path.read_text().splitlines()[:5]:
        m = ARCHIVE_HEADER.match(line)
        if m:
            return m.group(1)
    return None


def classify(results: Path, rebuilt: dict[str, list[str]], pending: frozenset[str]) -> dict[str, list[str]]:
    """Each Markdown file under ``results`` (but ``index.md``) -> the categories it falls in.

    A file is ``rebuilt`` if listed in ``rebuilt``, ``archived`` if under ``archive/`` with a header naming a commit,
    ``pending`` if it matches a pattern of ``pending``; ``archive/`` files without a header get ``bad-archive``.
    """
    out: dict[str, list[str]] = {}
    for p in sorted(results.rglob("*.md")):
        rel = p.relative_to(results).as_posix()
        if rel == "index.md":
            continue
        kinds = []
        if rel in rebuilt:
            kinds.append("rebuilt")
        if rel.startswith("archive/"):
            kinds.append("archived" if archive_commit(p) else "bad-archive")
        if any(fnmatch.fnmatchcase(rel, pat) for pat in pending):
            kinds.append("pending")
        out[rel] = kinds
    return out


def problems(results: Path, rebuilt: dict[str, list[str]], pending: frozenset[str]) -> list[str]:
    """Every results file that is not exactly one of rebuilt / archived / pending, and stale REBUILT entries."""
    bad = [
        f"{rel}: {kinds or 'neither rebuilt, archived nor pending'}"
        for rel, kinds in classify(results, rebuilt, pending).items()
        if kinds not in (["rebuilt"], ["archived"], ["pending"])
    ]
    bad += [f"{rel}: listed in REBUILT but missing" for rel in rebuilt if not (results / rel).is_file()]
    return bad


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``python *argv`` (``-m studies.…``) from the repository root with this checkout's evroute and studies."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def rebuild(rel: str, out: Path) -> Path:
    """Run ``rel``'s report-only command, writing into the folder ``out``; the path of the rebuilt file."""
    target = out / Path(rel).name
    argv = [a.replace("{out}", str(target)) for a in REBUILT[rel]]
    proc = _run(argv)
    assert proc.returncode == 0, f"{rel}: {' '.join(argv)} failed:\n{proc.stderr[-3000:]}"
    assert target.is_file(), f"{rel}: {' '.join(argv)} wrote nothing to {target}"
    return target


def differences(committed: Path, rebuilt_file: Path) -> str:
    """A unified diff of the two files ('' if byte-identical)."""
    a, b = committed.read_bytes(), rebuilt_file.read_bytes()
    if a == b:
        return ""
    diff = difflib.unified_diff(
        a.decode(errors="replace").splitlines(),
        b.decode(errors="replace").splitlines(),
        "committed",
        "rebuilt",
        lineterm="",
    )
    return "\n".join(list(diff)[:60]) or "files differ in line endings or trailing bytes"


def test_every_results_file_is_rebuilt_archived_or_pending() -> None:
    kinds = classify(RESULTS, REBUILT, PENDING)
    assert len(kinds) > 40  # not vacuous: docs/results holds ~50 Markdown files
    assert any(k == ["archived"] for k in kinds.values()) and any(k == ["rebuilt"] for k in kinds.values())
    bad = problems(RESULTS, REBUILT, PENDING)
    assert not bad, "results files must be rebuilt from data, archived with a commit, or pending:\n" + "\n".join(bad)


def test_archived_results_name_a_commit_of_this_repository() -> None:
    """The header's commit exists (skipped where the checkout has no history, e.g. a source tarball)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git history")
    for p in sorted((RESULTS / "archive").rglob("*.md")):
        commit = archive_commit(p)
        assert commit is not None, p
        proc = subprocess.run(["git", "cat-file", "-t", commit], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0 and "Not a valid object" in proc.stderr:
            shallow = subprocess.run(
                ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
            )
            if shallow.stdout.strip() == "true":
                pytest.skip("shallow clone: old commits are not fetched")
        assert proc.stdout.strip() == "commit", f"{p.name}: header names {commit}, not a commit here"


def test_every_data_file_feeds_a_rebuilt_or_pending_result() -> None:
    """No orphan data: each file under docs/results/data/ is read by a REBUILT command or named by a pending file."""
    read = {Path(a).name for argv in REBUILT.values() for a in argv if a.startswith("docs/results/data/")}
    for rel, argv in REBUILT.items():  # a command given the whole data folder reads the files its report links
        if "docs/results/data" in argv:
            text = (RESULTS / rel).read_text()
            read |= {f.name for f in DATA.iterdir() if f"(data/{f.name})" in text}
    pending_text = " ".join(
        p.read_text() for p in RESULTS.rglob("*.md") if any(fnmatch.fnmatchcase(p.name, pat) for pat in PENDING)
    )
    for f in sorted(DATA.iterdir()):
        assert f.name in read or f"data/{f.name}" in pending_text, f"docs/results/data/{f.name} feeds no results file"
    for rel, argv in REBUILT.items():  # and each rebuilt file tells its reader where its numbers come from
        for a in argv:
            if a.startswith("docs/results/data/"):
                assert f"(data/{Path(a).name})" in (RESULTS / rel).read_text(), f"{rel} does not link its data {a}"


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(REBUILT))
def test_results_file_is_rebuilt_byte_for_byte_from_committed_data(rel: str, tmp_path: Path) -> None:
    diff = differences(RESULTS / rel, rebuild(rel, tmp_path))
    assert not diff, f"{rel} differs from what its report-only command builds from docs/results/data/:\n{diff}"


@pytest.mark.slow
def test_the_checks_fail_on_a_tampered_copy(tmp_path: Path) -> None:
    """The checker is not vacuous: a changed digit, an unlisted file and a headerless archive file are all caught."""
    rel = "twizy_trace_energy.md"  # the cheapest to rebuild
    built = rebuild(rel, tmp_path)
    assert differences(RESULTS / rel, built) == ""
    text = built.read_text()
    digit = re.search(r"\d", text)
    assert digit is not None
    tampered = tmp_path / "tampered.md"
    tampered.write_text(text[: digit.start()] + str((int(digit.group()) + 1) % 10) + text[digit.end() :])
    assert "+" in differences(built, tampered) and "-" in differences(built, tampered)
    trailing = tmp_path / "trailing.md"
    trailing.write_bytes(built.read_bytes() + b"\n")
    assert differences(built, trailing)

    tree = tmp_path / "results"
    shutil.copytree(RESULTS, tree, ignore=shutil.ignore_patterns("*.png", "*.html"))
    assert problems(tree, REBUILT, PENDING) == []
    (tree / "new_study.md").write_text("# A new study\n\nGP beats BI in 5 of 5 seeds.\n")
    archived = sorted((tree / "archive").glob("*.md"))[0]
    archived.write_text(archived.read_text().replace("Archived result", "Result"))
    bad = problems(tree, REBUILT, PENDING)
    assert any(b.startswith("new_study.md: neither") for b in bad), bad
    assert any(b.startswith(f"archive/{archived.name}: ['bad-archive']") for b in bad), bad
    (tree / rel).unlink()
    assert any(b == f"{rel}: listed in REBUILT but missing" for b in problems(tree, REBUILT, PENDING))


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(REBUILT))
def test_report_only_without_its_data_is_one_error_line(rel: str, tmp_path: Path) -> None:
    argv = list(REBUILT[rel])
    i = next(i for i, a in enumerate(argv) if a.startswith("docs/results/data"))  # its (first) data argument
    argv[i] = str(tmp_path / "missing.json")
    target = tmp_path / "out.md"
    argv = [a.replace("{out}", str(target)) for a in argv]
    proc = _run(argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("evroute: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert list(tmp_path.iterdir()) == []
