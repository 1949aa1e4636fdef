"""The documentation site's maps stay complete: every results file is listed, every command it cites exists.

The site itself is built in strict mode by `bash scripts/dev.sh docs` in CI (broken links and anchors fail there);
these checks cover what the build cannot see: a results file that nothing links to, a script that moved.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
INDEX = RESULTS / "index.md"

pytestmark = pytest.mark.skipif(not INDEX.is_file(), reason="needs the source checkout")


def _index_links() -> list[tuple[str, str]]:
    return re.findall(r"^\| \[`([^`]+)`\]\(([^)]+)\) \|", INDEX.read_text(), flags=re.MULTILINE)


def test_results_index_lists_every_results_file_once() -> None:
    rows = _index_links()
    for text, target in rows:
        assert text == target, f"row text {text!r} links to {target!r}"
    listed = [target for _, target in rows]
    on_disk = sorted(str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*") if p.is_file() and p != INDEX)
    assert len(on_disk) > 100  # the index is not vacuous: the committed results folder holds ~145 files
    assert sorted(set(listed)) == sorted(listed), "a file is listed twice"
    assert sorted(listed) == on_disk, (
        f"unlisted: {sorted(set(on_disk) - set(listed))}; listed but missing: {sorted(set(listed) - set(on_disk))}"
    )


def test_every_results_row_names_a_command() -> None:
    listed = {target for _, target in _index_links()}
    for line in INDEX.read_text().splitlines():
        if not line.startswith("| [`"):
            continue
        command = line.rstrip(" |").rsplit(" | ", 1)[1]
        if command.startswith("written with "):  # a figure or data file written by the command of a listed table
            assert re.fullmatch(r"written with `([^`]+)`", command) and command[14:-1] in listed, line
        elif not command.startswith("the same command"):  # else: the previous row's command with one change
            assert re.search(r"`[^`]*(python -m studies\.|bash studies/)|`evroute ", command), line


def test_study_commands_cited_by_the_results_index_exist() -> None:
    text = INDEX.read_text()
    cited = {m.replace(".", "/") + ".py" for m in re.findall(r"python -m (studies(?:\.\w+)+)", text)}
    cited |= set(re.findall(r"(?<![\w/.-])studies/[\w/]+\.(?:py|sh)", text))
    assert len(cited) >= 10  # the index cites the study commands (``python -m studies.<study>.<name>``)
    missing = sorted(s for s in cited if not (ROOT / s).is_file())
    assert not missing, f"docs/results/index.md cites study commands that do not exist: {missing}"


def test_readme_sections_included_by_the_user_guide_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in sorted((DOCS / "guide").glob("*.md")):
        for name in re.findall(r'--8<-- "README\.md:([\w-]+)"', page.read_text()):
            start, end = f"<!-- --8<-- [start:{name}] -->", f"<!-- --8<-- [end:{name}] -->"
            assert readme.count(start) == 1 and readme.count(end) == 1, f"{page.name}: README section {name!r}"
            assert readme.index(start) < readme.index(end)


def test_the_fast_tier_exists_and_ci_runs_everything() -> None:
    """``dev.sh test-fast`` deselects the tests marked slow, ``dev.sh test`` (what CI runs) deselects nothing, the
    README documents both, and the slow marker is registered and used."""
    dev = (ROOT / "scripts" / "dev.sh").read_text()
    fast = re.search(r"^\s*test-fast\) exec python -m pytest (.*?);;", dev, re.M)
    full = re.search(r"^\s*test\) exec python -m pytest (.*?);;", dev, re.M)
    assert fast and '-m "not slow"' in fast.group(1), "dev.sh test-fast must run pytest -m 'not slow'"
    assert full and "-m " not in full.group(1), "dev.sh test (CI) must run every test"
    assert re.search(r"^bash scripts/dev\.sh test$", (ROOT / ".ci" / "run").read_text(), re.M)
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/dev.sh test-fast" in readme and "@pytest.mark.slow" in readme
    assert '"slow: ' in (ROOT / "pyproject.toml").read_text()
    marked = sum(p.read_text().count("@pytest.mark.slow") for p in (ROOT / "tests").rglob("test_*.py"))
    assert marked >= 50, f"only {marked} tests marked slow"
