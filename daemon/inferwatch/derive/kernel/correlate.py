"""The multi-GPU MMU-fault correlator: the same fault on several GPUs at once is a software bug.

reference/xid.md section 9.4: when two or more GPUs log Xid 31 within a short window (default
2 s) with the same signature (engine, GPC or both absent, client, fault type, access type and
the low 32 bits of the address; the high bits differ between processes), every rank executed the
same deterministic out-of-bounds access. That is a bug in the engine or a kernel it runs, not
hardware. Host A (reference/host.md) saw exactly this on both of its GPUs.

Behaviour:
- the incident is created when the second distinct GPU's matching fault arrives, once;
- a further GPU (or a repeat on a member GPU) within ``window`` of the incident's first fault
  joins that incident instead of creating another;
- anything else that differs (GPC, client, types, ``addr_lo``, or time) never matches.

Ordering assumption: records may arrive out of order by at most ``max_skew`` seconds relative to
the newest time seen (two kernel sources, or files merged by replay). Matching compares absolute
time differences, so order inside that bound does not matter; state older than
``window + max_skew`` behind the newest time is dropped, which keeps memory bounded. A record
later than that still yields its own events, it only cannot be correlated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from inferwatch.parsers.xid import MmuFault

Signature = tuple[str, int | None, str, str, str, int]
T = TypeVar("T")

DEFAULT_WINDOW = 2.0
MAX_PENDING_PER_SIGNATURE = 256


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
    def signature(self) -> Signature:
        return self.fault.signature


@dataclass(frozen=True, slots=True)
class AllRanksIncident:
    """A ``software-oob-all-ranks`` incident, as known when it was created."""

    key: str
    signature: Signature
    members: tuple[MmuSighting, ...]  # by time, earliest first

    @property
    def root(self) -> MmuSighting:
        return self.members[0]

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
    gpus: set[str] = field(default_factory=set)


class MmuCorrelator:
    """Matches Xid 31 sightings across GPUs; pure, driven only by the records' own times."""

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
        self._pending: dict[Signature, list[MmuSighting]] = {}
        self._groups: dict[Signature, list[_Group]] = {}
        self._newest = float("-inf")

    @property
    def state_size(self) -> int:
        """Sightings and incidents held (bounded by time and by ``max_pending``)."""
        return sum(map(len, self._pending.values())) + sum(map(len, self._groups.values()))

    def observe(self, sighting: MmuSighting) -> Correlation:
        self.expire(sighting.at)
        signature = sighting.signature
        group = self._open_group(signature, sighting.at)
        if group is not None:
            new_gpu = sighting.pci_bus_id not in group.gpus
            group.gpus.add(sighting.pci_bus_id)
            return Correlation(incident_key=group.key, new_gpu=new_gpu)
        pending = self._pending.setdefault(signature, [])
        near = [p for p in pending if abs(p.at - sighting.at) <= self.window]
        if not any(p.pci_bus_id != sighting.pci_bus_id for p in near):
            pending.append(sighting)
            if len(pending) > self._max_pending:
                del pending[0]
            return Correlation()
        members = tuple(sorted([*near, sighting], key=lambda m: (m.at, m.key)))
        incident = AllRanksIncident(f"{members[0].key}#all-ranks", signature, members)
        taken = {id(p) for p in near}
        remaining = [p for p in pending if id(p) not in taken]
        if remaining:
            self._pending[signature] = remaining
        else:
            del self._pending[signature]
        group = _Group(incident.key, incident.at, {m.pci_bus_id for m in members})
        self._groups.setdefault(signature, []).append(group)
        return Correlation(incident_key=incident.key, created=incident, new_gpu=True)

    def expire(self, at: float) -> None:
        """Advance the newest time seen to ``at`` (never backwards) and drop what is too old."""
        if at <= self._newest:
            return
        self._newest = at
        horizon = at - self.window - self.max_skew
        _prune(self._pending, lambda sighting: sighting.at >= horizon)
        _prune(self._groups, lambda group: group.first_at >= horizon)

    def _open_group(self, signature: Signature, at: float) -> _Group | None:
        groups = [g for g in self._groups.get(signature, ()) if abs(g.first_at - at) <= self.window]
        return min(groups, key=lambda g: abs(g.first_at - at)) if groups else None


def _prune(table: dict[Signature, list[T]], keep: Callable[[T], bool]) -> None:
    for signature in list(table):
        kept = [entry for entry in table[signature] if keep(entry)]
        if kept:
            table[signature] = kept
        else:
            del table[signature]
