"""GPU readings, whichever backend took them, and their conversion into samples (pure).

Every per-GPU series carries ``gpu`` (the NVML index), ``uuid`` and ``pci_bus_id``; values are in
base units (hertz, watts, joules, bytes, ratios 0-1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from inferwatch.event import Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.model import Sample

G, C = Kind.GAUGE, Kind.COUNTER
GPU_METRICS: dict[str, tuple[Kind, str]] = {
    "inferwatch_gpu_info": (G, "One series per GPU: index, UUID, bus id, model, serial, VBIOS, "
                            "driver and CUDA versions as labels; 1."),
    "inferwatch_gpu_up": (G, "1 while NVML answers for the GPU, 0 once it reports the GPU lost."),
    "inferwatch_gpu_clock_hertz": (G, "Current clock by domain (sm, memory, graphics, video)."),
    "inferwatch_gpu_clock_max_hertz": (G, "Highest clock the GPU allows, by domain."),
    "inferwatch_gpu_clock_application_hertz": (G, "Applications clock target, by domain."),
    "inferwatch_gpu_clock_offset_hertz": (G, "VF clock offset applied, by domain (graphics, "
                                          "memory); may be negative."),
    "inferwatch_gpu_performance_state": (G, "Performance state (P-state) number, 0 fastest."),
    "inferwatch_gpu_throttle_reason": (G, "1 while the reason holds the clocks down (NVML's "
                                       "clock-event reasons)."),
    "inferwatch_gpu_temperature_celsius": (G, "Temperature by sensor (gpu, memory)."),
    "inferwatch_gpu_power_watts": (G, "Board power draw."),
    "inferwatch_gpu_power_limit_watts": (G, "Power management limit set."),
    "inferwatch_gpu_power_enforced_limit_watts": (G, "Power limit the driver enforces."),
    "inferwatch_gpu_energy_joules_total": (C, "Energy used since the driver loaded."),
    "inferwatch_gpu_fan_speed_ratio": (G, "Fan speed as a fraction of its maximum, by fan."),
    "inferwatch_gpu_utilization_ratio": (G, "Fraction of time a kernel ran on the GPU (0-1)."),
    "inferwatch_gpu_memory_utilization_ratio": (G, "Fraction of time memory was read or "
                                                "written (0-1)."),
    "inferwatch_gpu_memory_used_bytes": (G, "GPU memory in use."),
    "inferwatch_gpu_memory_free_bytes": (G, "GPU memory free."),
    "inferwatch_gpu_memory_total_bytes": (G, "GPU memory installed."),
    "inferwatch_gpu_pcie_link_generation": (G, "Current PCIe link generation."),
    "inferwatch_gpu_pcie_link_generation_max": (G, "Highest PCIe generation of GPU and slot."),
    "inferwatch_gpu_pcie_link_width": (G, "Current PCIe link width (lanes)."),
    "inferwatch_gpu_pcie_link_width_max": (G, "Widest PCIe link of GPU and slot (lanes)."),
    "inferwatch_gpu_pcie_throughput_bytes_per_second": (G, "PCIe traffic by direction (rx, tx)."),
    "inferwatch_gpu_pcie_replay_errors_total": (C, "PCIe replays (link-level retransmissions)."),
    "inferwatch_gpu_ecc_errors_total": (C, "ECC errors by error (corrected, uncorrected) and "
                                        "counter (volatile: since the driver loaded; "
                                        "aggregate: lifetime)."),
    "inferwatch_gpu_retired_pages": (G, "Memory pages retired, by cause."),
    "inferwatch_gpu_retired_pages_pending": (G, "1 when a page retirement awaits a reboot."),
    "inferwatch_gpu_remapped_rows": (G, "Memory rows remapped, by kind (correctable, "
                                     "uncorrectable, pending, failure)."),
    "inferwatch_gpu_persistence_mode": (G, "1 when persistence mode is on."),
    "inferwatch_gpu_recovery_action": (G, "Recovery NVML asks for: 0 none, 1 GPU reset, "
                                       "2 node reboot, 3 drain P2P, 4 drain and reset."),
    "inferwatch_gpu_field_unsupported": (G, "1 for each GPU field NVML answered "
                                         "NOT_SUPPORTED (remembered, not asked again)."),
    "inferwatch_gpu_nvml_call_timeouts_total": (C, "NVML polls that ran past gpus.call_timeout."),
    "inferwatch_gpu_polls_skipped_total": (C, "GPU polls skipped while an NVML "
                                           "call was still stuck."),
}  # fmt: skip


def normalise_bus_id(raw: str) -> str:
    """NVML's ``00000000:3B:00.0`` (or a short ``3b:00.0``) → ``0000:3b:00.0``."""
    text = raw.strip().lower()
    if text.count(":") == 1:
        text = "0000:" + text
    domain, bus, rest = text.split(":", 2)
    if "." not in rest:
        rest += ".0"
    return f"{int(domain, 16):04x}:{bus.zfill(2)}:{rest}"


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    index: int
    uuid: str
    pci_bus_id: str
    serial: str = ""
    info: tuple[tuple[str, str], ...] = ()  # name, vbios, driver, cuda, mig_mode, …

    def labels(self) -> dict[str, str]:
        return {"gpu": str(self.index), "uuid": self.uuid, "pci_bus_id": self.pci_bus_id}


@dataclass(slots=True)
class GpuReading:
    """One GPU's answers of one poll: ``(metric, extra labels, value)`` triples."""

    identity: GpuIdentity
    up: bool = True
    values: list[tuple[str, tuple[tuple[str, str], ...], float]] = field(default_factory=list)

    def add(self, metric: str, value: float | None, **labels: str) -> None:
        if value is not None:
            self.values.append((metric, tuple(labels.items()), float(value)))


Extra = tuple[tuple[str, str], ...]


@lru_cache(maxsize=256)
def _label_sets(identity: GpuIdentity) -> dict[Extra, Labels]:
    """A GPU's label sets by their extra labels, kept while the GPU is (a poll repeats them)."""
    return {}


def reading_samples(readings: list[GpuReading]) -> tuple[Sample, ...]:
    out: list[Sample] = []
    for r in readings:
        ident = r.identity
        sets = _label_sets(ident)
        info = {**ident.labels(), "serial": ident.serial, **dict(ident.info)}
        out.append(Sample("inferwatch_gpu_info", make_labels(info), 1.0))
        out.append(Sample("inferwatch_gpu_up", make_labels(ident.labels()), 1.0 if r.up else 0.0))
        for metric, extra, value in r.values:
            labels = sets.get(extra)
            if labels is None:
                labels = sets[extra] = make_labels({**ident.labels(), **dict(extra)})
            out.append(Sample(metric, labels, value, GPU_METRICS[metric][0]))
    return tuple(out)
