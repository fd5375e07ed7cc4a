"""``/proc/driver/nvidia/gpus/<bus id>/information``: bus id → GPU UUID, minor number, model.

The NVIDIA driver writes one ``Key: value`` line per fact (``Model``, ``GPU UUID``, ``Bus
Location``, ``Device Minor``, …). Without NVML (a daemon without the library, a container
without the management device) this is how a kernel fault's bus id is tied to a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProcGpu:
    pci_bus_id: str
    uuid: str | None
    minor: int | None
    model: str | None


def parse_information(text: str, bus_dir: str) -> ProcGpu:
    """Parse one ``information`` file; ``bus_dir`` is its directory name (the bus id)."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            facts[key.strip().lower()] = value.strip()
    minor = facts.get("device minor", "")
    bus = (facts.get("bus location") or bus_dir).lower()
    if bus.count(":") == 1:
        bus = "0000:" + bus
    return ProcGpu(
        pci_bus_id=bus if "." in bus else bus + ".0",
        uuid=facts.get("gpu uuid") or None,
        minor=int(minor) if minor.isdigit() else None,
        model=facts.get("model") or None,
    )
