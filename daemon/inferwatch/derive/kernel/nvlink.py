"""NVLink incidents: one incident for an NVLink fault and the channel teardowns it causes.

reference/xid.md sections 4, 8 and 9.1: the NVLink Xids (74; 144-150 on NVLink5) report a fault
of a link or of the fabric, and newer drivers then log an Xid 45 on every GPU whose channels they
tore down, naming the root: ``caused by previous Xid 149``. Three and four GPUs logging such 45s
in the same second after one NVLink5 fault is a real capture (open-gpu-kernel-modules#1150), and
there the root lines themselves are missing from the log the user had. So the evidence of one
NVLink incident is any of:
- an NVLink Xid line (its own code is the root cause);
- an Xid 45 whose text names an NVLink Xid as its cause;
- an Xid 45 that follows an NVLink Xid on the same GPU (the caller says which root it follows).

Evidence from any GPU joins the open incident while it keeps arriving within ``window`` of the
previous piece (a fabric fault hits several GPUs, and their teardowns trail the root by
seconds); after that a new incident starts. The pipeline counts each (GPU, root Xid) once per
incident, at once, for paging (``inferwatch_gpu_nvlink_faults_total``); the incident itself, with
every GPU it reached, is decided once it has settled (``window + max_skew`` past its last
evidence) and becomes one ``fault_incident`` event classified ``nvlink``.

Pure and bounded: driven only by the records' times; members kept per incident are capped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

NVLINK_ROOT_CODES: Final = frozenset({74, *range(144, 151)})
TEARDOWN_XID: Final = 45
DEFAULT_WINDOW: Final = 10.0
MAX_MEMBERS: Final = 256


@dataclass(frozen=True, slots=True)
class NvlinkEvidence:
    """One kernel record that shows an NVLink fault: a root line or a teardown it caused."""

    key: str
    source: str
    line: int
    at: float
    pci_bus_id: str | None
    xid: int  # the line's own code (45 for a teardown)
    root_xid: int  # the NVLink Xid behind it (equal to ``xid`` for a root line)
    severity: str
    pid: int | None = None
    name: str | None = None
    link: int | None = None
    alertable: bool = True


@dataclass(slots=True)
class NvlinkIncident:
    """An NVLink incident: every GPU it reached, and the root-cause Xids named."""

    key: str
    first_at: float
    last_at: float
    members: list[NvlinkEvidence] = field(default_factory=list)
    reached: set[tuple[str | None, int]] = field(default_factory=set)  # (GPU, root Xid)
    alertable: bool = False

    @property
    def root(self) -> NvlinkEvidence:
        return self.members[0]

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(sorted({bus for bus, _ in self.reached if bus is not None}))

    @property
    def root_xids(self) -> tuple[int, ...]:
        return tuple(sorted({xid for _, xid in self.reached}))

    @property
    def severity(self) -> str:
        """Critical when a line says so or the driver tore channels down (work was lost)."""
        lost = any(m.severity == "critical" or m.xid == TEARDOWN_XID for m in self.members)
        return "critical" if lost else "warning"


@dataclass(frozen=True, slots=True)
class NvlinkPlacement:
    """Where one piece of evidence landed; ``new_reach``: its (GPU, root Xid) is new here."""

    incident_key: str
    new_reach: bool


class NvlinkIncidents:
    __slots__ = ("_open", "max_skew", "window")

    def __init__(self, window: float = DEFAULT_WINDOW, max_skew: float = 2.0) -> None:
        self.window = window
        self.max_skew = max_skew
        self._open: list[NvlinkIncident] = []

    @property
    def state_size(self) -> int:
        return sum(len(i.members) for i in self._open)

    def observe(self, evidence: NvlinkEvidence) -> NvlinkPlacement:
        at = evidence.at
        incident = next(
            (i for i in self._open if i.first_at - self.max_skew <= at <= i.last_at + self.window),
            None,
        )
        if incident is None:
            incident = NvlinkIncident(f"{evidence.key}#nvlink", at, at)
            self._open.append(incident)
        if len(incident.members) < MAX_MEMBERS:
            incident.members.append(evidence)
            incident.members.sort(key=lambda m: m.at)
        incident.first_at = min(incident.first_at, at)
        incident.last_at = max(incident.last_at, at)
        incident.alertable = incident.alertable or evidence.alertable
        reach = (evidence.pci_bus_id, evidence.root_xid)
        new_reach = reach not in incident.reached
        incident.reached.add(reach)
        return NvlinkPlacement(incident.key, new_reach)

    def close(self, newest: float) -> list[NvlinkIncident]:
        """The incidents that can no longer grow, given the newest record time seen."""
        horizon = newest - self.window - self.max_skew
        settled = [i for i in self._open if i.last_at < horizon]
        if settled:
            self._open = [i for i in self._open if i.last_at >= horizon]
        return settled

    def close_all(self) -> list[NvlinkIncident]:
        """End of input (replay): every open incident is decided."""
        settled, self._open = self._open, []
        return settled


def nvlink_root(xid: int, caused_by: int | None, follows: int | None) -> int | None:
    """The NVLink Xid a line shows, or None: its own code, or for a teardown (45) the cause its
    text names or else the Xid it follows on its GPU."""
    if xid in NVLINK_ROOT_CODES:
        return xid
    if xid != TEARDOWN_XID:
        return None
    cause = caused_by if caused_by is not None else follows  # the driver's own word wins
    return cause if cause in NVLINK_ROOT_CODES else None
