"""Re-run committed results rows at HEAD and compare (issue 38, item 4).

    python -m studies.reproduce.run --list                      # every data file: page, rows, commit, how re-run
    python -m studies.reproduce.run --pages gp_vs_bi --workers 2  # re-run every row of a page that reproduces at HEAD
    python -m studies.reproduce.run --sample 6 --seed 0         # a fixed seeded sample of cheap rows (CI)
    python -m studies.reproduce.run                             # every page

For each data file under ``docs/results/data/`` the table :mod:`studies.reproduce.table` knows the commands that
produced it, the columns compared and the commit its rows reproduce at.  Rows that reproduce at HEAD are re-run
(row by row with each row's seed, or the whole file by its command into ``--runs``), in a process pool of
``--workers``; resumable: a row or file already re-run under ``--runs`` is read back, not run again.  Each re-run
row is compared with the committed one: numbers to one unit in their last stored decimal (plus a stated per-column
tolerance), text exactly, timing columns not at all (:mod:`studies.reproduce.compare`).  Files whose rows are
labelled with an older commit, or that another study owns, are listed with the reason and not re-run.

Exit status 0 when every re-run row reproduces, 1 when any drifts (each drift printed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from studies.reproduce.compare import Drift, Row, compare, key_of, read_rows
from studies.reproduce.table import BY_DATA, ROOT, SOURCES, Source, commands, pages


def _row_file(runs: Path, data: str, row: Row, s: Source) -> Path:
    tag = hashlib.sha1("/".join(row.get(k, "") for k in s.key).encode()).hexdigest()[:16]
    return runs / "rows" / data / f"{tag}.json"


def rerun_one_row(data: str, row: Row, runs: str) -> Row:
    """Re-run ``row`` (resumable: read back from ``runs`` if done); the re-run row."""
    from studies.reproduce.rows import rerun_row

    s = BY_DATA[data]
    out = _row_file(Path(runs), data, row, s)
    if out.is_file():
        return dict(json.loads(out.read_text()))
    got = rerun_row(data, row, Path(runs) / "raw" / data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(got, sort_keys=True))
    tmp.replace(out)
    return got


def rerun_file(page: str, argv: list[str], runs: str, inputs: tuple[str, ...] = ()) -> str:
    """Run a whole-file command into ``runs/files/<page>`` (resumable: skipped if its ``done`` marker exists),
    the committed data files ``inputs`` copied there first; the folder it wrote."""
    import shutil

    from studies.reproduce.table import DATA

    folder = Path(runs) / "files" / page
    done = folder / "done"
    if done.is_file():
        return str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in inputs:
        shutil.copyfile(ROOT / DATA / name, folder / name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    args = [a.replace("{dir}", str(folder)) for a in argv]
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"python {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    done.write_text(" ".join(args) + "\n")
    return str(folder)


def head_rows(s: Source) -> list[Row]:
    """``s``'s committed rows that reproduce at HEAD (all of them for a ``file`` source at HEAD)."""
    if s.rerun == "rows":
        return [r for r in read_rows(s, s.path) if s.head is None or s.head(r)]
    if s.rerun == "file" and s.at == "HEAD":
        return read_rows(s, s.path)
    return []


def sample_rows(sources: list[Source], k: int, seed: int) -> list[tuple[Source, Row]]:
    """``k`` cheap rows drawn without replacement by ``random.Random(seed)`` from the ``rows`` sources (in table
    order, rows in file order), so a seed always names the same rows of the same committed data."""
    pool = [(s, r) for s in sources if s.rerun == "rows" for r in head_rows(s) if s.cheap is None or s.cheap(r)]
    return random.Random(seed).sample(pool, min(k, len(pool)))


def list_lines(sources: list[Source]) -> list[str]:
    out = []
    for s in sources:
        n = len(read_rows(s, s.path)) if s.key and s.path.is_file() else 0
        how = {"rows": "row by row", "file": "whole file"}.get(s.rerun, f"not re-run: {s.why}")
        cmds = commands(s)
        out.append(
            f"{s.data} -> {s.page}.md: {n} rows, reproduce at {s.at}, {how}; "
            f"{len(cmds)} command(s){': ' + cmds[0] if cmds else ''}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="+", help=f"pages to reproduce (default: all): {', '.join(pages())}")
    ap.add_argument("--sample", type=int, help="re-run only this many cheap rows, drawn with --seed")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--runs", default="results/reproduce", help="raw re-runs (resumable; not committed)")
    ap.add_argument("--list", action="store_true", help="list the table and run nothing")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.pages or []) - set(pages()))
    if unknown or args.workers < 1 or (args.sample is not None and args.sample < 1):
        ap.exit(2, f"evroute: error: unknown page(s) {', '.join(unknown)}; --workers and --sample must be >= 1\n")
    sources = [s for s in SOURCES if not args.pages or s.page_name in args.pages]
    if args.list:
        print("\n".join(list_lines(sources)))
        return 0
    if args.sample is not None:
        tasks = sample_rows(sources, args.sample, args.seed)
        files: list[Source] = []
    else:
        tasks = [(s, r) for s in sources if s.rerun == "rows" for r in head_rows(s)]
        files = [s for s in sources if s.rerun == "file" and s.at == "HEAD"]
    runs = str(Path(args.runs).resolve())
    drifts: dict[str, list[Drift]] = {}
    checked: dict[str, int] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        row_futs = [(s, r, pool.submit(rerun_one_row, s.data, r, runs)) for s, r in tasks]
        regen = {s.page_name: s for s in files}
        file_futs: dict[str, Future[str]] = {
            p: pool.submit(rerun_file, p, list(s.regen), runs, s.inputs) for p, s in regen.items()
        }
        for s, r, fut in row_futs:
            try:
                n, d = compare(s, [r], [fut.result()])
            except Exception as e:  # a row that cannot be re-run is a drift, reported with the others
                n, d = 0, [Drift(key_of(s, r), {"<error>": ("row", f"{type(e).__name__}: {e}")})]
            checked[s.data] = checked.get(s.data, 0) + n
            drifts.setdefault(s.data, []).extend(d)
        for s in files:
            try:
                new = Path(file_futs[s.page_name].result()) / s.data
                n, d = compare(s, read_rows(s, s.path), read_rows(s, new) if new.is_file() else [])
            except Exception as e:
                n, d = 0, [Drift((s.data,), {"<error>": ("file", f"{type(e).__name__}: {e}")})]
            checked[s.data] = n
            drifts.setdefault(s.data, []).extend(d)
    for s in sources:
        if s.data in checked or s.data in drifts:
            d = drifts.get(s.data, [])
            excl = f"; not compared: {', '.join(s.excluded)}" if s.excluded else ""
            print(f"{s.data}: {checked.get(s.data, 0)} row(s) re-run at HEAD, {len(d)} drift(s){excl}")
            for x in d:
                print(f"  DRIFT {x.line()}")
        elif args.sample is None:
            reason = "rows labelled with their commit" if s.at != "HEAD" else (s.why or "no rows at HEAD")
            print(f"{s.data}: not re-run ({reason}; reproduce at {s.at})")
    return 1 if any(drifts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
