"""The fast paths of learning from a long log (issue 35 item 4) give the results of the paths they replace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evroute.models.linear_obs import reading_batch


@pytest.mark.parametrize("m", [1, 2, 3, 40])
def test_banded_reading_batch_equals_the_dense_one(m: int) -> None:
    """A tridiagonal noise covariance given as its ``(2, m)`` band (what :func:`trace_readings` now makes) gives the
    batch of the ``(m, m)`` matrix bit for bit (the same banded or, for ``m <= 2``, dense Cholesky on the same
    numbers); ``Readings.noise_cov`` rebuilds the matrix and ``noise_sum`` is its sum up to summation order (rtol
    1e-12: ``2 m`` terms of one sign pattern, rounding ``~m eps``)."""
    from evroute.traces.observations import Readings

    rng = np.random.default_rng(m)
    v = rng.uniform(1.0, 3.0, m + 1)  # boundary variances: windows share boundaries, as in a trace
    band = np.zeros((2, m))
    band[0] = v[:-1] + v[1:] + rng.uniform(0.1, 0.5, m)
    band[1, : m - 1] = -v[1:-1] * (rng.uniform(size=m - 1) < 0.8)  # a few windows without a shared boundary
    a, y, e = rng.uniform(0, 1, (m, 5)), rng.uniform(10, 50, m), np.array([3, 9, 1, 7, 20])
    r = Readings(edges=e, a=a, y=y, noise_band=band, positions_m=np.arange(m + 1.0))
    dense = r.noise_cov
    assert np.array_equal(np.diag(dense), band[0]) and np.array_equal(np.diag(dense, -1), band[1, : m - 1])
    assert np.array_equal(dense, dense.T) and not np.triu(dense, 2).any()
    assert r.noise_sum() == pytest.approx(float(dense.sum()), rel=1e-12)
    want, got = reading_batch(e, a, y, dense), reading_batch(e, a, y, band, banded=True)
    for k in ("edges", "gram", "h"):
        assert np.array_equal(getattr(want, k), getattr(got, k)), k
    assert (want.readings, want.yry, want.logdet_r) == (got.readings, got.yry, got.logdet_r)


def test_viterbi_many_is_each_chain_alone_and_the_brute_force() -> None:
    """Chains of different lengths (1-6 steps, 3 states, a fifth of the transitions infeasible) side by side in one
    :func:`_viterbi_many`: each gets what it gets alone, and a chain with a feasible sequence gets the brute-force
    optimum (all ``3^T`` sequences) without a cut; one without restarts (a cut)."""
    import itertools

    from evroute.traces.mapmatch import _viterbi_many

    rng = np.random.default_rng(5)
    for _ in range(30):
        lens = rng.integers(1, 7, size=int(rng.integers(1, 6)))
        emis = [rng.exponential(1.0, (t, 3)) for t in lens]
        trans = [np.where(rng.random((t - 1, 3, 3)) < 0.2, np.inf, rng.exponential(1.0, (t - 1, 3, 3))) for t in lens]
        together = _viterbi_many(emis, trans)
        for em, tr, (choice, cuts) in zip(emis, trans, together, strict=True):
            alone, alone_cuts = _viterbi_many([em], [tr])[0]
            assert np.array_equal(choice, alone) and cuts == alone_cuts
            t_n = len(em)
            costs = {
                seq: em[np.arange(t_n), seq].sum() + sum(tr[t, seq[t], seq[t + 1]] for t in range(t_n - 1))
                for seq in itertools.product(range(3), repeat=t_n)
            }
            best = min(costs.values())
            if np.isfinite(best):
                assert not cuts and costs[tuple(choice.tolist())] == best
            else:
                assert cuts


def test_match_many_is_match_of_each_trace() -> None:
    """Traces matched together (:meth:`MatchIndex.match_many`, as a long log's blocks are) give each trace's
    :meth:`MatchIndex.match` alone, bit for bit: random drives of different lengths on the grid network with GPS noise
    (routes up to 120 m between samples), one that jumps to another drive half-way (matched in two pieces), one far
    from every road, one of a single sample and an empty one."""

    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex, MatchOptions
    from evroute.traces.synthetic import random_drive

    grid = Path(__file__).resolve().parents[1] / "data" / "sumo-tiny" / "grid.net.xml"
    index = MatchIndex(build_line_graph(load_network(grid)), MatchOptions(sigma_m=5.0, max_route_m=120.0))
    rng = np.random.default_rng(2)
    energy = np.full(index.n_edges, 10.0)
    traces: list[tuple[np.ndarray, np.ndarray]] = []
    for n in (300, 300, 40, 170):
        _, _, _, la_n, lo_n = random_drive(index, rng, n, 5.0, energy)
        traces.append((la_n, lo_n))
    (la, lo), (la2, lo2) = traces[0], traces[1]
    traces[1] = (np.r_[la[:150], la2[:150]], np.r_[lo[:150], lo2[:150]])  # a jump to another drive
    traces += [(la + 1.0, lo), (la[:1], lo[:1]), (la[:0], lo[:0])]
    together = index.match_many(traces)
    assert together[0].pieces == 1 and (together[0].edge >= 0).all()
    assert together[1].pieces == 2 and (together[1].edge >= 0).all()
    assert together[4].pieces == 0 and (together[4].edge == -1).all()
    assert together[5].pieces == 1 and together[6].edge.shape == (0,)
    for (la_i, lo_i), got in zip(traces, together, strict=True):
        want = index.match(la_i, lo_i)
        for f in ("edge", "offset_m", "path", "path_index", "piece"):
            assert np.array_equal(getattr(want, f), getattr(got, f)), f
        assert want.pieces == got.pieces


def _log_lines(rng: np.random.Generator, n: int) -> list[list[str]]:
    """``n`` records of the default schema with a few bad ones: a wrong number of fields, a blank line, a value that
    is not a number, a time going back."""
    rows = []
    for i in range(n):
        rec = [f"{i}", f"{rng.uniform(0, 90):.3f}", f"{rng.uniform(0, 50):.2f}", f"{90 - i * 0.01:.2f}"]
        rec += [f"{43.73 + rng.normal(0, 1e-3):.6f}", f"{7.42 + rng.normal(0, 1e-3):.6f}"]
        u = rng.uniform()
        if u < 0.03:
            rec = rec[:4]
        elif u < 0.05:
            rec = []
        elif u < 0.07:
            rec[1] = "fast"
        elif u < 0.08:
            rec[0] = str(max(i - 5, 0))
        rows.append(rec)
    return rows


def test_plain_lines_read_as_the_csv_module_reads_them(tmp_path: Path) -> None:
    """The reader splits plain lines itself (no quote, carriage return or NUL; every line with the header's fields)
    and hands any other chunk, and everything after it, to :mod:`csv`: the same log written plainly, with CRLF line
    ends, with every field quoted, and with one quoted field in the middle (the switch mid-file) gives the same rows,
    line numbers and drop counts for any chunk size."""
    from evroute.traces.csvstream import CsvRows
    from evroute.traces.synthetic import DEFAULT_HEADER

    rng = np.random.default_rng(7)
    header = DEFAULT_HEADER.split(",")
    recs = _log_lines(rng, 200)

    def write(name: str, end: str = "\n", quote_all: bool = False, quote_row: int = -1) -> Path:
        lines = []
        for i, r in enumerate([header, *recs]):
            q = quote_all or i == quote_row
            lines.append(",".join(f'"{x}"' if q else x for x in r))
        p = tmp_path / name
        p.write_bytes((end.join(lines) + ("" if name == "noend.csv" else end)).encode())
        return p

    files = [
        write("plain.csv"),
        write("crlf.csv", end="\r\n"),
        write("quoted.csv", quote_all=True),
        write("mid.csv", quote_row=120),
        write("noend.csv"),
    ]
    results = []
    for chunk in (3, 64, 1000):
        for f in files:
            r = CsvRows(f, None, chunk_rows=chunk)
            rows = np.concatenate(list(r))
            results.append((rows, r.n_rows, r.drops.text("log", r.n_rows), r.drops.count))
    want = results[0]
    assert want[1] == 200 - sum(1 for r in recs if not r) and want[3]  # blank lines are no rows; some dropped
    for got in results[1:]:
        assert np.array_equal(got[0], want[0], equal_nan=True)
        assert got[1:] == want[1:]


def test_match_index_pieces_are_the_per_segment_loops() -> None:
    """The index's pieces (built for all segments at once) are those of splitting each edge's polyline segment by
    segment (the loop it replaces, written out here), bit for bit, on the grid network with a 7 m piece length."""
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex

    grid = Path(__file__).resolve().parents[1] / "data" / "sumo-tiny" / "grid.net.xml"
    index = MatchIndex(build_line_graph(load_network(grid)), piece_m=7.0)
    a_l, b_l, e_l, o_l, length = [], [], [], [], []
    for e, g in enumerate(index.linegraph.network.geometry):
        g = np.asarray(g, dtype=np.float64)
        xy = index.project(g[:, 1], g[:, 0])
        seg = np.hypot(*np.diff(xy, axis=0).T)
        keep = seg > 1e-9
        xa, xb, seg = xy[:-1][keep], xy[1:][keep], seg[keep]
        start = np.concatenate([[0.0], np.cumsum(seg)[:-1]])
        length.append(float(seg.sum()) if seg.size else 0.0)
        for xa_i, xb_i, s_i, n_i in zip(xa, xb, start, np.maximum(np.ceil(seg / 7.0), 1).astype(int), strict=True):
            u = np.arange(n_i + 1) / n_i
            pts = xa_i + u[:, None] * (xb_i - xa_i)
            a_l.append(pts[:-1])
            b_l.append(pts[1:])
            o_l.append(s_i + u[:-1] * np.hypot(*(xb_i - xa_i)))
            e_l.append(np.full(n_i, e))
    assert len(a_l) > index.n_edges  # edges split into several pieces
    assert np.array_equal(index.piece_a, np.concatenate(a_l)) and np.array_equal(index.piece_b, np.concatenate(b_l))
    assert np.array_equal(index.piece_edge, np.concatenate(e_l))
    assert np.array_equal(index.piece_offset, np.concatenate(o_l)) and np.array_equal(index.length_m, length)


def test_direct_pair_index_is_the_binary_search() -> None:
    """Route distances and paths between edges looked up in the direct pair index (networks of up to
    ``DENSE_PAIRS`` pairs) are those of the binary search in the sorted keys (larger networks), for every pair of
    the grid network, and a path asked again (from the cache) is the same."""
    import copy

    from evroute.errors import DataError
    from evroute.linegraph import build_line_graph
    from evroute.network.registry import load_network
    from evroute.traces.mapmatch import MatchIndex, MatchOptions

    grid = Path(__file__).resolve().parents[1] / "data" / "sumo-tiny" / "grid.net.xml"
    index = MatchIndex(build_line_graph(load_network(grid)), MatchOptions(max_route_m=120.0))
    search = copy.deepcopy(index)
    search.pos = None
    assert index.pos is not None
    a, b = (x.ravel() for x in np.meshgrid(np.arange(index.n_edges), np.arange(index.n_edges)))
    assert np.array_equal(index.route_m(a, b), search.route_m(a, b))
    assert np.isinf(index.route_m(a, b)).any()  # some pairs beyond 120 m
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        try:
            want = search.between(x, y)
        except DataError:
            with pytest.raises(DataError):
                index.between(x, y)
            continue
        assert index.between(x, y) == want and index.between(x, y) == want
