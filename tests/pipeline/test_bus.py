from __future__ import annotations

import asyncio

import pytest

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.model import LineBatch, LineRecord, Record
from inferwatch.pipeline.bus import Bus
from inferwatch.pipeline.telemetry import RECORDS_DROPPED, SOURCE_ERRORS, Telemetry
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


def batch(first: int, n: int) -> LineBatch:
    return LineBatch("src", tuple(line(k) for k in range(first, first + n)))


def test_a_batch_is_handled_line_by_line_each_failing_on_its_own() -> None:
    store = SeriesStore(FakeClock())
    bus = Bus(Telemetry(store))
    handled: list[int] = []

    async def handler(record: Record) -> None:
        assert isinstance(record, LineRecord)  # never the batch itself
        if record.line_no == 2:
            raise ValueError("bad line")
        handled.append(record.line_no)

    async def scenario() -> bool:
        emit = bus.emitter("src", batch_lines=4)  # first: it sizes the queue
        bus.consume("src", handler)
        await emit(batch(0, 4))
        await emit(line(4))
        await emit(batch(5, 2))
        ok = await bus.drain(5)
        await bus.stop()
        return ok

    assert asyncio.run(scenario())
    assert handled == [0, 1, 3, 4, 5, 6]
    errors = store.get(
        SOURCE_ERRORS,
        make_labels({"source": "src", "stage": "dispatch", "error_type": "ValueError"}),
    )
    assert errors is not None and errors.vs[-1] == 1.0


def test_a_batched_queue_holds_about_maxsize_lines_and_counts_dropped_lines() -> None:
    store = SeriesStore(FakeClock())
    bus = Bus(Telemetry(store), maxsize=8, put_timeout=0.01)

    async def scenario() -> None:
        emit = bus.emitter("src", batch_lines=4)  # room for 8 // 4 = 2 batches
        for k in range(4):
            await emit(batch(4 * k, 3 if k == 3 else 4))

    asyncio.run(scenario())
    assert bus.depth() == {"src": 2}
    dropped = store.get(RECORDS_DROPPED, make_labels({"queue": "src"}))
    assert dropped is not None and dropped.vs[-1] == 7.0  # the lines of the two batches lost


def test_a_queue_keeps_the_batch_size_it_was_made_for() -> None:
    """A consumer set up before the emitter would leave a batched source's queue sized for
    single lines (64 times the lines): asking for another batch size later is refused."""
    bus = Bus(Telemetry(SeriesStore(FakeClock())), maxsize=128)

    async def handler(record: Record) -> None:
        return None

    async def scenario() -> None:
        bus.emitter("batched", batch_lines=64)
        assert bus.queue("batched").maxsize == 2
        bus.consume("batched", handler)  # the consumer takes the queue as it was made
        assert bus.queue("batched").maxsize == 2
        bus.queue("single")
        with pytest.raises(ValueError, match="batches of 1 lines, not 64"):
            bus.emitter("single", batch_lines=64)
        await bus.stop()

    asyncio.run(scenario())
