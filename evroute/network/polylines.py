"""Edge polylines packed in two arrays: the geometry of a large network without an array object per edge.

A :class:`RoadNetwork`'s ``geometry`` is a sequence of ``E`` arrays ``(k_i, 2)``.  Held as a list, a million edges
cost a million NumPy view objects (~110 bytes each, plus the list) and seconds to create when a network is loaded
from the cache.  :class:`Polylines` holds the same points as one ``(P, 2)`` array and ``(E + 1,)`` offsets, and
behaves as a read-only sequence of the polylines: ``len``, ``geometry[i]`` (a view of the points), iteration and
slicing give what the list gave, element for element.  Vectorised readers (:meth:`Polylines.first`,
:meth:`Polylines.last`, :meth:`Polylines.take`) touch only the two arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

__all__ = ["Polylines", "as_polylines"]


class Polylines(Sequence[np.ndarray]):
    """``E`` polylines: polyline ``i`` is ``xy[offsets[i]:offsets[i + 1]]``.

    Args:
        xy: ``(P, 2)`` float64 points of all polylines, one after the other.
        offsets: ``(E + 1,)`` int64, non-decreasing, ``offsets[0] == 0`` and ``offsets[-1] == P``.

    Raises:
        ValueError: the arrays do not fit together (shapes, order, bounds).
    """

    __slots__ = ("offsets", "xy")

    def __init__(self, xy: np.ndarray, offsets: np.ndarray) -> None:
        xy = np.asarray(xy, dtype=np.float64)
        offsets = np.asarray(offsets, dtype=np.int64)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise ValueError(f"polyline points must have shape (P, 2), got {xy.shape}")
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(xy):
            raise ValueError("polyline offsets must start at 0 and end at the number of points")
        if len(offsets) > 1 and np.any(offsets[1:] < offsets[:-1]):
            raise ValueError("polyline offsets must be non-decreasing")
        self.xy = xy
        self.offsets = offsets

    @classmethod
    def from_counts(cls, xy: np.ndarray, counts: np.ndarray) -> Polylines:
        """From the points and each polyline's point count ``(E,)``."""
        counts = np.asarray(counts, dtype=np.int64)
        return cls(xy, np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts)]))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...

    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        j = int(i)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(f"polyline index {i} out of range for {n} polylines")
        return self.xy[self.offsets[j] : self.offsets[j + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        xy, o = self.xy, self.offsets.tolist()
        return (xy[a:b] for a, b in zip(o[:-1], o[1:], strict=True))

    @property
    def counts(self) -> np.ndarray:
        """``(E,)`` number of points of each polyline."""
        return np.diff(self.offsets)

    def first(self) -> np.ndarray:
        """``(E, 2)`` first point of each polyline (every polyline has at least one point)."""
        return self.xy[self.offsets[:-1]]

    def last(self) -> np.ndarray:
        """``(E, 2)`` last point of each polyline (every polyline has at least one point)."""
        return self.xy[self.offsets[1:] - 1]

    def take(self, idx: np.ndarray) -> Polylines:
        """The polylines ``idx`` (``(m,)`` indices), packed anew."""
        idx = np.asarray(idx, dtype=np.int64)
        counts = self.counts[idx]
        starts = self.offsets[:-1][idx]
        run = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return Polylines.from_counts(self.xy[run + np.arange(int(counts.sum()), dtype=np.int64)], counts)


def as_polylines(geometry: Sequence[np.ndarray]) -> Polylines:
    """``geometry`` as :class:`Polylines` (itself when it is one; a list of ``(k_i, 2)`` arrays is packed)."""
    if isinstance(geometry, Polylines):
        return geometry
    counts = np.fromiter(map(len, geometry), dtype=np.int64, count=len(geometry))
    xy = np.concatenate(geometry).astype(np.float64, copy=False).reshape(-1, 2) if len(geometry) else np.zeros((0, 2))
    return Polylines.from_counts(xy, counts)
