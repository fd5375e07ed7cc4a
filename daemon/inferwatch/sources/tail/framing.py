"""Turning a byte stream into lines: the tailer's pure framing step (no I/O).

Bytes arrive in arbitrary chunks; a line is complete only at its ``\\n``. The unterminated tail is
held (never checkpointed past, so a restart re-reads it exactly once) and can be flushed as a
partial line when its file is gone for good. Lines longer than ``max_line`` keep only their head
in memory; the rest is counted and skipped up to the next newline, so a 10 MiB prompt dump costs
at most ``max_line`` bytes and never stops the file.

Speed matters (engine logs replay at hundreds of MB/s): a block of complete lines is split with
``bytes.split`` and each line decoded by ``map`` in C (faster than decoding the block and splitting
the text, which widens every line of a block to its widest character); Python-level loops run only
for ``\\r\\n`` endings and over-long lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat


def decode(raw: bytes) -> str:
    """The one decoding rule of the tailer: UTF-8, invalid bytes replaced by U+FFFD."""
    return raw.decode("utf-8", "replace")


@dataclass(slots=True)
class Framed:
    """Lines completed by one :meth:`LineFramer.feed`, in order.

    ``raw_lens[i]`` is the size of line ``i`` in the file without its ``\\n``, so the file offset
    after line ``i`` is the offset before it plus ``raw_lens[i] + 1``. ``truncated`` lists the
    indexes of lines whose text is only a head (usually empty).
    """

    texts: list[str] = field(default_factory=list)
    raw_lens: list[int] = field(default_factory=list)
    truncated: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)


class LineFramer:
    """Splits chunks into complete lines, holding the unterminated tail between calls."""

    __slots__ = ("_dropped", "_head", "_max")

    def __init__(self, max_line: int) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self._max = max_line
        self._head = b""
        self._dropped = 0

    @property
    def pending(self) -> int:
        """Bytes of the unterminated line read so far (kept or skipped)."""
        return len(self._head) + self._dropped

    def snapshot(self) -> tuple[bytes, int]:
        return self._head, self._dropped

    def restore(self, state: tuple[bytes, int]) -> None:
        self._head, self._dropped = state

    def feed(self, chunk: bytes) -> Framed:
        """Add the next bytes of the stream; return the lines they complete."""
        out = Framed()
        start = 0
        if self._dropped:
            newline = chunk.find(b"\n")
            if newline < 0:
                self._dropped += len(chunk)
                return out
            self._dropped += newline
            self._emit_overlong(out)
            start = newline + 1
        last = chunk.rfind(b"\n", start)
        if last < 0:
            self._keep(chunk[start:] if start else chunk)
            return out
        block = chunk[start:last]
        if self._head:
            block = self._head + block
            self._head = b""
        self._split(block, out)
        self._keep(chunk[last + 1 :])
        return out

    def flush(self) -> tuple[str, int, bool] | None:
        """Give up waiting for the newline: ``(text, raw_len, truncated)`` of the held tail."""
        if not self._head and not self._dropped:
            return None
        raw_len = len(self._head) + self._dropped
        truncated = self._dropped > 0
        text = decode(self._head)
        if not truncated and text.endswith("\r"):
            text = text[:-1]
        self._head = b""
        self._dropped = 0
        return text, raw_len, truncated

    def _keep(self, data: bytes) -> None:
        if not data:
            return
        room = self._max - len(self._head)
        if len(data) > room:
            self._head += data[:room]
            self._dropped += len(data) - room
        else:
            self._head += data

    def _emit_overlong(self, out: Framed) -> None:
        out.truncated.append(len(out.texts))
        out.texts.append(decode(self._head))
        out.raw_lens.append(len(self._head) + self._dropped)
        self._head = b""
        self._dropped = 0

    def _split(self, block: bytes, out: Framed) -> None:
        raws = block.split(b"\n")
        raw_lens = list(map(len, raws))
        if b"\r" in block:
            raws = [r[:-1] if r.endswith(b"\r") else r for r in raws]
        if max(raw_lens) > self._max:
            self._cut_overlong(raws, raw_lens, out)
        out.texts.extend(map(bytes.decode, raws, repeat("utf-8"), repeat("replace")))
        out.raw_lens.extend(raw_lens)

    def _cut_overlong(self, raws: list[bytes], raw_lens: list[int], out: Framed) -> None:
        base = len(out.texts)
        for index, size in enumerate(raw_lens):
            if size > self._max:
                raws[index] = raws[index][: self._max]
                out.truncated.append(base + index)
