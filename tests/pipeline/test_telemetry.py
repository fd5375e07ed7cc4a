"""Self-telemetry: per-record counting reaches the store in sums, not a sample per record."""

from __future__ import annotations

from inferwatch.clock import FakeClock
from inferwatch.pipeline.telemetry import RECORDS_FLUSH_S, RECORDS_READ, Telemetry
from inferwatch.store.tsdb import SeriesStore

LABELS = (("source", "engine:a"),)


def test_records_are_summed_between_flushes_and_nothing_is_lost() -> None:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    woken: list[str] = []
    store.on_change(lambda name, labels, at: woken.append(name))
    telemetry = Telemetry(store)
    for _ in range(1000):
        telemetry.records("engine:a")
    series = store.get(RECORDS_READ, LABELS)
    assert series is not None and series.last_real() == (1000.0, 1.0)  # the first one, at once
    clock.advance(RECORDS_FLUSH_S)
    telemetry.records("engine:a")
    assert series.last_real() == (1000.0 + RECORDS_FLUSH_S, 1001.0)
    telemetry.records("engine:a", 4)
    telemetry.flush()  # the daemon's tick
    assert series.last_real() == (1000.0 + RECORDS_FLUSH_S, 1005.0)
    assert len(series.ts) <= 3
    assert RECORDS_READ not in woken  # a throughput counter wakes no rule
