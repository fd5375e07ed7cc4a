"""The daemon's engine ingest: a crash read from the log is over when the engine's /metrics
answers again (a ScrapeStatus record), and a first start does not page for an old crash."""

from __future__ import annotations

import asyncio
from datetime import UTC
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.config.models import EngineConfig
from inferwatch.derive.engine import names as n
from inferwatch.labels import make_labels
from inferwatch.model import Event, LineRecord, ScrapeStatus
from inferwatch.pipeline.engine import EngineIngest
from inferwatch.store.tsdb import SeriesStore

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus" / "engine-lines.txt"
CRASH = CORPUS.read_text().splitlines()[32:37]  # 06-11 11:46:39: AttributeError in EngineCore
AT = 1_781_178_399.0  # 2026-06-11T11:46:39Z
LABELS = make_labels({"engine": "e", "signature": "exception"})


def ingest(clock: FakeClock, *, first_start: bool) -> tuple[EngineIngest, SeriesStore]:
    store = SeriesStore(clock)

    async def sink(events: list[Event]) -> None:
        return None

    engine = EngineIngest(EngineConfig(name="e"), store, sink, clock, UTC, first_start=first_start)
    return engine, store


def feed_crash(engine: EngineIngest, clock: FakeClock) -> None:
    for number, text in enumerate(CRASH, 1):
        asyncio.run(engine.on_log_line(LineRecord("engine:e", "/log", number, text, clock.time())))
    clock.advance(30)
    asyncio.run(engine.tick())  # the quiet log decides the crash chain


def test_metrics_answering_again_ends_the_crash() -> None:
    clock = FakeClock(AT + 1)
    engine, store = ingest(clock, first_start=False)
    feed_crash(engine, clock)
    crashed = store.get(n.CRASHED, LABELS)
    assert crashed is not None and crashed.vs[-1] == 1.0
    clock.advance(60)
    asyncio.run(engine.on_scrape_status(ScrapeStatus("scrape:e", "e", True, clock.time())))
    assert crashed.vs[-1] == 0.0


def test_a_first_start_counts_an_old_crash_without_the_crashed_state() -> None:
    clock = FakeClock(AT + 86400)  # the daemon starts a day later over the same log
    engine, store = ingest(clock, first_start=True)
    feed_crash(engine, clock)
    crashes = store.get(n.CRASHES, LABELS)
    assert crashes is not None and crashes.vs[-1] == 1.0  # counted (as a baseline)
    assert store.get(n.CRASHED, LABELS) is None  # but no dead engine to page for
