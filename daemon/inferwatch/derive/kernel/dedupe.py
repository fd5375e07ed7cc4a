"""Kernel records that describe an event another record already reported.

Two cases, both from the driver's habits (reference/xid.md sections 5 and 6):
- **Fall-off twins.** The driver prints an explicit ``Xid 79`` and, microseconds later, a
  ``GPU ... has fallen off the bus`` line without an Xid token (an *implied* 79). Within
  ``window`` on the same bus id, in either order, the second of such a pair is the same
  fall-off: it is counted once (corpus README). Two explicit 79s are two events.
- **SXid continuation lines.** One NVSwitch error prints several lines with the same code and
  switch: a headline saying ``Fatal``/``Non-fatal`` with the link, then severity/engine and
  ``Data {...}`` lines. A line for the same (switch, code) within ``window`` of the previous one
  continues that event, unless it is a second headline (a new error on another link).

Both are pure and bounded: entries are dropped ``window + max_skew`` behind the newest time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar


class _Timed(Protocol):
    @property
    def at(self) -> float: ...


K = TypeVar("K")
T = TypeVar("T", bound=_Timed)


def drop_before(entries: dict[K, list[T]], horizon: float) -> None:
    """Forget the entries older than ``horizon``, and the keys left with none."""
    for key in list(entries):
        kept = [e for e in entries[key] if e.at >= horizon]
        if kept:
            entries[key] = kept
        else:
            del entries[key]


@dataclass(slots=True)
class _FallOff:
    at: float
    implied: bool
    key: str
    paired: bool = False


class FallOffTwins:
    __slots__ = ("_seen", "max_skew", "window")

    def __init__(self, window: float = 5.0, max_skew: float = 2.0) -> None:
        self.window = window
        self.max_skew = max_skew
        self._seen: dict[str, list[_FallOff]] = {}

    @property
    def state_size(self) -> int:
        return sum(map(len, self._seen.values()))

    def twin_of(self, pci_bus_id: str | None, at: float, implied: bool, key: str) -> str | None:
        """The key of the Xid 79 this one repeats, or None (then it is remembered as new)."""
        self._expire(at)
        if pci_bus_id is None:
            return None
        entries = self._seen.setdefault(pci_bus_id, [])
        for entry in entries:
            if entry.implied != implied and not entry.paired and abs(entry.at - at) <= self.window:
                entry.paired = True
                return entry.key
        entries.append(_FallOff(at, implied, key))
        return None

    def _expire(self, at: float) -> None:
        drop_before(self._seen, at - self.window - self.max_skew)


@dataclass(slots=True)
class _Sxid:
    last_at: float
    headline: bool


class SxidEvents:
    __slots__ = ("_open", "max_skew", "window")

    def __init__(self, window: float = 1.0, max_skew: float = 2.0) -> None:
        self.window = window
        self.max_skew = max_skew
        self._open: dict[tuple[str | None, int], _Sxid] = {}

    @property
    def state_size(self) -> int:
        return len(self._open)

    def starts_event(self, pci_bus_id: str | None, sxid: int, at: float, headline: bool) -> bool:
        """True when this SXid line reports a new error; False when it continues one."""
        horizon = at - self.window - self.max_skew
        self._open = {k: v for k, v in self._open.items() if v.last_at >= horizon}
        key = (pci_bus_id, sxid)
        current = self._open.get(key)
        if (
            current is None
            or abs(at - current.last_at) > self.window
            or (headline and current.headline)
        ):
            self._open[key] = _Sxid(at, headline)
            return True
        current.last_at = max(current.last_at, at)
        current.headline = current.headline or headline
        return False
