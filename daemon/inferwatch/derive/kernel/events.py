"""Building the kernel pipeline's events: field names as in DESIGN.md section 4 and the corpus.

Kept apart from the pipeline's control flow so the shape of each event type is in one place:
``xid``, ``fault_incident`` (multi-GPU, NVLink and single-GPU), ``sxid``, ``gpu_mapping``,
``oom_kill``, ``aer``, ``hung_task``, ``gpu_driver_fault``. Every event's details carry
``alertable``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from inferwatch.derive.kernel import diagnosis
from inferwatch.derive.kernel.correlate import AllRanksIncident
from inferwatch.derive.kernel.driver_faults import Attributed
from inferwatch.derive.kernel.effects import KernelInput, event
from inferwatch.derive.kernel.incidents import OpenIncident, Placement
from inferwatch.derive.kernel.nvlink import NvlinkIncident
from inferwatch.event import Event
from inferwatch.parsers.xid import NvrmNote, XidEvent
from inferwatch.parsers.xid_catalog import XidInfo, lookup, recovery_action, severity_of

ALL_RANKS = "software-oob-all-ranks"


def xid_event(
    item: KernelInput,
    xid: XidEvent,
    info: XidInfo,
    *,
    uuid: str | None,
    placement: Placement,
    incident_key: str | None,
) -> Event:
    severity = xid_severity(xid)
    details: dict[str, Any] = xid.to_dict()
    if xid.recovery_action is not None:
        action = recovery_action(xid.recovery_action.to_value)
        details["recovery_action"] |= {
            "action": action.name,
            "todo": action.todo,
            "blocks_gpu": action.blocks_gpu,
        }
    details |= {
        "uuid": uuid,
        "category": info.category,
        "mnemonic": info.mnemonic,
        "severity": severity,
        "meaning": info.meaning,
        "action": info.action_text,
        "follow_on": placement.follow_on,
        "follows": placement.follows_key,
        "follows_xid": placement.follows_xid,
        "incident": incident_key,
    }
    labels = {
        "pci_bus_id": xid.pci_bus_id,
        "xid": str(xid.xid),
        "category": info.category,
        "severity": severity,
    }
    return event("xid", item, details, labels)


def xid_severity(xid: XidEvent) -> str:
    to_value = xid.recovery_action.to_value if xid.recovery_action else None
    return severity_of(xid.xid, fatal=xid.fatal, recovery_to=to_value)


def all_ranks_event(incident: AllRanksIncident, driver_version: str | None) -> Event:
    """The one ``software-oob-all-ranks`` incident; ``at`` is its first fault's time."""
    root = incident.root
    fault = root.fault
    details: dict[str, Any] = {
        "classification": ALL_RANKS,
        "gpus": list(incident.gpus),
        "xid": 31,
        "xids": [31 for _ in incident.members],
        "members": [m.key for m in incident.members],
        "severity": "critical",
        "diagnosis": diagnosis.all_ranks(incident, driver_version),
        "match": incident.match,
        "signature": {
            "engine": fault.engine,
            "gpc": fault.gpc,
            "client": fault.client,
            "fault_type": fault.fault_type,
            "access_type": fault.access_type,
            "addr_lo": fault.addr_lo if incident.match == "address" else None,
        },
        **_processes(incident.members),
        "driver_version": driver_version,
        "alertable": incident.alertable,
    }
    return _incident(ALL_RANKS, "critical", incident.at, root, incident.key, details)


def single_gpu_event(
    item: KernelInput,
    xid: XidEvent,
    info: XidInfo,
    incident: OpenIncident,
    *,
    shared_with: tuple[str, ...],
    uuid: str | None,
    driver_version: str | None,
) -> Event:
    """A hardware-/driver-/NVLink-class Xid on one GPU, classified by its catalog category."""
    severity = xid_severity(xid)
    details: dict[str, Any] = {
        "classification": incident.classification,
        "gpus": [xid.pci_bus_id] if xid.pci_bus_id else [],
        "xid": xid.xid,
        "xids": [xid.xid],
        "members": [item.key],
        "severity": severity,
        "mnemonic": info.mnemonic,
        "diagnosis": diagnosis.single_gpu(info, xid.pci_bus_id, shared_with, driver_version),
        "shared_with": list(shared_with),
        "pid": xid.pid,
        "name": xid.name,
        "uuid": uuid,
        "driver_version": driver_version,
        "alertable": item.alertable,
    }
    return Event(
        type="fault_incident",
        at=item.at,
        source=item.source,
        key=incident.key,
        line=item.line,
        labels={"classification": incident.classification, "severity": severity},
        details=details,
    )


