"""The per-log work of map-matched learning, in this process or on a pool of worker processes.

Learning from a trip log (:mod:`evroute.experiments.trip_learning`) is, per log file: read it, map-match each trace,
turn its charge readings into linear observations and reduce them to their share of the model's sufficient
statistics (:func:`~evroute.models.linear_obs.reading_batch`).  Logs are independent until these shares are summed, so
:class:`LogWorkers` runs that work (:func:`learn_log`) on ``workers`` processes and hands the results back **in
input order**: the caller sums them in the same order as a serial run, so the model is the same bit for bit.

* Pool: :class:`concurrent.futures.ProcessPoolExecutor` with the ``spawn`` context (as
  :mod:`evroute.experiments.sweep`); each worker receives the :class:`~evroute.traces.mapmatch.MatchIndex` once, in
  its initializer (pickled from the parent's: about 0.02 CPU s to unpickle on Luxembourg against about 2 CPU s to
  build), and dies with its parent.
* Memory: at most ``2 workers`` logs are in flight (submitted, running or finished but not yet consumed); logs are
  submitted lazily as results are taken, never the whole set at once.
* Threads: one BLAS thread per worker (the run policy, :func:`~evroute.experiments.threads.run_blas_threads`); the
  serial path runs under the same policy (:func:`~evroute.experiments.threads.run_threads`), so both compute each
  log's statistics with the same thread count.
* Errors: an exception in a worker (a malformed log: ``DataError`` naming file, line and column) is raised again in
  the parent when that log's turn comes, so the first bad log in input order is the one reported, as in the serial
  path; the pool is then shut down and the logs still queued are cancelled.  Workers ignore ``SIGINT``: Ctrl-C
  interrupts the parent alone, which stops the pool (the model keeps what the last periodic save holds).
"""

from __future__ import annotations

import itertools
import os
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

from evroute.energy import VehicleProfile
from evroute.errors import DataWarning, ParameterError, install_warning_format
from evroute.experiments.threads import run_blas_threads, run_threads
from evroute.models.linear_obs import ReadingBatch, reading_batch
from evroute.models.trip_effect import Readings
from evroute.traces.clean import clean_trace, split_all
from evroute.traces.formats import read_sumo_fcd, read_trace_gpx
from evroute.traces.mapmatch import MatchedTrace, MatchIndex
from evroute.traces.mechanical import path_height_m, sample_mechanical_wh
from evroute.traces.observations import trace_readings
from evroute.traces.reader import Trace, TraceColumns, read_trace_csv
from evroute.traces.stream import LogStream

#: a trace's ``(edges, shares w, Y, r, readings)`` (:attr:`TraceOutcome.trip_sum`)
TripSum = tuple[np.ndarray, np.ndarray, float, float, Readings]
_T = TypeVar("_T")
_R = TypeVar("_R")

#: logs in flight per worker (submitted and not yet consumed)
IN_FLIGHT_PER_WORKER = 2
#: blocks of a CSV log matched together (:meth:`~evroute.traces.mapmatch.MatchIndex.match_many`: the same matches,
#: a fraction of the NumPy calls; memory: this many blocks of :data:`~evroute.traces.stream.BLOCK_ROWS` rows)
MATCH_GROUP = 32


@dataclass(frozen=True)
class TraceOutcome:
    """One trace of a log: ``samples`` read, matched in ``pieces`` pieces, its readings reduced to ``batch`` (``None``:
    no usable window) and ``dropped`` windows that spanned a break between pieces."""

    samples: int
    pieces: int
    batch: ReadingBatch | None
    dropped: int = 0
    #: ``(edges, shares w, sum of readings Y, their noise 1^T R 1, readings)`` of the trace, for the trip-level effect
    #: and its out-of-fold residuals (``readings``: :data:`evroute.models.trip_effect.Readings`, ``R`` as its band)
    trip_sum: TripSum | None = None
    #: ``False`` for a block after the first of a trace streamed in blocks (:mod:`evroute.traces.stream`): counted
    #: as the same trace, and its ``samples`` exclude the sample it shares with the block before
    first: bool = True
    #: windows over the trip's first path edge, left out (:func:`~evroute.traces.observations.trace_readings`)
    trimmed: int = 0


