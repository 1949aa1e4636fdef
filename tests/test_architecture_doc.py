"""``docs/architecture.md`` against the tree: every module, path and file it names exists, every package is named.

A module is named dotted (``evroute.kernels.posterior``) or as a path (``evroute/bo/gp.py``,
``evroute/bo/timevarying/``, globs like ``evroute/resources/vehicles/*.json``); a bare file name in backticks
(``gp_exact.py``) belongs to the first package or folder named on its line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
DOTTED = re.compile(r"(?<![\w.])evroute(?:\.\w+)+")
PATH = re.compile(r"(?<![\w/])(?:evroute|studies)/[\w/*.-]*")
BARE = re.compile(r"`(\w+\.py)`")


def _module_exists(root: Path, dotted: str) -> bool:
    rel = dotted.replace(".", "/")
    return (root / f"{rel}.py").is_file() or (root / rel / "__init__.py").is_file()


def stale_names(text: str, root: Path = ROOT) -> list[str]:
    """The modules, paths and bare files ``text`` names that do not exist under ``root``."""
    bad = [f"module {m}" for m in sorted(set(DOTTED.findall(text))) if not _module_exists(root, m)]
    bad += [f"path {p}" for p in sorted(set(PATH.findall(text))) if not list(root.glob(p.rstrip("/") or "."))]
    for line in text.splitlines():
        files = BARE.findall(line)
        if not files:
            continue
        first = re.search(r"(?<![\w.])evroute(?:\.\w+)+|(?<![\w/])evroute/[\w/]*(?:\.py)?", line)
        name = first.group(0) if first else "evroute"
        folder = name.replace(".", "/") if "/" not in name else name.rstrip("/")
        if name.endswith(".py") or (root / f"{folder}.py").is_file():  # a module: its folder
            folder = folder.removesuffix(".py").rpartition("/")[0]
        bad += [f"file {f} (in {folder}/)" for f in files if not (root / folder / f).is_file()]
    return bad


def unnamed_packages(text: str, root: Path = ROOT) -> list[str]:
    """The packages of ``root/evroute`` that ``text`` names neither dotted nor as a folder."""
    out = []
    for init in sorted((root / "evroute").rglob("__init__.py")):
        rel = init.parent.relative_to(root).as_posix()
        if rel != "evroute" and rel.replace("/", ".") not in text and f"{rel}/" not in text:
            out.append(rel.replace("/", "."))
    return out


def test_every_name_on_the_architecture_page_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(DOTTED.findall(text)) >= 20  # not vacuous: the page names the stages' modules
    bad = stale_names(text)
    assert not bad, f"docs/architecture.md names what the tree does not have: {bad}"


def test_every_package_is_on_the_architecture_page() -> None:
    missing = unnamed_packages(PAGE.read_text(encoding="utf-8"))
    assert not missing, f"packages docs/architecture.md does not describe: {missing}"


def test_the_checks_catch_a_stale_page(tmp_path: Path) -> None:
    """A removed module, a wrong path, a bare file of the wrong package and an unnamed package are each caught."""
    for rel in ("evroute/__init__.py", "evroute/bo/__init__.py", "evroute/bo/gp.py", "evroute/network/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).touch()
    page = "`evroute.bo.gp`, `evroute.bo.posterior`; `evroute/bo/optim.py`\n| GP | `evroute/bo/` (`gp.py`, `kr.py`) |\n"
    assert stale_names(page, tmp_path) == [
        "module evroute.bo.posterior",
        "path evroute/bo/optim.py",
        "file kr.py (in evroute/bo/)",
    ]
    assert unnamed_packages(page, tmp_path) == ["evroute.network"]
    assert stale_names("`evroute.bo.gp` (`gp.py`)", tmp_path) == []
