"""The explicit table of source factories: config in, sources and their line handlers out.

Adding a source = one module + one line in :data:`FACTORIES` + its tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferwatch.clock import Clock
from inferwatch.config.models import Config
from inferwatch.dispatch import LineHandler
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.sources.base import PolledSource, Source
from inferwatch.sources.gpu_readings import GPU_HELP, GpuReading
from inferwatch.sources.gpus import GpuSource, NvmlReader, read_fake_profile
from inferwatch.store.events import EventLog
from inferwatch.store.series import Kind
from inferwatch.store.tsdb import SeriesStore

NVML_TIMEOUT_S = 10.0


@dataclass(slots=True)
class BuildContext:
    config: Config
    clock: Clock
    pool: BlockingPool
    store: SeriesStore
    events: EventLog
    checkpoints: dict[str, Any]


@dataclass(slots=True)
class Built:
    sources: list[Source] = field(default_factory=list)
    polled: list[PolledSource] = field(default_factory=list)
    line_handlers: dict[str, LineHandler] = field(default_factory=dict)
    disabled: list[str] = field(default_factory=list)

    def extend(self, other: Built) -> None:
        self.sources.extend(other.sources)
        self.polled.extend(other.polled)
        self.line_handlers.update(other.line_handlers)
        self.disabled.extend(other.disabled)


def build_gpus(ctx: BuildContext) -> Built:
    cfg = ctx.config.gpus
    if cfg.backend == "off":
        return Built(disabled=["gpus (gpus.backend: off)"])
    for name, text in GPU_HELP.items():
        ctx.store.describe(name, Kind.GAUGE, text)
    if cfg.backend == "fake":
        assert cfg.profile is not None  # validated by the config model
        profile = cfg.profile

        def reader() -> list[GpuReading]:
            return read_fake_profile(profile)
    else:
        reader = NvmlReader()

    async def run_blocking(fn: Callable[[], list[GpuReading]]) -> list[GpuReading]:
        return await ctx.pool.run(NVML_TIMEOUT_S, fn)

    return Built(polled=[GpuSource(reader, ctx.clock, run_blocking, cfg.interval)])


FACTORIES: dict[str, Callable[[BuildContext], Built]] = {
    "gpus": build_gpus,
}


def build_all(ctx: BuildContext) -> Built:
    built = Built()
    for factory in FACTORIES.values():
        built.extend(factory(ctx))
    return built
