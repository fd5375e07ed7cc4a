"""One Xid seen twice: once as an NVML event, once as the driver's kernel-log line.

The driver reports an Xid both ways at the same moment. The kernel line is the richer record
(process, MMU fault detail, recovery action), so it wins: an NVML-born Xid is *held* for
``hold`` seconds and dropped when the line of the same bus id and Xid arrives meanwhile; it is
released into the pipeline only when no line came (kernel log unreadable, off, or slow). Once
one of the two has been counted, the other within ``window`` (``kernel.correlation_window``) is
its echo and is dropped, in either order, so one fault counts once. Two lines from the same
origin are two faults and are never paired with each other.

Pure and bounded: entries expire ``window + max_skew`` behind the newest time seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferwatch.derive.kernel.dedupe import drop_before
from inferwatch.derive.kernel.effects import KernelInput

Key = tuple[str, int]


@dataclass(slots=True)
class _Sighting:
    at: float
    nvml: bool
    paired: bool = False


class XidEchoes:
    __slots__ = ("_held", "_seen", "hold", "max_skew", "window")

    def __init__(self, window: float, hold: float = 1.0, max_skew: float = 2.0) -> None:
        self.window = window
        self.hold = min(hold, window)
        self.max_skew = max_skew
        self._held: list[tuple[Key, KernelInput]] = []
        self._seen: dict[Key, list[_Sighting]] = {}

    @property
    def state_size(self) -> int:
        return len(self._held) + sum(map(len, self._seen.values()))

    def nvml(self, key: Key, item: KernelInput) -> None:
        """An NVML-born Xid: dropped when its line was counted already, else held."""
        self._expire(item.at)
        if not self._pair(key, item.at, nvml=True):
            self._held.append((key, item))

    def line(self, key: Key, at: float) -> bool:
        """A kernel-log Xid: False when it is the echo of an NVML Xid already counted (drop it),
        True when it counts (a held NVML twin is dropped in its favour)."""
        self._expire(at)
        for i, (held_key, held) in enumerate(self._held):
            if held_key == key and abs(held.at - at) <= self.window:
                del self._held[i]
                self._seen.setdefault(key, []).append(_Sighting(at, nvml=False, paired=True))
                return True
        if self._pair(key, at, nvml=False):
            return False
        self._seen.setdefault(key, []).append(_Sighting(at, nvml=False))
        return True

    def release(self, now: float) -> list[KernelInput]:
        """The held NVML Xids whose line did not come within ``hold``: they count now."""
        due = [(k, item) for k, item in self._held if item.at + self.hold <= now]
        if due:
            self._held = [(k, item) for k, item in self._held if item.at + self.hold > now]
        return [self._count(k, item) for k, item in due]

    def release_all(self) -> list[KernelInput]:
        held, self._held = self._held, []
        return [self._count(k, item) for k, item in held]

    def _count(self, key: Key, item: KernelInput) -> KernelInput:
        self._seen.setdefault(key, []).append(_Sighting(item.at, nvml=True))
        return item

    def _pair(self, key: Key, at: float, *, nvml: bool) -> bool:
        """Whether a counted sighting of the other origin within ``window`` takes this one."""
        for seen in self._seen.get(key, ()):
            if seen.nvml != nvml and not seen.paired and abs(seen.at - at) <= self.window:
                seen.paired = True
                return True
        return False

    def _expire(self, at: float) -> None:
        drop_before(self._seen, at - self.window - self.max_skew)
