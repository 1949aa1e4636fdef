"""The commit behind a committed results row (issue 38, item 4: no row from an older commit stays unlabelled).

:func:`head_commit` names the checkout a run is made at (short hash, ``+dirty`` when tracked files differ from
it); :func:`blame_commits` the commit that last wrote each line of a committed file (``git blame``), which is how
rows recorded before the ``commit`` column existed were labelled once:

    python -m studies.reproduce.provenance label docs/results/data/gp_vs_bi_finals.csv

adds a ``commit`` column (the commit that recorded each row) to a CSV that has none, leaving every other byte of
each row as it was.  ``python -m studies.reproduce.provenance blame FILE`` prints the rows per commit.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def head_commit() -> str:
    """The checkout's commit, 7 hex digits, with ``+dirty`` if tracked files under evroute/ or studies/ changed
    (``unknown`` outside a git checkout)."""
    try:
        head = _git("rev-parse", "--short=7", "HEAD").strip()
        dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "evroute", "studies").strip()
    except (RuntimeError, FileNotFoundError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def blame_commits(path: Path) -> list[str]:
    """For each line of the committed ``path`` (at HEAD), the 7-digit commit that last wrote it."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    out = _git("blame", "--line-porcelain", "HEAD", "--", rel)
    return [ln.split()[0][:7] for ln in out.splitlines() if ln and not ln.startswith("\t") and _is_header(ln)]


def _is_header(line: str) -> bool:
    head = line.split(" ", 1)[0]
    return len(head) == 40 and all(c in "0123456789abcdef" for c in head)


def label_csv(path: Path) -> Counter[str]:
    """Append a ``commit`` column to the CSV at ``path`` from :func:`blame_commits` (the header gets ``commit``);
    an error if it already has one.  Returns rows per commit."""
    lines = path.read_text().splitlines()
    if "commit" in lines[0].split(","):
        raise ValueError(f"{path}: already has a commit column")
    commits = blame_commits(path)
    if len(commits) != len(lines):
        raise ValueError(f"{path}: git blame gave {len(commits)} lines for {len(lines)} (uncommitted changes?)")
    out = [lines[0] + ",commit"] + [f"{ln},{c}" for ln, c in zip(lines[1:], commits[1:], strict=True)]
    path.write_text("\n".join(out) + "\n")
    return Counter(commits[1:])


#: the merge of issue 34 (vehicle library, speed-profile default prior, network speeds, SUMO vehicle type): rows
#: recorded before it do not reproduce at HEAD on the real networks
ISSUE34 = "7991dbd"


def commit_table(groups: Mapping[str, Counter[str]], what: str) -> list[str]:
    """Markdown lines: rows per ``what`` (one table row per group) and commit, most rows first."""
    lines = [f"| {what} | rows | commit (rows) |", "|---|---:|---|"]
    for g, c in groups.items():
        cells = ", ".join(f"`{k}` ({n})" for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"| {g} | {sum(c.values())} | {cells} |")
    return lines


def commit_line(commit: str | None, page: str, *, timing: bool = False) -> str:
    """The line a results page made at one commit carries: the commit and how to check its rows at HEAD
    (empty when the data record no commit); ``timing``: the rows are timings, which are measured again, not
    compared."""
    if not commit:
        return ""
    if timing:
        return (
            f"Rows from commit `{commit}` (timings: `git checkout {commit.split('+')[0]}` and the command above "
            "measure them again; `python -m studies.reproduce.run` does not compare timings)."
        )
    return (
        f"Rows from commit `{commit}` (`git checkout {commit.split('+')[0]}` reproduces them; "
        f"`python -m studies.reproduce.run --pages {page}` re-runs them at HEAD and compares)."
    )


def before_issue34_sentence(old_name: str) -> str:
    """The label of rows recorded before :data:`ISSUE34` (``old_name``: the study's file before ``16c07d3``)."""
    return (
        f"These rows were recorded before issue 34 (merged at commit `{ISSUE34}`) changed the networks' speeds, the "
        "default energy prior and SUMO's vehicle type: they are not reproduced at HEAD.  Each comes from the code at "
        "(or, for a run longer than a commit, just before) its commit: `git checkout <commit>`, then the command "
        f"above that ran it (before commit `16c07d3` the study was {old_name}).  Every data file's command and "
        "commit: `python -m studies.reproduce.run --list`."
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["label", "blame"])
    ap.add_argument("file", type=Path)
    args = ap.parse_args(argv)
    if not args.file.is_file():
        ap.exit(2, f"evroute: error: {args.file}: no such file\n")
    try:
        counts = label_csv(args.file) if args.action == "label" else Counter(blame_commits(args.file)[1:])
    except (ValueError, RuntimeError) as e:
        ap.exit(2, f"evroute: error: {e}\n")
    for commit, n in counts.most_common():
        print(f"{commit} {n}")


if __name__ == "__main__":
    main(sys.argv[1:])
