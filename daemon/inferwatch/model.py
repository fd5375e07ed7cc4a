"""Records that flow from sources to the dispatcher, and the events kept in the event log."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inferwatch.labels import Labels
from inferwatch.store.series import Kind

Ack = Callable[[], None]


@dataclass(frozen=True, slots=True)
class LineRecord:
    """One text line read by a source, with the means to acknowledge it once applied."""

    source: str
    path: str
    line_no: int
    text: str
    read_at: float
    ack: Ack | None = field(default=None, compare=False, repr=False)
    mono_at: float | None = None  # the monotonic clock at read time (maps kernel time to wall)


@dataclass(frozen=True, slots=True)
class Gap:
    """Records a source knows it missed (a kernel ring overrun, a vacuumed journal)."""

    source: str
    missed: int
    at: float
    reason: str
    ack: Ack | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: Labels
    value: float
    kind: Kind = Kind.GAUGE


@dataclass(frozen=True, slots=True)
class SampleBatch:
    """Readings taken together (one NVML poll, one scrape); ``stale`` lists series that ended."""

    source: str
    at: float
    samples: tuple[Sample, ...]
    stale: tuple[tuple[str, Labels], ...] = ()
    ack: Ack | None = field(default=None, compare=False, repr=False)


Record = LineRecord | SampleBatch | Gap


@dataclass(frozen=True, slots=True)
class Event:
    """A discrete happening (an Xid, a crash, a start-up) kept in the event log.

    ``key`` makes inserting idempotent: re-reading a record after a crash yields the same key.
    """

    type: str
    at: float
    source: str
    key: str
    line: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
