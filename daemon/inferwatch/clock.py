"""Injected time.

Everything stateful takes a :class:`Clock`; the daemon uses :data:`SYSTEM_CLOCK`, unit tests use
:class:`FakeClock` and advance it explicitly instead of sleeping, and replay uses a
:class:`FakeClock` driven by the records' own timestamps.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock seconds (Unix epoch) and a monotonic reading for durations."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real clocks of the host."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: Clock = SystemClock()


class FakeClock:
    """A clock that moves only when told to; ``monotonic`` moves with ``time``."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._mono = 1000.0

    def time(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a fake clock never goes backwards; use set() to jump")
        self._now += seconds
        self._mono += seconds

    def set(self, now: float) -> None:
        """Jump wall time (as after an NTP step); monotonic time still only moves forward."""
        if now > self._now:
            self._mono += now - self._now
        self._now = float(now)
