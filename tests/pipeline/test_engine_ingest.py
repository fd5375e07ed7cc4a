"""The daemon's engine ingest: a crash read from the log is over when the engine's /metrics
answers again (a ScrapeStatus record), and a first start does not page for an old crash."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.config.models import EngineConfig
from inferwatch.derive.engine import names as n
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.model import LineRecord, ScrapeStatus
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


LINES = CORPUS.read_text().splitlines()
_TS = re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d")


def stamped(corpus_line: int, at: float) -> str:
    """A corpus line (L<n>) with its vLLM time set to ``at`` (UTC): the daemon dates lines by
    their own prefix."""
    return _TS.sub(time.strftime("%m-%d %H:%M:%S", time.gmtime(at)), LINES[corpus_line - 1], 1)


def test_a_crash_pages_within_five_seconds_while_the_log_keeps_going() -> None:
    """Crash latency (signal-quality issue, item 13): the log goes on every 0.5 s after the
    first identifying line (stats of another engine, the hang hint), the daemon ticks every
    second, and the crash is counted within 5 s of that line, once, although more lines of
    the same death follow."""
    clock = FakeClock(AT + 0.5)
    engine, store = ingest(clock, first_start=False)
    labels = make_labels({"engine": "e", "signature": "illegal_memory_access"})
    number = 0

    def line(corpus_line: int) -> None:
        nonlocal number
        number += 1
        text = stamped(corpus_line, clock.time())
        record = LineRecord("engine:e", "/log", number, text, clock.time())
        asyncio.run(engine.on_log_line(record))

    def crashes() -> float:
        series = store.get(n.CRASHES, labels)
        return 0.0 if series is None else series.vs[-1]

    line(19)  # L19: the worker's illegal memory access, the first identifying line
    line(20)  # its hint line
    first = clock.time()
    paged_at = None
    step = 0
    while clock.time() < first + 20:
        clock.advance(0.5)
        step += 1
        line(83 if step % 2 else 75)  # L83 stats, L75 shm-broadcast hint: unrelated lines
        if step == 4:
            line(21)  # L21 EngineCore failed to start: the same incident, 2 s later
        if step in (16, 17):
            line(23)  # L23-L24 at +8 s: the API server's side of the same death
            line(24)
        if step % 2 == 0:
            asyncio.run(engine.tick())
        if paged_at is None and crashes() == 1.0:
            paged_at = clock.time()
    assert paged_at is not None and paged_at - first <= 5.0, paged_at - first
    assert crashes() == 1.0  # once per incident: the later lines did not count again
    clock.advance(30)
    asyncio.run(engine.tick())
    assert crashes() == 1.0


def test_a_garbage_scrape_is_a_failed_scrape_not_an_exception() -> None:
    clock = FakeClock(AT)
    engine, store = ingest(clock, first_start=False)
    good = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
    asyncio.run(engine.on_scrape(LineRecord("scrape:e", "http://x/metrics", 1, good, AT)))
    up = store.get(n.UP, make_labels({"engine": "e"}))
    assert up is not None and up.vs[-1] == 1.0
    for seq in range(2, 5):
        clock.advance(5)
        rec = LineRecord("scrape:e", "http://x/metrics", seq, "\x00 garbage {{{", clock.time())
        asyncio.run(engine.on_scrape(rec))  # counted, not raised
    assert up.vs[-1] == 0.0
    errors = store.get(n.SCRAPE_ERRORS, make_labels({"engine": "e"}))
    assert errors is not None and errors.vs[-1] == 3.0
    assert sum(engine.bad_bodies.totals.values()) == 3
