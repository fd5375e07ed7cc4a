"""Digests: a summary of the last window, sent on a cron schedule through the durable outbox.

Each configured digest is a scheduler cron job. When it fires, the summary of the window ending
at the *scheduled* fire time (not the moment the job happened to run) is rendered and written to
the outbox once per integration of the digest's receiver, as a webhook v4 payload carrying one
synthetic ``InferwatchDigest`` alert (severity ``info``). The idempotency key is the digest's name
and scheduled time, so a job that runs twice for the same time, before or after a restart, adds
no second row. Digests bypass grouping and muting: the user asked for them at that hour.

Alert transitions are recorded in the event log (type ``alert``) as they happen, so a digest can
say which alerts fired and resolved in its window, across restarts.
"""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from tzlocal import get_localzone

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, RuleKey
from inferwatch.clock import Clock
from inferwatch.config.alertmanager import Digest
from inferwatch.config.models import Config
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.logsetup import get_logger
from inferwatch.notify.digest.summary import EVENT_TYPES, METRICS, alert_events, summarize
from inferwatch.notify.digest.text import DigestText, render_digest
from inferwatch.notify.outbox import idempotency_key
from inferwatch.notify.payload import webhook_v4
from inferwatch.runtime.crontab import crontab_trigger
from inferwatch.store.tsdb import SeriesStore

if TYPE_CHECKING:
    from inferwatch.notify.outbox import Outbox
    from inferwatch.runtime.scheduler import Scheduler

log = get_logger(__name__)
DIGEST_ALERT = "InferwatchDigest"
EVENT_LIMIT = 10_000
FIRE_GRACE_S = 900.0
"""A run this long after its fire time still belongs to it (APScheduler's misfire grace: 300 s)."""
HISTORY_MARGIN_S = 600.0

QueryEvents = Callable[..., Awaitable[list[dict[str, Any]]]]
StoreEvents = Callable[[list[Event]], Awaitable[None]]


class Notifications(Protocol):
    """What a digest needs of the notification service: its outbox and its receivers."""

    outbox: Outbox
    integrations: dict[str, list[str]]
    external_url: str


def digest_zone(name: str) -> tzinfo:
    """``Local`` (the host's zone), ``UTC`` or an IANA name; ValueError for an unknown one."""
    if name == "UTC":
        return UTC
    if name == "Local":
        try:
            return get_localzone()
        except Exception:
            return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r}; use Local, UTC or e.g. Asia/Shanghai"
        ) from None


def cron_trigger(expression: str, tz: tzinfo) -> CronTrigger:
    """The five-field crontab expression as APScheduler reads it; ValueError when invalid."""
    try:
        return crontab_trigger(expression, tz)
    except ValueError as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None


def scheduled_time(trigger: CronTrigger, now: float, grace: float = FIRE_GRACE_S) -> float:
    """The fire time a run at ``now`` belongs to: the latest one at or before ``now`` within
    ``grace``; ``now`` (whole seconds) for a run outside the schedule."""
    best: float | None = None
    fire = trigger.get_next_fire_time(None, datetime.fromtimestamp(now - grace, UTC))
    while fire is not None and fire.timestamp() <= now + 1e-6:
        best = fire.timestamp()
        fire = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
    return best if best is not None else float(math.floor(now))


def require_history(store: SeriesStore, digests: Iterable[Digest]) -> None:
    """Keep two windows of the series a digest compares (this window and the one before)."""
    longest = max((d.window for d in digests), default=0.0)
    if longest > 0:
        for name in METRICS:
            store.require_retention(2 * longest + HISTORY_MARGIN_S, name)


