"""Runs every source as an asyncio task and keeps one broken source from stopping the others.

``NoData`` is reported once and the source is retried slowly; any other exception is counted in
``inferwatch_source_errors_total{stage="run"}``, logged once per distinct message, and the
source restarts with exponential backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from inferwatch.clock import Clock
from inferwatch.errors import NoData
from inferwatch.logsetup import get_logger
from inferwatch.model import Record
from inferwatch.pipeline.telemetry import Telemetry
from inferwatch.redact import redact
from inferwatch.sources.base import (
    Announcing,
    Emit,
    Health,
    PolledSource,
    SelfReporting,
    Source,
)

log = get_logger(__name__)
Sleep = Callable[[float], Awaitable[None]]


class Supervisor:
    def __init__(
        self,
        telemetry: Telemetry,
        clock: Clock,
        *,
        sleep: Sleep = asyncio.sleep,
        backoff_min: float = 1.0,
        backoff_max: float = 60.0,
        no_data_retry: float = 60.0,
    ) -> None:
        self.telemetry = telemetry
        self.clock = clock
        self.sleep = sleep
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self.no_data_retry = no_data_retry
        self.health: dict[str, Health] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._reporting: dict[str, SelfReporting] = {}
        self._resting: set[str] = set()  # between a failure (or "no data") and the retry

    def start(self, source: Source, emit: Emit) -> None:
        name = source.name
        health = self.health[name] = Health(since=self.clock.time())
        self.telemetry.source_up(name, True)  # starting: nothing has failed

        async def emit_marking(record: Record) -> None:
            if health.state != "up":  # it reads: up, whatever it said before
                self.mark(name, "up")
            await emit(record)

        if isinstance(source, SelfReporting):
            self._reporting[name] = source
        self._tasks[name] = asyncio.create_task(
            self._keep_running(source, emit_marking), name=f"source:{name}"
        )

    def refresh(self) -> None:
        """Write every source's health again (the daemon's tick): a source that has been up
        for an hour keeps its ``inferwatch_source_up`` series fresh, as a scrape would. A source
        that reports its input (a followed file) is marked by it first: a log replaced by a FIFO
        or a directory is down with the reason, one that appears later is up again."""
        for name, source in self._reporting.items():
            health = self.health.get(name)
            if health is None or health.state == "stopped" or name in self._resting:
                continue
            found = source.input_health()
            if found is None:
                continue
            state, reason = found
            if state == "error" and (health.state, health.reason) != found:
                log.error("cannot read input", source=name, reason=redact(reason))
            self.mark(name, state, redact(reason))
        for name, health in self.health.items():
            if health.state != "stopped":
                self.telemetry.source_up(
                    name, health.state in ("up", "starting"), no_data=health.state == "no_data"
                )

    async def stop(self, timeout: float = 2.0) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        for health in self.health.values():
            health.state = "stopped"
        self._tasks.clear()
        self._reporting.clear()

    def mark(self, name: str, state: str, reason: str = "") -> None:
        """Let a running source say how it is (``up`` once it reads, ``no_data`` and why)."""
        health = self.health.setdefault(name, Health())
        if health.state != state or health.reason != reason:
            health.state, health.reason, health.since = state, reason, self.clock.time()
            if state == "no_data":
                log.warning("cannot see input", source=name, reason=reason)
        self.telemetry.source_up(name, state == "up", no_data=state == "no_data")

    async def _keep_running(self, source: Source, emit: Emit) -> None:
        delay = self.backoff_min
        last_error = ""
        while True:
            health = self.health[source.name]
            started = self.clock.monotonic()
            try:
                await source.run(emit)
                return
            except asyncio.CancelledError:
                raise
            except NoData as exc:
                self.mark(source.name, "no_data", redact(str(exc)))
                await self._rest(source.name, self.no_data_retry)
                continue
            except Exception as exc:
                message = redact(f"{type(exc).__name__}: {exc}")
                self.telemetry.source_error(source.name, "run", type(exc).__name__)
                if message != last_error:
                    log.error("source failed; restarting", source=source.name, error=message)
                    last_error = message
                health.last_error = message
                health.restarts += 1
                self.mark(source.name, "error", message)
            if self.clock.monotonic() - started > self.backoff_max:
                delay = self.backoff_min  # it ran well for a while: this is a fresh failure
            await self._rest(source.name, delay)
            delay = min(delay * 2, self.backoff_max)

    async def _rest(self, name: str, seconds: float) -> None:
        self._resting.add(name)
        try:
            await self.sleep(seconds)
        finally:
            self._resting.discard(name)

    async def poll(self, source: PolledSource, emit: Emit) -> None:
        """One scheduled run of a polled source, with the same error discipline as ``run``."""
        health = self.health.setdefault(source.name, Health(since=self.clock.time()))
        started = self.clock.monotonic()
        try:
            record = await source.poll()
        except NoData as exc:
            self.mark(source.name, "no_data", redact(str(exc)))
            return
        except Exception as exc:
            message = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            self.telemetry.source_error(source.name, "poll", type(exc).__name__)
            if message != health.last_error:
                log.error("source poll failed", source=source.name, error=message)
            health.last_error = message
            self.mark(source.name, "error", message)
            await self._notices(source, emit)
            return
        finally:
            self.telemetry.scrape_duration(source.name, self.clock.monotonic() - started)
        self.mark(source.name, "up")
        await self._notices(source, emit)
        if record is not None:
            await emit(record)

    async def _notices(self, source: PolledSource, emit: Emit) -> None:
        if isinstance(source, Announcing):
            for notice in source.notices():
                await emit(notice)
