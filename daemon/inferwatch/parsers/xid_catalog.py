"""What each Xid code means and what NVIDIA says to do about it, as a data table.

Facts from reference/xid.md section 8 (NVIDIA's Xid catalog and its older r555 cause matrix);
descriptions are our own words. Category and default severity are inferwatch's choice; rules may
override them. `lookup` never fails: a code outside the table gets an `unknown` entry, so no Xid
is ever dropped (xid.md section 10, item 5). Section 9.2's recovery actions (Xid 154, NVML's
`nvmlDeviceGpuRecoveryAction_t`) live here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Category = Literal[
    "application",
    "informational",
    "hardware-memory",
    "hardware-bus",
    "hardware-other",
    "driver",
    "thermal-power",
    "nvlink",
    "unknown",
]
Severity = Literal["critical", "warning", "info"]

ALL_CAUSES: Final = ("HW", "Drv", "App", "Mem", "Bus", "Th", "FB")
CAUSE_NAMES: Final = {
    "HW": "hardware",
    "Drv": "driver",
    "App": "user application",
    "Mem": "system-memory corruption",
    "Bus": "PCIe bus",
    "Th": "thermal",
    "FB": "framebuffer corruption",
}
ACTION_TEXT: Final = {
    "RESTART_APP": "restart the application",
    "RESET_GPU": "stop all processes on the GPU and reset it (nvidia-smi -r)",
    "RESTART_BM": "reboot the machine",
    "RESTART_FM": "restart NVIDIA Fabric Manager",
    "CONTACT_SUPPORT": "report the problem to NVIDIA support",
    "IGNORE": "no action needed for this code alone",
    "CHECK_APP/CUDA": "check the application and its CUDA usage",
    "INVESTIGATE_SW": "look into the driver and software stack",
}


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One catalog row. `immediate` / `investigate` are NVIDIA's resolution buckets as printed."""

    code: int
    mnemonic: str
    meaning: str
    category: Category
    severity: Severity
    causes: tuple[str, ...]
    immediate: str | None
    investigate: str | None
    severity_from_line: bool = False
    note: str = ""

    @property
    def known(self) -> bool:
        return self.category != "unknown"

    @property
    def action_text(self) -> str:
        """NVIDIA's immediate action in plain words (workflow names are kept as printed)."""
        if self.immediate is None:
            return "no action published; follow the Xid it details"
        return ACTION_TEXT.get(self.immediate, f"follow NVIDIA's {self.immediate}")


@dataclass(frozen=True, slots=True)
class RecoveryActionInfo:
    """A value of NVML's GPU recovery action, as carried by Xid 154."""

    value: int
    name: str
    todo: str
    blocks_gpu: bool


def _causes(text: str) -> tuple[str, ...]:
    return ALL_CAUSES if text == "all" else tuple(text.split())


_NVLINK5_UNITS = ("SAW", "RLW", "TLW", "TREX", "NVLPW_CTRL", "NETIR", "MSE")