@dataclass(frozen=True)
class LogOutcome:
    """The work of one log file: its traces in file order and the CPU seconds of each stage (``read``, ``match``,
    ``learn``: readings and their statistics) in the process that did it.  For a CSV log learned in this process
    ``traces`` is an iterator over its blocks, each read, matched and reduced when it is taken (memory: one block,
    whatever the file's length), and ``cpu_s`` is complete once it is exhausted."""

    traces: Iterable[TraceOutcome]
    cpu_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class LearnParams:
    """What the per-log work needs besides the index: ``columns`` of CSV logs, the usable battery capacity
    ``capacity_wh`` (Wh per 100 % of charge), the driving noise of one edge traversal ``edge_noise_var`` (Wh^2) and
    the gauge step ``soc_step`` (%, ``None``: seen in each log); ``edge_noise_var`` is one number for every edge or
    ``(E,)`` per edge (:meth:`~evroute.models.linear_obs.LinearObsEdgeModel.traversal_noise_var`); ``warn``: show
    the warnings of the reads (rows dropped, charging split off; ``False`` when :func:`validate_logs` has shown them
    already); with a ``vehicle``, the readings are reduced energies (battery energy minus the change of mechanical
    energy, :mod:`evroute.traces.mechanical`: logged speed, the network's heights at the matched positions, kinetic mass
    ``kinetic_mass_kg``, default the vehicle's mass)."""

    columns: TraceColumns | None
    capacity_wh: float
    edge_noise_var: float | np.ndarray
    soc_step: float | None = None
    warn: bool = True
    vehicle: VehicleProfile | None = None
    kinetic_mass_kg: float | None = None


