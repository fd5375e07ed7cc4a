"""Where the pipeline's effects go: the store, then the event log.

Every ingest (kernel, engines) turns a record into effects; applying them is the same for all:
the store takes the samples and the effects' events go to one :data:`EventSink` (the event log,
then alerting), in the order they were produced. A kernel ingest passes ``enrich`` to tie an
event to its GPU before it is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from inferwatch.derive.effects import Effect, apply
from inferwatch.event import Event
from inferwatch.store.tsdb import SeriesStore

EventSink = Callable[[list[Event]], Awaitable[None]]


async def apply_effects(
    effects: list[Effect],
    store: SeriesStore,
    sink: EventSink,
    enrich: Callable[[Event], Event] | None = None,
) -> None:
    """Apply ``effects`` to ``store`` and hand their events, if any, to ``sink``."""
    if not effects:
        return
    events = apply(effects, store)
    if events:
        await sink(events if enrich is None else [enrich(e) for e in events])
