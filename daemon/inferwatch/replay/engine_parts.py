"""Engine records of a big log, parsed where they are found and streamed in file order.

The scan of :mod:`engine_scan` runs in worker processes over parts of the file; here each worker
also decodes and parses its hit lines and reads their times (parsers and ``engine_time`` are
pure), so only records travel back, never raw lines. The file is cut into more parts than
workers, and the parts' records are yielded in file order as soon as each part is done: the
replay works on the first parts while the workers (at a slightly lower priority) scan the rest.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import tzinfo
from itertools import islice
from pathlib import Path

from inferwatch.parsers.engine import parse_engine_line
from inferwatch.parsers.engine_records import EngineRecord
from inferwatch.parsers.engine_time import engine_time
from inferwatch.replay.engine_scan import PARALLEL_FROM, cut_parts, spans_in

PART_BYTES = 32 << 20  # a part per this many bytes (at least one per worker)
AHEAD = 4  # parts in flight per worker
WORKER_NICE = 5  # workers yield to the replay itself, which consumes their parts in order
Hit = tuple[int, str, EngineRecord, float | None]
"""(line number, text, record, time from the line's own prefix or None)."""
PartResult = tuple[list[Hit], int]


def _parse_part(path: str, start: int, end: int, year: int, tz: tzinfo) -> PartResult:
    """The records of the anchor lines of ``[start, end)`` (numbered within the part, from
    0) and the number of lines in the part."""
    out: list[Hit] = []
    with Path(path).open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        spans, lines = spans_in(mm, start, end)
        for index, a, b in spans:
            text = mm[a:b].decode("utf-8", "replace")
            record = parse_engine_line(text)
            if record is not None:
                out.append((index, text, record, engine_time(record.prefix, year=year, tz=tz)))
    return out, lines


def anchor_records(path: Path, year: int, tz: tzinfo, workers: int | None = None) -> Iterator[Hit]:
    """Every record of the file's anchor lines, in file order, with 1-based line numbers."""
    size = path.stat().st_size
    if size == 0:
        return
    n = workers or (os.cpu_count() or 1)
    if size < PARALLEL_FROM or n == 1:
        yield from _numbered([_parse_part(str(path), 0, size, year, tz)])
        return
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        parts = cut_parts(mm, size, max(n, -(-size // PART_BYTES)))
    width = min(n, len(parts))
    pool = ProcessPoolExecutor(
        width, mp_context=multiprocessing.get_context("fork"), initializer=_yield
    )
    try:
        jobs = (pool.submit(_parse_part, str(path), a, b, year, tz) for a, b in parts)
        yield from _numbered(_results(jobs, AHEAD * width))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _yield() -> None:
    """Run a worker a little below the replay: the replay applies records, evaluates rules and
    writes output in file order, so it is the critical path; the scan fills the other cores."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)


def _results(jobs: Iterator[Future[PartResult]], ahead: int) -> Iterator[PartResult]:
    """The parts' results in order, with at most ``ahead`` parts submitted and not yet taken
    (a replay slower than the scan never holds a whole big file's records)."""
    pending: deque[Future[PartResult]] = deque(islice(jobs, ahead))
    while pending:
        result = pending.popleft().result()
        pending.extend(islice(jobs, 1))
        yield result


def _numbered(results: Iterator[PartResult] | list[PartResult]) -> Iterator[Hit]:
    """File line numbers; a line taken twice (context running into the next part) once."""
    line_base, last = 1, 0
    for hits, lines in results:
        for index, text, record, at in hits:
            number = line_base + index
            if number > last:
                last = number
                yield number, text, record, at
        line_base += lines
