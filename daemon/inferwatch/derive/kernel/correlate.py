"""The multi-GPU MMU-fault correlator: the same fault on several GPUs at once is a software bug.

reference/xid.md section 9.4: when two or more GPUs log Xid 31 within a short window (default
2 s) with the same fault (engine, GPC or both absent, client, fault type, access type), every rank
ran into the same bug. Two sightings on different GPUs are the same fault when, beyond that,
- **address**: the low 32 bits of the address are equal (the high bits differ between
  processes): every rank executed the same deterministic out-of-bounds access. Host A
  (reference/host.md) saw exactly this on both of its GPUs; or
- **process**: the same process (equal pid, or equal process name) faulted on each GPU: one
  program hitting its bug on every GPU it drives (openmm#4393: one pid, three GPUs, the same
  second, three different addresses). Each GPU maps its own buffers, so the addresses differ;
  what they share is the program and the kind of access, which no single card's defect explains.
Either way it is a bug in the engine or a kernel it runs, not hardware.

Behaviour:
- the incident is created when the second distinct GPU's matching fault arrives, once;
- a further GPU (or a repeat on a member GPU) within ``window`` of the incident's first fault
  that matches one of its members joins that incident instead of creating another;
- anything else (GPC, client, types, time, or another address from another process) never
  matches, and a fault on one GPU alone is no incident however often it repeats.

Ordering assumption: records may arrive out of order by at most ``max_skew`` seconds relative to
the newest time seen (two kernel sources, or files merged by replay). Matching compares absolute
time differences, so order inside that bound does not matter; state older than
``window + max_skew`` behind the newest time is dropped, which keeps memory bounded. A record
later than that still yields its own events, it only cannot be correlated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from inferwatch.parsers.xid import MmuFault

FaultKind = tuple[str, int | None, str, str, str]  # engine, GPC, client, fault type, access type
Match = Literal["address", "process"]
T = TypeVar("T")

DEFAULT_WINDOW = 2.0
MAX_PENDING_PER_SIGNATURE = 256
MAX_GROUP_MEMBERS = 64


@dataclass(frozen=True, slots=True)
class MmuSighting:
    """One Xid 31 with MMU detail, on one GPU, from one kernel record (``key``)."""

    key: str
    source: str
    line: int
    at: float
    pci_bus_id: str
    fault: MmuFault
    pid: int | None = None
    name: str | None = None
    alertable: bool = True

    @property
    def kind(self) -> FaultKind:
        """What every member of an incident shares, whichever way they matched."""
        f = self.fault
        return (f.engine, f.gpc, f.client, f.fault_type, f.access_type)


def match(a: MmuSighting, b: MmuSighting) -> Match | None:
    """How two sightings of the same fault kind are the same fault (None: they are not)."""
    if a.kind != b.kind:
        return None
    if a.fault.addr_lo == b.fault.addr_lo:
        return "address"
    if (a.pid is not None and a.pid == b.pid) or (a.name is not None and a.name == b.name):
        return "process"
    return None


@dataclass(frozen=True, slots=True)
class AllRanksIncident:
    """A ``software-oob-all-ranks`` incident, as known when it was created."""

    key: str
    members: tuple[MmuSighting, ...]  # by time, earliest first

    @property
    def root(self) -> MmuSighting:
        return self.members[0]

    @property
    def match(self) -> Match:
        """``address`` when every member faulted at the same low address, else ``process``."""
        lows = {m.fault.addr_lo for m in self.members}
        return "address" if len(lows) == 1 else "process"

    @property
    def at(self) -> float:
        return self.root.at

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(sorted({m.pci_bus_id for m in self.members}))

    @property
    def alertable(self) -> bool:
        return any(m.alertable for m in self.members)


@dataclass(frozen=True, slots=True)
class Correlation:
    """What one sighting did: created an incident, joined one, or only waits for a partner."""

    incident_key: str | None = None
    created: AllRanksIncident | None = None
    new_gpu: bool = False  # True when it joined an existing incident from a GPU not yet in it


@dataclass(slots=True)
class _Group:
    key: str
    first_at: float
    members: list[MmuSighting] = field(default_factory=list)

    @property
    def gpus(self) -> set[str]:
        return {m.pci_bus_id for m in self.members}


class MmuCorrelator:
    """Matches Xid 31 sightings across GPUs; pure, driven only by the records' own times.

    State is kept per fault kind (the part every match shares), so a sighting is only ever
    compared with sightings that could match it."""

    __slots__ = ("_groups", "_max_pending", "_newest", "_pending", "max_skew", "window")

    def __init__(
        self,
        window: float = DEFAULT_WINDOW,
        max_skew: float = DEFAULT_WINDOW,
        max_pending: int = MAX_PENDING_PER_SIGNATURE,
    ) -> None:
        self.window = window
        self.max_skew = max_skew
        self._max_pending = max_pending
        self._pending: dict[FaultKind, list[MmuSighting]] = {}
        self._groups: dict[FaultKind, list[_Group]] = {}
        self._newest = float("-inf")

    @property
    def state_size(self) -> int:
        """Sightings and incidents held (bounded by time and by ``max_pending``)."""
        return sum(map(len, self._pending.values())) + sum(map(len, self._groups.values()))

    def observe(self, sighting: MmuSighting) -> Correlation:
        self.expire(sighting.at)
        kind = sighting.kind
        group = self._open_group(sighting)
        if group is not None:
            new_gpu = sighting.pci_bus_id not in group.gpus
            if len(group.members) < MAX_GROUP_MEMBERS:
                group.members.append(sighting)
            return Correlation(incident_key=group.key, new_gpu=new_gpu)
        pending = self._pending.setdefault(kind, [])
        near = [p for p in pending if abs(p.at - sighting.at) <= self.window and match(p, sighting)]
        if not any(p.pci_bus_id != sighting.pci_bus_id for p in near):
            pending.append(sighting)
            if len(pending) > self._max_pending:
                del pending[0]
            return Correlation()
        members = tuple(sorted([*near, sighting], key=lambda m: (m.at, m.key)))
        incident = AllRanksIncident(f"{members[0].key}#all-ranks", members)
        taken = {id(p) for p in near}
        remaining = [p for p in pending if id(p) not in taken]
        if remaining:
            self._pending[kind] = remaining
        else:
            del self._pending[kind]
        group = _Group(incident.key, incident.at, list(members))
        self._groups.setdefault(kind, []).append(group)
        return Correlation(incident_key=incident.key, created=incident, new_gpu=True)

    def expire(self, at: float) -> None:
        """Advance the newest time seen to ``at`` (never backwards) and drop what is too old."""
        if at <= self._newest:
            return
        self._newest = at
        horizon = at - self.window - self.max_skew
        _prune(self._pending, lambda sighting: sighting.at >= horizon)
        _prune(self._groups, lambda group: group.first_at >= horizon)

    def _open_group(self, sighting: MmuSighting) -> _Group | None:
        """The incident this sighting belongs to: near its first fault, matching a member."""
        at = sighting.at
        groups = [
            g
            for g in self._groups.get(sighting.kind, ())
            if abs(g.first_at - at) <= self.window and any(match(m, sighting) for m in g.members)
        ]
        return min(groups, key=lambda g: abs(g.first_at - at)) if groups else None


def _prune(table: dict[FaultKind, list[T]], keep: Callable[[T], bool]) -> None:
    for kind in list(table):
        kept = [entry for entry in table[kind] if keep(entry)]
        if kept:
            table[kind] = kept
        else:
            del table[kind]
