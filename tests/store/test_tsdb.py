from __future__ import annotations

import itertools

import pytest

from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.labels import Matcher, make_labels
from inferwatch.store.limits import SeriesLimits
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore


def store() -> tuple[SeriesStore, FakeClock]:
    clock = FakeClock(1000.0)
    return SeriesStore(clock), clock


def test_labels_are_normalised() -> None:
    assert make_labels({"b": "2", "a": "1", "empty": ""}) == (("a", "1"), ("b", "2"))


def test_gauge_goes_stale_after_five_minutes() -> None:
    st, clock = store()
    st.set("g", make_labels({"gpu": "0"}), 42.0)
    s = st.get("g", make_labels({"gpu": "0"}))
    assert s is not None
    clock.advance(300)
    assert st.current(s) == 42.0  # exactly 5 min: still fresh
    clock.advance(1)
    assert st.current(s) is None


def test_mark_stale_hides_at_once() -> None:
    st, _ = store()
    labels = make_labels({"gpu": "1"})
    st.set("g", labels, 1.0)
    st.mark_stale("g", labels)
    s = st.get("g", labels)
    assert s is not None and st.current(s) is None


def test_event_counter_carries_forward_and_never_goes_stale() -> None:
    st, clock = store()
    seen: list[str] = []
    st.on_change(lambda name, labels, t: seen.append(name))
    labels = make_labels({"xid": "79"})
    assert st.inc("xid_total", labels) == 1.0
    assert seen == ["xid_total"]
    for _ in range(600):
        clock.advance(1)
        st.tick()
    s = st.get("xid_total", labels)
    assert s is not None
    assert st.current(s) == 1.0
    ts, vs = s.window(clock.time() - 60, clock.time())
    assert len(ts) == 7 and set(vs) == {1.0}  # one carried sample every 10 s
    assert all(b - a == 10.0 for a, b in itertools.pairwise(ts))
    assert st.inc("xid_total", labels) == 2.0
    assert s.last() == (clock.time(), 2.0)  # an event is a sample at once, between carries


def test_late_event_is_counted_now_not_in_the_past() -> None:
    st, clock = store()
    st.inc("c_total", (), t=clock.time())
    st.inc("c_total", (), t=clock.time() - 100)  # an older record read late
    s = st.get("c_total", ())
    assert s is not None
    assert list(s.samples()[1]) == [2.0]


def test_select_with_matchers() -> None:
    st, _ = store()
    for gpu in ("0", "1", "10"):
        st.set("temp", make_labels({"gpu": gpu}), 50.0)
    st.set("power", make_labels({"gpu": "0"}), 300.0)
    got = st.select([Matcher.of("__name__", "=", "temp"), Matcher.of("gpu", "=~", "1.*")])
    assert sorted(s.labels for s in got) == [(("gpu", "1"),), (("gpu", "10"),)]
    got = st.select([Matcher.of("__name__", "=~", "temp|power"), Matcher.of("gpu", "=", "0")])
    assert sorted(s.name for s in got) == ["power", "temp"]
    # An absent label matches the empty string, as in Prometheus.
    assert len(st.select([Matcher.of("__name__", "=", "temp"), Matcher.of("x", "=", "")])) == 3


def test_retention_trims_old_samples() -> None:
    st, clock = store()
    st.retention_s = 60
    for _ in range(120):
        st.set("g", (), 1.0)
        clock.advance(1)
    st.trim(clock.time())
    s = st.get("g", ())
    assert s is not None
    assert s.samples()[0][0] >= clock.time() - 60
    st.require_retention(3600)
    assert st.retention_s == 3600


@pytest.mark.parametrize("every", [60.0, 600.0])
def test_ticks_apply_retention_at_the_store_s_trim_interval(every: float) -> None:
    """A tick trims once ``trim_every_s`` has passed since the last trim: samples older than
    retention live at most that much longer (replay trims every 10 minutes of its log)."""
    clock = FakeClock(0.0)
    st = SeriesStore(clock, retention_s=60.0, trim_every_s=every)
    oldest: list[float] = []
    for t in range(0, 1201, 10):
        clock.set(float(t))
        st.set("g", (), 1.0)
        st.tick()
        oldest.append(st.get("g", ()).samples()[0][0])  # type: ignore[union-attr]
    ages = [t - first for t, first in zip(range(0, 1201, 10), oldest, strict=True)]
    assert max(ages) == 60.0 + every - 10.0  # trimmed at the tick that reaches the interval
    assert ages[-1] <= 60.0 + every


