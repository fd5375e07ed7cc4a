"""One generation of one file: an open descriptor, how far it was read and what was acknowledged.

A follower reads by offset (``pread``), never by name, so a rename or an unlink does not disturb
it: a rotated file is drained through the descriptor we already hold. What it delivered and what
the consumer acknowledged are kept apart (``line_end`` vs ``committed_*``) because the checkpoint
may only cover acknowledged lines.

A "generation" ends when the bytes before our read position change (truncation, copytruncate, an
in-place rewrite): the tailer then starts a new follower on the same descriptor from offset 0 and
moves this one onto the rotated copy, if one holds our bytes, or marks it ``lost``.
"""

from __future__ import annotations

import os
from itertools import accumulate, repeat
from typing import Any

from inferwatch.sources.tail.checkpoint import FileEntry
from inferwatch.sources.tail.framing import Framed, LineFramer
from inferwatch.sources.tail.identity import (
    ANCHOR_BYTES,
    EMPTY_PREFIX,
    PREFIX_BYTES,
    Prefix,
    bytes_before,
    close_quietly,
    digest,
    file_key,
    read_at,
)
from inferwatch.sources.tail.model import TailLine, TailStats

_PLUS_ONE = (1).__add__
_SCAN = 1 << 16


def _first_data(fd: int, limit: int) -> int:
    """Offset of the first non-NUL byte before ``limit`` (``limit`` if none); holes are skipped
    with ``SEEK_DATA`` where the filesystem supports it, NUL runs by reading."""
    try:
        pos = os.lseek(fd, 0, os.SEEK_DATA)
    except OSError:
        pos = 0
    while pos < limit:
        chunk = os.pread(fd, min(_SCAN, limit - pos), pos)
        if not chunk:
            break
        stripped = chunk.lstrip(b"\x00")
        if stripped:
            return pos + len(chunk) - len(stripped)
        pos += len(chunk)
    return limit


