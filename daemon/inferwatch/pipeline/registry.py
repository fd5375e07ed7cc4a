"""The explicit table of source factories: config in, sources and their line handlers out.

Adding a source = one module + one line in :data:`FACTORIES` + its tests.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from inferwatch.clock import Clock
from inferwatch.config.models import Config, EngineConfig
from inferwatch.derive.kernel.pipeline import PipelineSettings
from inferwatch.pipeline.canary import CanaryWatch
from inferwatch.pipeline.dispatch import LineHandler, StatusHandler
from inferwatch.pipeline.downloads import (
    VERDICT_EVENTS,
    DownloadPolling,
    describe_download_metrics,
)
from inferwatch.pipeline.engine import EngineIngest, local_tz
from inferwatch.pipeline.gpus import GpuPolling, describe_gpu_metrics
from inferwatch.pipeline.host import HostWatch
from inferwatch.pipeline.kernel import KernelIngest
from inferwatch.pipeline.services import ServiceWatch
from inferwatch.pipeline.sink import EventSink
from inferwatch.pipeline.tail_metrics import tail_tick
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.runtime.watch import FileWatcher
from inferwatch.sources.base import PolledSource, Source
from inferwatch.sources.docker_logs import DockerLogsSource
from inferwatch.sources.engine_log import FileLinesSource
from inferwatch.sources.gpu_processes import ProcessTable
from inferwatch.sources.gpus import GpuSource, nvml_module, sampler_for
from inferwatch.sources.journald import JOURNAL_DIR, JournaldSource
from inferwatch.sources.kmsg import KmsgSource, read_boot_id
from inferwatch.sources.nvml_events import NvmlXidEvents
from inferwatch.sources.scrape import ProbeScrapeSource, ScrapeSource
from inferwatch.sources.unavailable import Unavailable
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore

PROBE_TIMEOUT_S = 5.0
ENGINE_LOG_POLL_GAP = 0.25
"""How late a busy engine log's lines may be read (``TailConfig.min_poll_gap``; kernel log files
keep the tailer's 0.1 s). What reads them waits far longer (a crash is decided over a 5-s
window, stats come every 10 s), while each poll has a fixed cost (names, rotated siblings,
truncation checks, the wake-ups): at 1,000 lines/s, 0.25 s instead of 0.1 s between polls took
the daemon from ~2.7 % to ~2.1 % of a core (bench/RESULTS.md, live ingest). A line after a quiet
spell is read as soon as it is written, whatever the gap."""
DEFAULT_ENGINE_METRICS = "http://127.0.0.1:8000/metrics"


@dataclass(slots=True)
class BuildContext:
    config: Config
    clock: Clock
    pool: BlockingPool
    store: SeriesStore
    events: EventLog
    checkpoints: dict[str, Any]
    sink: EventSink
    watcher: FileWatcher | None = None


@dataclass(slots=True)
class Built:
    sources: list[Source] = field(default_factory=list)
    polled: list[PolledSource] = field(default_factory=list)
    line_handlers: dict[str, LineHandler] = field(default_factory=dict)
    status_handlers: dict[str, StatusHandler] = field(default_factory=dict)
    disabled: list[str] = field(default_factory=list)
    ticks: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # sections of /api/v1/status (``services``): one callable per watched thing
    reports: dict[str, list[Callable[[], dict[str, Any]]]] = field(default_factory=dict)

    def extend(self, other: Built) -> None:
        self.sources.extend(other.sources)
        self.polled.extend(other.polled)
        self.line_handlers.update(other.line_handlers)
        self.status_handlers.update(other.status_handlers)
        self.disabled.extend(other.disabled)
        self.ticks.extend(other.ticks)
        for section, reports in other.reports.items():
            self.reports.setdefault(section, []).extend(reports)


def build_gpus(ctx: BuildContext) -> Built:
    cfg = ctx.config.gpus
    if cfg.backend == "off":
        return Built(disabled=["gpus (gpus.backend: off)"])
    describe_gpu_metrics(ctx.store)
    processes = ProcessTable(ctx.config.paths.proc)
    source = GpuSource(
        sampler_for(cfg.backend, cfg.profile, processes),
        ctx.clock,
        interval=cfg.interval,
        call_timeout=cfg.call_timeout,
    )
    polling = GpuPolling(source, cfg, ctx.store, ctx.sink, ctx.clock)
    return Built(polled=[polling], ticks=[polling.tick])


def build_kernel(ctx: BuildContext) -> Built:
    cfg = ctx.config.kernel
    if cfg.source == "off":
        return Built(disabled=["kernel (kernel.source: off)"])
    kmsg = ctx.config.paths.kmsg
    checkpoint = ctx.checkpoints.get("kernel")
    boot_id = read_boot_id(ctx.config.paths.proc)
    ingest = KernelIngest(
        ctx.store,
        ctx.sink,
        ctx.clock,
        boot_id=boot_id,
        alert_max_age=cfg.alert_max_age,
        first_start=checkpoint is None,
        settings=PipelineSettings(correlation_window=cfg.correlation_window),
        proc_root=ctx.config.paths.proc,
    )
    reasons: list[str] = []
    source: Source | None = None
    if cfg.source in ("auto", "kmsg"):
        if os.access(kmsg, os.R_OK):
            source = KmsgSource(kmsg, ctx.clock, boot_id=boot_id, checkpoint=checkpoint)
        else:
            reasons.append(f"{kmsg} is not readable (needs root or CAP_SYSLOG)")
    if source is None and cfg.source in ("auto", "journald"):
        if JOURNAL_DIR.is_dir() and shutil.which("journalctl"):
            source = JournaldSource(ctx.clock, checkpoint=checkpoint)
        else:
            reasons.append("journald is not running here (no /run/systemd/journal)")
    if source is None and cfg.source in ("auto", "file") and cfg.path is not None:
        source = FileLinesSource(
            "kernel", (str(cfg.path),), ctx.clock, checkpoint=checkpoint, watcher=ctx.watcher
        )
    built = Built(ticks=[ingest.tick], line_handlers={"kernel": ingest})
    if source is not None:
        built.sources.append(source)
        if isinstance(source, FileLinesSource):
            built.ticks.append(tail_tick(ctx.store, ctx.clock, source))
    else:
        if cfg.source in ("auto", "file"):
            reasons.append("no kernel.path configured")
        unreadable = "no kernel log readable: " + "; ".join(reasons)
        built.sources.append(Unavailable("kernel", unreadable))
    gpus = ctx.config.gpus
    if gpus.backend != "off":  # the driver's own Xid reports, counted once with the log's
        events = NvmlXidEvents(nvml_module(gpus.backend, gpus.profile), ctx.clock)
        built.sources.append(events)
        built.line_handlers[events.name] = ingest.on_nvml
    return built


def build_engines(ctx: BuildContext) -> Built:
    built = Built()
    engines = list(ctx.config.engines)
    implicit = not engines
    if implicit:
        engines = [EngineConfig(name="engine", metrics_url=DEFAULT_ENGINE_METRICS)]
    tz = local_tz()
    for engine in engines:
        logs = (f"engine:{engine.name}", f"engine:{engine.name}:journal",
                f"engine:{engine.name}:docker")  # fmt: skip
        first_start = not any(name in ctx.checkpoints for name in logs)
        ingest = EngineIngest(engine, ctx.store, ctx.sink, ctx.clock, tz, first_start=first_start)
        built.ticks.append(ingest.tick)
        if engine.log:
            name = f"engine:{engine.name}"
            built.line_handlers[name] = ingest.on_log_line
            lines = FileLinesSource(
                name,
                tuple(engine.log),
                ctx.clock,
                checkpoint=ctx.checkpoints.get(name),
                watcher=ctx.watcher,
                min_poll_gap=ENGINE_LOG_POLL_GAP,
            )
            built.sources.append(lines)
            built.ticks.append(tail_tick(ctx.store, ctx.clock, lines))
        if engine.journald_unit:
            name = f"engine:{engine.name}:journal"
            built.line_handlers[name] = ingest.on_log_line
            if JOURNAL_DIR.is_dir() and shutil.which("journalctl"):
                built.sources.append(
                    JournaldSource(
                        ctx.clock,
                        name=name,
                        checkpoint=ctx.checkpoints.get(name),
                        matches=("-u", engine.journald_unit),
                        start=("-n", "1000"),
                    )
                )
            else:
                built.sources.append(
                    Unavailable(name, "journald is not running here (no /run/systemd/journal)")
                )
        if engine.container:
            name = f"engine:{engine.name}:docker"
            built.line_handlers[name] = ingest.on_log_line
            built.sources.append(
                DockerLogsSource(
                    engine.container, ctx.clock, name=name, checkpoint=ctx.checkpoints.get(name)
                )
            )  # no docker here: the source says so (NoData) and is retried
        if engine.metrics_url is not None:
            kind = ProbeScrapeSource if implicit else ScrapeSource
            scrape = kind(
                engine.name,
                str(engine.metrics_url),
                clock=ctx.clock,
                interval=engine.scrape_interval,
                deadline=engine.scrape_timeout,
                max_bytes=engine.body_size_limit,
            )
            built.line_handlers[scrape.name] = ingest.on_scrape
            built.status_handlers[scrape.name] = ingest.on_scrape_status
            built.polled.append(scrape)
    return built


def build_downloads(ctx: BuildContext) -> Built:
    if ctx.config.downloads:
        describe_download_metrics(ctx.store)
    # verdicts written to the event log after the last snapshot (a kill -9 in between)
    past: list[dict[str, Any]] = []
    if ctx.config.downloads:
        try:
            past = ctx.events.query(types=VERDICT_EVENTS, limit=1000)
        except (sqlite3.Error, OSError):  # a disk fault: the checkpoint alone decides
            past = []
    polled: list[PolledSource] = [
        DownloadPolling(
            d,
            ctx.store,
            ctx.sink,
            ctx.clock,
            ctx.checkpoints.get(f"download:{d.name}"),
            [e for e in past if e["source"] == f"download:{d.name}"],
        )
        for d in ctx.config.downloads
    ]
    return Built(polled=polled)


def build_services(ctx: BuildContext) -> Built:
    built = Built()
    for cfg in ctx.config.services:
        timeout = min(PROBE_TIMEOUT_S, cfg.interval)

        async def run_blocking(fn: Callable[[], Any], timeout: float = timeout) -> Any:
            return await ctx.pool.run(timeout, fn)

        watch = ServiceWatch(cfg, ctx.store, ctx.sink, ctx.clock, run_blocking)
        built.polled.append(watch)
        built.reports.setdefault("services", []).append(watch.status)
    return built


def build_canaries(ctx: BuildContext) -> Built:
    built = Built()
    for engine in ctx.config.engines:
        if engine.canary is not None:
            watch = CanaryWatch(engine, engine.canary, ctx.store, ctx.sink, ctx.clock)
            built.polled.append(watch)
            built.reports.setdefault("canaries", []).append(watch.status)
    return built


def build_host(ctx: BuildContext) -> Built:
    cfg = ctx.config.host
    if not cfg.enabled:
        return Built(disabled=["host (host.enabled: false)"])

    async def run_blocking(timeout: float, fn: Callable[[], Any]) -> Any:
        return await ctx.pool.run(timeout, fn)

    return Built(polled=[HostWatch(cfg, ctx.config.paths.proc, ctx.store, ctx.clock, run_blocking)])


FACTORIES: dict[str, Callable[[BuildContext], Built]] = {
    "kernel": build_kernel,
    "gpus": build_gpus,
    "engines": build_engines,
    "downloads": build_downloads,
    "services": build_services,
    "canaries": build_canaries,
    "host": build_host,
}


def build_all(ctx: BuildContext) -> Built:
    built = Built()
    for factory in FACTORIES.values():
        built.extend(factory(ctx))
    return built
