"""Kernel records from the live sources → the kernel pipeline → store and event log.

Turns a /dev/kmsg or journald record into a :class:`KernelInput` (wall time from the record's
own clock, idempotency key from its position), runs the pure pipeline and applies the effects
before the record is acknowledged. On a first start without a checkpoint, records older than
``kernel.alert_max_age`` are counted and kept as events but marked non-alertable: a host that
ran for weeks has a ring full of old faults.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import replace
from pathlib import Path

from inferwatch.clock import Clock
from inferwatch.derive.kernel.effects import KernelInput, kernel_input
from inferwatch.derive.kernel.metrics import KERNEL_METRICS
from inferwatch.derive.kernel.pipeline import NVML_SOURCE, KernelPipeline, PipelineSettings
from inferwatch.event import Event
from inferwatch.model import JournalRecord, LineRecord, NvmlXidRecord
from inferwatch.parsers.kernel import parse_kernel_line, parse_kmsg_record
from inferwatch.parsers.kernel_message import Kinds, triage
from inferwatch.parsers.nvidia_proc import ProcGpu, parse_information
from inferwatch.parsers.xid import XidEvent
from inferwatch.pipeline.sink import EventSink, apply_effects
from inferwatch.store.tsdb import SeriesStore


def describe_kernel_metrics(store: SeriesStore) -> None:
    for spec in KERNEL_METRICS:
        store.describe(spec.name, spec.kind, spec.help)


class KernelIngest:
    def __init__(
        self,
        store: SeriesStore,
        sink: EventSink,
        clock: Clock,
        *,
        boot_id: str,
        alert_max_age: float,
        first_start: bool,
        settings: PipelineSettings | None = None,
        proc_root: Path | None = None,
    ) -> None:
        self.store = store
        self.sink = sink
        self.clock = clock
        self.boot_id = boot_id
        self.alert_max_age = alert_max_age
        self.first_start = first_start
        self.pipeline = KernelPipeline(settings)
        self.proc_root = proc_root
        self._gpus: dict[str, ProcGpu] = {}
        self._nvml_gpus: dict[str, tuple[str, str]] = {}
        self._gpus_read_at = -1e18
        describe_kernel_metrics(store)

    def to_input(self, record: LineRecord) -> KernelInput | None:
        """The record as the kernel pipeline takes it, parsed once; None for the (many) records
        that no kernel parser can match, found by one cheap triage before any parsing."""
        kinds = triage(record.text)
        if not kinds:
            return None
        if isinstance(record, JournalRecord):
            return self._input(
                record.source,
                record.line_no,
                record.wall_time,
                record.text,
                record.key,
                kinds,
                facility=record.facility_name,
                level=record.level,
            )
        if record.mono_at is None:
            return self._text_input(record, kinds)
        kmsg = parse_kmsg_record(record.text)
        if kmsg is None:
            return None
        mono = record.mono_at if record.mono_at is not None else self.clock.monotonic()
        at = record.read_at - mono + kmsg.monotonic_seconds
        line = kmsg.to_kernel_line()
        key = f"{self.boot_id}:{kmsg.seq}"
        return self._input(
            record.source,
            kmsg.seq,
            at,
            kmsg.message,
            key,
            kinds,
            facility=line.facility,
            level=line.level,
        )

    def _text_input(self, record: LineRecord, kinds: Kinds) -> KernelInput | None:
        """A line of a saved kernel log (kern.log, dmesg output): time from its own prefix."""
        line = parse_kernel_line(record.text)
        if line.continuation:
            return None
        at: float | None = None
        if line.wall is not None:
            wall = line.wall
            if line.year_missing:
                wall = line.wall_in_year(time.gmtime(self.clock.time()).tm_year) or wall
            if wall.tzinfo is None:
                wall = wall.astimezone()  # naive syslog/dmesg -T times are the host's local time
            at = wall.timestamp()
        if at is None or at > self.clock.time() + 86400:
            at = record.read_at
        key = f"{record.path}:{record.line_no}:{zlib.crc32(record.text.encode()):08x}"
        return self._input(
            record.source,
            record.line_no,
            at,
            line.message,
            key,
            kinds,
            facility=line.facility,
            level=line.level,
        )

    def _input(
        self,
        source: str,
        line: int,
        at: float,
        message: str,
        key: str,
        kinds: Kinds,
        *,
        facility: str | None,
        level: str | None,
    ) -> KernelInput:
        alertable = not (self.first_start and self.clock.time() - at > self.alert_max_age)
        return kernel_input(
            source, line, at, message, key,
            kinds=kinds, facility=facility, level=level, alertable=alertable,
        )  # fmt: skip

    async def __call__(self, record: LineRecord) -> None:
        item = self.to_input(record)
        if item is None:
            return
        await apply_effects(self.pipeline.process(item), self.store, self.sink, self._enrich)

    async def nvml_xid(self, pci_bus_id: str, xid: int, at: float, gpu: str, uuid: str) -> None:
        """An Xid the driver reported through an NVML event (``sources/nvml_events``): into the
        same pipeline, where the kernel line of the same fault, if it comes, is preferred."""
        self._nvml_gpus[pci_bus_id] = (gpu, uuid)
        record = XidEvent(xid=xid, pci_bus_id=pci_bus_id, message=f"NVML event: Xid {xid}")
        key = f"nvml:{pci_bus_id}:{xid}:{at:.6f}"
        item = KernelInput(NVML_SOURCE, 0, at, record.message, key, record)
        await apply_effects(self.pipeline.process(item), self.store, self.sink, self._enrich)

    async def on_nvml(self, record: LineRecord) -> None:
        """The handler of the NVML Xid source's records."""
        if isinstance(record, NvmlXidRecord):
            await self.nvml_xid(record.pci_bus_id, record.xid, record.read_at, record.gpu,
                                record.uuid)  # fmt: skip

    async def tick(self) -> None:
        """Let time-decided effects (settled repeat bursts) out even when the log is quiet."""
        effects = self.pipeline.advance(self.clock.time())
        await apply_effects(effects, self.store, self.sink, self._enrich)

    def _enrich(self, event: Event) -> Event:
        """Tie a fault's bus id to its GPU (index = device minor, UUID) from the driver's /proc
        files when the log itself did not name the UUID (DESIGN.md §4 Identifiers)."""
        bus = event.details.get("pci_bus_id")
        if not isinstance(bus, str) or event.details.get("uuid"):
            return event
        gpu = self._proc_gpu(bus)
        if gpu is not None:
            index: int | str | None = gpu.minor
            uuid: str | None = gpu.uuid
        elif bus in self._nvml_gpus:
            index, uuid = self._nvml_gpus[bus]
        else:
            return event
        details = dict(event.details)
        details["uuid"] = uuid
        details.setdefault("gpu", index)
        return replace(event, details=details)

    def _proc_gpu(self, bus: str) -> ProcGpu | None:
        now = self.clock.monotonic()
        if self.proc_root is not None and bus not in self._gpus and now - self._gpus_read_at > 60:
            self._gpus_read_at = now
            self._gpus = read_proc_gpus(self.proc_root)
        return self._gpus.get(bus)


def read_proc_gpus(proc_root: Path) -> dict[str, ProcGpu]:
    """Every GPU the driver lists under ``<proc>/driver/nvidia/gpus`` (none without the driver)."""
    out: dict[str, ProcGpu] = {}
    for info in sorted((proc_root / "driver" / "nvidia" / "gpus").glob("*/information")):
        try:
            gpu = parse_information(info.read_text(errors="replace"), info.parent.name)
        except OSError:
            continue
        out[gpu.pci_bus_id] = gpu
    return out
