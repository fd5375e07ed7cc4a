"""Wires the GPU source: its samples go to the store as any poll's; a GPU NVML reports lost
becomes a ``gpu_lost`` event; the expectations of ``gpus.devices`` are exported every tick."""

from __future__ import annotations

from inferwatch.clock import Clock
from inferwatch.config.models import GpuConfig
from inferwatch.derive.gpu_expectations import HELP, expectation_samples
from inferwatch.event import Event, Kind
from inferwatch.model import SampleBatch
from inferwatch.pipeline.sink import EventSink
from inferwatch.sources.gpu_processes import GPU_PROCESS_HELP
from inferwatch.sources.gpu_readings import GPU_METRICS, GpuIdentity
from inferwatch.sources.gpus import GpuSource
from inferwatch.store.tsdb import SeriesStore


def describe_gpu_metrics(store: SeriesStore) -> None:
    for name, (kind, text) in GPU_METRICS.items():
        store.describe(name, kind, text)
    for name, text in HELP.items():
        store.describe(name, Kind.GAUGE, text)
    for name, text in GPU_PROCESS_HELP.items():
        store.describe(name, Kind.GAUGE, text)


def lost_event(gpu: GpuIdentity, at: float, source: str) -> Event:
    labels = {k: v for k, v in gpu.labels().items() if v}
    return Event(
        "gpu_lost",
        at,
        source,
        f"{source}:gpu_lost:{gpu.uuid or gpu.index}:{at:.3f}",
        labels=labels,
        details={**labels, "reason": "NVML_ERROR_GPU_IS_LOST"},
    )


class GpuPolling:
    """The polled source the scheduler sees: the GPU source, with its lost GPUs made events."""

    def __init__(
        self, source: GpuSource, cfg: GpuConfig, store: SeriesStore, sink: EventSink, clock: Clock
    ) -> None:
        self.source = source
        self.name = source.name
        self.interval = source.interval
        self.cfg = cfg
        self.store = store
        self.sink = sink
        self.clock = clock
        self._exported: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    async def poll(self) -> SampleBatch:
        batch = await self.source.poll()
        lost = self.source.take_lost()
        if lost:
            await self.sink([lost_event(gpu, batch.at, self.name) for gpu in lost])
        return batch

    async def tick(self) -> None:
        now = self.clock.time()
        samples = expectation_samples(self.cfg, self.source.identities)
        current = {(s.name, s.labels) for s in samples}
        for s in samples:
            self.store.set(s.name, s.labels, s.value, now)
        for name, labels in self._exported - current:
            self.store.mark_stale(name, labels, now)
        self._exported = current
