"""Re-run committed results rows at HEAD and compare (issue 38, item 4).

    python -m studies.reproduce.run --list                      # every data file: page, rows, commit, how re-run
    python -m studies.reproduce.run --pages gp_vs_bi --workers 2  # re-run every row of a page that reproduces at HEAD
    python -m studies.reproduce.run --sample 6 --seed 0         # a fixed seeded sample of cheap rows (CI)
    python -m studies.reproduce.run                             # every data file from scratch (about 14 CPU hours)
    python -m studies.reproduce.run --max-cpu 600               # every data file whose regeneration is cheap

For each data file under ``docs/results/data/`` the table :mod:`studies.reproduce.table` knows the commands that
produced it, the columns compared, the commit its rows reproduce at and the estimated CPU of its regeneration
(``--list``).  Without ``--sample`` every data file is regenerated from scratch at this checkout (row by row with
each row's seed, or the whole file by its study's commands into ``--runs``), in a process pool of ``--workers``;
resumable: a row or file already re-run under ``--runs`` is read back, not run again; the rows re-run are written to
``--runs``/regenerated/.  Each re-run row that reproduces at HEAD is compared with the committed one: numbers to one
unit in their last stored decimal (plus a stated per-column tolerance), text exactly, timing columns not at all
(they are re-measured; :mod:`studies.reproduce.compare`).  Rows labelled with an older commit are regenerated but
not compared (other code recorded them).  ``--sample`` re-runs only cheap rows at HEAD (the CI drift check): never
an expensive source (:data:`studies.reproduce.table.EXPENSIVE_S`).

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
from studies.reproduce.table import BY_DATA, EXPENSIVE_S, ROOT, SOURCES, Source, commands, pages


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


def rerun_file(page: str, regen: list[list[str]], runs: str, inputs: tuple[str, ...] = ()) -> str:
    """Run a page's regeneration commands in order into ``runs/files/<page>`` (``{dir}``; ``{raw}``: ``runs/raw``),
    the committed data files ``inputs`` copied there first (resumable: skipped if its ``done`` marker exists, each
    study resuming its own runs); the folder it wrote."""
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
    ran = []
    for argv in regen:
        args = [a.replace("{dir}", str(folder)).replace("{raw}", str(Path(runs) / "raw")) for a in argv]
        proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"python {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        ran.append(" ".join(args))
    done.write_text("\n".join(ran) + "\n")
    return str(folder)


def cpu_estimate(s: Source) -> float:
    """Estimated CPU seconds of regenerating ``s`` from scratch: its ``cpu_columns`` summed over its rows (and as
    top-level fields of a JSON file: numbers, or lists / dicts of numbers; a field of timed repeats counts each of
    them) plus ``cpu_extra_s``."""
    total = float(s.cpu_extra_s)
    if not s.cpu_columns or not s.path.is_file():
        return total

    def num(v: object) -> float:
        if isinstance(v, dict):
            return sum(num(x) for x in v.values())
        if isinstance(v, list):
            return sum(num(x) for x in v)
        try:
            return float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 0.0

    if s.path.suffix == ".json":
        top = json.loads(s.path.read_text())
        if isinstance(top, dict):
            reps = num(top.get("repeats", 1)) or 1.0
            total += sum(num(top[c]) * (reps if c == "seconds" else 1.0) for c in s.cpu_columns if c in top)
    if s.key:
        for r in read_rows(s, s.path):
            total += sum(num(r.get(c, "")) for c in s.cpu_columns)
    return total


def head_rows(s: Source) -> list[Row]:
    """``s``'s committed rows that reproduce at HEAD: a ``rows`` source's that ``head`` accepts; a ``file``
    source's all at HEAD, else those ``head`` accepts (none without it)."""
    if s.rerun not in ("rows", "file") or not s.key:
        return []
    rows = read_rows(s, s.path)
    if s.rerun == "file" and s.at == "HEAD":
        return rows
    return [r for r in rows if s.head is not None and s.head(r)]


