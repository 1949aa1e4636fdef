"""Streaming read of CSV trip logs: the rows of a file in chunks, each value checked, never the whole file in memory.

:class:`CsvRows` reads a CSV log one chunk of ``chunk_rows`` records at a time (plain lines -- no quote, carriage
return or NUL, each with the header's number of fields -- split by one ``str.split`` per chunk, anything else by
:mod:`csv` from that chunk on: the same fields) and turns each chunk
into a ``(n, 7)`` float array of the rows that pass the value checks (columns :data:`ROW_FIELDS`: time in s, speed
in m/s, altitude in m, state of charge in % or NaN when the log has none, latitude, longitude in degrees, and the
row's line number).  The checks, in this order (a row is counted under the first it fails): the header's number of
fields; the time (a number of seconds, an ISO 8601 timestamp, or text in ``time_format``; a format without a date is
a time of day that may wrap past midnight; a timestamp without a zone is read as UTC); every other mapped value a
finite number; speed >= 0; state of charge in [0, 100]; latitude in [-90, 90], longitude in [-180, 180]; time
increasing over the last kept row, and (a clock that jumps ahead once) not strictly past the next row's when the
next row's is past the last kept one (within a chunk; not for a time of day, which may wrap).  Numbers are parsed
per chunk by NumPy (a chunk with a bad value falls back to one value at a time), a ``%H:%M:%S`` time in one split of the
chunk, other ``time_format`` s by pandas: 12 CPU us a row of the Twizy logs' 15 columns against 32 us for the
row-by-row reader of 92600c2 (both measured on a loaded 2-core machine, load average 17).  Dropped rows are
counted per reason with the first line of each (:class:`DropCounts`), never listed: memory does not grow with the
number of bad rows.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from evroute.errors import DataError
from evroute.traces.clean import MAX_RUN, range_masks, spike_masks

if TYPE_CHECKING:
    from evroute.traces.reader import TraceColumns

#: rows of context kept before, and held back after, the rows a chunk decides (:class:`PlausibilityFilter`)
HOLD = 2 * MAX_RUN + 2
#: the columns of a row array
ROW_FIELDS = ("t_s", "speed_mps", "altitude_m", "soc_pct", "lat", "lon", "line")
SPEED_FACTORS = {"km/h": 1 / 3.6, "m/s": 1.0, "mph": 0.44704}
#: records per chunk (a few MB of text and row arrays)
CHUNK_ROWS = 8_192
_DAY_S = 86_400.0


class DropCounts:
    """Rows dropped per reason: a count and the first line (or sample) of each, and the number of distinct rows."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.total = 0

    def add(self, reason: str, lines: np.ndarray | list[int], distinct: bool = True) -> None:
        """Count ``lines`` under ``reason``; ``distinct``: they are rows not counted under another reason yet."""
        n = len(lines)
        if not n:
            return
        first: int = int(np.min(lines))
        self.count[reason] = self.count.get(reason, 0) + n
        self.first[reason] = min(self.first.get(reason, first), first)
        if distinct:
            self.total += n

    def __bool__(self) -> bool:
        return self.total > 0

    def text(self, source: str, n_rows: int, unit: str = "line") -> str:
        """One line: ``<source>: dropped K of N rows: <reason> (k, first at <unit> L); ...``."""
        parts = [f"{r} ({c}, first at {unit} {self.first[r]})" for r, c in self.count.items() if c]
        return f"{source}: dropped {self.total} of {n_rows} rows: {'; '.join(parts)}"

    def brief(self) -> str:
        """``; <reason>: <count>, ...`` for an error message (empty when nothing was dropped)."""
        parts = [f"{k}: {c} dropped (first at line {self.first[k]})" for k, c in self.count.items() if c]
        return f"; {', '.join(parts)}" if parts else ""


def _floats(strs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, reason code)`` of one column's texts: code 0 fine, 1 not a number, 2 not finite."""
    try:
        x = np.array(strs, dtype=np.float64)
    except ValueError:
        x = np.empty(len(strs))
        for i, s in enumerate(strs):
            try:
                x[i] = float(s)
            except ValueError:
                x[i] = np.nan
    code = np.zeros(len(strs), dtype=np.int8)
    bad = ~np.isfinite(x)
    if bad.any():
        for j in np.flatnonzero(bad).tolist():
            try:
                float(strs[j])
                code[j] = 2
            except ValueError:
                code[j] = 1
    return x, code


