"""Applies records to the state: samples into the store, lines through their source's handler.

Every record is acknowledged only after what it produced is in the store and the event log, so
a checkpoint taken at any moment covers exactly the records already applied.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from inferwatch.event import Event, Kind
from inferwatch.labels import make_labels
from inferwatch.model import (
    Gap,
    LineBatch,
    LineRecord,
    Record,
    SampleBatch,
    ScrapeStatus,
)
from inferwatch.pipeline.sink import EventSink
from inferwatch.pipeline.telemetry import Telemetry
from inferwatch.store.tsdb import SeriesStore

LineHandler = Callable[[LineRecord], Awaitable[None]]
StatusHandler = Callable[[ScrapeStatus], Awaitable[None]]
MISSED = "inferwatch_kernel_log_records_missed_total"


class Dispatcher:
    def __init__(self, store: SeriesStore, telemetry: Telemetry, events: EventSink) -> None:
        self.store = store
        self.telemetry = telemetry
        self.events = events
        self._line_handlers: dict[str, LineHandler] = {}
        self._status_handlers: dict[str, StatusHandler] = {}
        store.describe(MISSED, Kind.COUNTER, "Log records a source knows it missed (ring overrun).")

    def on_lines(self, source: str, handler: LineHandler) -> None:
        self._line_handlers[source] = handler

    def on_status(self, source: str, handler: StatusHandler) -> None:
        self._status_handlers[source] = handler

    async def __call__(self, record: Record) -> None:
        if isinstance(record, LineRecord):  # most records: a busy log's lines
            handler = self._line_handlers.get(record.source)
            if handler is not None:
                await handler(record)
            self.telemetry.records(record.source)
        elif isinstance(record, SampleBatch):
            self._apply_samples(record)
        elif isinstance(record, Gap):
            await self._apply_gap(record)
        elif isinstance(record, LineBatch):  # the bus hands a batch's lines on one by one
            for line in record.lines:
                await self(line)
        else:
            status_handler = self._status_handlers.get(record.source)
            if status_handler is not None:
                await status_handler(record)
        if record.ack is not None:
            record.ack()

    def _apply_samples(self, batch: SampleBatch) -> None:
        for s in batch.samples:
            if s.kind is Kind.COUNTER:
                self.store.set_counter(s.name, s.labels, s.value, batch.at)
            else:
                self.store.set(s.name, s.labels, s.value, batch.at)
        for name, labels in batch.stale:
            self.store.mark_stale(name, labels, batch.at)
        self.telemetry.records(batch.source)

    async def _apply_gap(self, gap: Gap) -> None:
        self.store.inc(MISSED, make_labels({"source": gap.source}), float(gap.missed), gap.at)
        kind = "kernel_gap" if gap.source == "kernel" else "gap"
        key = f"{gap.source}:gap:{gap.at:.6f}:{gap.missed}"
        details = {"missed": gap.missed, "reason": gap.reason}
        await self.events([Event(kind, gap.at, gap.source, key, details=details)])
