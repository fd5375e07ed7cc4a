"""GPU faults logged without an Xid token: which GPU they belong to, and whether they count.

A driver-fault line (parsers/nvrm_faults.py) names its GPU by bus id, by the driver's own GPU
number only (`NVRM: GPU6 ...`), or not at all. A number becomes a bus id only through a pairing
the log itself gave (an Xid line that says `... from GPU4 GSP!`, learnt by :meth:`saw_xid`);
otherwise the fault stays attributed to the number (`nvrm_gpu`), never to a guessed bus.

A fault that follows, within ``window`` seconds, an Xid the rules already page for (hardware,
driver, NVLink, thermal classes) on the same GPU is part of that Xid's report (a GSP timeout
prints its heartbeat lines and core dump right after its Xid 119): it is an event, but it is not
counted, so the episode pages once. An unattributed fault is covered by such an Xid on any GPU.
State is bounded: at most ``MAX_GPUS`` numbers and bus ids are remembered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from inferwatch.parsers.nvrm_faults import COUNTED, nvrm_gpu_of_xid
from inferwatch.parsers.xid import NvrmNote, XidEvent

PAGED_CATEGORIES = frozenset({"hardware-memory", "hardware-bus", "hardware-other", "driver",
                              "nvlink", "thermal-power"})  # fmt: skip
MAX_GPUS = 256
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Attributed:
    """One driver-fault line, placed: its GPU, and whether it counts toward GpuDriverFault."""

    kind: str
    pci_bus_id: str | None
    nvrm_gpu: int | None
    counted: bool
    covered_by_xid: int | None  # the Xid whose report this line is part of


class DriverFaults:
    __slots__ = ("_any_xid", "_buses", "_xids", "window")

    def __init__(self, window: float = 10.0) -> None:
        self.window = window
        self._buses: dict[int, str] = {}  # driver GPU number -> bus id, as the log paired them
        self._xids: dict[str, tuple[float, int]] = {}  # bus id -> last paged Xid (time, code)
        self._any_xid: tuple[float, int] | None = None

    @property
    def state_size(self) -> int:
        return len(self._buses) + len(self._xids)

    def saw_xid(self, xid: XidEvent, category: str, at: float) -> None:
        """Learn a number-to-bus pairing from an Xid's text, and remember paged Xids."""
        bus = xid.pci_bus_id
        number = nvrm_gpu_of_xid(xid.message)
        if bus is not None and number is not None:
            _remember(self._buses, number, bus)
        if category in PAGED_CATEGORIES or xid.xid == 79:
            if bus is not None:
                _remember(self._xids, bus, (at, xid.xid))
            self._any_xid = (at, xid.xid)

    def place(self, note: NvrmNote, at: float) -> Attributed | None:
        """The fault a note reports, attributed; None when it reports none."""
        if note.fault is None:
            return None
        bus = note.pci_bus_id
        if bus is None and note.nvrm_gpu is not None:
            bus = self._buses.get(note.nvrm_gpu)
        seen = self._xids.get(bus) if bus is not None else self._any_xid
        covered = seen[1] if seen is not None and 0 <= at - seen[0] <= self.window else None
        counted = note.fault in COUNTED and covered is None
        return Attributed(note.fault, bus, note.nvrm_gpu, counted, covered)


def _remember(table: dict[K, V], key: K, value: V) -> None:
    table.pop(key, None)
    table[key] = value
    if len(table) > MAX_GPUS:
        del table[next(iter(table))]