def _times(strs: list[str], fmt: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(seconds, ok)`` of the time column's texts (module doc)."""
    if fmt is None:
        x, code = _floats(strs)
        ok = code == 0
        for i in np.flatnonzero(code == 1):  # not a number: ISO 8601
            try:
                stamp = datetime.fromisoformat(strs[i].strip())
                if stamp.tzinfo is None:
                    stamp = stamp.replace(tzinfo=UTC)
                x[i] = stamp.timestamp()
                ok[i] = math.isfinite(x[i])
            except (ValueError, OverflowError, OSError):
                pass
        return x, ok
    if fmt == "%H:%M:%S":  # fast path: the fields of every row split at once (pandas' strptime: ~10 us a row)
        try:
            hms = np.array(":".join(strs).split(":"), dtype=np.float64).reshape(len(strs), 3)
        except ValueError:
            hms = None
        if hms is not None and np.all((hms >= 0) & (hms < [24, 60, 61]) & (hms == np.floor(hms))):
            return hms @ np.array([3600.0, 60.0, 1.0]), np.ones(len(strs), dtype=bool)
    import pandas as pd

    ts = pd.to_datetime(pd.Series([x.strip() for x in strs], dtype=object), format=fmt, errors="coerce")
    ok = ~ts.isna().to_numpy()
    if not ok.any():
        return np.zeros(len(strs)), ok
    year = ts.dt.year.to_numpy(dtype=np.float64, na_value=np.nan)
    if np.all(year[ok] == 1900):  # no date in the format: a time of day
        secs = ts.dt.hour * 3600 + ts.dt.minute * 60 + ts.dt.second + ts.dt.microsecond * 1e-6
    else:
        secs = (ts - pd.Timestamp(0)).dt.total_seconds()
    return secs.to_numpy(dtype=np.float64, na_value=np.nan), ok


def _strided(fields: list[str], n: int, width: int) -> Callable[[int], list[str]]:
    """Column ``k`` of ``n`` records of ``width`` fields laid out one after the other in ``fields``."""
    return lambda k: fields[k : n * width : width]


def _column_of(rows: list[list[str]]) -> Callable[[int], list[str]]:
    """Column ``k`` of the records ``rows``."""
    return lambda k: [r[k] for r in rows]


class CsvRows:
    """The valid rows of one CSV log, chunk by chunk (module doc); iterate once.  ``columns`` ``None``: the format
    detected from the header (:func:`evroute.traces.logformats.detect_columns`).

    Attributes (final after the iteration): ``n_rows`` non-blank records after the header, ``drops`` the rows
    dropped by the value checks (:class:`DropCounts`; the plausibility checks add theirs,
    :mod:`evroute.traces.stream`).

    Raises:
        DataError: the file is missing, not UTF-8 CSV, empty, or a mapped column is not in its header (one line
            naming the file).
    """

    def __init__(self, path: str | Path, columns: TraceColumns | None, *, chunk_rows: int = CHUNK_ROWS) -> None:
        from evroute.traces.logformats import detect_columns

        self.path = Path(path)
        self.chunk_rows = chunk_rows
        self.n_rows = 0
        self.drops = DropCounts()
        if not self.path.is_file():
            raise DataError(f"trip log {self.path} not found")
        self.header = read_header(self.path)
        self.cols = columns if columns is not None else detect_columns(self.header, str(self.path))
        columns = self.cols
        missing = [c for c in columns.required() if c not in self.header]
        if missing:
            shown = ", ".join(self.header)[:200]
            raise DataError(f"{self.path}: missing column(s) {', '.join(map(repr, missing))} (header: {shown})")
        self._last_t = -math.inf
        self._day = 0.0

    def __iter__(self) -> Iterator[np.ndarray]:
        line = 2  # the line of the next record (one record per line)
        try:
            with self.path.open(newline="", encoding="utf-8") as fh:
                for chunk in self._records(fh):
                    if isinstance(chunk, tuple):  # plain lines: every record has the header's fields
                        fields, n = chunk
                        yield self._chunk(_strided(fields, n, len(self.header)), n, range(line, line + n), [])
                        line += n
                        continue
                    lines = range(line, line + len(chunk))
                    line += len(chunk)
                    width = len(self.header)
                    if all(len(r) == width for r in chunk):
                        yield self._chunk(_column_of(chunk), len(chunk), lines, [])
                        continue
                    rows = [r for r in chunk if len(r) == width]
                    good = [k for k, r in zip(lines, chunk, strict=True) if len(r) == width]
                    wrong = [k for k, r in zip(lines, chunk, strict=True) if r and len(r) != width]
                    yield self._chunk(_column_of(rows), len(rows), good, wrong)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise DataError(f"cannot read trip log {self.path}: {' '.join(str(exc).split())[:120]}") from None

    def _records(self, fh: TextIO) -> Iterator[tuple[list[str], int] | list[list[str]]]:
        """The records after the header, ``chunk_rows`` at a time: ``(fields, n)`` for ``n`` plain lines (no quote,
        carriage return or NUL, each with the header's number of fields: what :mod:`csv` gives, split in one call),
        else the :mod:`csv` records (from the first chunk that is not plain on: a quoted field may span lines)."""
        width = len(self.header)
        first = fh.readline()
        plain = '"' not in first  # a quoted header may span lines: every record through csv
        reader: Iterator[list[str]] | None = None
        if not plain:
            reader = csv.reader(itertools.chain([first], fh))
            next(reader, None)
        while True:
            if reader is None:
                lines = list(itertools.islice(fh, self.chunk_rows))
                if not lines:
                    return
                text = "".join(lines)
                text += "" if text.endswith("\n") else "\n"
                counts = list(map(str.count, lines, itertools.repeat(",")))
                if not ('"' in text or "\r" in text or "\0" in text) and counts.count(width - 1) == len(lines):
                    yield text.replace("\n", ",").split(","), len(lines)
                    continue
                reader = csv.reader(itertools.chain(lines, fh))
            block = list(itertools.islice(reader, self.chunk_rows))
            if not block:
                return
            yield block

    def _chunk(self, column: Callable[[int], list[str]], n: int, lines: Sequence[int], wrong: list[int]) -> np.ndarray:
        """The ``(n, 7)`` valid rows of one chunk (module doc), drops counted."""
        cols = self.cols
        self.n_rows += n + len(wrong)
        self.drops.add("wrong number of fields", wrong)
        out = np.empty((n, 7))
        if not n:
            return out
        index = {c: self.header.index(c) for c in cols.required()}
        line = np.asarray(lines, dtype=np.float64)
        code = np.zeros(n, dtype=np.int16)  # the first failing check, 0: none
        reasons: list[str] = []

        def fail(mask: np.ndarray, reason: str) -> None:
            reasons.append(reason)
            k = len(reasons)
            code[(code == 0) & mask] = k

        k_t = index[cols.time]
        t, ok_t = _times(column(k_t), cols.time_format)
        if cols.time_format is None:
            fail(~ok_t, f"column {cols.time!r} not seconds or an ISO 8601 time")
        else:
            fail(~ok_t, f"column {cols.time!r} does not match {cols.time_format!r}")
        named = [("speed", cols.speed), ("altitude", cols.altitude), ("soc", cols.soc), ("lat", cols.lat)]
        named.append(("lon", cols.lon))
        values: dict[str, np.ndarray] = {}
        for key, col in named:
            if col is None:
                values[key] = np.full(n, np.nan)
                continue
            k = index[col]
            x, c = _floats(column(k))
            fail(c == 1, f"column {col!r} not a number")
            fail(c == 2, f"column {col!r} not finite")
            values[key] = x
        with np.errstate(invalid="ignore"):
            fail(values["speed"] < 0, f"column {cols.speed!r} negative speed")
            if cols.soc is not None:
                s = values["soc"]
                fail((s < 0) | (s > 100), f"column {cols.soc!r} state of charge outside [0, 100]")
            far = (np.abs(values["lat"]) > 90) | (np.abs(values["lon"]) > 180)
        fail(far, f"columns {cols.lat!r}/{cols.lon!r} position outside WGS 84 range")
        # time increases over the last kept row (sequential: a time of day may pass midnight)
        keep = code == 0
        wraps = cols.time_format is not None and "%d" not in cols.time_format
        last, day = self._last_t, self._day
        tl = t.tolist()
        late = np.zeros(n, dtype=bool)
        ahead = np.zeros(n, dtype=bool)
        ks = np.flatnonzero(keep).tolist()
        for p, i in enumerate(ks):
            ti = tl[i] + day
            if ti <= last:
                if not (wraps and ti + _DAY_S > last):
                    late[i] = True
                    continue
                day += _DAY_S  # a time of day that passed midnight
                ti += _DAY_S
            elif not wraps and p + 1 < len(ks) and last < tl[ks[p + 1]] + day < ti:
                ahead[i] = True  # a clock that jumps ahead once: this row goes, not the rows after it
                continue
            tl[i] = ti
            last = ti
        self._last_t, self._day = last, day
        fail(late, f"column {cols.time!r} time does not increase")
        fail(ahead, f"column {cols.time!r} time ahead of the next row's")
        for k, reason in enumerate(reasons, start=1):
            self.drops.add(reason, line[code == k].astype(np.int64))
        keep = code == 0
        out[:, 0] = tl
        out[:, 1] = values["speed"] * SPEED_FACTORS[cols.speed_unit]
        out[:, 2] = values["altitude"] if cols.altitude is not None else 0.0
        out[:, 3] = values["soc"]
        out[:, 4] = values["lat"]
        out[:, 5] = values["lon"]
        out[:, 6] = line
        return out[keep]


class PlausibilityFilter:
    """The plausibility checks of :mod:`evroute.traces.clean` on a stream of rows (:mod:`evroute.traces.stream`,
    stage 2): ``feed(rows)`` returns the rows decided and kept so far, ``finish()`` the rest.

    ``rows``: ``(n, 7)`` arrays in the layout of :data:`~evroute.traces.csvstream.ROW_FIELDS`; dropped rows are
    counted in ``drops`` by their line (column 6)."""

    def __init__(self, drops: DropCounts) -> None:
        self.drops = drops
        self._ctx = np.empty((0, 7))  # decided rows that passed the range checks (glitch rows included)
        self._pending = np.empty((0, 7))  # rows that passed the range checks, not decided yet

    def feed(self, rows: np.ndarray) -> np.ndarray:
        ranges = range_masks(rows[:, 1], rows[:, 2])
        bad = np.zeros(len(rows), dtype=bool)
        for reason, mask in ranges.items():
            self.drops.add(reason, rows[mask, 6].astype(np.int64), distinct=False)
            bad |= mask
        self.drops.total += int(bad.sum())
        self._pending = np.concatenate([self._pending, rows[~bad]])
        if len(self._pending) <= HOLD:
            return np.empty((0, 7))
        return self._decide(len(self._pending) - HOLD)

    def finish(self) -> np.ndarray:
        return self._decide(len(self._pending))

    def _decide(self, k: int) -> np.ndarray:
        """Decide the first ``k`` pending rows (the rest stay pending); returns those kept."""
        buf = np.concatenate([self._ctx, self._pending])
        c = len(self._ctx)
        masks = spike_masks(buf[:, 0], buf[:, 1], buf[:, 3], buf[:, 4], buf[:, 5])
        bad = np.zeros(k, dtype=bool)
        for reason, mask in masks.items():
            m = mask[c : c + k]
            self.drops.add(reason, buf[c : c + k][m, 6].astype(np.int64), distinct=False)
            bad |= m
        self.drops.total += int(bad.sum())
        decided = self._pending[:k]
        self._ctx = buf[max(c + k - HOLD, 0) : c + k]
        self._pending = self._pending[k:]
        return decided[~bad]


def read_header(path: Path) -> list[str]:
    """The stripped header row of a CSV file (:class:`DataError` naming the file when unreadable or empty)."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read trip log {path}: {' '.join(str(exc).split())[:120]}") from None
    if not header:
        raise DataError(f"{path}: empty file (expected a header row)")
    return [h.strip() for h in header]


__all__ = [
    "CHUNK_ROWS",
    "HOLD",
    "ROW_FIELDS",
    "SPEED_FACTORS",
    "CsvRows",
    "DropCounts",
    "PlausibilityFilter",
    "read_header",
]
