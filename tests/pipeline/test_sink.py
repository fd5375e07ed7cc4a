"""apply_effects: samples into the store, events (enriched when asked) to the one sink."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from inferwatch.clock import FakeClock
from inferwatch.derive.effects import Effect, GaugeSet
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.pipeline.sink import apply_effects
from inferwatch.store.tsdb import SeriesStore

LABELS = make_labels({"gpu": "0"})


def test_samples_go_to_the_store_and_events_to_the_sink_in_order() -> None:
    store = SeriesStore(FakeClock(100.0))
    got: list[list[Event]] = []

    async def sink(events: list[Event]) -> None:
        got.append(events)

    first, second = Event("xid", 100.0, "kernel", "k:1"), Event("xid", 100.0, "kernel", "k:2")
    effects: list[Effect] = [first, GaugeSet("g", LABELS, 2.0, 100.0), second]
    asyncio.run(apply_effects(effects, store, sink))
    assert got == [[first, second]]
    gauge = store.get("g", LABELS)
    assert gauge is not None and gauge.vs[-1] == 2.0

    def enrich(event: Event) -> Event:
        return replace(event, details={"uuid": "GPU-1"})

    asyncio.run(apply_effects([first], store, sink, enrich))
    assert got[-1] == [replace(first, details={"uuid": "GPU-1"})]


def test_no_events_no_call() -> None:
    store = SeriesStore(FakeClock(100.0))

    async def sink(events: list[Event]) -> None:
        raise AssertionError("no events expected")

    asyncio.run(apply_effects([], store, sink))
    asyncio.run(apply_effects([GaugeSet("g", LABELS, 1.0, 100.0)], store, sink))
