"""Host faults that hit the GPUs' work: PCIe AER errors that reach a GPU, and OOM kills of
processes that hold GPU memory.

**AER.** A PCIe error report is several lines, most of them about the port above the GPU
(``pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal) …``); the GPU shows up as
the device its driver names (``nvidia 0000:03:00.0: AER: can't recover``, ``… has no AER-aware
driver``). An uncorrected error within ``window`` seconds of such a line, or on the GPU itself,
is a GPU PCIe fault. It is decided once the report has settled: a GPU that falls off the bus
(Xid 79) within the window is that incident (``GpuFallenOffBus`` pages it), not a second page.
Corrected errors are counted elsewhere and never reach a GPU fault.

**OOM.** An OOM kill of an inference engine's process, or of a process the kernel log has shown
holding a GPU context (an Xid naming its pid), is a GPU process kill; any other is a host one.

Pure and clock-free; bounded (a report lives ``window`` seconds, at most ``MAX_PROCESSES`` pids).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from inferwatch.parsers.kernel_misc import AerEvent

NVIDIA_DRIVERS = frozenset({"nvidia", "nvidia-nvswitch"})
MAX_PROCESSES = 256
# Process names (comm, 15 characters) of inference engines and their workers. A plain
# "python3" is not among them: on its own it says nothing (until an Xid names its pid).
ENGINE_PROCESS = re.compile(
    r"^(?:VLLM::|vllm|sglang|llama-server|llama\.cpp|ray::|tritonserver|text-generation|ollama)"
    r"(?:$|[:_\-. ])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class GpuPcieFault:
    pci_bus_id: str
    at: float
    severity: str
    port: str | None
    alertable: bool


@dataclass(slots=True)
class _Report:
    start: float
    severity: str | None = None  # the worst uncorrected severity seen
    port: str | None = None
    gpus: set[str] = field(default_factory=set)
    alertable: bool = True


class GpuAerReports:
    __slots__ = ("_fell_off", "_report", "window")

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._report: _Report | None = None
        self._fell_off: dict[str, float] = {}

    def observe(self, rec: AerEvent, at: float, alertable: bool) -> list[GpuPcieFault]:
        """One AER line; returns faults of an earlier report that this line's time settles."""
        out = self.close(at)
        report = self._report
        if report is None:
            report = self._report = _Report(at, alertable=alertable)
        report.alertable = report.alertable and alertable
        if rec.driver in NVIDIA_DRIVERS and rec.pci_bus_id:
            report.gpus.add(rec.pci_bus_id)
        if rec.kind == "bus_error" and rec.severity and rec.severity != "corrected":
            if report.severity != "uncorrected-fatal":
                report.severity = rec.severity
            report.port = report.port or rec.pci_bus_id
        return out

    def fall_off(self, pci_bus_id: str, at: float) -> None:
        self._fell_off[pci_bus_id] = at

    def close(self, now: float) -> list[GpuPcieFault]:
        report = self._report
        if report is None or now - report.start <= self.window:
            return []
        return self._decide(report)

    def close_all(self) -> list[GpuPcieFault]:
        return self._decide(self._report) if self._report is not None else []

    def _decide(self, report: _Report) -> list[GpuPcieFault]:
        self._report = None
        fell = self._fell_off
        self._fell_off = {}
        if report.severity is None:
            return []
        return [
            GpuPcieFault(bus, report.start, report.severity, report.port, report.alertable)
            for bus in sorted(report.gpus)
            if not (bus in fell and fell[bus] - report.start <= 2 * self.window)
        ]

    @property
    def state_size(self) -> int:
        return (1 if self._report else 0) + len(self._fell_off)


class GpuProcesses:
    """Pids the kernel log has shown holding a GPU context (an Xid names them)."""

    __slots__ = ("_pids",)

    def __init__(self) -> None:
        self._pids: dict[int, str] = {}

    def saw(self, pid: int | None, name: str | None) -> None:
        if pid is None:
            return
        self._pids.pop(pid, None)
        self._pids[pid] = name or ""
        if len(self._pids) > MAX_PROCESSES:
            del self._pids[next(iter(self._pids))]

    def holds_gpu(self, pid: int, name: str) -> bool:
        return pid in self._pids or ENGINE_PROCESS.match(name) is not None

    @property
    def state_size(self) -> int:
        return len(self._pids)
