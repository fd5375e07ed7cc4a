from __future__ import annotations

import asyncio

from inferwatch.clock import FakeClock
from inferwatch.errors import NoData
from inferwatch.labels import make_labels
from inferwatch.model import Record, SampleBatch, ScrapeStatus
from inferwatch.pipeline.supervisor import Supervisor
from inferwatch.pipeline.telemetry import SOURCE_ERRORS, SOURCE_UP, Telemetry
from inferwatch.sources.base import Emit
from inferwatch.store.tsdb import SeriesStore


class Flaky:
    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.finished = asyncio.Event()

    async def run(self, emit: Emit) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(f"read failed #{self.calls}")
        self.finished.set()
        await asyncio.Event().wait()


def test_failing_source_is_counted_and_restarted_with_backoff() -> None:
    clock = FakeClock()
    store = SeriesStore(clock)
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def scenario() -> Flaky:
        sup = Supervisor(Telemetry(store), clock, sleep=fake_sleep, backoff_max=8)
        src = Flaky(failures=5)

        async def emit(_r: Record) -> None:
            return None

        sup.start(src, emit)
        await asyncio.wait_for(src.finished.wait(), 5)
        assert sup.health["flaky"].restarts == 5
        assert "read failed #5" in sup.health["flaky"].last_error
        await sup.stop()
        assert sup.health["flaky"].state == "stopped"
        return src

    src = asyncio.run(scenario())
    assert src.calls == 6
    assert sleeps == [1, 2, 4, 8, 8]
    errors = store.get(
        SOURCE_ERRORS, make_labels({"source": "flaky", "stage": "run", "error_type": "OSError"})
    )
    assert errors is not None and errors.last() is not None
    assert errors.vs[-1] == 5.0


class Polled:
    name = "p"
    interval = 1.0

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome

    async def poll(self) -> Record | None:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        assert isinstance(self.outcome, SampleBatch)
        return self.outcome


def test_poll_outcomes_set_health_and_up_metric() -> None:
    clock = FakeClock()
    store = SeriesStore(clock)
    sup = Supervisor(Telemetry(store), clock)
    got: list[Record] = []

    async def emit(r: Record) -> None:
        got.append(r)

    up = make_labels({"source": "p"})
    asyncio.run(sup.poll(Polled(NoData("no GPU here")), emit))
    assert sup.health["p"].state == "no_data"
    assert store.get(SOURCE_UP, up).vs[-1] == 0.0  # type: ignore[union-attr]
    asyncio.run(sup.poll(Polled(ValueError("bad json")), emit))
    assert sup.health["p"].state == "error"
    batch = SampleBatch("p", clock.time(), ())
    clock.advance(1)
    asyncio.run(sup.poll(Polled(batch), emit))
    assert sup.health["p"].state == "up"
    assert got == [batch]
    assert store.get(SOURCE_UP, up).vs[-1] == 1.0  # type: ignore[union-attr]


class Announcer(Polled):
    """A polled source that reports its up/down changes as records (a scrape does)."""

    def __init__(self, outcome: object, notices: list[Record]) -> None:
        super().__init__(outcome)
        self.pending = notices

    def notices(self) -> list[Record]:
        out, self.pending = self.pending, []
        return out


def test_a_polls_notices_are_emitted_before_its_record_and_after_a_failure() -> None:
    clock = FakeClock()
    sup = Supervisor(Telemetry(SeriesStore(clock)), clock)
    got: list[Record] = []

    async def emit(r: Record) -> None:
        got.append(r)

    down = ScrapeStatus("p", "vllm", False, 1.0, "ConnectError: refused")
    asyncio.run(sup.poll(Announcer(ValueError("refused"), [down]), emit))
    assert got == [down]  # the failure is counted and its status still reaches the bus
    up = ScrapeStatus("p", "vllm", True, 2.0)
    batch = SampleBatch("p", 2.0, ())
    asyncio.run(sup.poll(Announcer(batch, [up]), emit))
    assert got == [down, up, batch]


class Reader:
    """A long-running source that reads two records and then waits for more."""

    name = "reader"

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.done = asyncio.Event()

    async def run(self, emit: Emit) -> None:
        await self.go.wait()
        for n in range(2):
            await emit(SampleBatch("reader", float(n), ()))
        self.done.set()
        await asyncio.Event().wait()


def test_a_source_that_reads_is_up_and_its_series_stays_fresh() -> None:
    """The issue: sources reading hundreds of records showed "starting" for 11 minutes, with no
    inferwatch_source_up series at all."""
    clock = FakeClock(100.0)
    store = SeriesStore(clock)
    sup = Supervisor(Telemetry(store), clock)
    got: list[Record] = []
    up = make_labels({"source": "reader"})

    async def emit(r: Record) -> None:
        got.append(r)

    async def scenario() -> None:
        src = Reader()
        sup.start(src, emit)
        await asyncio.sleep(0)
        assert sup.health["reader"].state == "starting"
        series = store.get(SOURCE_UP, up)
        assert series is not None and series.vs[-1] == 1.0  # nothing failed: counted as up
        src.go.set()
        await asyncio.wait_for(src.done.wait(), 5)
        assert sup.health["reader"].state == "up"
        clock.advance(3600)
        sup.refresh()  # the daemon's tick, an hour later
        assert store.get(SOURCE_UP, up).at_or_before(clock.time()) == (clock.time(), 1.0)  # type: ignore[union-attr]
        await sup.stop()

    asyncio.run(scenario())
    assert len(got) == 2


class Reporting:
    """A source that never emits but says how its input looks (a tailer's file status)."""

    name = "kernel"

    def __init__(self) -> None:
        self.health: tuple[str, str] | None = None
        self.running = asyncio.Event()

    def input_health(self) -> tuple[str, str] | None:
        return self.health

    async def run(self, emit: Emit) -> None:
        self.running.set()
        await asyncio.Event().wait()


def test_a_source_reporting_its_input_is_marked_by_it_both_ways() -> None:
    clock = FakeClock()
    store = SeriesStore(clock)

    def up() -> float | None:
        series = store.get(SOURCE_UP, make_labels({"source": "kernel"}))
        last = series.last() if series is not None else None
        return last[1] if last is not None else None

    async def scenario() -> None:
        sup = Supervisor(Telemetry(store), clock)
        src = Reporting()

        async def emit(_r: Record) -> None:
            return None

        sup.start(src, emit)
        await asyncio.wait_for(src.running.wait(), 5)
        sup.refresh()
        assert sup.health["kernel"].state == "starting"  # nothing known yet
        src.health = ("error", "not a regular file (a FIFO): kern.log")
        sup.refresh()
        assert (sup.health["kernel"].state, up()) == ("error", 0.0)
        assert "FIFO" in sup.health["kernel"].reason
        src.health = ("up", "")  # the file is back (or appeared): up with no record yet
        sup.refresh()
        assert (sup.health["kernel"].state, up()) == ("up", 1.0)
        await sup.stop()

    asyncio.run(scenario())
