"""NVIDIA GPU records in kernel-log messages: Xid, SXid, fall-offs, bus-id-to-UUID mappings.

The formats are described in reference/xid.md. A message body (what `kernel.parse_kernel_line`
leaves after the prefix, or a kmsg/journald message) yields at most one record:

- `XidEvent` for `NVRM: Xid (<attribution>): <code>, ...` (the anchor may sit anywhere in the
  text), and for "fallen off the bus" messages without an Xid token (code 79, `implied=True`);
- `SXidEvent` for NVSwitch `SXid (...)` lines, which never count as Xids;
- `GpuMapping` for `NVRM: GPU at <bus id>: GPU-<uuid>`;
- `NvrmNote` for any other NVRM line, with the bus id it names, if any, the driver's GPU number
  (`NVRM: GPU6 ...`) and the kind of fault it reports without an Xid (nvrm_faults.py).

Bus ids are normalised to lowercase `dddd:bb:dd.f` (DESIGN.md section 4). Every function is pure
and total: any string gives a record or None, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from inferwatch.parsers.nvrm_faults import driver_fault_kind, nvrm_gpu

_XID = re.compile(r"NVRM: ?Xid ?\(([^)\n]*)\)\s*:\s*(\d+)\b,?\s*(.*)", re.DOTALL)
_SXID = re.compile(
    r"(?:(nvidia-nvswitch\d*):\s*)?SXid ?\(([^)\n]*)\)\s*:\s*(\d+)\b,?\s*(.*)", re.DOTALL
)
_BUS = re.compile(
    r"(?<![0-9a-fA-F:.])(?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})"
    r"(?:\.([0-7]))?(?![0-9a-fA-F]|:[0-9a-fA-F])"
)
_MIG_GI = re.compile(r"GPU-I:\s*(\d+)")
_MIG_CI = re.compile(r"GPU-CI:\s*(\d+)")
_PID = re.compile(r"pid=('?<unknown>'?|\d+)?[^,]*(?:,\s*|$)")
_NAME = re.compile(r"name=(.*?)(?:, |,?\s*$)", re.DOTALL)
_MMU = re.compile(
    r"MMU Fault: ENGINE (\S+) (?:GPC ?(\d+) )?(\S+) faulted @ 0x([0-9a-fA-F]+)(?:_([0-9a-fA-F]+))?"
    r"\.? Fault is of type (\w+) (\w+)"
)
_RECOVERY = re.compile(
    r"recovery action changed from 0x([0-9a-fA-F]+)(?: \(([^)]*)\))?"
    r" to 0x([0-9a-fA-F]+)(?: \(([^)]*)\))?"
)
_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
_NVLINK5 = re.compile(r"(\S+) (Fatal|Nonfatal|NonFatal|Non-fatal) XC\d+ i\d+ Link (-?\d+)")
_LINK = re.compile(r"\b[Ll]ink (-?\d+)")
_MAPPING = re.compile(r"NVRM: GPU at (?:PCI:)?([0-9a-fA-F:.]+): (GPU-[0-9a-fA-F-]{8,})")
_JOIN = re.compile(r"\s*\n\s*(?:NVRM:\s*)?")
_DRIVER_VERSION = re.compile(r"Kernel Module\s+(\d+(?:\.\d+)+)")
_UNKNOWN_NAMES = frozenset({"", "<unknown>", "'<unknown>'"})
_NOTE_KINDS = (
    ("loading NVIDIA", "driver_loaded"),
    ("RmInitAdapter failed", "init_failed"),
    ("rm_init_adapter failed", "init_failed"),
    ("Rate limiting GSP", "gsp_rate_limited"),
    ("probe routine failed", "probe_failed"),
    ("serial number", "serial_number"),
)


@dataclass(frozen=True, slots=True)
class MmuFault:
    """The MMU-fault detail of an Xid 31 (reference/xid.md section 7)."""

    engine: str
    gpc: int | None
    client: str
    addr_hi: int
    addr_lo: int
    fault_type: str
    access_type: str

    @property
    def address(self) -> int:
        return (self.addr_hi << 32) | self.addr_lo

    @property
    def signature(self) -> tuple[str, int | None, str, str, str, int]:
        """What must match across GPUs for the same deterministic fault (xid.md 9.4)."""
        return (self.engine, self.gpc, self.client, self.fault_type, self.access_type, self.addr_lo)

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """Xid 154: NVML recovery-action values before and after, with the names printed."""

    from_value: int
    to_value: int
    from_name: str | None = None
    to_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.from_value,
            "to": self.to_value,
            "from_name": self.from_name,
            "to_name": self.to_name,
        }


@dataclass(frozen=True, slots=True)
class XidEvent:
    """One Xid, explicit or implied by a "fallen off the bus" message."""

    kind: ClassVar[str] = "xid"
    xid: int
    pci_bus_id: str | None
    message: str
    pid: int | None = None
    name: str | None = None
    mmu: MmuFault | None = None
    implied: bool = False
    caused_by_xid: int | None = None
    recovery_action: RecoveryAction | None = None
    gpu_instance: int | None = None
    compute_instance: int | None = None
    unit: str | None = None
    fatal: bool | None = None
    link: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = _fields(self)
        data["mmu"] = self.mmu.to_dict() if self.mmu else None
        data["recovery_action"] = self.recovery_action.to_dict() if self.recovery_action else None
        return data


@dataclass(frozen=True, slots=True)
class SXidEvent:
    """One NVSwitch SXid line (several lines with the same code make one SXid event)."""

    kind: ClassVar[str] = "sxid"
    sxid: int
    pci_bus_id: str | None
    message: str
    switch: str | None = None
    fatal: bool | None = None
    link: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class GpuMapping:
    """`NVRM: GPU at <bus id>: GPU-<uuid>`: which UUID sits at which bus id."""

    kind: ClassVar[str] = "gpu_mapping"
    pci_bus_id: str
    uuid: str

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


@dataclass(frozen=True, slots=True)
class NvrmNote:
    """Any other NVRM line; `note` names the ones worth an event (`other` for the rest)."""

    kind: ClassVar[str] = "nvrm"
    pci_bus_id: str | None
    message: str
    note: str = "other"
    driver_version: str | None = None
    fault: str | None = None
    nvrm_gpu: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _fields(self)


GpuRecord = XidEvent | SXidEvent | GpuMapping | NvrmNote


def might_be_gpu_record(text: str) -> bool:
    """Cheap pre-check: False means no parser in this module can match `text`."""
    return "NVRM" in text or "SXid" in text


def normalize_pci_bus_id(text: str) -> str | None:
    """`PCI:0000:3B:00`, `00000000:3b:00.0`, ... to `0000:3b:00.0`; None if `text` has none."""
    match = _BUS.search(text)
    return _bus_id(match) if match else None


def _bus_id(match: re.Match[str]) -> str:
    domain, bus, device, function = match.groups()
    number = int(domain, 16)
    domain_text = f"{number:04x}" if number <= 0xFFFF else domain.lower().lstrip("0")
    return f"{domain_text}:{bus.lower()}:{device.lower()}.{function or '0'}"


def parse_gpu_message(message: str) -> GpuRecord | None:
    """Parse one kernel message body (may hold several lines of one record)."""
    if "SXid" in message:
        sxid = _parse_sxid(message)
        if sxid is not None:
            return sxid
    if "NVRM" not in message:
        return None
    match = _XID.search(message)
    if match:
        return _parse_xid(match)
    if "fallen off" in message:
        implied = _parse_fallen_off(message)
        if implied is not None:
            return implied
    mapping = _MAPPING.search(message)
    if mapping:
        bus = normalize_pci_bus_id(mapping[1])
        if bus is not None:
            return GpuMapping(pci_bus_id=bus, uuid=mapping[2])
    return _parse_note(message)


def _parse_xid(match: re.Match[str]) -> XidEvent:
    attribution, code, body = match.groups()
    xid = int(code)
    pid, name, rest = _split_process(body)
    gpu_instance = _MIG_GI.search(attribution)
    compute_instance = _MIG_CI.search(attribution)
    unit, fatal, link = _nvlink_detail(xid, rest)
    return XidEvent(
        xid=xid,
        pci_bus_id=normalize_pci_bus_id(attribution),
        message=rest,
        pid=pid,
        name=name,
        mmu=_parse_mmu(rest) if "MMU Fault" in rest else None,
        caused_by_xid=_int_group(_CAUSED_BY.search(rest)) if "caused by" in rest else None,
        recovery_action=_parse_recovery(rest) if "recovery action" in rest else None,
        gpu_instance=_int_group(gpu_instance),
        compute_instance=_int_group(compute_instance),
        unit=unit,
        fatal=fatal,
        link=link,
    )


def _split_process(body: str) -> tuple[int | None, str | None, str]:
    """Take the optional `pid=...,` and `name=...,` fields off the front of an Xid body."""
    pid: int | None = None
    name: str | None = None
    match = _PID.match(body)
    if match:
        pid = int(match[1]) if match[1] and match[1].isdigit() else None
        body = body[match.end() :]
    match = _NAME.match(body)
    if match:
        name = None if match[1] in _UNKNOWN_NAMES else match[1]
        body = body[match.end() :]
    return pid, name, body


def _parse_mmu(text: str) -> MmuFault | None:
    match = _MMU.search(text)
    if not match:
        return None
    engine, gpc, client, high, low, fault_type, access_type = match.groups()
    if low is None:
        address = int(high, 16)
        addr_hi, addr_lo = address >> 32, address & 0xFFFFFFFF
    else:
        addr_hi, addr_lo = int(high, 16), int(low, 16)
    return MmuFault(
        engine=engine,
        gpc=int(gpc) if gpc is not None else None,
        client=client,
        addr_hi=addr_hi,
        addr_lo=addr_lo,
        fault_type=fault_type,
        access_type=access_type,
    )


def _parse_recovery(text: str) -> RecoveryAction | None:
    match = _RECOVERY.search(text)
    if not match:
        return None
    return RecoveryAction(int(match[1], 16), int(match[3], 16), match[2], match[4])


def _nvlink_detail(xid: int, text: str) -> tuple[str | None, bool | None, int | None]:
    """Unit, Fatal/Nonfatal and link of NVLink Xids (74, 144-150); all None for others."""
    if 144 <= xid <= 150:
        match = _NVLINK5.search(text)
        if match:
            return match[1], match[2] == "Fatal", int(match[3])
    if xid == 74 or 144 <= xid <= 150:
        return None, None, _int_group(_LINK.search(text))
    return None, None, None


def _parse_fallen_off(message: str) -> XidEvent | None:
    text = _JOIN.sub(" ", message.strip())
    if "fallen off the bus" not in text:
        return None
    start = text.find("NVRM:")
    body = text[start + 5 :].strip() if start >= 0 else text
    return XidEvent(xid=79, pci_bus_id=normalize_pci_bus_id(body), message=body, implied=True)


def _parse_sxid(message: str) -> SXidEvent | None:
    match = _SXID.search(message)
    if not match:
        return None
    switch, attribution, code, rest = match.groups()
    words = rest.split(",", 1)[0].strip().lower()
    fatal = True if words == "fatal" else False if words in ("non-fatal", "nonfatal") else None
    return SXidEvent(
        sxid=int(code),
        pci_bus_id=normalize_pci_bus_id(attribution),
        message=rest,
        switch=switch,
        fatal=fatal,
        link=_int_group(_LINK.search(rest)),
    )


def _parse_note(message: str) -> NvrmNote:
    start = message.find("NVRM:")
    body = message[start + 5 :].strip() if start >= 0 else message
    note = next((kind for needle, kind in _NOTE_KINDS if needle in body), "other")
    version = _DRIVER_VERSION.search(body) if note == "driver_loaded" else None
    return NvrmNote(
        pci_bus_id=normalize_pci_bus_id(body),
        message=body,
        note=note,
        driver_version=version[1] if version else None,
        fault=driver_fault_kind(body),
        nvrm_gpu=nvrm_gpu(body),
    )


def _fields(record: Any) -> dict[str, Any]:
    """A record's dataclass fields as a dict (nested records are converted by the caller)."""
    return {item.name: getattr(record, item.name) for item in fields(record)}


def _int_group(match: re.Match[str] | None) -> int | None:
    return int(match[1]) if match else None
