"""One committed data file's entry in :mod:`studies.reproduce.table`: the :class:`Source` record and its paths.

The fields are described in :mod:`studies.reproduce.table`'s docstring (how a re-run is compared, which commit the
rows reproduce at, the CPU estimate); this module holds only the record, so the table's entries can live in more
than one module (:mod:`studies.reproduce.sources_other`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = "docs/results/data"

#: why timing columns are never compared
TIMING = "timing (CPU / wall seconds or load): differs from run to run"


@dataclass(frozen=True)
class Source:
    """One committed data file: where its rows come from and how a re-run is compared with them (module doc)."""

    data: str  #: file name under docs/results/data/
    page: str  #: the results page it feeds (docs/results/<page>.md, or a path from the repository root)
    key: tuple[str, ...] = ()  #: columns that identify a row (empty: metadata, no rows)
    rows: str = ""  #: for JSON: the key of the list (or dict of records) that holds the rows
    excluded: Mapping[str, str] = field(default_factory=dict)  #: column -> why it is not compared
    atol: Mapping[str, float] = field(default_factory=dict)  #: column -> extra absolute tolerance
    commands_file: str = ""  #: the study's own commands file (.txt: one per line; .json: its command fields)
    command: str = ""  #: the producing command, when the data do not record it
    at: str = "HEAD"  #: the commit the rows reproduce at
    rerun: str = ""  #: "rows", "file" or "" (module doc)
    regen: tuple[tuple[str, ...], ...] = ()  #: for rerun="file": commands (python arguments; {dir}, {raw}: module doc)
    inputs: tuple[str, ...] = ()  #: committed data files the regeneration reads from {dir} (copied there first)
    why: str = ""  #: for rerun="": why not
    head: Callable[[Mapping[str, str]], bool] | None = None  #: for rerun="rows": rows that reproduce at HEAD
    cheap: Callable[[Mapping[str, str]], bool] | None = None  #: rows cheap enough for ``--sample`` (seconds each)
    cpu_columns: tuple[str, ...] = ()  #: CPU-second columns (or top-level JSON fields) summed: the rows' recorded CPU
    cpu_extra_s: float = 0.0  #: CPU a regeneration costs that the data do not record (set-up, SUMO days), estimated
    cpu_note: str = ""  #: where the CPU estimate comes from (or which source's regeneration writes this file too)
    timing: bool = False  #: every number a timing: regenerated (re-measured), never compared

    @property
    def path(self) -> Path:
        return ROOT / DATA / self.data

    @property
    def page_name(self) -> str:
        return Path(self.page).stem
