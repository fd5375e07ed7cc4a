"""The counters the kernel pipeline increments, with their HELP texts, as one table.

The daemon calls ``store.describe(spec.name, spec.kind, spec.help)`` for each row at start-up
so ``/metrics`` carries HELP/TYPE lines even before the first increment; the series themselves
appear only when something happened (no pre-initialised series per code, xid.md section 10.9).
Kernel-born series carry ``pci_bus_id`` only, never a ``gpu`` index (DESIGN.md section 4).
"""

from __future__ import annotations

from typing import Final, NamedTuple

from inferwatch.event import Kind

XID_ERRORS: Final = "inferwatch_xid_errors_total"
MMU_FAULTS: Final = "inferwatch_gpu_mmu_faults_total"
FAULT_INCIDENTS: Final = "inferwatch_gpu_fault_incidents_total"
REPEATED_MMU_FAULTS: Final = "inferwatch_gpu_repeated_mmu_faults_total"
NVLINK_FAULTS: Final = "inferwatch_gpu_nvlink_faults_total"
OOM_KILLS: Final = "inferwatch_kernel_oom_kills_total"
HUNG_TASKS: Final = "inferwatch_kernel_hung_tasks_total"
AER_ERRORS: Final = "inferwatch_pcie_aer_errors_total"
SXID_ERRORS: Final = "inferwatch_sxid_errors_total"
GPU_PCIE_FAULTS: Final = "inferwatch_gpu_pcie_uncorrectable_errors_total"
DRIVER_FAULTS: Final = "inferwatch_gpu_driver_faults_total"


class MetricSpec(NamedTuple):
    """One counter family: its name, type, HELP text and the labels its series carry."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]


KERNEL_METRICS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec(
        XID_ERRORS,
        Kind.COUNTER,
        "NVIDIA Xid errors logged by the kernel, every line counted (an implied and an explicit "
        "Xid 79 for the same fall-off count once).",
        ("pci_bus_id", "xid", "category"),
    ),
    MetricSpec(
        MMU_FAULTS,
        Kind.COUNTER,
        "GPU MMU faults (Xid 31 with fault detail) by GPC, client, fault type and access type.",
        ("pci_bus_id", "gpc", "client", "fault_type", "access_type"),
    ),
    MetricSpec(
        FAULT_INCIDENTS,
        Kind.COUNTER,
        "GPU fault incidents: the same MMU fault on several GPUs at once "
        "(software-oob-all-ranks), an NVLink fault and the teardowns it caused (nvlink), or "
        "another hardware-, driver- or NVLink-class Xid on one GPU.",
        ("classification",),
    ),
    MetricSpec(
        REPEATED_MMU_FAULTS,
        Kind.COUNTER,
        "Separate bursts of Xid 31 on one GPU after its first (not part of a multi-GPU software "
        "fault); NVIDIA's Xid 31 workflow treats repeats on the same GPU as a hardware suspicion.",
        ("pci_bus_id",),
    ),
    MetricSpec(
        NVLINK_FAULTS,
        Kind.COUNTER,
        "GPUs reached by an NVLink fault incident, once per GPU and root-cause Xid (74, 144-150) "
        "per incident: the NVLink Xid line itself, or the Xid 45 channel teardown it caused.",
        ("pci_bus_id", "root_xid"),
    ),
    MetricSpec(
        OOM_KILLS,
        Kind.COUNTER,
        'Processes killed by the kernel OOM killer; gpu_process="true" for an inference '
        "engine's process or one the kernel log showed holding a GPU context.",
        ("gpu_process", "name"),
    ),
    MetricSpec(
        HUNG_TASKS,
        Kind.COUNTER,
        "Kernel hung-task reports (a task blocked longer than the hung-task timeout).",
        (),
    ),
    MetricSpec(
        AER_ERRORS,
        Kind.COUNTER,
        "PCIe AER errors reported by the kernel, per reporting device and severity.",
        ("device", "severity"),
    ),
    MetricSpec(
        GPU_PCIE_FAULTS,
        Kind.COUNTER,
        "Uncorrected PCIe (AER) errors that reached a GPU, one per error report, by the worst "
        "severity in it; a report followed by the GPU falling off the bus counts there instead.",
        ("pci_bus_id", "severity"),
    ),
    MetricSpec(
        SXID_ERRORS,
        Kind.COUNTER,
        "NVSwitch SXid errors (one per reported error, not per log line).",
        ("pci_bus_id", "sxid"),
    ),
    MetricSpec(
        DRIVER_FAULTS,
        Kind.COUNTER,
        "GPU faults the NVIDIA driver logged without an Xid (GSP heartbeat or RPC timeout, GSP "
        "core dump, memory subsystem error, RmInitAdapter failure), per GPU: its bus id, or the "
        "driver's GPU number (nvrm_gpu) when the log pairs it with no bus id. Lines that are part "
        "of an Xid's own report are not counted.",
        ("pci_bus_id", "nvrm_gpu", "kind"),
    ),
)

KERNEL_METRIC_HELP: Final[dict[str, MetricSpec]] = {spec.name: spec for spec in KERNEL_METRICS}
