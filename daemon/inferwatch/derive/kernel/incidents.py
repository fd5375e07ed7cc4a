"""Single-GPU fault incidents, and the Xids that follow them (reference/xid.md 9.1, 9.2, 9.5, 9.9).

A hardware-, driver-, NVLink- or unknown-class Xid on one GPU (79, 48, 64, 140, 62, 95, 119, ...)
opens an incident classified by the catalog category of its code. Further Xids on that GPU
while it is open join it instead of opening another when they are the driver repeating itself
(the same code: 48 once per CUDA channel, 119 every 6 s), a detail of it (171/172 after a 48),
or another code of the same category that is not more severe (63 after 48). A more severe or
different kind of fault (79 after a 32) opens its own incident, so nothing serious hides inside
a milder one. Informational follow-ons (45, 154) belong to the latest incident on the GPU. An
incident stays open while Xids keep arriving on its GPU within ``follow_window`` of the last.

Xid 45 is a follow-on when another Xid preceded it on the same GPU within ``follow_window``
(or its text names the cause): it is linked to that root and never alerted on by itself.
Application-class Xids (13, 31, 43, 68) open no single-GPU incident; Xid 31 is the correlator's,
and the NVLink Xids (74, 144-150) are ``nvlink``'s, which spans GPUs.
Several GPUs opening an incident with the same code within ``shared_window`` point to a shared
cause (power, riser, PCIe switch: 9.6); each incident names the GPUs that went before it (the
first one's event is already out when the second arrives).

Ordering: a follow-on that arrives before its root (records out of order) is treated as solo.
State is dropped ``follow_window + max_skew`` after its last use.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from inferwatch.parsers.xid_catalog import Category

NO_INCIDENT: frozenset[Category] = frozenset({"application", "informational"})
FOLLOW_ON_CODES = frozenset({45, 154})
DETAIL_CODES = frozenset({171, 172})  # the memory type of an uncorrectable error (Xid 48)
_RANK = {"info": 0, "warning": 1, "critical": 2}
MAX_RECENT = 64


@dataclass(slots=True)
class OpenIncident:
    key: str
    pci_bus_id: str | None
    xid: int
    classification: str
    severity: str
    first_at: float
    last_at: float
    members: int = 1

    def absorbs(self, xid: int, category: str, severity: str) -> bool:
        """Whether an Xid on this GPU while it is open is part of this incident."""
        if xid == self.xid or xid in DETAIL_CODES:
            return True
        milder = _RANK.get(severity, 1) <= _RANK.get(self.severity, 1)
        return category == self.classification and milder


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one Xid landed."""

    incident: OpenIncident | None = None  # the incident it belongs to, new or existing
    created: bool = False  # True when this Xid opened ``incident``
    follow_on: bool = False
    follows_key: str | None = None  # event key of the earlier Xid it follows
    follows_xid: int | None = None
    shared_with: tuple[str, ...] = ()  # other GPUs that opened an incident with this code


class GpuIncidents:
    __slots__ = ("_newest", "_open", "_recent", "follow_window", "max_skew", "shared_window")

    def __init__(
        self, follow_window: float = 10.0, shared_window: float = 2.0, max_skew: float = 2.0
    ) -> None:
        self.follow_window = follow_window
        self.shared_window = shared_window
        self.max_skew = max_skew
        self._open: list[OpenIncident] = []
        self._recent: dict[str, deque[tuple[float, str, int]]] = {}
        self._newest = float("-inf")

    @property
    def state_size(self) -> int:
        return len(self._open) + sum(map(len, self._recent.values()))

    def place(
        self,
        key: str,
        pci_bus_id: str | None,
        xid: int,
        category: Category,
        at: float,
        *,
        severity: str = "warning",
        caused_by: int | None = None,
        opens_incident: bool = True,
    ) -> Placement:
        """Place one Xid. ``opens_incident=False``: another correlator owns its incident (the
        NVLink codes); it is still remembered as the root that later follow-ons follow."""
        self._expire(at)
        if xid in FOLLOW_ON_CODES or category == "informational":
            current = self._current(pci_bus_id, at)
            root = self._root_before(pci_bus_id, at)
            self._extend(current, at)
            return Placement(
                incident=current,
                follow_on=root is not None or current is not None or caused_by is not None,
                follows_key=root[1] if root else None,
                follows_xid=root[2] if root else caused_by,
            )
        self._remember(pci_bus_id, at, key, xid)
        if category in NO_INCIDENT or not opens_incident:
            return Placement()
        current = self._current(pci_bus_id, at, lambda i: i.absorbs(xid, category, severity))
        if current is not None:
            self._extend(current, at)
            return Placement(incident=current)
        shared = self._shared(pci_bus_id, xid, at)
        incident = OpenIncident(f"{key}#incident", pci_bus_id, xid, category, severity, at, at)
        self._open.append(incident)
        return Placement(incident=incident, created=True, shared_with=shared)

    def _shared(self, pci_bus_id: str | None, xid: int, at: float) -> tuple[str, ...]:
        """Other GPUs that opened an incident with the same code at about the same time."""
        others: set[str] = set()
        for other in self._open:
            bus = other.pci_bus_id
            near = abs(other.first_at - at) <= self.shared_window
            if bus is not None and bus != pci_bus_id and other.xid == xid and near:
                others.add(bus)
        return tuple(sorted(others))

    def _current(
        self,
        pci_bus_id: str | None,
        at: float,
        accepts: Callable[[OpenIncident], bool] = lambda _: True,
    ) -> OpenIncident | None:
        """The latest incident open on this GPU at ``at`` that ``accepts`` it (none without a bus
        id: an unattributed fault cannot be placed on a GPU)."""
        if pci_bus_id is None:
            return None
        found = [
            i
            for i in self._open
            if i.pci_bus_id == pci_bus_id
            and i.first_at - self.max_skew <= at <= i.last_at + self.follow_window
            and accepts(i)
        ]
        return max(found, key=lambda i: i.last_at) if found else None

    def _root_before(self, pci_bus_id: str | None, at: float) -> tuple[float, str, int] | None:
        if pci_bus_id is None:
            return None
        earlier = [
            r for r in self._recent.get(pci_bus_id, ()) if 0 <= at - r[0] <= self.follow_window
        ]
        return max(earlier, key=lambda r: r[0]) if earlier else None

    def _remember(self, pci_bus_id: str | None, at: float, key: str, xid: int) -> None:
        if pci_bus_id is not None:
            self._recent.setdefault(pci_bus_id, deque(maxlen=MAX_RECENT)).append((at, key, xid))

    def _extend(self, incident: OpenIncident | None, at: float) -> None:
        if incident is not None:
            incident.members += 1
            incident.last_at = max(incident.last_at, at)

    def _expire(self, at: float) -> None:
        if at <= self._newest:
            return
        self._newest = at
        horizon = at - self.follow_window - self.max_skew
        self._open = [i for i in self._open if i.last_at >= horizon]
        for bus in list(self._recent):
            recent = self._recent[bus]
            while recent and recent[0][0] < horizon:
                recent.popleft()
            if not recent:
                del self._recent[bus]
