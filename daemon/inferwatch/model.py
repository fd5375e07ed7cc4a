"""Records that flow from sources to the dispatcher (the events kept in the event log, and the
kinds of series, are :mod:`inferwatch.event`'s)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from inferwatch.event import Kind
from inferwatch.labels import Labels

Ack = Callable[[], None]


LEVEL_NAMES = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
FACILITY_NAMES = (
    "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
    "uucp", "cron", "authpriv", "ftp", "", "", "", "",
    "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
)  # fmt: skip


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


@dataclass(frozen=True, slots=True)
class JournalRecord(LineRecord):
    """A kernel message from the journal: ``text`` is MESSAGE, already unescaped."""

    cursor: str = ""
    realtime_usec: int | None = None
    monotonic_usec: int | None = None
    source_monotonic_usec: int | None = None
    boot_id: str | None = None
    priority: int | None = None
    facility: int | None = None

    @property
    def wall_time(self) -> float:
        """When the kernel logged it: journald's receive time, less the delay between the
        kernel's and journald's monotonic stamps (large for early-boot records journald read
        late from the ring); the read time when the journal gave no time."""
        if self.realtime_usec is None:
            return self.read_at
        delay = 0
        if self.monotonic_usec is not None and self.source_monotonic_usec is not None:
            delay = max(0, self.monotonic_usec - self.source_monotonic_usec)
        return (self.realtime_usec - delay) / 1_000_000

    @property
    def level(self) -> str | None:
        return _name(LEVEL_NAMES, self.priority)

    @property
    def facility_name(self) -> str | None:
        return _name(FACILITY_NAMES, self.facility)

    @property
    def key(self) -> str:
        """Idempotency key: a cursor names one journal entry for good."""
        return f"journal:{self.cursor}"


def _name(names: Sequence[str], number: int | None) -> str | None:
    return names[number] or None if number is not None and 0 <= number < len(names) else None


@dataclass(frozen=True, slots=True)
class DockerRecord(LineRecord):
    """A container line: ``text`` without docker's time prefix, which is ``stamp``."""

    stamp: str = ""
    ns: int | None = None

    @property
    def wall_time(self) -> float:
        """When docker received the line (UTC, complete); the read time without one."""
        return self.ns / 1e9 if self.ns is not None else self.read_at


@dataclass(frozen=True, slots=True)
class NvmlXidRecord(LineRecord):
    """An Xid the driver reported through an NVML event (``sources/nvml_events``); ``read_at``
    is when it was received, ``text`` a readable line for logs."""

    xid: int = 0
    pci_bus_id: str = ""
    gpu: str = ""
    uuid: str = ""

    def numbered(self, line_no: int) -> NvmlXidRecord:
        return replace(self, line_no=line_no)


@dataclass(frozen=True, slots=True)
class ScrapeStatus:
    """An up/down change of one engine's scrape, emitted by the scrape source on its own queue
    (``source``) before the body it concerns; ``error`` says why it is down."""

    source: str
    engine: str
    up: bool
    at: float
    error: str = ""
    ack: Ack | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class LineBatch:
    """Lines one read of a source found together, handed on as one record: the bus gives them
    to the dispatcher one by one, each with its own ``ack`` (a batch has none of its own)."""

    source: str
    lines: tuple[LineRecord, ...]
    ack: Ack | None = field(default=None, compare=False, repr=False)


Record = LineRecord | LineBatch | SampleBatch | Gap | ScrapeStatus
