"""Trip logs read as streams (issue 35 item 4): the same rows kept and the same segments as a pass over the whole
file, blocks that share a sample, and memory that does not grow with the file's length.

At 92600c2 a log was read into Python lists whole (a 194 MB log: 2.7 GB, no result in 120 s)."""

from __future__ import annotations

import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evroute.traces import Trace
from evroute.traces.clean import charging_segments, distance_mismatch, implausible_rows
from evroute.traces.csvstream import DropCounts, PlausibilityFilter
from evroute.traces.stream import ChargeSplitter, DistanceCheck, LogStream, segment_blocks


def _rows(n: int, rng: np.random.Generator, glitches: int) -> np.ndarray:
    """``(n, 7)`` plausible 1 Hz rows (a drive east at 50 N), with ``glitches`` short runs of bad speed, position or
    charge, and a few out-of-range speeds."""
    t = np.cumsum(rng.uniform(0.5, 1.5, n))
    v = np.clip(10 + np.cumsum(rng.normal(0, 0.5, n)), 0, 40)
    x = np.concatenate([[0.0], np.cumsum(0.5 * (v[1:] + v[:-1]) * np.diff(t))])[:n]
    lon = 10.0 + x / (111_320 * np.cos(np.radians(50.0)))
    soc = 90.0 - x / 2000.0
    a = np.column_stack([t, v, np.full(n, 100.0), soc, np.full(n, 50.0), lon, np.arange(n) + 2.0])
    for _ in range(glitches if n else 0):
        i, k = int(rng.integers(n)), int(rng.integers(1, 4))
        col = int(rng.choice([1, 3, 5, 2]))
        a[i : i + k, col] += {1: 40.0, 3: 20.0, 5: 0.05, 2: 20_000.0}[col]
    return a


def _chunks(a: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    cut = np.cumsum(sizes)
    return [c for c in np.split(a, cut[cut < len(a)]) if len(c)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    glitches=st.integers(0, 25),
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=30),
)
def test_plausibility_filter_keeps_the_rows_a_whole_pass_keeps(n, glitches, seed, sizes):
    """Fed in chunks of any sizes (down to one row), the filter keeps exactly the rows that
    :func:`implausible_rows` over the whole array keeps, and counts the same drops per reason."""
    a = _rows(n, np.random.default_rng(seed), glitches)
    masks = implausible_rows(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], a[:, 5]) if n else {}
    bad = np.logical_or.reduce(list(masks.values())) if masks else np.zeros(n, dtype=bool)
    drops = DropCounts()
    f = PlausibilityFilter(drops)
    kept = [f.feed(c) for c in _chunks(a, sizes)] + [f.finish()]
    got = np.concatenate(kept)
    np.testing.assert_array_equal(got[:, 6], a[~bad, 6])
    assert drops.total == int(bad.sum())
    assert {k: v for k, v in drops.count.items() if v} == {k: int(m.sum()) for k, m in masks.items() if m.any()}


@settings(max_examples=200, deadline=None)
@given(
    soc=st.lists(st.sampled_from([50.0, 50.5, 51.0, 52.0, 53.5, 54.0, 49.0, 48.0, 60.0, 61.0]), max_size=80),
    sizes=st.lists(st.integers(1, 10), min_size=1, max_size=20),
)
def test_charge_splitter_gives_the_segments_of_charging_segments(soc, sizes):
    """Row by row and in chunks of any sizes, the splitter assigns the rows of :func:`charging_segments`' segments
    to consecutive segments and leaves out exactly the rows of the rises."""
    s = np.asarray(soc, dtype=np.float64)
    a = np.zeros((len(s), 7))
    a[:, 3] = s
    a[:, 6] = np.arange(len(s))
    sp = ChargeSplitter()
    parts = [p for c in _chunks(a, sizes) for p in sp.feed(c)] + sp.finish()
    got: dict[int, list[int]] = {}
    for seg, rows in parts:
        got.setdefault(seg, []).extend(rows[:, 6].astype(int).tolist())
    want = charging_segments(s) if len(s) else []
    assert [got[k] for k in sorted(got)] == [list(range(lo, hi)) for lo, hi in want]
    assert len(sp.rises) == max(len(want) - 1, 0)


@pytest.mark.parametrize("block_rows", [2, 3, 7, 1000])
def test_blocks_share_one_sample_and_cover_each_segment(block_rows):
    """Consecutive blocks of a segment share exactly one row (the readings telescope), every block has at most
    ``block_rows`` rows, the union is the segment, and a one-row segment is left out."""
    parts = [(0, np.arange(10.0)[:, None].repeat(7, axis=1)), (0, np.arange(10.0, 13)[:, None].repeat(7, axis=1))]
    parts += [(1, np.full((1, 7), 99.0)), (2, np.arange(20.0, 25)[:, None].repeat(7, axis=1))]
    blocks = list(segment_blocks(parts, block_rows))
    for seg, want in ((0, list(range(13))), (2, list(range(20, 25)))):
        bs = [b for b in blocks if b.segment == seg]
        assert bs[0].first and bs[-1].last and all(len(b.rows) <= block_rows for b in bs)
        for x, y in zip(bs[:-1], bs[1:], strict=True):
            assert x.rows[-1, 0] == y.rows[0, 0] and not y.first and not x.last
        union = [int(r) for b in bs for r in (b.rows[:, 0] if b.first else b.rows[1:, 0])]
        assert union == want
    assert all(b.segment != 1 for b in blocks)


