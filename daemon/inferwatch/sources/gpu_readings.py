"""GPU readings, whichever backend took them, and their conversion into samples (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from inferwatch.labels import make_labels
from inferwatch.model import Sample

GPU_METRICS: dict[str, str] = {
    "temperature_celsius": "inferwatch_gpu_temperature_celsius",
    "power_watts": "inferwatch_gpu_power_watts",
    "utilization_ratio": "inferwatch_gpu_utilization_ratio",
    "memory_used_bytes": "inferwatch_gpu_memory_used_bytes",
    "memory_total_bytes": "inferwatch_gpu_memory_total_bytes",
    "sm_clock_hertz": "inferwatch_gpu_sm_clock_hertz",
    "mem_clock_hertz": "inferwatch_gpu_memory_clock_hertz",
}
GPU_HELP: dict[str, str] = {
    "inferwatch_gpu_info": "One series per GPU joining index, UUID, bus id and model name; 1.",
    "inferwatch_gpu_temperature_celsius": "GPU core temperature.",
    "inferwatch_gpu_power_watts": "GPU board power draw.",
    "inferwatch_gpu_utilization_ratio": "Fraction of time a kernel ran on the GPU (0-1).",
    "inferwatch_gpu_memory_used_bytes": "GPU memory in use.",
    "inferwatch_gpu_memory_total_bytes": "GPU memory installed.",
    "inferwatch_gpu_sm_clock_hertz": "Current SM clock.",
    "inferwatch_gpu_memory_clock_hertz": "Current memory clock.",
}


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
class GpuReading:
    index: int
    uuid: str
    pci_bus_id: str
    name: str
    values: dict[str, float]


def reading_samples(readings: list[GpuReading]) -> tuple[Sample, ...]:
    out: list[Sample] = []
    for r in readings:
        ident = {"gpu": str(r.index), "uuid": r.uuid, "pci_bus_id": r.pci_bus_id}
        out.append(Sample("inferwatch_gpu_info", make_labels({**ident, "name": r.name}), 1.0))
        labels = make_labels(ident)
        for key, value in r.values.items():
            metric = GPU_METRICS.get(key)
            if metric is not None:
                out.append(Sample(metric, labels, float(value)))
    return tuple(out)