def sample_rows(sources: list[Source], k: int, seed: int) -> list[tuple[Source, Row]]:
    """``k`` cheap rows drawn without replacement by ``random.Random(seed)``, stratified over the ``rows`` sources
    (in table order, each source's cheap rows in file order, shuffled; then one row of each source in turn), so a
    seed always names the same rows of the same committed data and every source with cheap rows at HEAD is in a
    sample of at least as many rows as there are such sources."""
    rng = random.Random(seed)
    pools = []
    for s in sources:
        if s.rerun == "rows" and s.cheap is not None:
            cheap = [r for r in head_rows(s) if s.cheap(r)]
            if cheap:
                pools.append([(s, r) for r in rng.sample(cheap, len(cheap))])
    out: list[tuple[Source, Row]] = []
    while len(out) < k and any(pools):
        for pool in pools:
            if pool and len(out) < k:
                out.append(pool.pop(0))
    return out


def list_lines(sources: list[Source]) -> list[str]:
    out = []
    for s in sources:
        rows = read_rows(s, s.path) if s.key and s.path.is_file() else []
        heads = head_rows(s)
        at_head = len(heads)
        if s.rerun and rows and at_head < len(rows):
            keys = {key_of(s, r) for r in heads}
            older = sorted({r.get("commit", "") for r in rows if key_of(s, r) not in keys} - {""}) or [s.at]
            where = f"{at_head} at HEAD, {len(rows) - at_head} at {', '.join(older)} (regenerated, not compared)"
        else:
            where = f"reproduce at {s.at}"
        how = {"rows": "row by row", "file": "whole file"}.get(s.rerun, f"not re-run: {s.why}")
        if s.timing:
            how += " (timings: re-measured, never compared)"
        cpu = cpu_estimate(s)
        cost = f"~{cpu:,.0f} CPU s{' (expensive)' if cpu > EXPENSIVE_S else ''}" if cpu else "no CPU of its own"
        note = f" [{s.cpu_note}]" if s.cpu_note else ""
        cmds = commands(s)
        out.append(
            f"{s.data} -> {s.page}.md: {len(rows)} rows, {where}; {how}; {cost}{note}; "
            f"{len(cmds)} command(s){': ' + cmds[0] if cmds else ''}"
        )
    return out


def page_cpu(sources: list[Source]) -> dict[str, float]:
    """Estimated CPU seconds of regenerating each page's data (its sources' :func:`cpu_estimate` summed)."""
    out: dict[str, float] = {}
    for s in sources:
        out[s.page_name] = out.get(s.page_name, 0.0) + cpu_estimate(s)
    return out


