from __future__ import annotations

import asyncio

from inferwatch.clock import FakeClock
from inferwatch.event import Event
from inferwatch.model import LineBatch, LineRecord, ScrapeStatus
from inferwatch.pipeline.dispatch import Dispatcher
from inferwatch.pipeline.telemetry import Telemetry
from inferwatch.store.tsdb import SeriesStore


def test_scrape_status_reaches_its_sources_handler_and_is_acknowledged() -> None:
    clock = FakeClock()
    store = SeriesStore(clock)

    async def sink(events: list[Event]) -> None:
        raise AssertionError("no events expected")

    dispatcher = Dispatcher(store, Telemetry(store), sink)
    seen: list[object] = []
    acks: list[str] = []

    async def status(record: ScrapeStatus) -> None:
        seen.append(record)

    dispatcher.on_status("scrape:a", status)

    async def lines(record: LineRecord) -> None:
        seen.append(record)

    dispatcher.on_lines("scrape:a", lines)
    status = ScrapeStatus("scrape:a", "a", False, 1.0, "refused", ack=lambda: acks.append("s"))
    other = ScrapeStatus("scrape:b", "b", True, 1.0)  # nobody listens: dropped quietly
    body = LineRecord("scrape:a", "http://x/metrics", 1, "", 2.0, ack=lambda: acks.append("l"))
    for record in (status, other, body):
        asyncio.run(dispatcher(record))
    assert seen == [status, body]
    assert acks == ["s", "l"]


def test_a_batch_given_directly_is_applied_and_acknowledged_line_by_line() -> None:
    store = SeriesStore(FakeClock())

    async def sink(events: list[Event]) -> None:
        raise AssertionError("no events expected")

    dispatcher = Dispatcher(store, Telemetry(store), sink)
    order: list[str] = []

    async def lines(record: LineRecord) -> None:
        order.append(f"line {record.line_no}")

    dispatcher.on_lines("engine:a", lines)
    batch = LineBatch(
        "engine:a",
        tuple(
            LineRecord("engine:a", "/x", n, "", 1.0, ack=lambda n=n: order.append(f"ack {n}"))
            for n in (1, 2)
        ),
    )
    asyncio.run(dispatcher(batch))
    assert order == ["line 1", "ack 1", "line 2", "ack 2"]
