"""One NVML poll of every GPU, through a pynvml-like module (``pynvml`` or the fake).

Degradation, per GPU and field: ``NOT_SUPPORTED`` (or a function the library or driver lacks) is
remembered and never asked again, and the series stays absent, never 0; ``GPU_IS_LOST`` marks the
GPU down (``inferwatch_gpu_up 0``) and the rest of its poll is skipped; any other error leaves
that value out of this poll only. The calls block: the caller runs :meth:`NvmlSampler.read` in
the NVML worker thread (:mod:`inferwatch.sources.nvml_worker`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferwatch.errors import NoData
from inferwatch.model import Sample
from inferwatch.sources.gpu_processes import GpuProcessUse, ProcessTable
from inferwatch.sources.gpu_readings import GpuIdentity, GpuReading, normalise_bus_id
from inferwatch.sources.nvml_device import GPU_IS_LOST, Device, GpuLost
from inferwatch.sources.nvml_values import read_values

MIG_MODES = {0: "disabled", 1: "enabled"}


def load_pynvml() -> Any:
    try:
        import pynvml  # noqa: PLC0415  (optional at run time: no driver, no library)
    except ImportError:
        raise NoData("nvidia-ml-py is not installed") from None
    return pynvml


def text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def cuda_version(number: int) -> str:
    """NVML's 12040 → ``12.4``."""
    return f"{number // 1000}.{number % 1000 // 10}"


@dataclass(slots=True)
class GpuPoll:
    readings: list[GpuReading] = field(default_factory=list)
    process_samples: tuple[Sample, ...] = ()


class NvmlSampler:
    """Reads every GPU; keeps identities and NOT_SUPPORTED answers between polls."""

    def __init__(
        self,
        module: Callable[[], Any] = load_pynvml,
        processes: ProcessTable | None = None,
    ) -> None:
        self._module = module
        self.nv: Any = None
        self.processes = processes
        self.unsupported: set[tuple[int, str]] = set()
        self.fields: dict[int, set[str]] = {}
        self.identities: dict[int, GpuIdentity] = {}
        self._identity_fields: dict[int, set[str]] = {}  # read once with the identity
        self._system: tuple[tuple[str, str], ...] | None = None

    def _init(self) -> Any:
        if self.nv is None:
            nv = self._module()
            try:
                nv.nvmlInit()
            except nv.NVMLError as exc:
                raise NoData(f"no NVIDIA driver/NVML here ({exc})") from None
            self.nv = nv
        return self.nv

    def read(self) -> GpuPoll:
        nv = self._init()
        count = int(nv.nvmlDeviceGetCount())
        if count == 0:
            raise NoData("no GPUs found")
        poll = GpuPoll()
        uses: list[GpuProcessUse] = []
        for index in range(count):
            poll.readings.append(self._read_gpu(index, uses))
        for gone in [i for i in self.identities if i >= count]:
            del self.identities[gone]
        if self.processes is not None:
            gpus = [(str(r.identity.index), r.identity.uuid, r.identity.pci_bus_id)
                    for r in poll.readings if r.up]  # fmt: skip
            poll.process_samples = self.processes.samples(gpus, uses)
        return poll

    def _read_gpu(self, index: int, uses: list[GpuProcessUse]) -> GpuReading:
        try:
            handle = self.nv.nvmlDeviceGetHandleByIndex(index)
            device = Device(self.nv, index, handle, self.unsupported)
            identity = self._identity(device)
            reading = GpuReading(identity)
            read_values(device, reading)
            uses.extend(_processes(device, identity))
        except GpuLost:
            return self._lost(index)
        except self.nv.NVMLError as exc:
            if getattr(exc, "value", None) != GPU_IS_LOST:
                raise
            return self._lost(index)
        self.fields[index] = device.fields | self._identity_fields.get(index, set())
        for fld in sorted(self.fields[index]):
            reading.add("inferwatch_gpu_field_unsupported", 1.0, field=fld)
        return reading

    def _lost(self, index: int) -> GpuReading:
        identity = self.identities.get(index) or GpuIdentity(index, "", "")
        return GpuReading(identity, up=False)

    def _identity(self, device: Device) -> GpuIdentity:
        known = self.identities.get(device.index)
        if known is not None:
            return known
        nv, h = self.nv, device.handle
        uuid = text(nv.nvmlDeviceGetUUID(h))
        bus = normalise_bus_id(text(nv.nvmlDeviceGetPciInfo(h).busId))
        info = {"name": text(nv.nvmlDeviceGetName(h))}
        serial = device.one("serial", "nvmlDeviceGetSerial")
        vbios = device.one("vbios", "nvmlDeviceGetVbiosVersion")
        if vbios is not None:
            info["vbios"] = text(vbios)
        mig = device.one("mig_mode", "nvmlDeviceGetMigMode")
        if mig is not None:
            info["mig_mode"] = MIG_MODES.get(int(mig[0]), str(mig[0]))
        identity = GpuIdentity(
            device.index,
            uuid,
            bus,
            text(serial) if serial is not None else "",
            tuple(sorted({**info, **dict(self._system_info())}.items())),
        )
        self.identities[device.index] = identity
        self._identity_fields[device.index] = set(device.fields)
        return identity

    def _system_info(self) -> tuple[tuple[str, str], ...]:
        if self._system is None:
            out: dict[str, str] = {}
            for label, name in (
                ("driver", "nvmlSystemGetDriverVersion"),
                ("cuda", "nvmlSystemGetCudaDriverVersion"),
            ):
                try:
                    value = getattr(self.nv, name)()
                except (self.nv.NVMLError, AttributeError):
                    continue
                out[label] = cuda_version(int(value)) if label == "cuda" else text(value)
            self._system = tuple(sorted(out.items()))
        return self._system


def _processes(device: Device, identity: GpuIdentity) -> list[GpuProcessUse]:
    out = []
    for kind, call in (
        ("compute", "nvmlDeviceGetComputeRunningProcesses"),
        ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
    ):
        for p in device.one(f"processes.{kind}", call) or ():
            used = getattr(p, "usedGpuMemory", None)
            out.append(
                GpuProcessUse(
                    str(identity.index), identity.uuid, identity.pci_bus_id, int(p.pid),
                    None if used is None else float(used), kind,
                )
            )  # fmt: skip
    return out
