"""Per-GPU expectations from ``gpus.devices``, as the series the GPU rules compare against
(exported every tick with the matched GPU's ``gpu``, ``uuid``, ``pci_bus_id``; an entry that
matches no GPU seen exports nothing), and ``inferwatch_gpus_expected`` from ``gpus.expected``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from inferwatch.labels import make_labels
from inferwatch.model import Sample

if TYPE_CHECKING:
    from inferwatch.config.models import GpuConfig, GpuDeviceConfig
    from inferwatch.sources.gpu_readings import GpuIdentity

MHZ: Final = 1e6
EXPECTED_GPUS: Final = "inferwatch_gpus_expected"
OFFSET: Final = "inferwatch_gpu_expected_clock_offset_hertz"
SM_CLOCK: Final = "inferwatch_gpu_expected_sm_clock_hertz"
SM_TOLERANCE: Final = "inferwatch_gpu_expected_sm_clock_tolerance_hertz"
PCIE_GEN: Final = "inferwatch_gpu_expected_pcie_link_generation"
PCIE_WIDTH: Final = "inferwatch_gpu_expected_pcie_link_width"
POWER: Final = "inferwatch_gpu_expected_power_limit_watts"
HELP: Final = {
    EXPECTED_GPUS: "Number of GPUs this host should have (gpus.expected).",
    OFFSET: "Expected VF clock offset by domain (gpus.devices[].clock_offset_mhz).",
    SM_CLOCK: "SM clock the GPU is locked at (gpus.devices[].sm_clock_lock_mhz).",
    SM_TOLERANCE: "How far below the lock the SM clock may read "
    "(gpus.devices[].sm_clock_tolerance_mhz).",
    PCIE_GEN: "Expected PCIe link generation (gpus.devices[].pcie_generation).",
    PCIE_WIDTH: "Expected PCIe link width in lanes (gpus.devices[].pcie_width).",
    POWER: "Expected power limit (gpus.devices[].power_limit_watts).",
}


def matches(device: GpuDeviceConfig, gpu: GpuIdentity) -> bool:
    kind, value = device.selector()
    if kind == "index":
        return str(gpu.index) == value
    if kind == "uuid":
        return gpu.uuid.lower() == value.lower()
    return gpu.serial == value


def device_samples(device: GpuDeviceConfig, gpu: GpuIdentity) -> list[Sample]:
    ident = gpu.labels()
    labels = make_labels(ident)
    out = []
    offsets = device.clock_offset_mhz
    for domain, mhz in (
        ("graphics", offsets.graphics if offsets else None),
        ("memory", offsets.memory if offsets else None),
    ):
        if mhz is not None:
            out.append(Sample(OFFSET, make_labels({**ident, "domain": domain}), mhz * MHZ))
    if device.sm_clock_lock_mhz is not None:
        out.append(Sample(SM_CLOCK, labels, device.sm_clock_lock_mhz * MHZ))
        out.append(Sample(SM_TOLERANCE, labels, device.sm_clock_tolerance_mhz * MHZ))
    for name, value in (
        (PCIE_GEN, device.pcie_generation),
        (PCIE_WIDTH, device.pcie_width),
        (POWER, device.power_limit_watts),
    ):
        if value is not None:
            out.append(Sample(name, labels, float(value)))
    return out


def expectation_samples(cfg: GpuConfig, gpus: Sequence[GpuIdentity]) -> list[Sample]:
    out = []
    if cfg.expected is not None:
        out.append(Sample(EXPECTED_GPUS, (), float(cfg.expected)))
    for device in cfg.devices:
        for gpu in gpus:
            if matches(device, gpu):
                out.extend(device_samples(device, gpu))
    return out