def read_log(path: Path, battery: Path | None, columns: TraceColumns | None = None) -> list[Trace]:
    """The traces of one log file (a CSV or GPX file is one trace; a SUMO FCD file one per vehicle), implausible rows
    dropped and charging stops split off, with a warning per file (:mod:`evroute.traces.clean`)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        traces = [read_trace_csv(path, columns)]  # the reader drops bad rows with their line numbers
    else:
        if suffix == ".gpx":
            raw = [read_trace_gpx(path, require_soc=False)]
        elif battery is None:
            raise ParameterError(f"SUMO FCD file {path} needs its battery output (--battery)")
        else:
            raw = read_sumo_fcd(path, battery)
        traces = [c for c in (clean_trace(t, str(path)) for t in raw) if c is not None]
    return split_all(traces, str(path))


def validate_logs(
    files: Sequence[tuple[Path, Path | None]],
    columns: TraceColumns | None = None,
    on_file: Callable[[], object] | None = None,
) -> None:
    """Read every log once (all errors before anything is learned or written); the traces are not kept (a CSV log
    is streamed through, :class:`~evroute.traces.stream.LogStream`).  ``on_file()`` runs after each file
    (progress)."""
    for path, battery in files:
        if path.suffix.lower() in (".csv", ".gpx"):
            for _ in LogStream(path, columns):
                pass
        else:
            read_log(path, battery, columns)
        if on_file is not None:
            on_file()


def _trace_outcome(
    tr: Trace,
    index: MatchIndex,
    params: LearnParams,
    cpu: dict[str, float],
    first: bool = True,
    matched: MatchedTrace | None = None,
) -> TraceOutcome:
    """Match one trace (or block; ``matched``: matched already), reduce its charge readings to a
    :class:`ReadingBatch`; CPU added to ``cpu``.  The windows over the trip's first path edge are dropped
    (:func:`~evroute.traces.observations.trace_readings`' trip ends), a streamed trace's only in its first block
    (``first``)."""
    t1 = time.process_time()
    if matched is None:
        matched = index.match(tr.lat, tr.lon)
    t2 = time.process_time()
    cpu["match"] += t2 - t1
    samples = len(tr) - (0 if first else 1)
    mech = None
    if params.vehicle is not None:
        net = index.linegraph.network
        z = path_height_m(matched.edge, matched.offset_m, index.length_m, net.z_from_m, net.z_to_m)
        mech = sample_mechanical_wh(tr.speed_mps, z, params.vehicle, params.kinetic_mass_kg)
    r = None
    if np.isfinite(tr.soc_pct).any():  # a log without state of charge has no energy reading
        r = trace_readings(
            tr,
            matched,
            index.length_m,
            params.capacity_wh,
            params.edge_noise_var,
            soc_step=params.soc_step,
            mechanical_wh=mech,
            drop_start=first,
            drop_end=False,  # the stop at the destination: kept (trace_readings' trip ends)
        )
    if r is None:
        cpu["learn"] += time.process_time() - t2
        return TraceOutcome(samples, matched.pieces, None, first=first)
    batch = reading_batch(r.edges, r.a, r.y, r.noise_band, banded=True)
    trip_sum = (r.edges, r.a.sum(axis=0), float(r.y.sum()), r.noise_sum(), (r.edges, r.a, r.y, r.noise_band))
    cpu["learn"] += time.process_time() - t2
    return TraceOutcome(samples, matched.pieces, batch, r.dropped, trip_sum, first, r.trimmed)


def _merge_sums(a: TripSum | None, b: TripSum | None) -> TripSum | None:
    """Two blocks' trip sums as one trace's (edges united, shares added; the readings stacked, their noise
    block-diagonal: each block was learned as an independent batch, so taking the trace out again takes both)."""
    if a is None or b is None:
        return a if b is None else b
    edges = np.union1d(a[0], b[0])
    ia, ib = np.searchsorted(edges, a[0]), np.searchsorted(edges, b[0])
    w = np.zeros(len(edges))
    w[ia] += a[1]
    w[ib] += b[1]
    (_, aa, ya, ra), (_, ab, yb, rb) = a[4], b[4]
    stacked = np.zeros((len(ya) + len(yb), len(edges)))
    stacked[: len(ya), ia] = aa
    stacked[len(ya) :, ib] = ab
    band = np.hstack([ra, rb])
    if len(ya):
        band[1, len(ya) - 1] = 0.0  # no covariance between the blocks' readings
    return edges, w, a[2] + b[2], a[3] + b[3], (edges, stacked, np.r_[ya, yb], band)


def _stream_csv(path: Path, index: MatchIndex, params: LearnParams, cpu: dict[str, float]) -> Iterator[TraceOutcome]:
    """The blocks of a CSV log, each matched and reduced as it is taken (:class:`LogOutcome`); a trace's trip sum
    (for the trip effect) comes with its last block."""
    stream = iter(LogStream(path, params.columns, warn=params.warn))
    total: TripSum | None = None
    while True:
        t0 = time.process_time()
        group = list(itertools.islice(stream, MATCH_GROUP))
        t1 = time.process_time()
        cpu["read"] += t1 - t0
        if not group:
            return
        traces = [block.trace(f"{path.stem}#{block.segment + 1}") for block in group]
        matched = index.match_many([(tr.lat, tr.lon) for tr in traces])
        cpu["match"] += time.process_time() - t1
        for block, tr, m in zip(group, traces, matched, strict=True):
            out = _trace_outcome(tr, index, params, cpu, block.first, m)
            total = _merge_sums(total, out.trip_sum)
            if block.last:
                yield replace(out, trip_sum=total)
                total = None
            else:
                yield replace(out, trip_sum=None)


def learn_log(
    path: Path, battery: Path | None, index: MatchIndex, params: LearnParams, lazy: bool = False
) -> LogOutcome:
    """Read one log file, match each trace and reduce its charge readings to a :class:`ReadingBatch`; ``lazy``: a
    CSV log's blocks are processed as the caller takes them (:class:`LogOutcome`), else all at once."""
    cpu = {"read": 0.0, "match": 0.0, "learn": 0.0}
    if path.suffix.lower() in (".csv", ".gpx"):
        blocks = _stream_csv(path, index, params, cpu)
        return LogOutcome(blocks if lazy else tuple(blocks), cpu)
    t0 = time.process_time()
    with warnings.catch_warnings():
        if not params.warn:
            warnings.simplefilter("ignore", DataWarning)
        traces = read_log(path, battery, params.columns)
    cpu["read"] = time.process_time() - t0
    return LogOutcome(tuple(_trace_outcome(tr, index, params, cpu) for tr in traces), cpu)


# --- worker processes ----------------------------------------------------------------------------------------------

#: the worker's match index, set once by :func:`_init_worker`
_WORKER: dict[str, MatchIndex] = {}


def _init_worker(parent: int, index: MatchIndex, blas_threads: int) -> None:
    """Pool initializer: die with the parent, leave Ctrl-C to it (the parent stops the pool: no traceback from each
    worker), one BLAS thread (the run policy), keep the match index."""
    import signal

    from evroute.experiments.runner import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install_warning_format()  # a dropped row is one line `evroute: warning: ...`, as in the parent
    if blas_threads > 0:
        import scipy.linalg  # noqa: F401  (a limit reaches the libraries already loaded only)
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=blas_threads, user_api="blas")  # for the worker's life: never restored
    _WORKER["index"] = index


