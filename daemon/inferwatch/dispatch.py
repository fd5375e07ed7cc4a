"""Applies records to the state: samples into the store, lines through their source's handler.

Every record is acknowledged only after what it produced is in the store and the event log, so
a checkpoint taken at any moment covers exactly the records already applied.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from inferwatch.model import LineRecord, Record, SampleBatch
from inferwatch.store.series import Kind
from inferwatch.store.tsdb import SeriesStore
from inferwatch.telemetry import Telemetry

LineHandler = Callable[[LineRecord], Awaitable[None]]


class Dispatcher:
    def __init__(self, store: SeriesStore, telemetry: Telemetry) -> None:
        self.store = store
        self.telemetry = telemetry
        self._line_handlers: dict[str, LineHandler] = {}

    def on_lines(self, source: str, handler: LineHandler) -> None:
        self._line_handlers[source] = handler

    async def __call__(self, record: Record) -> None:
        if isinstance(record, SampleBatch):
            self._apply_samples(record)
        else:
            handler = self._line_handlers.get(record.source)
            if handler is not None:
                await handler(record)
            self.telemetry.records(record.source)
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
