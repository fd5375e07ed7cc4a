"""Recorded files as a time-ordered stream of the records that matter.

Each reader yields only records some parser could match (a cheap substring check runs first, so
the 99 % of ordinary lines cost one ``in`` test), with the wall time of the record taken from its
own prefix: ISO times with an offset as they are, naive times in ``--tz``, times without a year in
``--year``, kernel seconds as seconds from an arbitrary origin. A record without a time inherits
the last time seen in its file. Files are merged by time, stable by file then line.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from inferwatch.parsers.kernel import KernelLine, RecordAssembler, parse_kernel_line
from inferwatch.parsers.kernel_misc import might_be_misc
from inferwatch.parsers.xid import might_be_gpu_record


@dataclass(frozen=True, slots=True)
class TimedRecord:
    at: float
    file_index: int
    line: int
    source: str
    kind: str  # "kernel" | "engine"
    text: str
    parsed: object | None = None


@dataclass(frozen=True, slots=True)
class TimeContext:
    year: int
    tz: tzinfo

    def wall_seconds(self, wall: datetime, year_missing: bool) -> float | None:
        if year_missing:
            try:
                wall = wall.replace(year=self.year)
            except ValueError:  # Feb 29 in a non-leap year
                return None
        if wall.tzinfo is None:
            wall = wall.replace(tzinfo=self.tz)
        return wall.timestamp()


def kernel_time(line: KernelLine, ctx: TimeContext) -> float | None:
    if line.wall is not None:
        return ctx.wall_seconds(line.wall, line.year_missing)
    return line.kernel_seconds


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines, decoded as UTF-8 with replacement (real logs contain stray bytes)."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            yield number, raw.decode("utf-8", "replace")


def kernel_records(path: Path, index: int, ctx: TimeContext, source: str) -> Iterator[TimedRecord]:
    assembler = RecordAssembler()
    last_at = 0.0

    def emit(text: str, line_no: int) -> TimedRecord | None:
        nonlocal last_at
        if not (might_be_gpu_record(text) or might_be_misc(text)):
            return None
        parsed = parse_kernel_line(text)
        at = kernel_time(parsed, ctx)
        if at is None:
            at = last_at
        last_at = at
        return TimedRecord(at, index, line_no, source, "kernel", parsed.message, parsed)

    for number, text in read_lines(path):
        record = assembler.feed(text, number)
        if record is not None:
            timed = emit(record.text, record.line_no)
            if timed is not None:
                yield timed
    tail = assembler.flush()
    if tail is not None:
        timed = emit(tail.text, tail.line_no)
        if timed is not None:
            yield timed


Reader = Callable[[Path, int, TimeContext, str], Iterator[TimedRecord]]


def merged(streams: Iterable[Iterator[TimedRecord]]) -> Iterator[TimedRecord]:
    """One stream ordered by time, ties broken by file order then line number."""
    return heapq.merge(*streams, key=lambda r: (r.at, r.file_index, r.line))
