"""Other kernel messages that matter on a GPU host: PCIe AER errors, OOM kills, hung tasks.

Formats follow the kernel's own print statements:
- PCIe AER (drivers/pci/pcie/aer.c, Documentation/PCI/pcieaer-howto.rst): a device-prefixed
  `AER: [Multiple ]<severity> error [message ]received[:| from] <id>` line, then
  `PCIe Bus Error: severity=<severity>, type=<layer>, [id=NNNN](<agent>)`, the
  `device [vvvv:dddd] error status/mask=<hex>/<hex>` line and one `[NN] <name>` line per error
  bit. Kernels before 6.8 say `Corrected` / `Uncorrected`, later ones `Correctable` /
  `Uncorrectable`; both are read.
- OOM kill (mm/oom_kill.c): `<reason>: Killed process PID (comm) total-vm:NkB, anon-rss:NkB,
  file-rss:NkB, shmem-rss:NkB, UID:N pgtables:NkB oom_score_adj:N`; older kernels print no
  reason, stop after file-rss or shmem-rss, and some (3.10) put `, UID N,` after the name.
- Hung task (kernel/hung_task.c): `INFO: task COMM:PID blocked for more than N seconds.`

All parsers take a message body (prefix already stripped, see `kernel.parse_kernel_line`), are
pure, and return None for anything else; none raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from inferwatch.parsers.kernel_precheck import MISC
from inferwatch.parsers.xid import normalize_pci_bus_id

AerSeverity = Literal["corrected", "uncorrected-nonfatal", "uncorrected-fatal"]
AerKind = Literal["received", "bus_error", "status", "error_bit", "no_recovery"]

_BDF = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_DEVICE = re.compile(rf"(?:^|\s)([\w.\-]+) ({_BDF}): ")
_SEVERITY = r"(?:Corrected|Correctable|Uncorrected|Uncorrectable)(?: \([\w-]+\))?"
_AER_RECEIVED = re.compile(
    rf"AER: (Multiple )?({_SEVERITY}) error (?:message )?received(?::| from) (\S+)"
)
_AER_BUS_ERROR = re.compile(
    rf"PCIe Bus Error: severity=({_SEVERITY}), type=([^,]+), (?:id=[0-9a-fA-F]+)?\(([^)]*)\)"
)
_AER_STATUS = re.compile(
    r"device \[([0-9a-fA-F]{4}:[0-9a-fA-F]{4})\] error status/mask=([0-9a-fA-F]+)/([0-9a-fA-F]+)"
)
_AER_BIT = re.compile(r"^(?:AER: )?\s*\[\s*(\d+)\] (.*?)\s*(\(First\))?\s*$")
# The device could not take part in recovery from the error (its driver has no AER callbacks,
# or recovery failed): pcie/pcieaer-howto.rst, "error_detected".
_AER_NO_RECOVERY = re.compile(
    r"AER: can't recover|has no AER-aware driver|AER: device recovery failed"
)
_OOM = re.compile(
    r"(?:((?:Memory cgroup out|Out) of memory(?: \([^)]*\))?): )?"
    r"Killed process (\d+) \((.*)\)(?:, UID (\d+),)? (?:total-vm|vsz):(\d+)kB, anon-rss:(\d+)kB,"
    r" file-rss:(\d+)kB(?:, shmem-rss:(\d+)kB)?(?:, UID:(\d+))?(?: pgtables:(\d+)kB)?"
    r"(?: oom_score_adj:(-?\d+))?"
)
_HUNG = re.compile(r"INFO: task (.+):(\d+) blocked for more than (\d+) seconds\.")
_MISC_PRECHECK = MISC  # one compiled alternation instead of a loop of `in` tests


@dataclass(frozen=True, slots=True)
class AerEvent:
    """One line of a PCIe AER report; `kind` says which of the report's lines it is."""

    kind: AerKind
    pci_bus_id: str | None
    driver: str | None
    severity: AerSeverity | None = None
    source_bus_id: str | None = None
    multiple: bool = False
    error_type: str | None = None
    agent: str | None = None
    bit: int | None = None
    first: bool = False
    status: int | None = None
    mask: int | None = None
    vendor_device: str | None = None
    event_type: ClassVar[str] = "aer"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "pci_bus_id": self.pci_bus_id,
            "driver": self.driver,
            "severity": self.severity,
            "source_bus_id": self.source_bus_id,
            "multiple": self.multiple,
            "error_type": self.error_type,
            "agent": self.agent,
            "bit": self.bit,
            "first": self.first,
            "status": self.status,
            "mask": self.mask,
            "vendor_device": self.vendor_device,
        }


