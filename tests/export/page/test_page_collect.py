from __future__ import annotations

from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.export.page.collect import curves, engine_span, samples
from inferwatch.labels import make_labels
from inferwatch.store.tsdb import SeriesStore

DECODE = "inferwatch_engine_decode_tokens_per_second"
E1 = make_labels({"engine": "e1"})


def test_a_young_store_gives_sparklines_from_its_first_sample() -> None:
    clock = FakeClock(10_000.0)
    store = SeriesStore(clock)
    store.describe(DECODE, Kind.GAUGE, "d")
    assert curves(store, clock.time()) == [] and engine_span(store) is None
    for i in range(10):  # 10 minutes of data
        store.set(DECODE, E1, 100.0 + i)
        clock.advance(60)
    assert engine_span(store) == (10_000.0, 10_540.0)
    (curve,) = curves(store, clock.time())
    assert curve.metric == {"__name__": DECODE, "engine": "e1"}
    assert curve.points[0] == (10_000.0, 100.0)
    assert len(curve.points) == 61  # 60 steps over the span, both ends


def test_samples_hold_engine_and_gpu_series_only() -> None:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    for name in (DECODE, "inferwatch_gpu_power_watts", "inferwatch_records_total"):
        store.describe(name, Kind.GAUGE, "x")
        store.set(name, make_labels({"engine": "e1", "gpu": "0"}), 1.0)
    names = sorted(s.name for s in samples(store, clock.time()))
    assert names == [DECODE, "inferwatch_gpu_power_watts"]
