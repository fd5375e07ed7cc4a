"""VRAM by process (helper "gpuproc" owns this module; this stub keeps the interface only).

Until the real join with ``/proc`` lands, :class:`ProcessTable` reports no process series and
the orphaned-memory gauge as 0 for every GPU seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from inferwatch.labels import make_labels
from inferwatch.model import Sample


@dataclass(frozen=True, slots=True)
class GpuProcessUse:
    gpu: str  # NVML index as a string
    uuid: str
    pci_bus_id: str  # normalised 0000:03:00.0
    pid: int
    used_bytes: float | None  # None when NVML reports NVML_VALUE_NOT_AVAILABLE
    kind: str  # "compute" | "graphics"


class ProcessTable:
    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self.proc_root = proc_root

    def samples(
        self, gpus: Sequence[tuple[str, str, str]], uses: Sequence[GpuProcessUse]
    ) -> tuple[Sample, ...]:
        del uses
        return tuple(
            Sample(
                "inferwatch_gpu_orphaned_memory_bytes",
                make_labels({"gpu": gpu, "uuid": uuid, "pci_bus_id": bus}),
                0.0,
            )
            for gpu, uuid, bus in gpus
        )
