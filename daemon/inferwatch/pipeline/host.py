"""The host reader (``host:``): a polled source named ``host`` whose poll reads meminfo and the
pressure files and returns their numbers as one sample batch; files listed in
``host.resident_files`` are measured every ``RESIDENT_EVERY_S`` and their last measure is
carried in every batch. No meminfo here is "no data"; no pressure file (a kernel without PSI)
means no pressure series."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from inferwatch.clock import Clock
from inferwatch.config.models import HostConfig
from inferwatch.errors import NoData
from inferwatch.event import Kind
from inferwatch.labels import make_labels
from inferwatch.model import Sample, SampleBatch
from inferwatch.parsers.meminfo import parse_meminfo, parse_pressure
from inferwatch.sources.host import read_host, resident_bytes
from inferwatch.store.tsdb import SeriesStore

AVAILABLE = "inferwatch_host_memory_available_bytes"
TOTAL = "inferwatch_host_memory_total_bytes"
PAGE_CACHE = "inferwatch_host_page_cache_bytes"
SWAP_USED = "inferwatch_host_swap_used_bytes"
STALLED = "inferwatch_host_pressure_stalled_seconds_total"
RESIDENT = "inferwatch_host_file_resident_bytes"
HELP = {
    AVAILABLE: (Kind.GAUGE, "MemAvailable: memory available for new work without swapping."),
    TOTAL: (Kind.GAUGE, "MemTotal: usable RAM."),
    PAGE_CACHE: (Kind.GAUGE, "Cached: file pages in the page cache (memory-mapped files too)."),
    SWAP_USED: (Kind.GAUGE, "SwapTotal minus SwapFree."),
    STALLED: (
        Kind.COUNTER,
        "Time tasks stalled on the resource (PSI; some: at least one, full: all).",
    ),
    RESIDENT: (
        Kind.GAUGE,
        "Bytes of the file in the page cache (mincore), sampled every 10 minutes.",
    ),
}
RESIDENT_EVERY_S = 600.0
RESIDENT_TIMEOUT_S = 60.0


class HostWatch:
    def __init__(
        self,
        cfg: HostConfig,
        proc: Path,
        store: SeriesStore,
        clock: Clock,
        run_blocking: Callable[[float, Callable[[], Any]], Awaitable[Any]],
    ) -> None:
        self.name = "host"
        self.interval = cfg.interval
        self.cfg = cfg
        self.proc = proc
        self.clock = clock
        self._blocking = run_blocking
        self._resident: dict[str, float] = {}
        self._resident_at: float | None = None
        for name, (kind, text) in HELP.items():
            store.describe(name, kind, text)

    async def poll(self) -> SampleBatch:
        at = self.clock.time()
        texts = await self._blocking(5.0, lambda: read_host(self.proc))
        if texts.meminfo is None:
            raise NoData(f"{self.proc / 'meminfo'} is not readable")
        mem = parse_meminfo(texts.meminfo)
        samples: list[Sample] = []
        for name, value in (
            (AVAILABLE, mem.get("MemAvailable")),
            (TOTAL, mem.get("MemTotal")),
            (PAGE_CACHE, mem.get("Cached")),
            (SWAP_USED, _minus(mem.get("SwapTotal"), mem.get("SwapFree"))),
        ):
            if value is not None:
                samples.append(Sample(name, (), float(value)))
        for resource, text in sorted(texts.pressure.items()):
            for scope, seconds in sorted(parse_pressure(text).items()):
                labels = make_labels({"resource": resource, "scope": scope})
                samples.append(Sample(STALLED, labels, seconds, Kind.COUNTER))
        if self.cfg.resident_files:
            await self._measure_resident(at)
            for path, resident in sorted(self._resident.items()):
                samples.append(Sample(RESIDENT, make_labels({"path": path}), resident))
        return SampleBatch(self.name, at, tuple(samples))

    async def _measure_resident(self, at: float) -> None:
        if self._resident_at is not None and at - self._resident_at < RESIDENT_EVERY_S:
            return
        self._resident_at = at
        files = list(self.cfg.resident_files)

        def measure() -> dict[str, float]:
            found = {str(p): resident_bytes(p) for p in files}
            return {p: float(v) for p, v in found.items() if v is not None}

        self._resident = await self._blocking(RESIDENT_TIMEOUT_S, measure)


def _minus(a: int | None, b: int | None) -> int | None:
    return a - b if a is not None and b is not None else None
