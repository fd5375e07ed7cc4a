"""A saved kernel log as timed records (the kernel side of :mod:`~inferwatch.replay.timeline`).

Imported only when a kernel log is replayed: an engine-log replay never loads the kernel parsers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from inferwatch.parsers.kernel import (
    KernelLine,
    RecordAssembler,
    is_continuation,
    parse_kernel_line,
)
from inferwatch.parsers.kernel_precheck import INTERESTING_BYTES
from inferwatch.replay.kernel_clock import KernelClock
from inferwatch.replay.timeline import TimeContext, TimedRecord

CHUNK = 8 << 20
MAX_UNTIMED = 10_000  # records held while waiting for a file's first time


def kernel_records(path: Path, index: int, ctx: TimeContext, source: str) -> Iterator[TimedRecord]:
    """Records of a saved kernel log that some parser could match, with their times.

    The file is scanned in chunks with one regex for the parsers' keywords; only around a hit is
    the record put together (its head line plus dmesg's indented continuation lines) and parsed.
    Times come from :class:`KernelClock`; records before the file's first time take that time
    (up to ``MAX_UNTIMED`` of them: then the file is taken as untimed, from 0).
    """
    clock = KernelClock(ctx)
    held: list[tuple[int, KernelLine]] = []
    for line_no, text in _keyword_records(path):
        parsed = parse_kernel_line(text)
        at = clock.place(parsed)
        if at is None:
            held.append((line_no, parsed))
            if len(held) < MAX_UNTIMED:
                continue
            at = clock.untimed()
        held.append((line_no, parsed))
        for n, line in held:
            yield TimedRecord(at, index, n, source, "kernel", line.message, line, base=clock.base)
        held.clear()
    at = clock.untimed()
    for n, line in held:
        yield TimedRecord(at, index, n, source, "kernel", line.message, line, base=clock.base)


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
        if not _continues(buf, pos + 1):
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
        for offset, line in enumerate(text.split("\n")):
            done = assembler.feed(line, line_at + offset)
            if done is not None:
                yield done.line_no, done.text
        done = assembler.flush()
        if done is not None:
            yield done.line_no, done.text


def _continues(work: bytes, start: int) -> bool:
    """Whether the line starting at ``start`` continues the record above it."""
    if work[start : start + 1] not in (b" ", b"\t") and b"| " not in work[start : start + 64]:
        return False
    end = work.find(b"\n", start)
    line = work[start : len(work) if end == -1 else end]
    return is_continuation(line.decode("utf-8", "replace"))


def _record_head(work: bytes, pos: int) -> int:
    start = work.rfind(b"\n", 0, pos) + 1
    while start > 0 and _continues(work, start):
        start = work.rfind(b"\n", 0, start - 1) + 1
    return start


def _record_end(work: bytes, pos: int) -> int:
    end = work.find(b"\n", pos)
    while end != -1 and _continues(work, end + 1):
        end = work.find(b"\n", end + 1)
    return len(work) if end == -1 else end