class Follower:
    """Reads one file generation into :class:`TailLine` objects."""

    __slots__ = (
        "acked_seq",
        "anchor_due",
        "committed_anchor",
        "committed_line_no",
        "committed_offset",
        "content",
        "delivered_seq",
        "detached_at",
        "fd",
        "framer",
        "head",
        "hole",
        "key",
        "label",
        "last_growth",
        "line_end",
        "line_no",
        "lost",
        "nlink",
        "prefix",
        "read_pos",
        "size",
        "skip_nuls",
        "stats",
        "tail",
    )

    def __init__(
        self,
        label: str,
        fd: int,
        st: os.stat_result,
        *,
        max_line: int,
        now: float,
        stats: TailStats,
        offset: int = 0,
        line_no: int = 0,
        prefix: Prefix = EMPTY_PREFIX,
    ) -> None:
        self.label = label
        self.fd = fd
        self.key = file_key(st)
        self.size = st.st_size
        self.nlink = st.st_nlink
        self.stats = stats
        self.framer = LineFramer(max_line)
        self.read_pos = offset
        self.line_end = offset
        self.line_no = line_no
        self.prefix = prefix
        self.head = read_at(fd, prefix.length, 0) if prefix.length else b""
        self.tail = bytes_before(fd, offset)
        # A file read from its start may begin with the NUL hole that a writer without O_APPEND
        # leaves after a truncation; those bytes are not log content.
        self.skip_nuls = offset == 0
        # Where the content starts (after a NUL hole) and its first bytes: what a copy of this
        # generation must hold at the same offset.
        self.hole = 0
        self.content = b""
        if offset > 0:  # resumed mid-file: find the content start now, while the file is ours
            self._find_content()
        self.last_growth = now
        self.detached_at: float | None = None
        self.lost = False
        self.delivered_seq = 0
        self.acked_seq = 0
        self.committed_offset = offset
        self.committed_line_no = line_no
        self.committed_anchor: bytes | None = self.tail
        self.anchor_due = False

    # -- state of the file -------------------------------------------------------------------

    def refresh(self) -> None:
        st = os.fstat(self.fd)
        self.size = st.st_size
        self.nlink = st.st_nlink

    def rewritten(self) -> bool:
        """Whether the bytes we read are no longer there: shorter file, other anchor, other head.

        The anchor (bytes just before our position) catches a file truncated and regrown past
        our offset; the head catches the rarer rewrite whose anchor bytes happen to be equal
        (repetitive content), for one extra small ``pread``.
        """
        if self.size < self.read_pos:
            return True
        if self.tail:
            at = self.read_pos - len(self.tail)
            if read_at(self.fd, len(self.tail), at) != self.tail:
                return True
        return bool(self.head) and read_at(self.fd, len(self.head), 0) != self.head

    def same_content(self, fd: int, size: int) -> bool:
        """Whether another open file (of ``size`` bytes) starts as this generation does: the
        same first content bytes at the same offset, past the same NUL hole if any. A copy
        logrotate made of this file passes; a NUL hole alone proves nothing."""
        if not self.content or size < self.hole + len(self.content):
            return False
        return read_at(fd, len(self.content), self.hole) == self.content

    def _find_content(self) -> None:
        """For a generation resumed mid-file: locate its content start."""
        start = _first_data(self.fd, self.read_pos)
        if start < self.read_pos:
            self.hole = start
            self.content = read_at(self.fd, min(ANCHOR_BYTES, self.read_pos - start), start)
        else:  # nothing but NULs so far: the content, if any, comes later
            self.hole = -1
            self.skip_nuls = True

    def quiet(self, now: float, grace: float) -> bool:
        since = self.last_growth
        if self.detached_at is not None and self.detached_at > since:
            since = self.detached_at
        return now - since >= grace

    @property
    def fully_acked(self) -> bool:
        return self.acked_seq >= self.delivered_seq

    @property
    def at_eof(self) -> bool:
        return self.size <= self.read_pos

    def grow_prefix(self) -> None:
        """Extend the fingerprint as the file grows (small files get one too, then a better one)."""
        if self.prefix.length < PREFIX_BYTES and self.read_pos > self.prefix.length:
            head = read_at(self.fd, min(self.read_pos, PREFIX_BYTES), 0)
            if head.startswith(self.head):  # else rewritten: the next poll notices
                self.head = head
                self.prefix = Prefix(len(head), digest(head))

    # -- reading -----------------------------------------------------------------------------

    def read(self, seq: int, budget: int, chunk: int, now: float) -> list[TailLine]:
        """Read up to ``budget`` bytes; return the completed lines numbered from ``seq + 1``.

        The bytes before our position are checked again after reading: a truncation between
        the caller's check and our ``pread`` (with a writer that resumes exactly at our offset,
        as a non-O_APPEND one does) would otherwise pass the next generation off as this one.
        Then the read is undone, and the next poll sees the truncation.
        """
        before = self._snapshot()
        out: list[TailLine] = []
        total = 0
        while total < budget:
            want = min(chunk, budget - total)
            data = os.pread(self.fd, want, self.read_pos)
            if not data:
                break
            total += len(data)
            self._consume(data, out, seq + len(out))
            if len(data) < want:
                break
        tail, pos = before[3], before[0]
        if total and tail and read_at(self.fd, len(tail), pos - len(tail)) != tail:
            self._restore(before)
            return []
        if total:
            self.last_growth = now
            self.stats.bytes_read += total
            self.size = max(self.size, self.read_pos)
        return out

    def _snapshot(self) -> tuple[Any, ...]:
        stats = self.stats
        return (
            self.read_pos,
            self.line_end,
            self.line_no,
            self.tail,
            self.skip_nuls,
            self.hole,
            self.content,
            self.framer.snapshot(),
            stats.lines,
            stats.truncated_lines,
            stats.nul_bytes_skipped,
        )

    def _restore(self, state: tuple[Any, ...]) -> None:
        (
            self.read_pos,
            self.line_end,
            self.line_no,
            self.tail,
            self.skip_nuls,
            self.hole,
            self.content,
            framer,
            self.stats.lines,
            self.stats.truncated_lines,
            self.stats.nul_bytes_skipped,
        ) = state
        self.framer.restore(framer)

    def _consume(self, data: bytes, out: list[TailLine], seq: int) -> None:
        size = len(data)
        if size >= ANCHOR_BYTES:
            self.tail = data[-ANCHOR_BYTES:]
        else:
            self.tail = (self.tail + data)[-ANCHOR_BYTES:]
        self.read_pos += size
        if self.skip_nuls:
            stripped = data.lstrip(b"\x00")
            skipped = size - len(stripped)
            if skipped:
                self.line_end += skipped
                self.stats.nul_bytes_skipped += skipped
            if not stripped:
                return
            self.skip_nuls = False
            self.hole = self.line_end
            data = stripped
        if self.hole >= 0 and len(self.content) < ANCHOR_BYTES:
            self.content += data[: ANCHOR_BYTES - len(self.content)]
        framed = self.framer.feed(data)
        if framed.texts:
            self._emit(framed, out, seq)

    def _emit(self, framed: Framed, out: list[TailLine], seq: int) -> None:
        count = len(framed)
        first = self.line_no + 1
        ends = accumulate(map(_PLUS_ONE, framed.raw_lens), initial=self.line_end)
        next(ends)
        positions = zip(range(seq + 1, seq + count + 1), ends, strict=False)
        if framed.truncated:
            flags = [False] * count
            for index in framed.truncated:
                flags[index] = True
            self.stats.truncated_lines += len(framed.truncated)
            truncated: list[bool] | repeat[bool] = flags
        else:
            truncated = repeat(False, count)
        start = len(out)
        out.extend(
            map(
                TailLine,
                repeat(self.label, count),
                range(first, first + count),
                framed.texts,
                framed.raw_lens,
                truncated,
                positions,
            )
        )
        self.line_no += count
        self.line_end = out[-1].position[1]
        self.stats.lines += len(out) - start

    def flush_partial(self, seq: int) -> TailLine | None:
        """Deliver the held unterminated tail as a line marked ``partial`` (file gone for good)."""
        held = self.framer.flush()
        if held is None:
            return None
        text, raw_len, truncated = held
        self.line_no += 1
        self.line_end = self.read_pos
        self.stats.partial_lines += 1
        self.stats.lines += 1
        return TailLine(
            self.label, self.line_no, text, raw_len, truncated, (seq + 1, self.read_pos), True
        )

    # -- acknowledgement and checkpoint ------------------------------------------------------

    def anchor_at_line_end(self) -> bytes:
        """Anchor bytes before ``line_end``, taken while we know the file is as we read it."""
        if self.read_pos == self.line_end:
            return self.tail
        return bytes_before(self.fd, self.line_end)

    def anchor_at(self, offset: int) -> bytes | None:
        """Anchor bytes before an arbitrary delivered offset, if the content is still ours."""
        if self.lost or self.fd < 0:
            return None
        try:
            if read_at(self.fd, len(self.tail), self.read_pos - len(self.tail)) != self.tail:
                return None
            return bytes_before(self.fd, offset)
        except OSError:
            return None

    def commit(self, offset: int, line_no: int, anchor: bytes | None, seq: int) -> None:
        self.committed_offset = offset
        self.committed_line_no = line_no
        self.committed_anchor = anchor
        self.anchor_due = False
        self.acked_seq = seq

    def commit_within(self, offset: int, line_no: int, seq: int) -> None:
        """Commit a line inside a delivered block; its anchor is read when a checkpoint asks
        (:meth:`entry`), not per line: records are acknowledged one by one."""
        self.commit(offset, line_no, None, seq)
        self.anchor_due = True

    def entry(self, name: str | None) -> FileEntry:
        if self.anchor_due:
            self.committed_anchor = self.anchor_at(self.committed_offset)
            self.anchor_due = False
        anchor = self.committed_anchor
        return FileEntry(
            path=self.label,
            name=name,
            dev=self.key[0],
            ino=self.key[1],
            prefix=self.prefix,
            offset=self.committed_offset,
            line_no=self.committed_line_no,
            anchor=None if anchor is None else digest(anchor),
        )

    def move_to(self, fd: int, st: os.stat_result) -> None:
        """Continue this generation on another descriptor holding the same bytes (a copy)."""
        self.fd = fd
        self.key = file_key(st)
        self.size = st.st_size
        self.nlink = st.st_nlink

    def mark_lost(self) -> None:
        """The bytes after our position are gone (truncated, no copy): stop reading."""
        self.lost = True
        self.fd = -1

    def close(self) -> None:
        close_quietly(self.fd)
        self.fd = -1
