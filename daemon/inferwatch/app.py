"""The daemon: wires sources → dispatcher → store, the exporter, the scheduler and signals.

Life cycle: restore state, start sources and the HTTP server, tell systemd READY=1; on SIGHUP
reload the config (a bad file keeps the running one); on SIGTERM/SIGINT stop sources, drain the
queues, write the final snapshot and exit 0 within 5 s.

A full or read-only state dir is a fault, not corruption: nothing is moved aside, notifications
are still written first and delivered (kept in memory while the disk refuses them), a failed
event or snapshot write is counted and reported, and a state dir read-only at start runs with
its state in memory (:mod:`inferwatch.store.faults`).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import math
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

from inferwatch import __version__
from inferwatch.alerts.model import AlertTransition
from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.config.defaults import default_external_labels
from inferwatch.config.models import Config
from inferwatch.config.types import split_listen
from inferwatch.configfile import load_with_web
from inferwatch.errors import ConfigError
from inferwatch.event import Event, Kind
from inferwatch.export.amv2 import AlertmanagerV2
from inferwatch.export.collector import StoreCollector
from inferwatch.export.digest_preview import DigestPreview
from inferwatch.export.exposure import EXPOSED_HELP, EXPOSED_METRIC, exposure_problem
from inferwatch.export.management import Management
from inferwatch.export.page.routes import PageSource
from inferwatch.export.query_api import QueryAPI
from inferwatch.export.server import ExportServer, build_registry
from inferwatch.labels import make_labels
from inferwatch.logsetup import get_logger
from inferwatch.notify.digest.schedule import DigestService
from inferwatch.notify.service import SILENCES_FILE, NotifyService
from inferwatch.notify.silence import Silences
from inferwatch.notify.silence_api import SilenceAPI
from inferwatch.pipeline.bus import Bus
from inferwatch.pipeline.dispatch import Dispatcher
from inferwatch.pipeline.downloads import DownloadPolling
from inferwatch.pipeline.registry import BuildContext, Built, build_all
from inferwatch.pipeline.supervisor import Supervisor
from inferwatch.pipeline.telemetry import Telemetry
from inferwatch.rules.service import RuleService
from inferwatch.runtime import heap
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.runtime.live_scheduler import LiveScheduler
from inferwatch.runtime.sdnotify import Notifier
from inferwatch.runtime.watch import FileWatcher, Subscription
from inferwatch.sources.base import Checkpointed
from inferwatch.statedir import EVENTS_FILE, SNAPSHOT_FILE, prepare_state_dir
from inferwatch.store import snapshot
from inferwatch.store.events import EventLog
from inferwatch.store.faults import StateFaults, is_disk_fault, probe_writable
from inferwatch.store.limits import SeriesLimits
from inferwatch.store.sqlite import StateUnavailable
from inferwatch.store.tsdb import SeriesStore

log = get_logger(__name__)
TICK_S = 1.0
OUTBOX_KEEP_S = 7 * 86400.0
TRANSITION_SNAPSHOT_S = 2.0
NOTIFY_WAIT_S = 1.0
SNAPSHOT_EVERY_S = 30.0
STOP_BUDGET_S = 4.5
IO_TIMEOUT_S = 10.0


class Daemon:
    def __init__(
        self,
        config: Config,
        state_dir: Path,
        *,
        config_path: Path | None = None,
        web_config_path: Path | None = None,
        listen: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        notifier: Notifier | None = None,
        settle_heap: bool = False,
    ) -> None:
        self.config = config
        self.settle_heap = settle_heap  # the process is this daemon's alone (runtime.heap)
        self.config_path = config_path
        self.web_config_path = web_config_path
        self.state_dir = state_dir
        self.listen = listen or config.listen
        self.clock = clock
        self.notifier = notifier or Notifier()
        self.store = SeriesStore(clock, limits=series_limits(config))
        self.faults = StateFaults(self.store, clock, state_dir)
        self.read_only = False
        self.telemetry = Telemetry(self.store)
        self.pool = BlockingPool()
        self.supervisor = Supervisor(self.telemetry, clock)
        self.bus = Bus(self.telemetry)
        self.dispatcher = Dispatcher(self.store, self.telemetry, self._store_events)
        self.scheduler = LiveScheduler(on_error=self._job_failed)
        self.events: EventLog | None = None
        self.watcher = FileWatcher()
        self.rules = RuleService(
            self.store,
            clock,
            config.rule_files,
            external_labels=default_external_labels(config.external_labels),
            state_dir=state_dir,
            external_url=str(config.external_url or "").rstrip("/"),
        )
        self.rules.manager.alert_limit = config.limits.alerts_per_rule
        self._rule_watch: list[Subscription] = []
        self.notify: NotifyService | None = None
        # before the snapshot is restored: digests keep two windows of the engine series
        self.digests = DigestService(
            config, self.store, clock, lambda: self.notify, self._query_events, self._store_events
        )
        self.server: ExportServer | None = None
        self.built = Built()
        self.problems: list[str] = []
        self._exposure: str | None = None
        self.started_at = clock.time()
        self.last_snapshot: float | None = None
        self.checkpoints: dict[str, Any] = {}
        self._restored_alerts: str | None = None
        self._stop = asyncio.Event()
        self._notify_lock = asyncio.Lock()
        self._snapshot_lock = asyncio.Lock()
        self._snapshot_queued = False
        self._snapshot_mono = -math.inf
        self._background: set[asyncio.Future[None]] = set()
        self._sending: set[asyncio.Future[None]] = set()  # notify ticks kicked by transitions
        self.rules.settle = self._sent
        self._reload = asyncio.Event()
        self._reload_lock = asyncio.Lock()
        self.reload_problem: str | None = None  # the last failed reload's problems, until one works
        self.ready = False  # sources started and the first rule evaluation ran (/-/ready)

    # -- life cycle -------------------------------------------------------------------------
    async def run(self) -> int:
        self.rules.load()  # first: rules say how much history the restored series must keep
        self._restore()
        self.notify = self._notify_service(self.config)
        self.digests.apply(self.config, self.scheduler)
        self.rules.sink = self._on_transitions
        self.rules.restore(self._restored_alerts)
        self.store.on_change(self.rules.on_change)
        self.telemetry.build_info()
        self.telemetry.config_reload(True, self.clock.time())
        host, port = split_listen(self.listen)
        registry = build_registry(StoreCollector(self.store, self.clock))
        silence_api = SilenceAPI(self._silences, self.state_dir / SILENCES_FILE, self.clock)
        am = AlertmanagerV2(
            silence_api,
            lambda: self.rules.manager.alerts(),  # noqa: PLW0108 (a reload replaces the manager)
            lambda: self.notify,
            self._am_config,
            self.clock,
            started_at=self.started_at,
        )
        management = Management(lambda: self.ready, self.reload)
        self.server = ExportServer(
            registry,
            self.status,
            self._query_events,
            self._scraped,
            alerts=self.rules.alerts_doc,
            silences=silence_api,
            web_config=self.config.web,
            routes=[
                *management.routes(),
                *am.routes(),
                *DigestPreview(self.digests.preview).routes(),
            ],
        )
        self.server.app.add_routes(QueryAPI(self.store, self.clock.time).routes())
        self.server.app.add_routes(self._page_source().routes())
        try:
            bound = await self.server.start(host, port)
        except OSError as exc:
            log.error("cannot listen", listen=self.listen, error=exc.strerror)
            self._close_state()
            return 1
        self._report_exposure(warn=True)
        self.watcher.start()
        self._watch_rules()
        self._start_sources()
        self._schedule()
        self.scheduler.start()
        self._install_signals()
        log.info(
            "inferwatch running",
            version=__version__,
            listen=f"{bound[0]}:{bound[1]}",
            state_dir=str(self.state_dir),
            config=str(self.config_path) if self.config_path else "embedded defaults",
        )
        self.notifier.ready(f"serving on {bound[0]}:{bound[1]}")
        if self.settle_heap:
            heap.settle()
        while not self._stop.is_set():
            waiter = asyncio.ensure_future(self._reload.wait())
            stopper = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
            if self._reload.is_set() and not self._stop.is_set():
                self._reload.clear()
                await self.reload()
        await self.shutdown()
        return 0

    def request_stop(self) -> None:
        self._stop.set()

    def request_reload(self) -> None:
        self._reload.set()

    async def shutdown(self) -> None:
        deadline = time.monotonic() + STOP_BUDGET_S
        self.notifier.stopping()
        self.scheduler.shutdown()
        await self.supervisor.stop(timeout=1.5)
        await self.bus.drain(max(0.1, min(1.0, deadline - time.monotonic())))
        await self.bus.stop()
        try:
            await self.write_snapshot(timeout=max(0.5, deadline - time.monotonic() - 0.3))
        except Exception as exc:
            log.error("final snapshot failed", error=repr(exc))
        if self.server is not None:
            await self.server.stop()
        # evaluations still queued on the loop must not reach a closed outbox
        self.rules.sink = None
        if self.notify is not None:
            await self.notify.close()
        self.watcher.stop(timeout=0.5)
        if not self.pool.shutdown(timeout=max(0.2, deadline - time.monotonic())):
            log.warning("a blocking call is still running at exit")
        self._close_state()
        log.info("inferwatch stopped")

    def _close_state(self) -> None:
        if self.events is not None:
            self.events.close()
            self.events = None

    # -- state ------------------------------------------------------------------------------
    def _notify_service(self, config: Config) -> NotifyService:
        return NotifyService(
            config,
            self.store,
            self.clock,
            self.state_dir,
            faults=self.faults,
            read_only=self.read_only,
        )

    def _restore(self) -> None:
        prepare_state_dir(self.state_dir)
        refused = probe_writable(self.state_dir)
        if refused is not None and is_disk_fault(refused):
            self.read_only = True
            self.faults.read_only_at_start = (
                f"state dir {self.state_dir} is read-only ({refused.strerror}): running with "
                "state in memory; events, notifications and snapshots are not saved (make it "
                "writable and restart)"
            )
            log.error("state dir is read-only; running with state in memory", error=str(refused))
        path = self.state_dir / EVENTS_FILE
        try:
            self.events = EventLog.memory(path) if self.read_only else EventLog(path)
        except StateUnavailable as exc:
            self.problems.append(f"{exc}: the event log is kept in memory")
            log.error("event log cannot be written; kept in memory", error=str(exc))
            self.events = EventLog.memory(path)
        if self.events.recovered:
            self.problems.append(self.events.recovered)
        restored = snapshot.restore(self.state_dir / SNAPSHOT_FILE, self.store, self.clock.time())
        if restored.problem:
            self.problems.append(restored.problem)
        self.checkpoints = restored.checkpoints
        self._restored_alerts = restored.alerts
        if restored.series:
            log.info("state restored", series=restored.series, written_at=restored.written_at)

    async def write_snapshot(self, timeout: float = IO_TIMEOUT_S) -> None:
        # A pending notification tick saves its groups first (never alert state without them);
        # bounded, as a receiver that hangs must not hold the snapshot or a SIGTERM.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(timeout, NOTIFY_WAIT_S)), self._notify_lock:
                pass
        async with self._snapshot_lock:  # one writer: the periodic job or a transition's
            await self._write_snapshot(timeout)

    def _snapshot_soon(self) -> None:
        """After an alert transition: commit the inputs that caused it at once, so that a kill -9
        now does not re-read them after the restart and announce the alert a second time."""
        if self._snapshot_queued:
            return
        self._snapshot_queued = True
        # at most one every TRANSITION_SNAPSHOT_S: a burst of transitions (a restart reading a
        # full kernel ring buffer) must not turn into a snapshot per record
        wait = TRANSITION_SNAPSHOT_S - (time.monotonic() - self._snapshot_mono)

        async def write() -> None:
            self._snapshot_queued = False
            try:
                await self.write_snapshot()
            except Exception as exc:  # the periodic snapshot will try again
                log.error("snapshot after an alert transition failed", error=repr(exc))

        def start() -> None:
            task = asyncio.ensure_future(write())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

        asyncio.get_running_loop().call_later(max(0.0, wait), start)

    async def _write_snapshot(self, timeout: float) -> None:
        now = self.clock.time()
        for source in [*self.built.sources, *self.built.polled]:
            if isinstance(source, Checkpointed):
                self.checkpoints[str(getattr(source, "name", ""))] = source.checkpoint()
        if self.read_only:
            return
        # series, checkpoints and alerts of one instant in one file: a kill can leave an older
        # snapshot, never alerts ahead of the series that fired them (a second page)
        alerts = self.rules.state_text(now)
        doc = snapshot.capture(self.store, copy.deepcopy(self.checkpoints), now, alerts)
        try:
            path = self.state_dir / SNAPSHOT_FILE
            await self.pool.run(timeout, snapshot.encode_and_write, path, doc)
        except OSError as exc:
            if not is_disk_fault(exc):
                raise
            self.faults.failed(SNAPSHOT_FILE, exc)  # counted, reported, tried again next time
            return
        self.faults.ok(SNAPSHOT_FILE)
        self.last_snapshot = now
        self._snapshot_mono = time.monotonic()
        self.telemetry.snapshot_ok(now)

    # -- sources ----------------------------------------------------------------------------
    def _start_sources(self) -> None:
        assert self.events is not None
        ctx = BuildContext(
            self.config,
            self.clock,
            self.pool,
            self.store,
            self.events,
            self.checkpoints,
            self._store_events,
            self.watcher,
        )
        self.built = build_all(ctx)
        for name in self.built.disabled:
            log.info("source disabled by config", source=name)
        for name, handler in self.built.line_handlers.items():
            self.dispatcher.on_lines(name, handler)
        for name, status_handler in self.built.status_handlers.items():
            self.dispatcher.on_status(name, status_handler)
        for source in self.built.sources:
            batch = getattr(source, "batch_lines", 1)  # a source of LineBatch records says so
            emit = self.bus.emitter(source.name, batch)  # first: it sizes the queue
            self.bus.consume(source.name, self.dispatcher)
            self.supervisor.start(source, emit)
        for polled in self.built.polled:
            self.bus.consume(polled.name, self.dispatcher)
            emit = self.bus.emitter(polled.name)

            async def job(p: Any = polled, e: Any = emit) -> None:
                await self.supervisor.poll(p, e)

            self.scheduler.every(f"poll:{polled.name}", polled.interval, job)

    async def _stop_sources(self) -> None:
        for polled in self.built.polled:
            self.scheduler.remove(f"poll:{polled.name}")
        await self.supervisor.stop()
        await self.bus.drain(2.0)
        await self.bus.stop()
        self.bus = Bus(self.telemetry)

    async def reload(self) -> str | None:
        """SIGHUP and ``POST /-/reload``, one at a time; None when it worked, else the problems
        (the running config stays)."""
        async with self._reload_lock:
            return await self._reload_config()

    async def _reload_config(self) -> str | None:
        self.notifier.reloading()
        try:
            # parsed in a worker thread: a large or slow file never stalls the event loop
            new = await asyncio.to_thread(load_with_web, self.config_path, self.web_config_path)
        except ConfigError as exc:
            log.error("config reload failed; keeping the running config", problems=str(exc))
            return self._reload_failed("; ".join(map(str, exc.problems)) or str(exc))
        except Exception as exc:  # a loader bug must not stop a running daemon
            log.error("config reload failed; keeping the running config", error=repr(exc))
            return self._reload_failed(repr(exc))
        if new.listen != self.config.listen:
            log.warning("listen address changes need a restart", running=self.listen)
        if self.server is not None:
            if not self.server.set_web(new.web):
                log.warning("web.tls_server_config changes need a restart")
            self._report_exposure(warn=False)
        await self.write_snapshot()
        await self._stop_sources()
        self.config = new
        self.store.set_limits(series_limits(new))
        self.rules.manager.alert_limit = new.limits.alerts_per_rule
        if self.notify is not None:
            await self.notify.close()
        self.notify = self._notify_service(new)
        self.digests.apply(new, self.scheduler)
        self.rules.load(new.rule_files)
        self._watch_rules()
        self._start_sources()
        log.info("config reloaded", config=str(self.config_path))
        if self.settle_heap:
            heap.resettle()
        self.reload_problem = None
        self.telemetry.config_reload(True, self.clock.time())
        self.notifier.ready("reloaded")
        return None

    def _reload_failed(self, problem: str) -> str:
        self.reload_problem = problem
        self.telemetry.config_reload(False, self.clock.time())
        self.notifier.ready("reload failed; running the previous config")
        return problem

    def _am_config(self) -> str:
        """``/api/v2/status``'s config.original: where the config comes from, never its text
        (receivers hold secrets)."""
        where = str(self.config_path) if self.config_path else "embedded defaults"
        receivers = "".join(f"  - name: {json.dumps(r.name)}\n" for r in self.config.receivers)
        return f"# inferwatch config: {where} (secrets not shown)\nreceivers:\n{receivers}"

    def _report_exposure(self, *, warn: bool) -> None:
        """The exposure problem (replacing any earlier one) and its alert's series."""
        assert self.server is not None
        addresses = self.server.addresses or [split_listen(self.listen)[0]]
        web = self.server.web
        exposed = exposure_problem(
            addresses,
            authenticated=web.auth_enabled,
            encrypted=web.tls_server_config is not None,
        )
        self.problems = [p for p in self.problems if p != self._exposure]
        self._exposure = exposed
        if exposed is not None:
            if warn:
                log.warning("HTTP API reachable off the host", listen=self.listen, problem=exposed)
            self.problems.append(exposed)
        open_to_all = exposed is not None and not web.auth_enabled
        self.store.describe(EXPOSED_METRIC, Kind.GAUGE, EXPOSED_HELP)
        self.store.set(EXPOSED_METRIC, make_labels({}), 1.0 if open_to_all else 0.0)

    # -- periodic jobs ----------------------------------------------------------------------
    def _schedule(self) -> None:
        self.scheduler.every("tick", TICK_S, self._tick)
        self.scheduler.every("notify", TICK_S, self._notify_tick)
        # not at start: the state was just restored from the snapshot it would write again
        self.scheduler.every(
            "snapshot", SNAPSHOT_EVERY_S, self.write_snapshot, first_in=SNAPSHOT_EVERY_S
        )
        self.scheduler.every("events-prune", 3600.0, self._prune_events)
        if self.notifier.watchdog_interval:
            self.scheduler.every("sd-watchdog", self.notifier.watchdog_interval, self._ping)

    async def _tick(self) -> None:
        self.store.tick()
        for tick in self.built.ticks:
            await tick()
        self.rules.tick()
        self.ready = True
        self.supervisor.refresh()
        self.telemetry.flush()
        self.telemetry.store_size()

    def _on_transitions(self, transitions: list[AlertTransition]) -> None:
        self.digests.observe(transitions)
        if self.notify is not None:
            self.notify.on_transitions(transitions)
            asyncio.get_running_loop().call_soon(self._kick_notify)
        asyncio.get_running_loop().call_soon(self._snapshot_soon)

    def _kick_notify(self) -> None:
        """A transition should not wait for the next tick: group_wait 0 means now."""
        task = asyncio.ensure_future(self._notify_tick())
        for held in (self._background, self._sending):
            held.add(task)
            task.add_done_callback(held.discard)

    async def _sent(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) for the notifications kicked by the transitions
        delivered so far: the rules hold their next evaluation back until then."""
        await asyncio.sleep(0)  # the kick is scheduled with the transitions: let it start
        if self._sending:
            await asyncio.wait(set(self._sending), timeout=timeout)

    async def _notify_tick(self) -> None:
        if self.notify is None:
            return
        async with self._notify_lock:
            await self.notify.tick()

    def _watch_rules(self) -> None:
        """Hot reload: a change in a rule file's directory reloads the rules (debounced)."""
        for sub in self._rule_watch:
            sub.close()
        self._rule_watch = []
        pending: list[asyncio.TimerHandle] = []

        def changed() -> None:
            for handle in pending:
                handle.cancel()
            pending.clear()
            pending.append(asyncio.get_running_loop().call_later(0.5, self._reload_rules))

        for directory in sorted({str(Path(f).parent) for f in self.rules.files}):
            self._rule_watch.append(self.watcher.subscribe(directory, changed))

    def _reload_rules(self) -> None:
        if not self.rules.changed_on_disk():
            return  # another file of the directory changed (a log written beside the rules)
        before = list(self.rules.files)
        if self.rules.load() and before != self.rules.files:
            self._watch_rules()

    async def _prune_events(self) -> None:
        now = self.clock.time()
        if self.events is not None:
            await self.pool.run(IO_TIMEOUT_S, self.events.prune, now)
        if self.notify is not None:  # delivered and dead rows: kept a week for `status`
            await self.pool.run(IO_TIMEOUT_S, self.notify.outbox.purge, now - OUTBOX_KEEP_S)

    async def _ping(self) -> None:
        self.notifier.watchdog()

    def _job_failed(self, name: str, exc: BaseException) -> None:
        self.telemetry.source_error(name, "job", type(exc).__name__)
        log.error("scheduled job failed", job=name, error=repr(exc))

    def _scraped(self, seconds: float) -> None:
        self.telemetry.scrape_duration("exporter", seconds)

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGHUP, self.request_reload)

    async def _store_events(self, events: list[Event]) -> None:
        if self.events is not None and events:
            try:
                await self.pool.run(IO_TIMEOUT_S, self.events.add_many, events)
            except (sqlite3.Error, OSError) as exc:
                if not is_disk_fault(exc):
                    raise
                self.faults.failed(EVENTS_FILE, exc)  # the counters and alerts still go on
                return
            self.faults.ok(EVENTS_FILE)

    def _silences(self) -> Silences | None:
        """The live NotifyService's silences (a reload replaces it); the API saves each change."""
        return self.notify.silencer.silences if self.notify is not None else None

    # -- read side --------------------------------------------------------------------------
    def _page_source(self) -> PageSource:
        silences = SilenceAPI(self._silences, self.state_dir / SILENCES_FILE, self.clock)
        return PageSource(
            store=self.store,
            now=self.clock.time,
            status=self.status,
            alerts=self.rules.alerts_doc,
            silences=silences.list_all,
            events=self._query_events,
            language=lambda: self.config.language,
            links=self._links,
        )

    def _links(self) -> list[tuple[str, str]]:
        found = [("Grafana", str(self.config.grafana_url))] if self.config.grafana_url else []
        if self.config.external_url:
            found.append(("inferwatch", str(self.config.external_url)))
        return [*found, ("/metrics", "/metrics"), ("API", "/api/v1/status")]

    async def _query_events(self, **kwargs: Any) -> list[dict[str, Any]]:
        if self.events is None:
            return []
        rows: list[dict[str, Any]] = await self.pool.run(
            IO_TIMEOUT_S, lambda: self.events.query(**kwargs) if self.events else []
        )
        return rows

    def status(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": self.started_at,
            "listen": self.listen,
            "config": str(self.config_path) if self.config_path else None,
            "state_dir": str(self.state_dir),
            "sources": {n: h.to_dict() for n, h in sorted(self.supervisor.health.items())},
            "disabled": self.built.disabled,
            "services": [],  # watched services (services[]), replaced below when configured
            "canaries": [],  # engines[].canary, likewise
            **{k: [report() for report in v] for k, v in sorted(self.built.reports.items())},
            "store": {"series": self.store.series_count(), "retention_s": self.store.retention_s},
            "limits": {
                **self.store.limits_status(),
                "alerts_per_rule": self.config.limits.alerts_per_rule,
            },
            "queues": self.bus.depth(),
            "last_snapshot": self.last_snapshot,
            "problems": [
                *self.problems,
                *(
                    [f"config reload failed; running the previous config: {self.reload_problem}"]
                    if self.reload_problem
                    else []
                ),
                *self.faults.problems(),
                *(self.notify.problems() if self.notify is not None else []),
            ],
            "http": self.server.http_status() if self.server is not None else None,
            "rules": self.rules.status(),
            "notify": self.notify.status() if self.notify is not None else None,
            "downloads": [p.status() for p in self.built.polled if isinstance(p, DownloadPolling)],
        }


def series_limits(config: Config) -> SeriesLimits:
    """The store's limits from the config's ``limits:`` section."""
    limits = config.limits
    return SeriesLimits(limits.series_total, limits.series_per_metric, dict(limits.label_values))