class DigestService:
    """Schedules the configured digests and records alert transitions for them."""

    def __init__(
        self,
        config: Config,
        store: SeriesStore,
        clock: Clock,
        notify: Callable[[], Notifications | None],
        query_events: QueryEvents,
        store_events: StoreEvents,
    ) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self._notify = notify
        self._query_events = query_events
        self._store_events = store_events
        self._jobs: list[str] = []
        self._background: set[asyncio.Task[None]] = set()
        require_history(store, config.digests)

    def apply(self, config: Config, scheduler: Scheduler) -> list[str]:
        """(Re)register one cron job per digest of ``config``; returns the job names."""
        self.config = config
        require_history(self.store, config.digests)
        for name in self._jobs:
            scheduler.remove(name)
        self._jobs = []
        for digest in config.digests:
            try:
                tz = digest_zone(digest.timezone)
                cron_trigger(digest.cron, tz)
            except ValueError as exc:  # `inferwatch check` reports these; never stop the daemon
                log.error("digest not scheduled", digest=digest.name, error=str(exc))
                continue

            async def job(d: Digest = digest) -> None:
                await self.fire(d)

            name = f"digest:{digest.name}"
            scheduler.cron(name, digest.cron, job, tz)
            self._jobs.append(name)
        return list(self._jobs)

    async def fire(self, digest: Digest) -> int:
        """Build the digest for the fire time this run belongs to and enqueue it; returns the
        number of new outbox rows (0 when this fire time was enqueued already)."""
        tz = digest_zone(digest.timezone)
        now = self.clock.time()
        end = scheduled_time(cron_trigger(digest.cron, tz), now)
        text = await self.render(digest, end)
        return self.enqueue(digest, text, end, now)

    async def render(self, digest: Digest, end: float) -> DigestText:
        """The digest of the window ending at ``end``."""
        tz = digest_zone(digest.timezone)
        start = end - digest.window
        rows = await self._query_events(
            since=start, until=end, types=list(EVENT_TYPES), limit=EVENT_LIMIT
        )
        others = await self._query_events(since=start, until=end, limit=EVENT_LIMIT)
        seen = {r.get("key") for r in rows}
        rows += [r for r in others if r.get("key") not in seen]
        summary = summarize(self.store, rows, end=end, window=digest.window, tz=tz)
        return render_digest(summary, digest.language or self.config.language, tz)

    async def preview(self, name: str) -> DigestText:
        """``inferwatch digest --preview NAME``: the window ending now, rendered, not sent;
        ``KeyError`` naming the configured digests when there is no such digest."""
        for digest in self.config.digests:
            if digest.name == name:
                return await self.render(digest, self.clock.time())
        known = ", ".join(d.name for d in self.config.digests) or "none configured"
        raise KeyError(f"no digest {name!r} (digests: {known})")

    def enqueue(self, digest: Digest, text: DigestText, scheduled: float, now: float) -> int:
        service = self._notify()
        receiver = digest.receiver or self.config.route.receiver or ""
        if service is None:
            log.warning("digest not sent: notifications are not running", digest=digest.name)
            return 0
        integrations = service.integrations.get(receiver, [])
        if not integrations:
            log.warning("digest has no usable integration", digest=digest.name, receiver=receiver)
            return 0
        alert = self.alert(digest, text, scheduled)
        group_key = f"digest/{digest.name}"
        payload = webhook_v4(
            receiver=receiver,
            group_key=group_key,
            group_labels={"digest": digest.name},
            alerts=[alert],
            external_url=service.external_url,
            generator_url="",
        )
        created = 0
        for integration in integrations:
            key = idempotency_key(
                receiver,
                integration,
                group_key,
                [(alert.fingerprint, "digest")],
                round(scheduled * 1000),
            )
            _, new = service.outbox.enqueue(
                key=key,
                receiver=receiver,
                integration=integration,
                group_key=group_key,
                payload=payload,
                now=now,
            )
            created += int(new)
        log.info("digest enqueued", digest=digest.name, receiver=receiver, rows=created)
        return created

    def alert(self, digest: Digest, text: DigestText, scheduled: float) -> Alert:
        host = self.config.external_labels.get("host") or _hostname()
        labels = {"alertname": DIGEST_ALERT, "severity": "info", "digest": digest.name}
        if host:
            labels["host"] = host
        notes = (("description", text.text), ("summary", text.one_line))
        return Alert(
            rule=RuleKey("", "digests", DIGEST_ALERT, "", ()),
            labels=make_labels(labels),
            annotations=notes,
            state=AlertState.FIRING,
            value=0.0,
            active_at=scheduled,
            fired_at=scheduled,
            last_eval=scheduled,
        )

    def observe(self, transitions: Iterable[AlertTransition]) -> None:
        """Record fired and resolved transitions in the event log (in the background)."""
        events = alert_events(transitions)
        if not events:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): nothing can write the log
            log.warning("alert transitions not recorded for digests", count=len(events))
            return
        task = loop.create_task(self._record(events))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _record(self, events: list[Event]) -> None:
        try:
            await self._store_events(events)
        except Exception as exc:
            log.warning("alert transitions not recorded for digests", error=repr(exc))


def _hostname() -> str:
    return socket.gethostname()
