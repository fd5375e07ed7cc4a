from __future__ import annotations

import asyncio

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.model import LineRecord, Record
from inferwatch.pipeline.bus import Bus
from inferwatch.pipeline.telemetry import RECORDS_DROPPED, Telemetry
from inferwatch.store.tsdb import SeriesStore


def line(n: int) -> LineRecord:
    return LineRecord("src", "/x", n, f"line {n}", 0.0)


def test_full_queue_drops_and_counts_instead_of_blocking_forever() -> None:
    store = SeriesStore(FakeClock())
    bus = Bus(Telemetry(store), maxsize=2, put_timeout=0.01)

    async def scenario() -> None:
        emit = bus.emitter("src")
        for n in range(5):
            await emit(line(n))

    asyncio.run(scenario())
    dropped = store.get(RECORDS_DROPPED, make_labels({"queue": "src"}))
    assert dropped is not None and dropped.vs[-1] == 3.0


def test_consumer_survives_a_bad_record_and_drains() -> None:
    store = SeriesStore(FakeClock())
    bus = Bus(Telemetry(store))
    handled: list[int] = []

    async def handler(record: Record) -> None:
        assert isinstance(record, LineRecord)
        if record.line_no == 1:
            raise ValueError("bad record")
        handled.append(record.line_no)

    async def scenario() -> bool:
        bus.consume("src", handler)
        emit = bus.emitter("src")
        for n in range(4):
            await emit(line(n))
        ok = await bus.drain(5)
        await bus.stop()
        return ok

    assert asyncio.run(scenario())
    assert handled == [0, 2, 3]
