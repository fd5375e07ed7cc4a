"""A saved kernel log as timed records (the kernel side of :mod:`~inferwatch.replay.timeline`).

Imported only when a kernel log is replayed: an engine-log replay never loads the kernel parsers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from inferwatch.parsers.kernel import KernelLine, RecordAssembler, parse_kernel_line
from inferwatch.parsers.kernel_precheck import INTERESTING_BYTES
from inferwatch.replay.timeline import TimeContext, TimedRecord


def kernel_time(line: KernelLine, ctx: TimeContext) -> float | None:
    if line.wall is not None:
        return ctx.wall_seconds(line.wall, line.year_missing)
    return line.kernel_seconds


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
