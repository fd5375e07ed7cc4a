"""The time of each record of one saved kernel log, and the file's time base.

A kernel log gives wall times (syslog, ``dmesg -T``, ISO and Talos prefixes), seconds since
boot (plain ``dmesg``), both (syslog around kernel seconds), or nothing (``dmesg -H`` deltas).
The first record with a time decides the file's base (``timeline.WALL``, ``BOOT_RELATIVE`` or,
when nothing in it is timed, ``UNTIMED``). Kernel seconds are never taken for Unix seconds: in a
file with wall times they are placed through the offset its own lines gave (a syslog line that
carries both) or ``--boot-time``, else the record takes the last time seen; without any wall time
the file stays boot-relative and its times are seconds since boot.
"""

from __future__ import annotations

from inferwatch.parsers.kernel import KernelLine
from inferwatch.replay.timeline import BOOT_RELATIVE, UNTIMED, WALL, TimeContext


class KernelClock:
    __slots__ = ("_boot", "_last", "base", "ctx")

    def __init__(self, ctx: TimeContext) -> None:
        self.ctx = ctx
        self.base: str = UNTIMED
        self._boot = ctx.boot_time  # Unix seconds of kernel second 0, when known
        self._last: float | None = None

    def place(self, line: KernelLine) -> float | None:
        """The record's time on the file's base; None while the file has shown no time yet."""
        wall = None
        if line.wall is not None:
            wall = self.ctx.wall_seconds(line.wall, line.year_missing)
        seconds = line.kernel_seconds
        if self._last is None:
            if wall is not None or (seconds is not None and self._boot is not None):
                self.base = WALL
            elif seconds is not None:
                self.base = BOOT_RELATIVE
            else:
                return None
        at = self._wall(wall, seconds) if self.base == WALL else seconds
        if at is None:
            at = self._last if self._last is not None else 0.0
        self._last = at
        return at

    def untimed(self) -> float:
        """The time of records held before any time appeared (0 in a file without times)."""
        return self._last if self._last is not None else 0.0

    def _wall(self, wall: float | None, seconds: float | None) -> float | None:
        if wall is not None:
            if seconds is not None:
                self._boot = wall - seconds  # the file's own lines place kernel seconds
            return wall
        if seconds is not None and self._boot is not None:
            return self._boot + seconds
        return None