_ROWS: tuple[XidInfo, ...] = (
    XidInfo(13, "ROBUST_CHANNEL_GR_EXCEPTION / GR_ERROR_SW_NOTIFY",
        "The graphics engine raised an exception (for example an SM out-of-range address or an "
        "illegal instruction); most often a bug in the application.",
        "application", "warning", _causes("all"), "RESTART_APP", "WORKFLOW_XID_13"),
    XidInfo(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",
        "A GPU memory page fault: the MMU refused an access. The same fault on several GPUs at "
        "once points to a software bug; repeats on one GPU point to hardware.",
        "application", "warning", _causes("HW Drv App"), "RESTART_APP", "WORKFLOW_XID_31"),
    XidInfo(32, "ROBUST_CHANNEL_PBDMA_ERROR",
        "The DMA controller saw an invalid or corrupted push-buffer stream; often a PCIe "
        "signal-quality problem.",
        "hardware-bus", "warning", _causes("Drv Mem Bus Th FB"), "RESTART_APP", "CHECK_APP/CUDA"),
    XidInfo(38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT",
        "A driver firmware error (the context-switch firmware's watchdog fired).",
        "driver", "warning", _causes("Drv"), "IGNORE", "CONTACT_SUPPORT"),
    XidInfo(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",
        "The GPU stopped running the application's channel after the application hit a "
        "software fault; the GPU itself is fine.",
        "application", "warning", _causes("Drv App"), "IGNORE", "CONTACT_SUPPORT"),
    XidInfo(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
        "The driver cleaned up a channel after earlier errors or after the application was "
        "stopped (kill, Ctrl-C, reset); a follow-on, not a root cause.",
        "informational", "info", _causes("Drv App"), "WORKFLOW_XID_45",
        "solo: RESTART_FM; with other Xids: IGNORE and follow them"),
    XidInfo(48, "ROBUST_CHANNEL_GPU_ECC_DBE",
        "An uncorrectable double-bit ECC error in GPU memory.",
        "hardware-memory", "critical", _causes("HW"), "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    XidInfo(61, "PMU_BREAKPOINT",
        "An internal micro-controller hit a breakpoint or warning (unused in the current "
        "catalog; older text: report a GPU issue and reset the GPU).",
        "driver", "critical", _causes(""), "CONTACT_SUPPORT", "CONTACT_SUPPORT"),
    XidInfo(62, "PMU_HALT_ERROR",
        "An internal micro-controller (GSP/PMU) halted.",
        "hardware-other", "critical", _causes("HW Drv Th"), "RESET_GPU", "CONTACT_SUPPORT"),
    XidInfo(63, "INFOROM_DRAM_RETIREMENT_EVENT",
        "A memory row was marked for remapping (older drivers: a page was retired); it takes "
        "effect after the next GPU reset.",
        "hardware-memory", "warning", _causes("HW Drv FB"), "IGNORE", "IGNORE"),
    XidInfo(64, "INFOROM_DRAM_RETIREMENT_FAILURE",
        "Remapping or retiring a memory row failed; NVIDIA's memory policy treats this as a "
        "return-for-replacement criterion.",
        "hardware-memory", "critical", _causes("HW Drv"), "RESET_GPU", "CONTACT_SUPPORT"),
    XidInfo(68, "ROBUST_CHANNEL_NVDEC0_ERROR",
        "The video decoder raised an exception.",
        "application", "warning", _causes("HW Drv App"), "RESTART_APP", "CONTACT_SUPPORT"),
    XidInfo(69, "ROBUST_CHANNEL_GR_CLASS_ERROR",
        "The graphics engine reported a class error; tends to repeat every few seconds while "
        "the application runs.",
        "driver", "warning", _causes("HW Drv"), "RESTART_APP", "CHECK_APP/CUDA"),
    XidInfo(74, "NVLINK_ERROR",
        "An NVLink error; the line carries the link number and seven register words.",
        "nvlink", "critical", _causes("HW Drv Bus"), "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"),
    XidInfo(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
        "The GPU no longer answers on PCIe. Causes named in practice: overheating, "
        "insufficient power, outdated system BIOS, risers or PCIe switches.",
        "hardware-bus", "critical", _causes("HW Drv Mem Bus Th"), "RESTART_BM", "CONTACT_SUPPORT"),
    XidInfo(92, "EXCESSIVE_SBE_INTERRUPTS",
        "Single-bit (corrected) ECC errors arrive at a high rate.",
        "hardware-memory", "warning", _causes("HW Drv"), "IGNORE", "CONTACT_SUPPORT"),
    XidInfo(94, "ROBUST_CHANNEL_CONTAINED_ERROR",
        "A contained memory error: only the application that touched it is stopped.",
        "hardware-memory", "warning", _causes("HW Drv FB"), "RESTART_APP", "IGNORE (sympathetic)"),
    XidInfo(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR",
        "An uncontained memory error: every application on the GPU is affected.",
        "hardware-memory", "critical", _causes("HW Drv FB"), "RESET_GPU", "IGNORE (sympathetic)"),
    XidInfo(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR",
        "A context switch on the GPU timed out.",
        "driver", "critical", _causes("all"), "RESET_GPU", "CONTACT_SUPPORT"),
    XidInfo(119, "GSP_RPC_TIMEOUT",
        "The GSP firmware did not answer a driver request in time; may repeat every few "
        "seconds until the driver rate-limits it.",
        "driver", "critical", _causes("HW Drv Mem Bus Th FB"), "RESET_GPU", "INVESTIGATE_SW"),
    XidInfo(120, "GSP_ERROR",
        "The GSP firmware reported an error, such as an exception or a page fault inside it.",
        "driver", "critical", _causes("HW Drv Mem Bus Th FB"), "RESET_GPU", "INVESTIGATE_SW"),
    XidInfo(121, "C2C_ERROR",
        "Corrected errors on the chip-to-chip NVLink to the Grace CPU.",
        "nvlink", "warning", _causes("HW Bus"), "IGNORE", "CONTACT_SUPPORT"),
    XidInfo(137, "NVLINK_PRIV_ERR",
        "An NVLink privilege (FLA) error; seen together with Xid 145 on B200.",
        "nvlink", "warning", _causes(""), "IGNORE", "XID_137_FLOW"),
    XidInfo(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE",
        "An uncorrectable ECC error got past page offlining and row remapping.",
        "hardware-memory", "critical", _causes("HW Drv FB"), "RESET_GPU", "CONTACT_SUPPORT"),
    XidInfo(143, "GPU_INIT_ERROR",
        "The GPU failed to initialise.",
        "hardware-other", "critical", _causes("HW Drv FB"), "RESET_GPU", "CONTACT_SUPPORT"),
    *(
        XidInfo(144 + offset, f"NVLINK_{unit}_ERROR",
            f"An NVLink5 {unit} unit error (Blackwell / GB200); the line says Fatal or Nonfatal "
            "and names the link.",
            "nvlink", "warning", _causes(""), "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
            severity_from_line=True, note="Fatal is critical, Nonfatal a warning")
        for offset, unit in enumerate(_NVLINK5_UNITS)
    ),
    XidInfo(154, "GPU_RECOVERY_ACTION_CHANGED",
        "The driver changed the recovery action the GPU needs; it tells what to do about "
        "another Xid.",
        "informational", "info", _causes(""), "XID_154", "informational only",
        severity_from_line=True, note="severity follows the new recovery action"),
    XidInfo(171, "UNCORRECTABLE_DRAM_ERROR",
        "Detail to an Xid 48: the uncorrectable error sits in DRAM.",
        "hardware-memory", "critical", _causes(""), None, None),
    XidInfo(172, "UNCORRECTABLE_SRAM_ERROR",
        "Detail to an Xid 48: the uncorrectable error sits in SRAM.",
        "hardware-memory", "critical", _causes(""), None, None),
)  # fmt: skip