@dataclass(frozen=True, slots=True)
class OomKill:
    """The kernel OOM killer killed a process; sizes in bytes (the kernel prints kB)."""

    pid: int
    name: str
    rss_bytes: int
    anon_rss_bytes: int
    file_rss_bytes: int
    shmem_rss_bytes: int | None = None
    total_vm_bytes: int | None = None
    uid: int | None = None
    pgtables_bytes: int | None = None
    oom_score_adj: int | None = None
    reason: str | None = None
    event_type: ClassVar[str] = "oom_kill"

    @property
    def cgroup(self) -> bool:
        """True when a memory cgroup's limit, not the whole machine, ran out."""
        return self.reason is not None and self.reason.startswith("Memory cgroup")

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "name": self.name,
            "rss_bytes": self.rss_bytes,
            "anon_rss_bytes": self.anon_rss_bytes,
            "file_rss_bytes": self.file_rss_bytes,
            "shmem_rss_bytes": self.shmem_rss_bytes,
            "total_vm_bytes": self.total_vm_bytes,
            "uid": self.uid,
            "pgtables_bytes": self.pgtables_bytes,
            "oom_score_adj": self.oom_score_adj,
            "reason": self.reason,
            "cgroup": self.cgroup,
        }


@dataclass(frozen=True, slots=True)
class HungTask:
    """A task sat in uninterruptible sleep longer than the hung-task timeout."""

    name: str
    pid: int
    seconds: int
    event_type: ClassVar[str] = "hung_task"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.pid, "seconds": self.seconds}


MiscRecord = AerEvent | OomKill | HungTask


def might_be_misc(text: str) -> bool:
    """Cheap pre-check: False means no parser in this module can match `text`."""
    return _MISC_PRECHECK.search(text) is not None


def parse_misc_message(message: str) -> MiscRecord | None:
    """Parse a message body as an AER line, an OOM kill or a hung-task report."""
    if "Killed process" in message:
        return parse_oom_kill(message)
    if "blocked for more than" in message:
        return parse_hung_task(message)
    return parse_aer(message)


def parse_aer(message: str) -> AerEvent | None:
    device = _DEVICE.search(message)
    if device is None:
        return None
    driver, bus = device[1], normalize_pci_bus_id(device[2])
    rest = message[device.end() :]
    match = _AER_RECEIVED.search(rest)
    if match:
        source = normalize_pci_bus_id(match[3])
        return AerEvent("received", bus, driver, _severity(match[2]), source, bool(match[1]))
    match = _AER_BUS_ERROR.search(rest)
    if match:
        return AerEvent(
            "bus_error", bus, driver, _severity(match[1]), error_type=match[2], agent=match[3]
        )
    match = _AER_STATUS.search(rest)
    if match:
        status, mask = int(match[2], 16), int(match[3], 16)
        return AerEvent("status", bus, driver, status=status, mask=mask, vendor_device=match[1])
    if _AER_NO_RECOVERY.search(rest):
        return AerEvent("no_recovery", bus, driver)
    match = _AER_BIT.match(rest)
    if match and match[2]:
        bit, name = int(match[1]), match[2]
        return AerEvent("error_bit", bus, driver, error_type=name, bit=bit, first=bool(match[3]))
    return None


def _severity(text: str) -> AerSeverity:
    lowered = text.lower()
    if lowered.startswith("correct"):
        return "corrected"
    return "uncorrected-nonfatal" if "non" in lowered else "uncorrected-fatal"


def parse_oom_kill(message: str) -> OomKill | None:
    match = _OOM.search(message)
    if match is None:
        return None
    reason, pid, name, old_uid, total_vm, anon, file, shmem, uid, pgtables, adj = match.groups()
    uid = uid or old_uid
    anon_bytes, file_bytes = int(anon) * 1024, int(file) * 1024
    shmem_bytes = int(shmem) * 1024 if shmem is not None else None
    return OomKill(
        pid=int(pid),
        name=name,
        rss_bytes=anon_bytes + file_bytes + (shmem_bytes or 0),
        anon_rss_bytes=anon_bytes,
        file_rss_bytes=file_bytes,
        shmem_rss_bytes=shmem_bytes,
        total_vm_bytes=int(total_vm) * 1024,
        uid=int(uid) if uid is not None else None,
        pgtables_bytes=int(pgtables) * 1024 if pgtables is not None else None,
        oom_score_adj=int(adj) if adj is not None else None,
        reason=reason,
    )


def parse_hung_task(message: str) -> HungTask | None:
    match = _HUNG.search(message)
    if match is None:
        return None
    return HungTask(name=match[1], pid=int(match[2]), seconds=int(match[3]))
