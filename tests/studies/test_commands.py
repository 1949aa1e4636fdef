"""The study commands under ``studies/``: every command and path quoted in the docs exists, every command's ``--help``
runs, and ``scripts/`` keeps only tooling.

Commands run from the repository root as ``python -m studies.<study>.<name>`` and import from :mod:`evroute` and the
``studies`` package (no ``sys.path`` edits, no loading of other files by file name).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "studies"
#: every study module with a command line (an ``argparse`` parser run under ``__main__``), as a dotted name
COMMANDS = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts)
    for p in STUDIES.rglob("*.py")
    if 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")
)
QUOTED_PATH = re.compile(r"(?<![\w/.-])(?:studies|scripts)/[\w./-]+?\.(?:py|sh)\b")
QUOTED_MODULE = re.compile(r"python -m (studies(?:\.\w+)+)(?![\w.<])")  # not a placeholder (``studies.bo.<name>``)
PATH_HACKS = re.compile(
    r"sys\.path\.(?:insert|append)|spec_from_file_location|noqa: E402|^\s*(?:import|from) _[A-Za-z]\w*", re.M
)
#: ``scripts/``: tooling only (set-up, assets), no study
TOOLING = {"scripts/dev.sh", "scripts/tools/fetch_map_assets.py", "scripts/tools/openapi_schema.py"}

# Run every command's ``--help`` in ONE child process (imports are shared, a few seconds of CPU for all of them): the
# child runs each module as ``__main__`` with ``argv = [name, "--help"]`` and reports what did not exit with 0.
_HELP_CHILD = r"""
import contextlib, io, runpy, sys
bad = []
for name in sys.argv[1:]:
    sys.argv = [name, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_module(name, run_name="__main__", alter_sys=True)
        bad.append(f"{name}: --help did not exit")
    except SystemExit as e:
        if e.code not in (0, None):
            bad.append(f"{name}: exit {e.code}")
        elif "usage:" not in out.getvalue():
            bad.append(f"{name}: no usage text")
    except Exception as e:  # noqa: BLE001 - reported to the parent
        bad.append(f"{name}: {type(e).__name__}: {e}")
print("\n".join(bad))
"""


def _doc_files() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted(p for p in STUDIES.rglob("*") if p.suffix in {".py", ".md", ".sh"}),
        *sorted((ROOT / "evroute").rglob("*.py")),
    ]


def _quoted() -> dict[str, set[str]]:
    """Each study path or module quoted in the docs (as a file path) -> the files quoting it."""
    quoted: dict[str, set[str]] = {}
    for f in _doc_files():
        text = f.read_text(encoding="utf-8")
        found = QUOTED_PATH.findall(text) + [m.replace(".", "/") + ".py" for m in QUOTED_MODULE.findall(text)]
        for m in found:
            quoted.setdefault(m, set()).add(f.relative_to(ROOT).as_posix())
    return quoted


def test_every_quoted_study_path_and_command_exists() -> None:
    quoted = _quoted()
    assert len(quoted) >= 40, "expected the docs to quote the study commands"
    missing = {p: sorted(where) for p, where in quoted.items() if not (ROOT / p).is_file()}
    assert not missing, f"study paths or commands quoted in the docs that do not exist: {missing}"


def test_the_check_finds_a_moved_command(tmp_path: Path) -> None:
    """Not vacuous: an old ``scripts/`` path and a ``python -m`` of a module that is not there are both caught."""
    text = "Run `python scripts/paper/repro_fig2.py` or `python -m studies.paper.repro_fig9 --help`."
    found = QUOTED_PATH.findall(text) + [m.replace(".", "/") + ".py" for m in QUOTED_MODULE.findall(text)]
    assert found == ["scripts/paper/repro_fig2.py", "studies/paper/repro_fig9.py"]
    assert not any((ROOT / p).is_file() for p in found)


def test_scripts_keeps_only_tooling_and_studies_are_grouped() -> None:
    scripts = {p.relative_to(ROOT).as_posix() for p in (ROOT / "scripts").rglob("*") if p.is_file()}
    scripts = {p for p in scripts if "__pycache__" not in p}
    assert scripts == TOOLING, f"scripts/ holds only tooling; move studies to studies/<study>/: {scripts - TOOLING}"
    assert len(COMMANDS) >= 40, COMMANDS
    top = [c for c in COMMANDS if c.count(".") < 2]
    assert not top, f"study commands outside a study folder: {top}"
    for folder in (p for p in STUDIES.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (folder / "__init__.py").is_file(), f"{folder.name}: not a package"
        if folder.name != "common":
            readme = (folder / "README.md").read_text(encoding="utf-8")
            assert "**Question.**" in readme and "python -m studies." in readme, f"{folder.name}/README.md"
    hacks = [c for c in COMMANDS if PATH_HACKS.search((ROOT / (c.replace(".", "/") + ".py")).read_text("utf-8"))]
    assert not hacks, f"study commands with path hacks or private imports: {hacks}"


@pytest.mark.slow
def test_every_command_help_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _HELP_CHILD, *COMMANDS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    bad = [line for line in proc.stdout.splitlines() if line.strip()]
    assert not bad, "\n".join(bad)