def _validate_job(job: tuple[Path, Path | None, TraceColumns | None]) -> None:
    read_log(*job)


def _learn_job(job: tuple[Path, Path | None, LearnParams]) -> LogOutcome:
    path, battery, params = job
    return learn_log(path, battery, _WORKER["index"], params)


def ordered_results(submit: Callable[[_T], Future[_R]], items: Iterable[_T], in_flight: int) -> Iterator[_R]:
    """``submit(item)`` for each item, at most ``in_flight`` futures outstanding, results yielded in input order (a
    job's exception is raised at its turn).  Submits lazily; closing the generator cancels what is still queued."""
    pending: deque[Future[_R]] = deque()
    try:
        for item in items:
            pending.append(submit(item))
            if len(pending) >= in_flight:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()


class LogWorkers:
    """Where the per-log work runs: in this process (``workers == 1``) or on a spawn pool of ``workers`` processes
    (module doc).  A context manager: the pool starts on entry and is shut down on exit.

    Args:
        index: the network's match index (sent once to each worker).
        workers: processes, >= 1.
    """

    def __init__(self, index: MatchIndex, workers: int = 1) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ParameterError(f"--workers must be an integer >= 1, got {workers!r}")
        self.index, self.workers = index, workers
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LogWorkers:
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=get_context("spawn"),
                initializer=_init_worker,
                initargs=(os.getpid(), self.index, run_blas_threads()),
            )
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _map(self, fn: Callable[[Any], _R], jobs: Iterable[Any]) -> Iterator[_R]:
        pool = self._pool
        if pool is None:
            raise ParameterError("LogWorkers with workers > 1 must be used as a context manager")
        return ordered_results(lambda job: pool.submit(fn, job), jobs, IN_FLIGHT_PER_WORKER * self.workers)

    def validate(
        self,
        files: Sequence[tuple[Path, Path | None]],
        columns: TraceColumns | None = None,
        on_file: Callable[[], object] | None = None,
    ) -> None:
        """:func:`validate_logs` on the workers (the first error in input order is raised)."""
        if self.workers == 1:
            validate_logs(files, columns, on_file)
            return
        for _ in self._map(_validate_job, ((p, b, columns) for p, b in files)):
            if on_file is not None:
                on_file()

    def outcomes(self, files: Iterable[tuple[Path, Path | None]], params: LearnParams) -> Iterator[LogOutcome]:
        """:func:`learn_log` of each file, in input order."""
        if self.workers == 1:
            with run_threads():
                for path, battery in files:
                    yield learn_log(path, battery, self.index, params, lazy=True)
            return
        yield from self._map(_learn_job, ((p, b, params) for p, b in files))


__all__ = [
    "IN_FLIGHT_PER_WORKER",
    "LearnParams",
    "LogOutcome",
    "LogWorkers",
    "TraceOutcome",
    "learn_log",
    "ordered_results",
    "read_log",
    "validate_logs",
]
