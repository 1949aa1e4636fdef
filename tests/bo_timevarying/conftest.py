"""One BLAS thread for these tests: the matrices are small, and extra threads only spin on a shared machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _single_blas_thread() -> Iterator[None]:
    with threadpool_limits(1):
        yield
