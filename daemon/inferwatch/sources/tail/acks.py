"""Acknowledgements: turning "the consumer has committed up to this line" into file offsets.

Lines of many files are delivered in one sequence (the ``seq`` in each position). The ledger
keeps one small record per follower per poll (not one per line), so a cumulative ``ack`` commits,
for every follower, the last of its lines delivered at or before the acknowledged one. The
anchor of a block's end is taken when the block is delivered, while the file is known to hold
those bytes; acknowledging in the middle of a block reads it then.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from inferwatch.sources.tail.follower import Follower
from inferwatch.sources.tail.model import Position, TailLine


@dataclass(slots=True)
class _Block:
    """Lines of one follower delivered together: what acknowledging them commits."""

    follower: Follower
    first_seq: int
    last_seq: int
    first_line_no: int
    end_offset: int
    end_line_no: int
    anchor: bytes


class AckLedger:
    """Delivered-but-unacknowledged lines, by follower."""

    def __init__(self) -> None:
        self.delivered = 0
        self.acked = 0
        self._pending: deque[_Block] = deque()

    def record(self, follower: Follower, lines: list[TailLine]) -> None:
        """Note lines just handed out (numbered from ``delivered + 1``)."""
        if not lines:
            return
        first, last = lines[0], lines[-1]
        self.delivered = last.position[0]
        follower.delivered_seq = self.delivered
        anchor = follower.tail if follower.fd < 0 else follower.anchor_at_line_end()
        self._pending.append(
            _Block(
                follower,
                first.position[0],
                last.position[0],
                first.line_no,
                last.position[1],
                last.line_no,
                anchor,
            )
        )

    def ack(self, position: Position) -> None:
        """Commit the line at ``position`` and every line delivered before it."""
        seq, offset = position
        if seq > self.delivered:
            raise ValueError(f"position {position!r} was never delivered")
        if seq <= self.acked:
            return
        self.acked = seq
        pending = self._pending
        while pending:
            block = pending[0]
            follower = block.follower
            if block.last_seq <= seq:
                pending.popleft()
                follower.commit(block.end_offset, block.end_line_no, block.anchor, block.last_seq)
                continue
            if block.first_seq <= seq:
                line_no = block.first_line_no + (seq - block.first_seq)
                follower.commit_within(offset, line_no, seq)
                block.first_seq = seq + 1
                block.first_line_no = line_no + 1
            break
