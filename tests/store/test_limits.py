"""The store's limits: a new series past one is dropped and counted, existing ones go on."""

from __future__ import annotations

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.store.limits import DROPPED, SeriesLimits
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore


def limited(**kw: object) -> SeriesStore:
    return SeriesStore(FakeClock(100.0), limits=SeriesLimits(**kw))  # type: ignore[arg-type]


def dropped(store: SeriesStore, reason: str) -> float:
    s = store.get(DROPPED, (("reason", reason),))
    last = s.last() if s is not None else None
    return last[1] if last else 0.0


def test_label_values_are_bounded_per_metric_and_label() -> None:
    store = limited(label_values={"dp_rank": 3})
    for n in range(10):
        store.set("running", make_labels({"engine": "e", "dp_rank": str(n)}), 1.0)
        store.inc("generated", make_labels({"engine": "e", "dp_rank": str(n)}))
    assert len(list(store.family("running"))) == 3
    assert len(list(store.family("generated"))) == 3  # each metric has its own budget
    assert dropped(store, "label_values") == 14
    # a value already in goes on being written, whatever else is refused
    assert store.set("running", make_labels({"engine": "e", "dp_rank": "1"}), 2.0)
    assert not store.set("running", make_labels({"engine": "e", "dp_rank": "99"}), 2.0)
    assert store.set("running", make_labels({"engine": "f", "dp_rank": "2"}), 2.0)


def test_series_per_metric_and_in_total() -> None:
    store = limited(series_per_metric=5, series_total=8)
    for n in range(7):
        store.set("a", (("n", str(n)),), 1.0)
    for n in range(7):
        store.set_counter("b", (("n", str(n)),), 1.0)
    assert len(list(store.family("a"))) == 5
    assert dropped(store, "series_per_metric") == 2
    # 5 of a, the drop counter, then 2 of b fill the 8
    assert len(list(store.family("b"))) == 2
    assert dropped(store, "series_total") == 5
    assert store.series_count() == 8 + 1  # the drop counters are never refused
    assert store.inc_baseline("c", (), 1.0) == 0.0


def test_the_status_says_where_the_store_stands() -> None:
    store = limited(series_per_metric=2, label_values={"position": 4})
    for n in range(6):
        store.set("pos", (("position", str(n)),), 0.5)
    status = store.limits_status()
    assert status["series_per_metric"] == {
        "limit": 2,
        "largest": [{"metric": "pos", "series": 2}, {"metric": DROPPED, "series": 1}],
    }
    assert status["label_values"] == {"position": {"limit": 4, "most": 2, "metric": "pos"}}
    assert status["dropped"] == {"series_per_metric": 4}


def test_new_limits_apply_to_new_series_only() -> None:
    store = limited(series_per_metric=10)
    for n in range(5):
        store.set("a", (("n", str(n)),), 1.0)
    store.set_limits(SeriesLimits(series_per_metric=3))
    assert store.set("a", (("n", "4"),), 2.0)
    assert not store.set("a", (("n", "5"),), 2.0)
    assert len(list(store.family("a"))) == 5


def test_a_snapshot_is_restored_within_the_limits() -> None:
    store = limited(series_per_metric=2)
    for n in range(4):
        s = Series("a", (("n", str(n)),), store.meta(DROPPED).kind)  # type: ignore[union-attr]
        s.append(1.0, 1.0)
        store.restore_series(s)
    assert len(list(store.family("a"))) == 2
    assert store.series_count() == 3


def test_no_limits_by_default() -> None:
    store = SeriesStore(FakeClock(0.0))
    for n in range(3000):
        store.set("a", (("dp_rank", str(n)),), 1.0)
    assert store.series_count() == 3000