@pytest.mark.parametrize("block_rows", [2, 5, 37, 10_000])
def test_distance_check_over_blocks_is_the_whole_trace_check(block_rows):
    """The distances of :class:`DistanceCheck` fed block by block are those :func:`distance_mismatch` computes on
    the whole trace (here the speed column is in mph read as km/h: a factor 1.61, flagged both ways)."""
    rng = np.random.default_rng(3)
    a = _rows(700, rng, 0)
    a[:, 1] *= 1.609344
    tr = Trace(a[:, 0] - a[0, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], a[:, 5])
    want = distance_mismatch(tr)
    check = DistanceCheck()
    for b in segment_blocks([(0, a)], block_rows):
        check.add(b.rows)
    got = check.result()
    assert want is not None and got is not None
    np.testing.assert_allclose(got, want, rtol=1e-9)


HEADER = "time,speed_kmh,altitude_m,soc_pct,lat,lon"


def _write_log(path: Path, rows: int, bad_every: int = 0) -> Path:
    """A plausible default-schema log of ``rows`` rows (one-hour drives, charged back to 90 % between them), written
    in chunks; with ``bad_every``, every such row has a longitude of 1555.63 (the audit's bad GPS row)."""
    rng = np.random.default_rng(0)
    with path.open("w") as fh:
        fh.write(HEADER + "\n")
        for start in range(0, rows, 3600):
            n = min(3600, rows - start)
            a = _rows(n, rng, 0)
            t = start + np.arange(n)
            lon = np.where((t % bad_every == 7) if bad_every else False, 1555.63, a[:, 5])
            block = np.column_stack([t, a[:, 1] * 3.6, a[:, 2], a[:, 3], a[:, 4], lon])
            np.savetxt(fh, block, fmt=["%d", "%.2f", "%.1f", "%.2f", "%.7f", "%.7f"], delimiter=",")
    return path


def _peak_streaming(path: Path) -> tuple[int, int]:
    """``(peak traced bytes, rows kept)`` of streaming ``path`` through the reader, filter and splitter."""
    tracemalloc.start()
    kept = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in LogStream(path):
            kept += len(b.rows) - (0 if b.first else 1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, kept


@pytest.mark.slow
def test_streaming_memory_does_not_grow_with_the_log(tmp_path):
    """A 20 MB log (440,000 rows, one bad GPS row in 5,000) streams with the same peak memory as a 5 MB one:
    the peak of the larger stays within 10 % + 1 MB of the smaller's (a chunk of 8,192 records and a block of
    1,000 rows are in memory, whatever the length; reading the whole file would take 4 times the memory)."""
    small = _write_log(tmp_path / "small.csv", 110_000, bad_every=5000)
    large = _write_log(tmp_path / "large.csv", 440_000, bad_every=5000)
    assert 4.5e6 < small.stat().st_size < 5.5e6 and 18e6 < large.stat().st_size < 22e6
    peak_small, kept_small = _peak_streaming(small)
    peak_large, kept_large = _peak_streaming(large)
    assert kept_large > 3.9 * kept_small
    assert peak_large <= 1.1 * peak_small + 1e6, (peak_small, peak_large)


def test_the_learning_benchmark_drives_the_synthetic_logs_walk():
    """One walk for the synthetic logs and the learning benchmark (``studies/trip_logs/bench_learning.py``): with the
    same seed the benchmark's trace has exactly ``duration_s`` samples at the walk's positions, speeds and heights,
    and its charge is the walk's energy rounded to the gauge's 0.1 % (at most half a step off)."""
    from evroute.energy import VehicleProfile, network_energy_wh
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex
    from evroute.traces.synthetic import random_drive
    from studies.trip_logs.bench_learning import _drive

    index = MatchIndex(build_line_graph(load_network("synthetic:100:1")))
    energy = network_energy_wh(index.linegraph.network, VehicleProfile())
    v, z, wh, la, lo = random_drive(index, np.random.default_rng(5), 300, 5.0, energy)
    tr = _drive(index, np.random.default_rng(5), 300, 5.0, energy, 30_000.0)
    assert len(tr) == len(v) == 300
    np.testing.assert_array_equal(tr.lat, la)
    np.testing.assert_array_equal(tr.lon, lo)
    np.testing.assert_array_equal(tr.speed_mps, v)
    assert np.all(np.abs(tr.soc_pct - (90.0 - 100.0 * wh / 30_000.0)) <= 0.05 + 1e-9)