def nvlink_event(incident: NvlinkIncident, driver_version: str | None) -> Event:
    """The one ``nvlink`` incident, once settled; ``at`` is its first evidence's time and
    ``xid`` the root-cause Xid that evidence names (``root_xids``: every one named)."""
    root = incident.root
    severity = incident.severity
    details: dict[str, Any] = {
        "classification": "nvlink",
        "gpus": list(incident.gpus),
        "xid": root.root_xid,
        "root_xids": list(incident.root_xids),
        "xids": [m.xid for m in incident.members],
        "members": [m.key for m in incident.members],
        "severity": severity,
        "mnemonic": lookup(root.root_xid).mnemonic,
        "diagnosis": diagnosis.nvlink(incident, driver_version),
        "links": sorted({m.link for m in incident.members if m.link is not None}),
        **_processes(incident.members),
        "driver_version": driver_version,
        "alertable": incident.alertable,
    }
    return _incident("nvlink", severity, incident.first_at, root, incident.key, details)


DRIVER_FAULT_MEANING = {
    "init_failed": "the driver could not initialise the GPU (RmInitAdapter failed)",
    "gsp_boot_failed": "the GSP firmware could not boot (detail of an initialisation failure)",
    "gsp_heartbeat_timeout": "the GSP firmware stopped answering its heartbeat",
    "gsp_rpc_timeout": "the GSP firmware did not answer a driver call (RPC timeout)",
    "gsp_timeout_report": "banner of a GSP timeout report; its Xid line follows",
    "gsp_core_dump": "the driver dumped the GSP core's state after a GSP failure",
    "memory_subsystem_error": "the GPU's memory subsystem did not respond (a GSP timeout cause)",
}
DRIVER_FAULT_ACTION = (
    "stop the GPU's processes and reset it (nvidia-smi -r), or reboot; if it repeats, update the "
    "driver and report it to NVIDIA with nvidia-bug-report.sh"
)


def driver_fault_event(item: KernelInput, note: NvrmNote, fault: Attributed) -> Event:
    """A GPU fault the driver logged without an Xid (``gpu_driver_fault``)."""
    details: dict[str, Any] = {
        "kind": fault.kind,
        "pci_bus_id": fault.pci_bus_id,
        "nvrm_gpu": fault.nvrm_gpu,
        "message": note.message,
        "counted": fault.counted,
        "covered_by_xid": fault.covered_by_xid,
        "severity": "critical" if fault.counted else "info",
        "meaning": DRIVER_FAULT_MEANING.get(fault.kind, fault.kind),
        "action": DRIVER_FAULT_ACTION,
    }
    labels = {"pci_bus_id": fault.pci_bus_id, "kind": fault.kind}
    return event("gpu_driver_fault", item, details, labels)


class _Member(Protocol):
    @property
    def pid(self) -> int | None: ...
    @property
    def name(self) -> str | None: ...


class _Root(Protocol):
    @property
    def source(self) -> str: ...
    @property
    def line(self) -> int: ...


def _processes(members: Iterable[_Member]) -> dict[str, list[Any]]:
    """The processes an incident's records name (``pids``, ``names``)."""
    members = list(members)
    return {
        "pids": sorted({m.pid for m in members if m.pid is not None}),
        "names": sorted({m.name for m in members if m.name}),
    }


def _incident(
    classification: str, severity: str, at: float, root: _Root, key: str, details: dict[str, Any]
) -> Event:
    """A ``fault_incident`` event, placed at its root record."""
    labels = {"classification": classification, "severity": severity}
    return Event("fault_incident", at, root.source, key, root.line, labels, details)