def test_describe() -> None:
    st, _ = store()
    st.describe("g", Kind.GAUGE, "a gauge")
    meta = st.meta("g")
    assert meta is not None and meta.help == "a gauge"


def test_baseline_increment_looks_old_to_rules() -> None:
    st, clock = store()
    labels = make_labels({"xid": "79"})
    assert st.inc_baseline("old_total", labels, 1.0) == 1.0
    s = st.get("old_total", labels)
    assert s is not None and s.carry_forward
    now = clock.time()
    # Five minutes ago the series already had its value: no increase, no "new series".
    before = s.at_or_before(now - 300)
    assert before is not None and before[1] == 1.0 and now - 300 - before[0] <= 30
    ts, vs = s.window(now - 300, now)
    assert set(vs) == {1.0} and len(ts) >= 10
    # Later old events raise the whole history: the total counts them, no window sees news.
    clock.advance(20)
    assert st.inc_baseline("old_total", labels, 1.0) == 2.0
    ts, vs = s.window(clock.time() - 300, clock.time())
    assert set(vs) == {2.0}


def test_old_events_after_a_real_one_keep_that_increase_and_add_none() -> None:
    """A first start reading a ring of 14 old faults of one GPU (issue: 14 pages) and one new."""
    st, clock = store()
    labels = make_labels({"xid": "79"})
    st.inc_baseline("old_total", labels, 1.0)
    clock.advance(10)
    st.inc("old_total", labels, 1.0)  # a fresh fault
    for _ in range(13):
        clock.advance(1)
        st.inc_baseline("old_total", labels, 1.0)
    s = st.get("old_total", labels)
    assert s is not None
    _, vs = s.window(clock.time() - 300, clock.time())
    assert vs[-1] == 15.0
    assert max(vs) - min(vs) == 1.0  # the one fresh fault is the only increase in the window


def test_retention_per_metric_name() -> None:
    st, clock = store()
    st.retention_s = 60
    st.require_retention(600, "baseline")
    for _ in range(300):
        st.set("baseline", (), 1.0)
        st.set("other", (), 1.0)
        clock.advance(1)
    st.trim(clock.time())
    base, other = st.get("baseline", ()), st.get("other", ())
    assert base is not None and other is not None
    assert len(base) == 300
    assert len(other) <= 61


def test_gauges_nothing_reads_are_created_without_samples() -> None:
    """``reads``: a replay's store keeps samples only of what its rules can read; the others
    still join as series (limits, the series count and the generation see them as before)."""
    clock = FakeClock(1000.0)
    limits = SeriesLimits(series_total=3)
    st = SeriesStore(clock, limits=limits, reads=lambda name: name.startswith("read_"))
    plain = SeriesStore(FakeClock(1000.0), limits=limits)
    gpu = make_labels({"gpu": "0"})
    for s in (st, plain):
        assert s.set("unread_gauge", gpu, 1.0)
        assert s.set("read_gauge", gpu, 2.0)
        s.inc("unread_total", gpu)  # counters are never muted
        assert not s.set("unread_gauge", make_labels({"gpu": "1"}), 3.0)  # the 4th: refused
    assert st.series_count() == plain.series_count()  # with the dropped-series counter
    assert st.generation == plain.generation
    muted = st.get("unread_gauge", gpu)
    assert muted is not None and muted.muted and len(muted) == 0
    kept = st.get("read_gauge", gpu)
    assert kept is not None and not kept.muted and list(kept.vs) == [2.0]
    counter = st.get("unread_total", gpu)
    assert counter is not None and list(counter.vs) == [1.0]
    with pytest.raises(ValueError, match="NaN"):
        st.set("unread_gauge", gpu, 1.0, float("nan"))  # refused as any gauge's would be
    assert st.drops("unread_gauge", gpu) and not st.drops("read_gauge", gpu)
    assert not st.drops("unread_gauge", make_labels({"gpu": "9"}))  # no such series: not yet
    restored = Series("unread_other", gpu, Kind.GAUGE)
    st.restore_series(restored)  # from a snapshot: as a series made here (the limit: refused)
    roomy = SeriesStore(FakeClock(0.0), reads=lambda name: False)
    roomy.restore_series(restored)
    assert restored.muted and roomy.drops("unread_other", gpu)
    nothing = SeriesStore(FakeClock(0.0))
    nothing.set("g", gpu, 1.0)
    assert len(nothing.get("g", gpu) or ()) == 1  # no reads given: everything is kept