CATALOG: Final[dict[int, XidInfo]] = {row.code: row for row in _ROWS}

RECOVERY_ACTIONS: Final[dict[int, RecoveryActionInfo]] = {
    info.value: info
    for info in (
        RecoveryActionInfo(0, "NONE", "nothing; start a new GPU process", False),
        RecoveryActionInfo(1, "GPU_RESET", "stop all GPU processes and reset the GPU", True),
        RecoveryActionInfo(2, "NODE_REBOOT", "reboot: the OS may be left inconsistent", True),
        RecoveryActionInfo(3, "DRAIN_P2P", "drain peer-to-peer traffic", False),
        RecoveryActionInfo(4, "DRAIN_AND_RESET", "drain peer-to-peer, then reset the GPU", True),
        RecoveryActionInfo(5, "RECOVER_IMEX_DOMAIN", "recover the IMEX domain", False),
        RecoveryActionInfo(6, "BUS_RESET", "reset the GPU's PCIe bus", True),
        RecoveryActionInfo(7, "SYSTEM_REBOOT", "reboot the system", True),
    )
}


def lookup(code: int) -> XidInfo:
    """The catalog entry for `code`; an `unknown` entry (severity warning) when not listed."""
    found = CATALOG.get(code)
    if found is not None:
        return found
    return XidInfo(
        code=code,
        mnemonic="UNKNOWN",
        meaning=f"Xid {code} is not in the catalog; see the driver's message.",
        category="unknown",
        severity="warning",
        causes=(),
        immediate=None,
        investigate=None,
    )


def recovery_action(value: int) -> RecoveryActionInfo:
    """NVML recovery action `value`; unknown values are treated as blocking the GPU."""
    found = RECOVERY_ACTIONS.get(value)
    if found is not None:
        return found
    return RecoveryActionInfo(value, f"UNKNOWN_{value}", "check nvidia-smi -q", True)


def severity_of(
    code: int, *, fatal: bool | None = None, recovery_to: int | None = None
) -> Severity:
    """Severity of one Xid, using what its line says where the catalog defers to it."""
    info = lookup(code)
    if not info.severity_from_line:
        return info.severity
    if fatal is not None:
        return "critical" if fatal else "warning"
    if recovery_to is not None:
        return "critical" if recovery_action(recovery_to).blocks_gpu else "info"
    return info.severity
