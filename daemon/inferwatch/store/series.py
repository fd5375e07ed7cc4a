"""One time series: a ring of (timestamp, value) samples with time-based retention.

Samples live in two ``array('d')`` columns (16 bytes a sample) with a moving start index, so
appending is amortised O(1), trimming is O(1) until a compaction, and range reads are two
bisections. Staleness markers use Prometheus's special NaN bit pattern.
"""

from __future__ import annotations

import math
import struct
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from inferwatch.event import Kind
from inferwatch.labels import Labels

_STALE_BITS = 0x7FF0000000000002
STALE_NAN: float = struct.unpack("<d", struct.pack("<Q", _STALE_BITS))[0]


def is_stale(value: float) -> bool:
    """True for a staleness marker (not for an ordinary NaN sample)."""
    return math.isnan(value) and struct.pack("<d", value) == struct.pack("<Q", _STALE_BITS)


@dataclass(slots=True, eq=False)
class Series:
    """Samples of one series, in strictly increasing time order."""

    name: str
    labels: Labels
    kind: Kind
    carry_forward: bool = False
    ts: array[float] = field(default_factory=lambda: array("d"))
    vs: array[float] = field(default_factory=lambda: array("d"))
    start: int = 0
    #: No sample after this index is NaN (a staleness marker included) or lower than the one
    #: before it (a counter reset): a range read starting later needs no scan for either.
    irregular: int = -1
    #: Counts every change other than appending a sample (a replaced last value, a raised
    #: level, a compaction that moves the indices): equal versions mean an index still names
    #: the same sample (``promql.sliding`` keeps windows by index).
    version: int = 0
    #: Readings given to ``SeriesStore.set`` are dropped: a gauge nothing will read (a batch
    #: run's store, ``SeriesStore(reads=…)``).
    muted: bool = False

    def __post_init__(self) -> None:
        if self.ts:  # samples given whole (a snapshot): nothing is known about them
            self.irregular = len(self.ts) - 1

    def __len__(self) -> int:
        return len(self.ts) - self.start

    def append(self, t: float, v: float) -> bool:
        """Add a sample; an equal timestamp replaces the last value, an older one is refused."""
        n = len(self.ts)
        if n > self.start:
            last = self.ts[n - 1]
            if t < last:
                return False
            if t == last:
                self.vs[n - 1] = v
                self.version += 1
                if not v >= self.vs[n - 2] if n > 1 else math.isnan(v):
                    self.irregular = n - 1
                return True
            if not v >= self.vs[n - 1]:  # lower, or NaN on either side
                self.irregular = n
        elif math.isnan(v):
            self.irregular = n
        self.ts.append(t)
        self.vs.append(v)
        return True

    def raise_level(self, delta: float) -> None:
        """Add ``delta`` to every sample held (staleness markers stay): an old event counted
        into a counter as if it had always been in it, so no window sees it as an increase."""
        vs = self.vs
        self.version += 1
        for i in range(self.start, len(vs)):
            if not math.isnan(vs[i]):
                vs[i] += delta

    def last(self) -> tuple[float, float] | None:
        if len(self.ts) <= self.start:
            return None
        return self.ts[-1], self.vs[-1]

    def last_real(self) -> tuple[float, float] | None:
        """The newest sample that is not a staleness marker."""
        for i in range(len(self.ts) - 1, self.start - 1, -1):
            if not is_stale(self.vs[i]):
                return self.ts[i], self.vs[i]
        return None

    def trim(self, before: float) -> None:
        """Drop samples older than ``before``, always keeping the newest one."""
        cut = bisect_left(self.ts, before, self.start, max(self.start, len(self.ts) - 1))
        self.start = cut
        if self.start > 64 and self.start * 2 > len(self.ts):
            del self.ts[: self.start]
            del self.vs[: self.start]
            self.irregular = max(self.irregular - self.start, -1)
            self.start = 0
            self.version += 1

    def window(self, start: float, end: float) -> tuple[array[float], array[float]]:
        """Samples with ``start <= t <= end`` (both ends inclusive, as Prometheus 2.42)."""
        lo = bisect_left(self.ts, start, self.start)
        hi = bisect_right(self.ts, end, lo)
        return self.ts[lo:hi], self.vs[lo:hi]

    def at_or_before(self, t: float) -> tuple[float, float] | None:
        """The newest sample with timestamp ``<= t``."""
        i = bisect_right(self.ts, t, self.start) - 1
        if i < self.start:
            return None
        return self.ts[i], self.vs[i]

    def samples(self) -> tuple[array[float], array[float]]:
        return self.ts[self.start :], self.vs[self.start :]
