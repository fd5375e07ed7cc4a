"""Alert transitions → route → group → mute (inhibit, silence, quiet hours) → outbox → channels.

Runs in the daemon: transitions go into the grouper and the inhibitor as they happen; every tick
the due groups are rendered (Alertmanager webhook v4 payload), written to the durable outbox
once per integration (idempotency key) together with the grouper's state, and the outbox is
delivered with retries, per-channel token buckets and backlog merging (:mod:`.delivery`). A
message is in SQLite before any attempt to send it, so kill -9 or a receiver outage loses
nothing; a route in ``hold_time_intervals`` queues its messages until the quiet hours end.

When the disk cannot take a row (full, read-only), the rows go to an in-memory outbox that the
same delivery round drains; every tick tries to move what is still pending there into the file,
and the fault is a problem in the status (and ``inferwatch_outbox_memory_pending``) until then.
A state dir read-only at start runs on an in-memory outbox seeded from the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from inferwatch.alerts.model import Alert, AlertTransition
from inferwatch.clock import Clock
from inferwatch.config.alertmanager import Route
from inferwatch.config.defaults import default_external_labels
from inferwatch.config.models import Config
from inferwatch.event import Kind
from inferwatch.labels import make_labels
from inferwatch.logsetup import get_logger
from inferwatch.notify import group_state
from inferwatch.notify.channels import Notifier, build
from inferwatch.notify.channels.common import with_defaults
from inferwatch.notify.deadletter import announcer
from inferwatch.notify.delivery import deliver_due
from inferwatch.notify.group import Flush, Grouper
from inferwatch.notify.inhibit import Inhibitor
from inferwatch.notify.merge import EXTENSION
from inferwatch.notify.message import links_of
from inferwatch.notify.outbox import NewRow, Outbox, idempotency_key
from inferwatch.notify.payload import webhook_v4
from inferwatch.notify.ratelimit import Gates
from inferwatch.notify.retry import Backoff, OutcomeKind, RetryPolicy
from inferwatch.notify.route import build_tree
from inferwatch.notify.silence import FlagFile, Silencer, Silences, matcher_doc
from inferwatch.notify.stages import mute_check
from inferwatch.notify.timeintervals import hold_until, load_intervals
from inferwatch.redact import redact
from inferwatch.store.faults import StateFaults, is_disk_fault
from inferwatch.store.histogram import describe_histogram, observe
from inferwatch.store.sqlite import StateUnavailable, move_aside
from inferwatch.store.tsdb import SeriesStore

log = get_logger(__name__)
NOTIFICATIONS = "inferwatch_notifications_total"
PENDING = "inferwatch_outbox_pending"
MEMORY_PENDING = "inferwatch_outbox_memory_pending"
LATENCY = "inferwatch_notification_latency_seconds"
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)
OUTBOX_FILE = "outbox.db"
SILENCES_FILE = "silences.json"


def with_fallback(config: Config) -> Route:
    """Alerts about notifications themselves (label ``fallback="true"``, e.g.
    InferwatchNotificationsFailing) go to ``fallback_receiver`` first and only there: the
    normal route may be the one that is failing."""
    if not config.fallback_receiver:
        return config.route
    first = Route(
        receiver=config.fallback_receiver,
        matchers=['fallback="true"'],
        group_wait=0.0,
        group_interval=60.0,
    )
    return config.route.model_copy(update={"routes": [first, *config.route.routes]})


class NotifyService:
    def __init__(
        self,
        config: Config,
        store: SeriesStore,
        clock: Clock,
        state_dir: Path,
        *,
        faults: StateFaults | None = None,
        read_only: bool = False,
    ) -> None:
        self.store = store
        self.clock = clock
        self.faults = faults if faults is not None else StateFaults(store, clock, state_dir)
        self.problem: str | None = None
        self.external_url = str(config.external_url or "").rstrip("/")
        # As Prometheus does for the alerts it sends: the external labels join every alert's
        # labels (the alert's own win), so routes, inhibit_rules' `equal: [host]`, messages and
        # an Alertmanager the alerts are pushed to all see `host`.
        self.external_labels = default_external_labels(config.external_labels)
        self.links = links_of(config)
        intervals = load_intervals(config.time_intervals)
        self.intervals = intervals
        self.tree = build_tree(with_fallback(config), intervals.keys())
        self.grouper = Grouper(self.tree)
        self.inhibitor = Inhibitor.from_config(config.inhibit_rules)
        silences = Silences()
        try:
            silences.load(state_dir / SILENCES_FILE)
        except (ValueError, OSError) as exc:  # a broken file must not stop the daemon
            moved = move_aside(state_dir / SILENCES_FILE, str(exc))
            log.error("silences file unreadable; starting without silences", moved_to=str(moved))
        files = [FlagFile.from_config(f) for f in config.silence_files]
        self.silencer = Silencer(silences, files)
        self.outbox = self._open_outbox(state_dir / OUTBOX_FILE, read_only)
        self.spill = Outbox.memory()  # what the disk refuses, delivered and kept from here
        self._restore_groups()
        retry = config.outbox
        backoff = Backoff(retry.retry_initial, max(retry.retry_initial, retry.retry_max))
        self.policy = RetryPolicy(backoff, deadline=retry.max_age)
        self.gates = Gates()
        self._groups_dirty = False
        self.last: dict[tuple[str, str], dict[str, Any]] = {}
        self.notifiers: dict[tuple[str, str], Notifier] = {}
        self.integrations: dict[str, list[str]] = {}
        for receiver in config.receivers:
            kinds: list[str] = []
            for key, items in receiver.integrations().items():
                kind = key.removesuffix("_configs")
                for index, item in enumerate(items):
                    name = kind if index == 0 else f"{kind}/{index}"
                    entry = with_defaults(item, config.language, config.global_.http_config)
                    try:
                        self.notifiers[(receiver.name, name)] = build(kind, entry)
                    except ValueError as exc:
                        log.error("receiver not usable", receiver=receiver.name, error=str(exc))
                        continue
                    kinds.append(name)
            self.integrations[receiver.name] = kinds
        self.announce = announcer(config.fallback_receiver, self.integrations)
        store.describe(NOTIFICATIONS, Kind.COUNTER, "Notification attempts by outcome.")
        store.describe(PENDING, Kind.GAUGE, "Notifications in the outbox not yet delivered.")
        store.describe(
            MEMORY_PENDING,
            Kind.GAUGE,
            "Notifications not yet delivered that the disk could not take (kept in memory).",
        )
        describe_histogram(
            store,
            LATENCY,
            "Seconds from a message being queued (its group flushed) to the receiver accepting "
            "it, retries, rate limits and quiet hours included.",
        )

    def _open_outbox(self, path: Path, read_only: bool) -> Outbox:
        """The outbox file; in memory (seeded with what the file holds) where it cannot be
        written. A corrupt file's problem (and what was salvaged) is kept for the status."""
        if not read_only:
            try:
                outbox = Outbox(path, on_write=lambda exc: self.faults.note(OUTBOX_FILE, exc))
            except StateUnavailable as exc:
                self.problem = f"{exc}: notifications are kept in memory"
                log.error(
                    "outbox cannot be written; notifications are kept in memory", error=str(exc)
                )
            else:
                self.problem = outbox.problem
                return outbox
        memory = Outbox.memory(path)
        if path.exists():
            memory.salvage(path)
        return memory

    def problems(self) -> list[str]:
        """For the daemon's status: a corrupt or unwritable outbox."""
        return [self.problem] if self.problem else []

    def _restore_groups(self) -> None:
        text = self.outbox.load_state(group_state.STATE_NAME)
        if text is None:
            return
        try:
            count = group_state.load(self.grouper, text)
        except ValueError as exc:
            log.error("starting without the saved notification groups", error=str(exc))
            return
        log.info("notification groups restored", groups=count)

    def _save_groups(self, rows: Iterable[NewRow] = (), now: float | None = None) -> None:
        """Rows and the grouper's state commit together (one transaction). ``now`` is the
        tick's own time: a row written later than the tick's "now" would not be due in it."""
        state = (group_state.STATE_NAME, group_state.dump(self.grouper))
        rows = list(rows)
        when = self.clock.time() if now is None else now
        try:
            self.outbox.enqueue_batch(rows, when, state)
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_fault(exc):
                raise
            self.spill.enqueue_batch(rows, when, state)
            if rows:
                log.warning("outbox full or read-only: messages kept in memory", rows=len(rows))

    def _retry_disk(self) -> None:
        """Move the rows kept in memory into the outbox file and write the answers it refused,
        once the disk takes them again; a disk still failing leaves everything as it is."""
        if self.outbox.in_memory:
            return
        moving = self.spill.pending_rows()
        if not moving and not self.outbox.deferred_count() and not self.faults.failing(OUTBOX_FILE):
            return
        state = (group_state.STATE_NAME, group_state.dump(self.grouper))
        try:
            self.outbox.retry_deferred()
            self.outbox.adopt(moving, state)  # with nothing to move: a probe of the disk
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_fault(exc):
                raise
            return
        self.spill.forget(r.id for r in moving)
        if moving:
            log.info("messages kept in memory written to the outbox", rows=len(moving))

    def on_transitions(self, transitions: Iterable[AlertTransition]) -> None:
        """Groups change here and are saved by the next tick (which the daemon starts at once):
        until then nothing newer than them is saved either (the snapshot after a transition
        waits for that tick), so a kill in between re-derives the same alerts after restart."""
        for tr in transitions:
            alert = self._with_external_labels(tr.alert)
            self.grouper.observe(alert, tr.at)
            self.inhibitor.observe(alert)
        self._groups_dirty = True

    def _with_external_labels(self, alert: Alert) -> Alert:
        labels = dict(alert.labels)
        missing = {k: v for k, v in self.external_labels.items() if k not in labels}
        if not missing:
            return alert
        return replace(alert, labels=make_labels({**missing, **labels}))

    async def tick(self) -> None:
        now = self.clock.time()
        muted = mute_check([self.inhibitor, self.silencer], self.intervals, now)
        flushes = self.grouper.due(now, muted)
        if flushes or self._groups_dirty:
            self._groups_dirty = False
            self._save_groups([row for f in flushes for row in self._rows(f, now)], now)
        self._retry_disk()
        results = []
        for outbox in (self.outbox, self.spill):
            try:
                results += await deliver_due(
                    outbox,
                    self.notifiers,
                    self.policy,
                    now,
                    gates=self.gates,
                    announce=self.announce,
                )
            except (sqlite3.Error, OSError) as exc:  # the other outbox is still delivered
                if not is_disk_fault(exc):
                    raise
                self.faults.failed(OUTBOX_FILE, exc)
        for row, outcome in results:
            outcome_label = "success" if outcome.kind is OutcomeKind.OK else "failure"
            self.last[(row.receiver, row.integration)] = {
                "at": now,
                "outcome": outcome.kind.value,
                "reason": redact(outcome.reason),
            }
            labels = make_labels(
                {"receiver": row.receiver, "integration": row.integration, "outcome": outcome_label}
            )
            self.store.inc(NOTIFICATIONS, labels, 1.0, now, wake=False)
            if outcome.kind is OutcomeKind.OK:
                where = make_labels({"receiver": row.receiver, "integration": row.integration})
                took = max(0.0, self.clock.time() - row.created_at)
                observe(self.store, LATENCY, where, took, LATENCY_BUCKETS, now)
        self.store.set(PENDING, (), float(self.pending_count()), now)
        self.store.set(MEMORY_PENDING, (), float(self.memory_pending_count()), now)

    def pending_count(self) -> int:
        return self.outbox.pending_count() + self.spill.pending_count()

    def memory_pending_count(self) -> int:
        """Messages not yet delivered that exist only in memory (lost by a restart)."""
        return self.spill.pending_count() + (
            self.outbox.pending_count() if self.outbox.in_memory else 0
        )

    def _rows(self, flush: Flush, now: float) -> list[NewRow]:
        """One outbox row per integration of the flush's receiver, held during quiet hours."""
        held = hold_until(flush.route.opts.hold_time_intervals, self.intervals, now) or 0.0
        payload = webhook_v4(
            receiver=flush.receiver,
            group_key=flush.key,
            group_labels=dict(flush.group_labels),
            alerts=flush.alerts,
            external_url=self.external_url,
            generator_url="",
        )
        if self.links:
            payload[EXTENSION] = {"links": self.links}
        states = [(a.fingerprint, a.state.value) for a in flush.alerts]
        sequence = int(flush.at * 1000)
        return [
            NewRow(
                key=idempotency_key(flush.receiver, integration, flush.key, states, sequence),
                receiver=flush.receiver,
                integration=integration,
                group_key=flush.key,
                payload=payload,
                not_before=held,
            )
            for integration in self.integrations.get(flush.receiver, [])
        ]

    def status(self) -> dict[str, Any]:
        """For ``inferwatch status`` and /api/v1/status: each integration's last answer (a
        permanent failure such as a revoked key shows here, redacted), and the outbox."""
        times = [t for o in (self.outbox, self.spill) if (t := o.oldest_pending_at()) is not None]
        return {
            "receivers": {r: list(k) for r, k in self.integrations.items()},
            "outbox_pending": self.pending_count(),
            "outbox_memory_pending": self.memory_pending_count(),
            "outbox_in_memory": self.outbox.in_memory,
            "outbox_oldest_pending_at": min(times) if times else None,
            "last_attempts": {f"{r}/{i}": dict(v) for (r, i), v in sorted(self.last.items())},
            "silence_files": [
                {
                    "id": f.id,
                    "path": str(f.path),
                    "matchers": [matcher_doc(m) for m in f.matchers],
                    "comment": f.comment,
                    "active": f.path.exists(),
                }
                for f in self.silencer.files
            ],
        }

    async def close(self) -> None:
        if self._groups_dirty:  # a reload or stop between a transition and its tick
            self._groups_dirty = False
            self._save_groups()
        self._retry_disk()
        lost = self.memory_pending_count()
        if lost:
            log.error("messages kept in memory could not be written and are lost", rows=lost)
        for notifier in self.notifiers.values():
            await notifier.aclose()
        self.outbox.close()
        self.spill.close()
