"""The diagnosis text of a fault incident: what happened, what it points to, what to do.

The text must be readable on a phone (xid.md section 10.4), so it says in words what the
classification means, names the GPUs, the process and the fault, and gives the action. It never
claims more than the log shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from inferwatch.derive.kernel.correlate import AllRanksIncident
from inferwatch.derive.kernel.nvlink import TEARDOWN_XID, NvlinkIncident
from inferwatch.parsers.xid_catalog import XidInfo, lookup

ALL_RANKS = "every rank executed the same out-of-bounds access: an engine/kernel bug, not hardware"
SAME_PROCESS = (
    "one program faulted on every GPU it drives at once: a bug in the program, not hardware"
)
_POINTS_TO = {
    "hardware-memory": "GPU memory hardware",
    "hardware-bus": "the PCIe link or the GPU's power and cooling",
    "hardware-other": "GPU hardware or firmware",
    "driver": "the driver or its GSP firmware",
    "thermal-power": "temperature or power delivery",
    "nvlink": "NVLink hardware or its configuration",
    "unknown": "nothing known: this code is not in the catalog",
}


def all_ranks(incident: AllRanksIncident, driver_version: str | None) -> str:
    """xid.md 9.4: name the process, the signature, and send the user to the engine project."""
    fault = incident.root.fault
    names = sorted({m.name for m in incident.members if m.name})
    pids = sorted({m.pid for m in incident.members if m.pid is not None})
    gpc = f" GPC{fault.gpc}" if fault.gpc is not None else ""
    kind = f"ENGINE {fault.engine}{gpc} {fault.client}, {fault.fault_type} {fault.access_type}"
    gpus = f"{len(incident.gpus)} GPUs ({', '.join(incident.gpus)})"
    if incident.match == "address":
        where = "a null address" if fault.addr_lo == 0 else f"low address 0x{fault.addr_lo:08x}"
        parts = [f"{ALL_RANKS}.", f"{gpus} logged the same MMU fault ({kind}, {where})"]
    else:
        parts = [
            f"{SAME_PROCESS}.",
            f"{gpus} logged the same kind of MMU fault ({kind}) at different addresses",
        ]
    parts.append(f"within {_span(incident)}")
    who = [*names, *(f"pid {pid}" for pid in pids if incident.match == "process")]
    if who:
        parts.append(f"in {', '.join(who)}")
    text = " ".join(parts) + "."
    text += (
        " Not OOM, not temperature. Report it to the inference engine's project with its "
        "version and the request that triggered it"
    )
    if driver_version:
        text += f" (NVIDIA driver {driver_version})"
    return text + "."


def single_gpu(
    info: XidInfo,
    pci_bus_id: str | None,
    shared_with: Sequence[str],
    driver_version: str | None,
) -> str:
    """xid.md 9.5/9.6: one GPU with a hardware-class code points to that GPU (or a shared cause)."""
    gpu = pci_bus_id or "an unnamed GPU"
    text = f"Xid {info.code} ({info.mnemonic}) on {gpu}: {info.meaning}"
    if shared_with:
        text += (
            f" The same Xid appeared on {', '.join(shared_with)} at the same time: suspect a "
            "shared cause (power supply, riser or PCIe switch) rather than one card."
        )
    else:
        text += f" On one GPU this points to {_POINTS_TO.get(info.category, info.category)}."
    if info.code == 79:
        text += " Check temperatures and power events just before it."
    text += f" Action: {info.action_text}."
    if driver_version:
        text += f" NVIDIA driver {driver_version}."
    return text


def nvlink(incident: NvlinkIncident, driver_version: str | None) -> str:
    """xid.md 9.1/9.6: name the root-cause Xids and the GPUs; the 45s are its consequence."""
    roots = ", ".join(f"Xid {x} ({lookup(x).mnemonic})" for x in incident.root_xids)
    gpus = incident.gpus
    where = f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} ({', '.join(gpus) or 'unnamed'})"
    text = f"NVLink fault, root cause {roots}, reached {where}."
    seen_roots = {m.xid for m in incident.members if m.xid != TEARDOWN_XID}
    teardowns = [m for m in incident.members if m.xid == TEARDOWN_XID]
    if teardowns:
        names = sorted({m.name for m in teardowns if m.name})
        whose = f" of {', '.join(names)}" if names else ""
        text += (
            f" The driver tore down the channels{whose} on them (Xid 45 caused by it): "
            "consequences of the link fault, not separate faults."
        )
    if not seen_roots:
        text += " The root NVLink lines themselves are not in the log (rate-limited or lost)."
    text += (
        " It points to NVLink hardware, an NVSwitch or the fabric configuration, not to the "
        "application. Action: follow NVIDIA's NVLink workflow for the root Xid; check "
        "nvidia-smi nvlink --status and --errorcounters and the Fabric Manager log, and reset "
        "the GPUs (or reboot) before restarting the job."
    )
    if driver_version:
        text += f" NVIDIA driver {driver_version}."
    return text


def _span(incident: AllRanksIncident) -> str:
    seconds = incident.members[-1].at - incident.members[0].at
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"
