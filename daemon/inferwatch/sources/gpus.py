"""GPU sampling: NVML when the driver is there, a readings file for the demo and tests.

This module only reads. NVML calls block and can hang on a wedged driver, so they run in the
worker pool with a timeout; the scheduler's ``max_instances=1`` keeps hung calls from piling up.
The full NVML collector (clocks, offsets, throttle reasons, PCIe link, per-process memory) is
the NVML issue's; this is the part the foundation needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.clock import Clock
from inferwatch.errors import NoData
from inferwatch.model import SampleBatch
from inferwatch.sources.gpu_readings import GpuReading, normalise_bus_id, reading_samples

Reader = Callable[[], list[GpuReading]]


def read_fake_profile(path: Path) -> list[GpuReading]:
    """Readings from a JSON file ``{"gpus": [{"index", "uuid", "pci_bus_id", "name", ...}]}``."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NoData(f"GPU readings file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    out = []
    for i, gpu in enumerate(doc.get("gpus", [])):
        try:
            values = {k: float(v) for k, v in gpu.items() if isinstance(v, int | float)}
            values.pop("index", None)
            out.append(
                GpuReading(
                    index=int(gpu["index"]),
                    uuid=str(gpu["uuid"]),
                    pci_bus_id=normalise_bus_id(str(gpu["pci_bus_id"])),
                    name=str(gpu.get("name", "")),
                    values=values,
                )
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{path}: gpus[{i}]: {exc!r}") from None
    return out


class NvmlReader:
    """Reads the basic per-GPU values through ``pynvml`` (nvidia-ml-py)."""

    def __init__(self) -> None:
        self._nvml: Any = None

    def _init(self) -> Any:
        if self._nvml is None:
            try:
                import pynvml  # noqa: PLC0415  (optional at run time: no driver, no library)
            except ImportError:
                raise NoData("nvidia-ml-py is not installed") from None
            try:
                pynvml.nvmlInit()
            except pynvml.NVMLError as exc:
                raise NoData(f"no NVIDIA driver/NVML here ({exc})") from None
            self._nvml = pynvml
        return self._nvml

    def __call__(self) -> list[GpuReading]:
        nv = self._init()
        out = []
        for index in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(index)
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            values = {
                "temperature_celsius": float(nv.nvmlDeviceGetTemperature(h, 0)),
                "power_watts": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "utilization_ratio": nv.nvmlDeviceGetUtilizationRates(h).gpu / 100.0,
                "memory_used_bytes": float(mem.used),
                "memory_total_bytes": float(mem.total),
                "sm_clock_hertz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) * 1e6,
                "mem_clock_hertz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM) * 1e6,
            }
            bus = nv.nvmlDeviceGetPciInfo(h).busId
            out.append(
                GpuReading(
                    index=index,
                    uuid=_text(nv.nvmlDeviceGetUUID(h)),
                    pci_bus_id=normalise_bus_id(_text(bus)),
                    name=_text(nv.nvmlDeviceGetName(h)),
                    values=values,
                )
            )
        return out


def _text(v: str | bytes) -> str:
    return v.decode() if isinstance(v, bytes) else v


def batch(source: str, clock: Clock, readings: list[GpuReading]) -> SampleBatch:
    return SampleBatch(source=source, at=clock.time(), samples=reading_samples(readings))


class GpuSource:
    """A polled source: the scheduler calls :meth:`poll` every ``interval`` seconds."""

    def __init__(
        self,
        reader: Reader,
        clock: Clock,
        run_blocking: Callable[[Reader], Any],
        interval: float = 5.0,
        name: str = "gpus",
    ) -> None:
        self.name = name
        self.interval = interval
        self._reader = reader
        self._clock = clock
        self._run_blocking = run_blocking
        self._seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    async def poll(self) -> SampleBatch:
        readings: list[GpuReading] = await self._run_blocking(self._reader)
        if not readings:
            raise NoData("no GPUs found")
        b = batch(self.name, self._clock, readings)
        current = {(s.name, s.labels) for s in b.samples}
        gone = tuple(sorted(self._seen - current))
        self._seen = current
        return SampleBatch(b.source, b.at, b.samples, stale=gone)
