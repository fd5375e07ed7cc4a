"""Engine records of a big log, parsed where they are found and streamed in file order.

The scan of :mod:`engine_scan` runs in worker processes over parts of the file; here each worker
also decodes and parses its hit lines and reads their times (parsers and ``engine_time`` are
pure), so only records travel back, never raw lines. The file is cut into more parts than
workers, and the parts' records are yielded in file order as soon as each part is done: the
replay works on the first parts while the workers (at a slightly lower priority, and off one
core left to the replay) scan the rest.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import tzinfo
from itertools import islice
from pathlib import Path
from typing import NamedTuple

from inferwatch.parsers.engine import parse_engine_line
from inferwatch.parsers.engine_precheck import bystander
from inferwatch.parsers.engine_records import EngineRecord
from inferwatch.parsers.engine_time import engine_time
from inferwatch.replay.engine_scan import PARALLEL_FROM, cut_parts, numbered, spans_in
from inferwatch.replay.output import fields_json

PART_BYTES = 8 << 20  # a part per this many bytes (at least one per worker)
AHEAD = 4  # parts in flight per worker
WORKER_NICE = 5  # workers yield to the replay itself, which consumes their parts in order
Hit = tuple[int, EngineRecord, float | None, str | None]
"""(line number, record, time from the line's own prefix or None, and when asked for, a line
event's fields as JSON: ``output.fields_json``)."""
PartResult = tuple[list[Hit], int]


def parse_hit(number: int, raw: bytes, year: int, tz: tzinfo, render: bool) -> Hit | None:
    """One taken line as replay reads it: its record (None for no record or a bystander), the
    time of its own prefix, and with ``render`` its line event's fields as JSON."""
    record = parse_engine_line(raw.decode("utf-8", "replace"))
    if record is None or bystander(record):
        return None
    own = engine_time(record.prefix, year=year, tz=tz)
    return number, record, own, fields_json(record) if render else None


def _parse_part(path: str, start: int, end: int, year: int, tz: tzinfo, render: bool) -> PartResult:
    """The records of the anchor lines of ``[start, end)`` (numbered within the part, from
    0) and the number of lines in the part."""
    out: list[Hit] = []
    with Path(path).open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        spans, lines = spans_in(mm, start, end)
        for index, a, b in spans:
            hit = parse_hit(index, mm[a:b], year, tz, render)
            if hit is not None:
                out.append(hit)
    return out, lines


PartArgs = tuple[str, int, int, int, tzinfo, bool]


@dataclass(slots=True)
class _Job:
    """One part: submitted to the pool, or (``stolen``) scanned by the replay process."""

    args: PartArgs
    future: Future[PartResult]
    stolen: PartResult | None = None

    def done(self) -> bool:
        return self.stolen is not None or self.future.done()

    def result(self) -> PartResult:
        return self.stolen if self.stolen is not None else self.future.result()


class _Scan:
    """A running parallel scan of one file: its pool and its parts, the first ones submitted."""

    def __init__(self, key: _Key, parts: list[tuple[int, int]], n: int):
        self.width = min(n, len(parts))
        self.pool = ProcessPoolExecutor(
            self.width,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_yield,
            initargs=(scan_cpus(),),
        )
        self.jobs = (self._submit(key.args(a, b)) for a, b in parts)
        self.pending: deque[_Job] = deque(islice(self.jobs, AHEAD * self.width))

    def _submit(self, args: PartArgs) -> _Job:
        return _Job(args, self.pool.submit(_parse_part, *args))

    def results(self) -> Iterator[PartResult]:
        """The parts' results in order, with at most ``AHEAD`` parts per worker submitted and
        not yet taken (a replay slower than the scan never holds a big file's records). While
        the next part is not ready, this process scans a queued later part itself: the time it
        would spend waiting goes to the scan."""
        while self.pending:
            while not self.pending[0].done() and self._steal():
                pass
            result = self.pending.popleft().result()
            self.pending.extend(islice(self.jobs, 1))
            yield result

    def _steal(self) -> bool:
        """Scan the last part no worker has started, here; False when there is none."""
        for job in reversed(self.pending):
            if job.stolen is None and job.future.cancel():
                job.stolen = _parse_part(*job.args)
                return True
        return False

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Key(NamedTuple):
    """What a scan reads and how: the file, the year and zone of its times, and whether line
    events are rendered as JSON next to the parse."""

    path: str
    year: int
    tz: tzinfo
    render: bool

    @classmethod
    def of(cls, path: Path, year: int, tz: tzinfo, render: bool) -> _Key:
        return cls(str(path.resolve()), year, tz, render)

    def args(self, start: int, end: int) -> PartArgs:
        return (self.path, start, end, self.year, self.tz, self.render)


_STARTED: dict[_Key, _Scan] = {}


def _begin(key: _Key, workers: int | None) -> _Scan | None:
    path = Path(key.path)
    size = path.stat().st_size
    n = workers or (os.cpu_count() or 1)
    if size < PARALLEL_FROM or n == 1:
        return None
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        parts = cut_parts(mm, size, max(n, -(-size // PART_BYTES)))
    return _Scan(key, parts, n)


def start_scan(path: Path, year: int, tz: tzinfo, *, render: bool = False) -> None:
    """Start scanning ``path`` now, so the workers run while the replay loads its rules and
    modules; :func:`anchor_records` with the same arguments picks the running scan up."""
    key = _Key.of(path, year, tz, render)
    if key not in _STARTED:
        scan = _begin(key, None)
        if scan is not None:
            _STARTED[key] = scan


def stop_scans() -> None:
    """End scans started and never consumed (the replay stopped early)."""
    while _STARTED:
        _STARTED.popitem()[1].close()


def anchor_records(
    path: Path, year: int, tz: tzinfo, workers: int | None = None, *, render: bool = False
) -> Iterator[Hit]:
    """Every record of the file's anchor lines, in file order, with 1-based line numbers."""
    size = path.stat().st_size
    if size == 0:
        return
    key = _Key.of(path, year, tz, render)
    scan = _STARTED.pop(key, None) if workers is None else None
    scan = scan or _begin(key, workers)
    if scan is None:
        yield from _numbered([_parse_part(*key.args(0, size))])
        return
    try:
        yield from _numbered(scan.results())
    finally:
        scan.close()


def scan_cpus() -> frozenset[int] | None:
    """The CPUs the scan workers run on: every one this process may use but the first, which
    is left to the replay itself (None with fewer than two). The replay applies records,
    evaluates rules and writes output in file order, the critical path: sharing a core with a
    worker, even one below it, costs it ~4 % of a two-core run (bench/RESULTS.md). The replay
    itself is not pinned: where its core is busy, it may run anywhere."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    return frozenset(allowed[1:]) if len(allowed) > 1 else None


def _yield(cpus: frozenset[int] | None) -> None:
    """Run a worker a little below the replay, and off its core (``cpus``: ``scan_cpus``)."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    if cpus is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)


def _numbered(results: Iterator[PartResult] | list[PartResult]) -> Iterator[Hit]:
    """File line numbers; a line taken twice (context running into the next part) once."""
    for number, (_, record, at, rendered) in numbered(results):
        yield number, record, at, rendered
