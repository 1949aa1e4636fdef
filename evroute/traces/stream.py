"""A trip log as a stream of blocks: bounded memory for a log of any length.

The whole-file reader (:func:`evroute.traces.reader.read_trace_csv`) and the map-matched learning of a long log both
read through the same pipeline, one chunk of rows at a time (memory: a few chunks, whatever the file's length):

1. :class:`~evroute.traces.csvstream.CsvRows`: the value checks (fields, numbers, ranges, time increasing).
2. :class:`~evroute.traces.csvstream.PlausibilityFilter`: the plausibility checks of :mod:`evroute.traces.clean`
   (speed and altitude ranges, glitches of speed, position and charge).  A glitch spans at most ``MAX_RUN`` rows,
   so the decision for a row
   depends on its ``2 MAX_RUN + 2`` neighbours either side only: the filter keeps that many decided rows as context
   and holds back as many undecided ones, and decides each row exactly as a pass over the whole file would
   (tested against :func:`~evroute.traces.clean.implausible_rows`).
3. :class:`ChargeSplitter`: :func:`~evroute.traces.clean.charging_segments` one row at a time (it holds back only the
   current strictly increasing run of charge readings, which may turn out to be a charging rise): the same segments.
4. :func:`segment_blocks`: each segment in blocks of at most ``block_rows`` rows; a block after the first of its
   segment starts with the previous block's last row, so consecutive blocks share a sample and their energy readings
   (:mod:`evroute.traces.observations`) telescope: every window of the segment is learned, and a block boundary is a
   window boundary whose level is the shown charge +- half a step, counted in both blocks as independent (the sum of
   the two readings' variances overstates the variance of their sum by at most two rounding variances per block:
   conservative).

:class:`DistanceCheck` is :func:`~evroute.traces.clean.distance_mismatch` accumulated over a segment's blocks.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evroute.errors import DataWarning
from evroute.traces.clean import (
    DISTANCE_MIN_M,
    DISTANCE_RATIO,
    DISTANCE_STEP_S,
    SOC_RISE_PCT,
)
from evroute.traces.csvstream import CHUNK_ROWS, CsvRows, DropCounts, PlausibilityFilter
from evroute.traces.formats import haversine_m
from evroute.traces.logformats import is_gpx
from evroute.traces.reader import Trace, TraceColumns

#: rows per block handed to the map matcher and the readings (17 minutes at 1 Hz): a block's readings' ``(m, k)``
#: shares of its ``k`` path edges and the dense ``(k, k)`` statistics grow with it (their noise is tridiagonal)
BLOCK_ROWS = 1_000


class ChargeSplitter:
    """Stage 3 of the module doc: ``feed(rows)`` returns ``[(segment, rows), ...]`` of the rows assigned so far,
    ``finish()`` the rest; ``rises`` lists ``(charge at the foot, charge at the top, line of the foot, line of the
    top)`` of each rise left out.  Segment numbers count from 0.  A log without state of charge (NaN) is one
    segment (NaN never rises)."""

    def __init__(self, rise_pct: float = SOC_RISE_PCT) -> None:
        self.rise = rise_pct
        self.segment = 0
        self.rises: list[tuple[float, float, int, int]] = []
        self._started = False
        self._low = self._prev = float("nan")  # lowest reading of the segment, the last reading
        self._foot: tuple[float, int] = (float("nan"), 0)  # charge and line of the current run's first row
        self._undecided = np.empty((0, 7))  # the run after its first row, or the top of a rise so far
        self._rising = False

    def feed(self, rows: np.ndarray, *, end: bool = False) -> list[tuple[int, np.ndarray]]:
        buf = np.concatenate([self._undecided, rows]) if len(self._undecided) else rows
        lab = [-2] * len(buf)  # segment of each row; -1 left out (a rise), -2 not decided yet
        run = 0 if not self._rising else -1  # first undecided row of the current run (-1: none)
        top = 0 if self._rising else -1
        if not len(self._undecided):
            run = -1
        soc = buf[:, 3].tolist()
        for i in range(len(self._undecided), len(buf)):
            x = soc[i]
            if top >= 0:
                if x > self._prev:  # still going up
                    lab[top] = -1
                    top, self._prev = i, x
                    continue
                self._after_top(buf[top])
                lab[top] = self.segment
                top = -1
            if not self._started:
                self._started = True
                self._low = self._prev = x
                self._foot = (x, int(buf[i, 6]))
                lab[i] = self.segment
                continue
            if x > self._prev:
                if x - self._low > self.rise:  # a charge: the segment ends at the foot of the run
                    self.rises.append((self._foot[0], x, self._foot[1], 0))
                    if run >= 0:
                        lab[run:i] = [-1] * (i - run)
                    run, top = -1, i
                elif run < 0:
                    run = i
            else:
                if run >= 0:
                    lab[run:i] = [self.segment] * (i - run)
                    run = -1
                lab[i] = self.segment
                self._foot = (x, int(buf[i, 6]))
                self._low = min(self._low, x)
            self._prev = x
        if end:
            if top >= 0:
                self._after_top(buf[top])
                lab[top] = self.segment
            elif run >= 0:
                lab[run:] = [self.segment] * (len(buf) - run)
            top = run = -1
        first = top if top >= 0 else run
        self._rising = top >= 0
        self._undecided = buf[first:] if first >= 0 else np.empty((0, 7))
        decided = len(buf) - len(self._undecided)
        labels = np.asarray(lab[:decided], dtype=np.int64)
        cut = np.flatnonzero(np.diff(labels)) + 1
        return [
            (int(labels[a]), buf[a:b])
            for a, b in zip(np.r_[0, cut], np.r_[cut, decided], strict=True)
            if b > a and labels[a] >= 0
        ]

    def _after_top(self, top: np.ndarray) -> None:
        """The top of a rise starts the next segment."""
        foot_soc, _, foot_line, _ = self.rises[-1]
        self.rises[-1] = (foot_soc, float(top[3]), foot_line, int(top[6]))
        self.segment += 1
        self._low = self._prev = float(top[3])
        self._foot = (float(top[3]), int(top[6]))

    def finish(self) -> list[tuple[int, np.ndarray]]:
        return self.feed(np.empty((0, 7)), end=True)


@dataclass(frozen=True)
class Block:
    """``rows`` (``(n, 7)``, :data:`~evroute.traces.csvstream.ROW_FIELDS`) of segment ``segment``; ``first``: the
    segment's first block (else ``rows[0]`` is the previous block's last row); ``last``: its last block."""

    segment: int
    rows: np.ndarray
    first: bool
    last: bool

    def trace(self, name: str) -> Trace:
        """The block as a :class:`Trace` (time shifted to start at 0; the segment's start time in ``meta``)."""
        r = self.rows
        return Trace(
            t_s=r[:, 0] - r[0, 0],
            speed_mps=r[:, 1],
            altitude_m=r[:, 2],
            soc_pct=r[:, 3],
            lat=r[:, 4],
            lon=r[:, 5],
            name=name,
            meta={"start_s": float(r[0, 0]), "first_line": float(r[0, 6])},
        )


def segment_blocks(parts: Iterable[tuple[int, np.ndarray]], block_rows: int = BLOCK_ROWS) -> Iterator[Block]:
    """The ``(segment, rows)`` parts of :class:`ChargeSplitter` (segments in increasing order) as :class:`Block`
    s of at most ``block_rows`` rows (module doc); a segment of fewer than two rows is left out."""
    if block_rows < 2:
        raise ValueError("block_rows must be >= 2")
    seg, n, first = -1, 0, True
    buf: list[np.ndarray] = []
    for s, rows in parts:
        if s != seg:
            if n >= 2:
                yield Block(seg, np.concatenate(buf), first, True)
            seg, buf, n, first = s, [], 0, True
        buf.append(rows)
        n += len(rows)
        while n > block_rows:
            a = np.concatenate(buf)
            yield Block(seg, a[:block_rows], first, False)
            rest = a[block_rows - 1 :]  # the block's last row starts the next
            buf, n, first = [rest], len(rest), False
    if n >= 2:
        yield Block(seg, np.concatenate(buf), first, True)


class DistanceCheck:
    """:func:`~evroute.traces.clean.distance_mismatch` of a segment fed block by block: ``add(block)``, then
    ``result()`` (``(by speed, by GPS)`` in m when they disagree, else ``None``)."""

    def __init__(self) -> None:
        self.by_speed = 0.0
        self.by_gps = 0.0
        self._t0 = float("nan")
        self._next = 0.0  # the next grid time (s since the segment's start)
        self._last: tuple[float, float] | None = None  # the last position taken
        self._end: np.ndarray | None = None

    def add(self, rows: np.ndarray) -> None:
        if np.isnan(self._t0):
            self._t0 = float(rows[0, 0])
        t = rows[:, 0] - self._t0
        self.by_speed += float(np.sum(0.5 * (rows[1:, 1] + rows[:-1, 1]) * np.diff(t)))
        grid = np.arange(self._next, t[-1], DISTANCE_STEP_S)
        k = np.unique(np.searchsorted(t, grid))
        if len(grid):
            self._next = float(grid[-1] + DISTANCE_STEP_S)
        self._take(rows[k, 4], rows[k, 5])
        self._end = rows[-1]

    def _take(self, la: np.ndarray, lo: np.ndarray) -> None:
        if not len(la):
            return
        if self._last is not None:
            la, lo = np.r_[self._last[0], la], np.r_[self._last[1], lo]
        if len(la) > 1:
            self.by_gps += float(haversine_m(la[:-1], lo[:-1], la[1:], lo[1:]).sum())
        self._last = (float(la[-1]), float(lo[-1]))

    def result(self) -> tuple[float, float] | None:
        if self._end is not None and self._last != (float(self._end[4]), float(self._end[5])):
            self._take(self._end[4:5], self._end[5:6])
            self._end = None
        if self.by_gps < DISTANCE_MIN_M:
            return None
        ratio = self.by_speed / self.by_gps if self.by_gps > 0 else float("inf")
        return (self.by_speed, self.by_gps) if not 1 / DISTANCE_RATIO <= ratio <= DISTANCE_RATIO else None


class _GpxRows:
    """A GPX file as :class:`~evroute.traces.csvstream.CsvRows` does a CSV file: one chunk of its valid points (GPX
    is parsed whole by ``gpxpy``; :func:`~evroute.traces.formats.gpx_rows`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.drops = DropCounts()
        self.n_rows = 0

    def __iter__(self) -> Iterator[np.ndarray]:
        from evroute.traces.formats import gpx_rows

        rows, self.n_rows = gpx_rows(self.path, self.drops)
        yield rows


class LogStream:
    """One CSV log (or GPX: ``fmt`` ``gpx``, or ``auto`` and a ``.gpx`` suffix) as :class:`Block` s (module doc);
    ``columns`` ``None``: a CSV log's format detected from its header (:mod:`evroute.traces.logformats`).  Iterate
    once; the warnings of the file (rows dropped, charges
    split off, a speed that disagrees with the positions) come when the iteration ends, one line each.

    Attributes: ``rows`` (:class:`~evroute.traces.csvstream.CsvRows`: ``n_rows``, ``drops``), ``splitter``
    (:class:`ChargeSplitter`: ``rises``), ``kept`` rows kept in all."""

    def __init__(
        self,
        path: str | Path,
        columns: TraceColumns | None = None,
        *,
        block_rows: int = BLOCK_ROWS,
        chunk_rows: int = CHUNK_ROWS,
        split: bool = True,
        warn: bool = True,
        fmt: str = "auto",
    ) -> None:
        self.path = Path(path)
        self.gpx = is_gpx(path, fmt)
        self.rows = _GpxRows(self.path) if self.gpx else CsvRows(path, columns, chunk_rows=chunk_rows)
        self.filter = PlausibilityFilter(self.rows.drops)
        self.splitter = ChargeSplitter(SOC_RISE_PCT if split else float("inf"))
        self.block_rows = block_rows
        self.kept = 0
        self.show_warnings = warn
        self.mismatches: list[tuple[int, float, float]] = []

    def _parts(self) -> Iterator[tuple[int, np.ndarray]]:
        for chunk in self.rows:
            kept = self.filter.feed(chunk)
            self.kept += len(kept)
            yield from self.splitter.feed(kept)
        kept = self.filter.finish()
        self.kept += len(kept)
        yield from self.splitter.feed(kept)
        yield from self.splitter.finish()

    def __iter__(self) -> Iterator[Block]:
        check = DistanceCheck()
        for block in segment_blocks(self._parts(), self.block_rows):
            check.add(block.rows)
            yield block
            if block.last:
                bad = check.result()
                if bad is not None:
                    self.mismatches.append((block.segment, *bad))
                check = DistanceCheck()
        if self.show_warnings:
            self.warn()

    def warn(self) -> None:
        """The file's warnings (module doc)."""
        src = str(self.path)
        if self.rows.drops:
            warnings.warn(DataWarning(self.rows.drops.text(src, self.rows.n_rows)), stacklevel=3)
        rises = self.splitter.rises
        if rises:
            shown = "; ".join(f"{a:g} % -> {b:g} % (lines {la} to {lb})" for a, b, la, lb in rises[:5])
            more = f" and {len(rises) - 5} more" if len(rises) > 5 else ""
            warnings.warn(
                DataWarning(
                    f"{src}: state of charge rises by more than {SOC_RISE_PCT:g} % with no charging flag: "
                    f"{shown}{more}; split into segments, the rises left out"
                ),
                stacklevel=3,
            )
        for seg, by_speed, by_gps in self.mismatches:
            warnings.warn(
                DataWarning(
                    f"{src}: segment {seg + 1}: the speed column gives {by_speed / 1000:.3g} km, the positions "
                    f"{by_gps / 1000:.3g} km (more than a factor {DISTANCE_RATIO:g} apart: a wrong speed unit?)"
                ),
                stacklevel=3,
            )


__all__ = [
    "BLOCK_ROWS",
    "Block",
    "ChargeSplitter",
    "DistanceCheck",
    "LogStream",
    "segment_blocks",
]
