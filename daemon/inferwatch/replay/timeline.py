"""Recorded files as a time-ordered stream of the records that matter.

Each reader yields only records some parser could match (a cheap substring check runs first, so
the 99 % of ordinary lines cost one ``in`` test), with the wall time of the record taken from its
own prefix: ISO times with an offset as they are, naive times in ``--tz``, times without a year in
``--year``, kernel seconds as seconds from an arbitrary origin. A record without a time inherits
the last time seen in its file; in an engine log, the last time of a record with an anchor (the
scanner may skip an access-log line or a warning, so their times date nothing but themselves).
Files are merged by time, stable by file then line.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from inferwatch.parsers.engine_precheck import unanchored
from inferwatch.parsers.kernel import KernelLine, RecordAssembler, parse_kernel_line
from inferwatch.parsers.kernel_precheck import INTERESTING_BYTES
from inferwatch.replay.engine_parts import Hit, anchor_records, parse_hit


@dataclass(frozen=True, slots=True)
class TimedRecord:
    at: float
    file_index: int
    line: int
    source: str
    kind: str  # "kernel" | "engine"
    text: str  # a kernel record's message ("" for an engine record: its parse is all it needs)
    parsed: object | None = None
    rendered: str | None = None  # an engine line event's fields as JSON (output.fields_json)


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


CHUNK = 8 << 20


def kernel_records(path: Path, index: int, ctx: TimeContext, source: str) -> Iterator[TimedRecord]:
    """Records of a saved kernel log that some parser could match, with their times.

    The file is scanned in chunks with one regex for the parsers' keywords; only around a hit is
    the record put together (its head line plus dmesg's indented continuation lines) and parsed.
    """
    last_at = 0.0
    for line_no, text in _keyword_records(path):
        parsed = parse_kernel_line(text)
        at = kernel_time(parsed, ctx)
        if at is None:
            at = last_at
        last_at = at
        yield TimedRecord(at, index, line_no, source, "kernel", parsed.message, parsed)


def _keyword_records(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number of the record's head, record text)`` for records holding a keyword."""
    base_line = 1  # line number of the first line in ``buf``
    carry = b""
    with path.open("rb") as fh:
        while True:
            block = fh.read(CHUNK)
            buf = carry + block
            if not buf:
                return
            if block:
                cut = _last_record_start(buf)
                if cut <= 0:  # one record larger than a chunk: keep reading
                    carry = buf
                    continue
                work, carry = buf[:cut], buf[cut:]
            else:
                work, carry = buf, b""
            yield from _scan(work, base_line)
            base_line += work.count(b"\n")
            if not block:
                return


def _last_record_start(buf: bytes) -> int:
    """Offset of the last line in ``buf`` that starts a record (not a continuation line)."""
    pos = buf.rfind(b"\n", 0, len(buf) - 1)
    while pos >= 0:
        if buf[pos + 1 : pos + 2] not in (b" ", b"\t"):
            return pos + 1
        pos = buf.rfind(b"\n", 0, pos)
    return 0


def _scan(work: bytes, base_line: int) -> Iterator[tuple[int, str]]:
    counted_to, line_at = 0, base_line
    done_to = 0  # records ending before this offset were already yielded
    for hit in INTERESTING_BYTES.finditer(work):
        if hit.start() < done_to:
            continue
        head = _record_head(work, hit.start())
        end = _record_end(work, hit.start())
        done_to = end
        line_at += work.count(b"\n", counted_to, head)
        counted_to = head
        text = work[head:end].decode("utf-8", "replace")
        assembler = RecordAssembler()
        record = None
        for offset, line in enumerate(text.split("\n")):
            record = assembler.feed(line, line_at + offset) or record
        record = assembler.flush() or record
        if record is not None:
            yield line_at, record.text


def _record_head(work: bytes, pos: int) -> int:
    start = work.rfind(b"\n", 0, pos) + 1
    while start > 0 and work[start : start + 1] in (b" ", b"\t"):
        start = work.rfind(b"\n", 0, start - 1) + 1
    return start


def _record_end(work: bytes, pos: int) -> int:
    end = work.find(b"\n", pos)
    while end != -1 and work[end + 1 : end + 2] in (b" ", b"\t"):
        end = work.find(b"\n", end + 1)
    return len(work) if end == -1 else end


LineSource = Callable[[Path], Iterable[tuple[int, bytes]]]
ENGINE_LINES: LineSource | None = None
"""Where engine lines come from: None is the parallel scan with parsing in its workers
(:func:`anchor_records`); a line source (``anchor_lines``, every line) is parsed here."""


def _parsed(lines: Iterable[tuple[int, bytes]], ctx: TimeContext, render: bool) -> Iterator[Hit]:
    for number, raw in lines:
        hit = parse_hit(number, raw, ctx.year, ctx.tz, render)
        if hit is not None:
            yield hit


def engine_records(
    path: Path,
    index: int,
    ctx: TimeContext,
    source: str,
    lines: LineSource | None = None,
    *,
    render: bool = False,
) -> Iterator[TimedRecord]:
    """Engine lines that can become records (found by the parallel anchor scan), parsed, with
    their times; bystanders (access logs, warnings, other libraries' lines: nothing reads them)
    are dropped where they are parsed. A record without a time of its own takes the last time
    of a record with an anchor: the scanner delivers all of those and only some of the others,
    so a scanned replay dates like a full read. Records before the file's first such time (a
    traceback) take that first time: the epoch would put hours of empty virtual time before
    the log. With ``render``, line events come with their fields as JSON (rendered where
    the records are parsed: in the scan workers)."""
    reader = lines or ENGINE_LINES
    if reader is None:
        hits = anchor_records(path, ctx.year, ctx.tz, render=render)
    else:
        hits = _parsed(reader(path), ctx, render)
    last_at: float | None = None
    early: list[tuple[int, object, str | None]] = []
    for number, record, own, rendered in hits:
        if own is not None and not unanchored(record):
            last_at = own
            for n, r, j in early:
                yield TimedRecord(own, index, n, source, "engine", "", r, j)
            early.clear()
        at = own if own is not None else last_at
        if at is None:
            early.append((number, record, rendered))
            continue
        yield TimedRecord(at, index, number, source, "engine", "", record, rendered)
    for n, r, j in early:  # no timed record at all
        yield TimedRecord(0.0, index, n, source, "engine", "", r, j)


Reader = Callable[[Path, int, TimeContext, str], Iterator[TimedRecord]]


def merged(streams: Iterable[Iterator[TimedRecord]]) -> Iterator[TimedRecord]:
    """One stream ordered by time, ties broken by file order then line number (one file's
    stream is passed on as it is: merging it alone would change nothing)."""
    streams = list(streams)
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda r: (r.at, r.file_index, r.line))