def write_regenerated(runs: str, s: Source, rows: list[Row]) -> None:
    """The rows of ``s`` re-run at this checkout as a CSV under ``runs/regenerated/`` (the committed columns)."""
    import csv
    import io

    if not rows:
        return
    cols = list(read_rows(s, s.path)[0]) if s.path.is_file() else list(rows[0])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    out = Path(runs) / "regenerated" / Path(s.data).name.removesuffix(".gz")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="+", help=f"pages to reproduce (default: all): {', '.join(pages())}")
    ap.add_argument("--sample", type=int, help="re-run only this many cheap rows, drawn with --seed")
    ap.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--runs", default="results/reproduce", help="raw re-runs (resumable; not committed)")
    ap.add_argument("--list", action="store_true", help="list the table and run nothing")
    ap.add_argument(
        "--max-cpu", type=float, help="skip pages whose regeneration is estimated above this many CPU s (--list)"
    )
    args = ap.parse_args(argv)
    unknown = sorted(set(args.pages or []) - set(pages()))
    if unknown or args.workers < 1 or (args.sample is not None and args.sample < 1):
        ap.exit(2, f"evroute: error: unknown page(s) {', '.join(unknown)}; --workers and --sample must be >= 1\n")
    if args.max_cpu is not None and not args.max_cpu > 0:
        ap.exit(2, "evroute: error: --max-cpu must be > 0\n")
    sources = [s for s in SOURCES if not args.pages or s.page_name in args.pages]
    if args.list:
        total = sum(cpu_estimate(s) for s in sources)
        print("\n".join([*list_lines(sources), f"total: ~{total:,.0f} CPU s to regenerate these files from scratch"]))
        return 0
    cost = page_cpu(sources)
    skipped = {p for p, c in cost.items() if args.max_cpu is not None and c > args.max_cpu}
    if args.sample is not None:
        tasks = sample_rows(sources, args.sample, args.seed)
        files: list[Source] = []
    else:  # every row and file from scratch; rows at older commits regenerated, not compared
        todo = [s for s in sources if s.page_name not in skipped]
        tasks = [(s, r) for s in todo if s.rerun == "rows" for r in read_rows(s, s.path)]
        files = [s for s in todo if s.rerun == "file"]
    runs = str(Path(args.runs).resolve())
    drifts: dict[str, list[Drift]] = {}
    checked: dict[str, int] = {}
    regenerated: dict[str, int] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        row_futs = [(s, r, pool.submit(rerun_one_row, s.data, r, runs)) for s, r in tasks]
        regen = {s.page_name: s for s in files}
        file_futs: dict[str, Future[str]] = {
            p: pool.submit(rerun_file, p, [list(c) for c in s.regen], runs, s.inputs) for p, s in regen.items()
        }
        new_rows: dict[str, list[Row]] = {}
        for s, r, fut in row_futs:
            at_head = s.head is None or s.head(r)
            try:
                got = fut.result()
                new_rows.setdefault(s.data, []).append(got)
                n, d = compare(s, [r], [got]) if at_head else (0, [])
            except Exception as e:  # a row that cannot be re-run is a drift, reported with the others
                n, d = 0, [Drift(key_of(s, r), {"<error>": ("row", f"{type(e).__name__}: {e}")})]
            checked[s.data] = checked.get(s.data, 0) + n
            regenerated[s.data] = regenerated.get(s.data, 0) + (not at_head)
            drifts.setdefault(s.data, []).extend(d)
        for data, got_rows in new_rows.items():
            if args.sample is None:
                write_regenerated(runs, BY_DATA[data], got_rows)
        for s in files:
            try:
                new = Path(file_futs[s.page_name].result()) / s.data
                fresh = read_rows(s, new) if new.is_file() and s.key else []
                mine = head_rows(s)
                n, d = compare(s, mine, fresh) if mine else (0, [])
                regenerated[s.data] = max(len(fresh) - n, 0) if s.key else 0
            except Exception as e:
                n, d = 0, [Drift((s.data,), {"<error>": ("file", f"{type(e).__name__}: {e}")})]
            checked[s.data] = n
            drifts.setdefault(s.data, []).extend(d)
    for s in sources:
        if s.data in checked or s.data in drifts:
            d = drifts.get(s.data, [])
            excl = f"; not compared: {', '.join(s.excluded)}" if s.excluded else ""
            extra = ""
            if regenerated.get(s.data):
                extra = f"; {regenerated[s.data]} row(s) regenerated at HEAD, not compared (recorded at older commits)"
            if s.timing:
                extra += "; timings re-measured, never compared"
            print(f"{s.data}: {checked.get(s.data, 0)} row(s) re-run at HEAD, {len(d)} drift(s){excl}{extra}")
            for x in d:
                print(f"  DRIFT {x.line()}")
        elif args.sample is None:
            reason = (
                f"skipped: estimated {cost[s.page_name]:,.0f} CPU s > --max-cpu"
                if s.page_name in skipped
                else (s.why or "no rows")
            )
            print(f"{s.data}: not re-run ({reason})")
    return 1 if any(drifts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
