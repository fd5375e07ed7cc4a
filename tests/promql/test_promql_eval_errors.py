"""Evaluation errors Prometheus raises, raised at the same places (promql.md §5)."""

from __future__ import annotations

import pytest

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql.engine import EvalError, evaluate, load
from inferwatch.store.tsdb import SeriesStore


def _store(**series: dict[str, float]) -> SeriesStore:
    store = SeriesStore(FakeClock(0.0))
    for text, values in series.items():
        name = text.split("__")[0]
        for labels, value in values.items():
            pairs = dict(p.split("=") for p in labels.split(",")) if labels else {}
            store.set(name, make_labels(pairs), value, 0.0)
    return store


@pytest.fixture
def store() -> SeriesStore:
    return _store(
        m={"job=a,inst=1": 1, "job=a,inst=2": 2},
        n={"job=a": 10, "job=b": 20},
        x={"job=a": 1},
        y={"job=a": 2},
    )


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("n + on(job) m", "many-to-many matching not allowed"),
        ("n + on(job) m", 'match group {job="a"} on the right hand-side'),
        ("m * on(job) group_right n", "on the left hand-side"),
        ("m + on(job) n", "many-to-one matching must be explicit"),
        ('-{__name__=~"x|y"}', "same labelset"),
        ('{__name__=~"x|y"} * 2', "same labelset"),
        ('{__name__=~"x|y"} > bool 0', "same labelset"),
        ('rate({__name__=~"x|y"}[5m] offset -1m) or abs({__name__=~"x|y"})', "same labelset"),
        ('label_replace({__name__=~"x|y"}, "__name__", "", "job", ".*")', "same labelset"),
        ("topk(NaN, m)", "Scalar value NaN overflows int64"),
    ],
)
def test_raised(store: SeriesStore, expr: str, message: str) -> None:
    with pytest.raises(EvalError) as info:
        evaluate(load(expr), store, 0.0)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "expr",
    [
        "m + on(job) nonexistent",  # one side empty: nothing to match, no error
        "nonexistent + on(job) m",
        'last_over_time({__name__=~"x|y"}[5m])',  # names kept: no clash
        '{__name__=~"x|y"} atan2 1',  # atan2 keeps the name in 2.42
        '{__name__=~"x|y"} > 0',  # a filter keeps the name
        "topk(NaN, nonexistent) or vector(1)",
    ],
)
def test_not_raised(store: SeriesStore, expr: str) -> None:
    if expr.startswith("topk(NaN"):
        with pytest.raises(EvalError):
            evaluate(load(expr), store, 0.0)
        return
    evaluate(load(expr), store, 0.0)


def test_grouping_labels_must_be_unique(store: SeriesStore) -> None:
    # x{job="a"} and y{job="a"} both match n{job="a"}; the sum drops the names: one label set.
    with pytest.raises(EvalError, match="grouping labels must ensure unique matches"):
        evaluate(load('{__name__=~"x|y"} + on(job) group_left n'), store, 0.0)
    evaluate(load('{__name__=~"x|y"} > on(job) group_left n'), store, 0.0)  # names kept: fine
