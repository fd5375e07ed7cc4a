"""Engine behaviour outside promtool's reach: the Prometheus 3 switch, the selection cache,
staleness markers written through the store's API, and result types."""

from __future__ import annotations

from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql import engine as promql_engine
from inferwatch.promql.engine import (
    EvalOptions,
    Sample,
    Scalar,
    String,
    Vector,
    evaluate,
    load,
)
from inferwatch.promql.types import DEFAULT_OPTIONS, PLAIN_OPTIONS
from inferwatch.promtool.seriesdesc import expand_values, parse_metric
from inferwatch.store.tsdb import SeriesStore

P3 = EvalOptions(left_open=True)


def _store(series: dict[str, str], interval: float = 60.0) -> SeriesStore:
    """A store holding promtool-notation series, sample k at k * interval seconds."""
    store = SeriesStore(FakeClock(0.0), retention_s=float("inf"))
    for text, values in series.items():
        name, pairs = parse_metric(text)
        for k, v in enumerate(expand_values(values)):
            if v is not None:
                store.set(name, make_labels(pairs), v, k * interval)
    return store


def _values(result: object) -> list[float]:
    assert isinstance(result, list)
    return [s.value for s in result]


def test_prometheus3_ranges_are_left_open() -> None:
    store = _store({'b{job="x"}': "1 2 3 4 5 6 7 8 9 10", 'c{job="x"}': "0+10x10"})
    assert _values(evaluate(load("count_over_time(b[2m])"), store, 300)) == [3]
    assert _values(evaluate(load("count_over_time(b[2m])"), store, 300, P3)) == [2]
    assert _values(evaluate(load("increase(c[1m])"), store, 300)) == [10]
    assert _values(evaluate(load("increase(c[1m])"), store, 300, P3)) == []


def test_prometheus3_lookback_is_left_open() -> None:
    store = _store({'a{job="x"}': "1"})
    assert _values(evaluate(load("a"), store, 300)) == [1]
    assert _values(evaluate(load("a"), store, 300, P3)) == []
    assert _values(evaluate(load("a"), store, 299.999, P3)) == [1]


def test_lookback_is_an_option() -> None:
    store = _store({'a{job="x"}': "1"})
    assert _values(evaluate(load("a"), store, 120, EvalOptions(lookback_s=60))) == []
    assert _values(evaluate(load("a"), store, 60, EvalOptions(lookback_s=60))) == [1]


def test_new_series_are_seen_after_a_cached_selection() -> None:
    store = _store({'m{job="a"}': "1"})
    query = load('m{job=~"a|b"}')
    assert len(_values(evaluate(query, store, 0))) == 1
    store.set("m", make_labels({"job": "b"}), 2.0, 0.0)
    assert sorted(_values(evaluate(query, store, 0))) == [1, 2]
    store.set("other", make_labels({"job": "b"}), 3.0, 0.0)
    nameless = load('{job="b"}')
    assert sorted(_values(evaluate(nameless, store, 0))) == [2, 3]
    store.set("third", make_labels({"job": "b"}), 4.0, 0.0)
    assert sorted(_values(evaluate(nameless, store, 0))) == [2, 3, 4]


def test_order_is_sorted_by_labels_whatever_the_insertion_order() -> None:
    store = SeriesStore(FakeClock(0.0))
    for inst in ("3", "1", "2"):
        store.set("m", make_labels({"inst": inst}), float(inst), 0.0)
    result = evaluate(load("m"), store, 0)
    assert isinstance(result, list)
    assert [s.labels for s in result] == [(("inst", i),) for i in ("1", "2", "3")]


def test_markers_from_the_store_end_a_series_at_once() -> None:
    store = SeriesStore(FakeClock(0.0))
    labels = make_labels({"gpu": "0"})
    store.set("temp", labels, 50.0, 0.0)
    store.mark_stale("temp", labels, 10.0)
    assert _values(evaluate(load("temp"), store, 5)) == [50]
    assert _values(evaluate(load("temp"), store, 10)) == []
    assert _values(evaluate(load("max_over_time(temp[1m])"), store, 30)) == [50]


def test_real_nan_is_a_value_not_a_marker() -> None:
    store = _store({'n{job="x"}': "NaN"})
    [value] = _values(evaluate(load("n"), store, 0))
    assert value != value


def test_result_types() -> None:
    store = _store({'m{job="a"}': "1"})
    assert evaluate("1 + 1", store, 0) == Scalar(2.0)
    assert evaluate('"hi"', store, 0) == String("hi")
    vec: Vector = [Sample("m", (("job", "a"),), 1.0)]
    assert evaluate("m", store, 0) == vec
    assert vec[0].metric() == (("__name__", "m"), ("job", "a"))


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("rate(c[5m] offset 1m)", 1 / 6),
        ("c @ 120", 20.0),
        ("timestamp(c @ 125)", 120.0),
        ("predict_linear(c[2m] offset 1m, 60)", 70.0),
    ],
)
def test_offset_and_at_in_functions(expr: str, value: float) -> None:
    store = _store({'c{job="a"}': "0+10x10"})
    assert _values(evaluate(load(expr), store, 360)) == pytest.approx([value])


def test_the_plain_form_is_compiled_when_first_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading compiles the fast form only; the plain one (parity checks, tests) is compiled
    once, when an evaluation first asks for it, and gives what the fast one gives."""
    compiled: list[object] = []
    real = promql_engine.compile_expr

    def counting(ast: Any, *args: Any) -> Any:
        compiled.append(args[0] if args else None)
        return real(ast, *args)

    monkeypatch.setattr(promql_engine, "compile_expr", counting)
    query = load("rate(x[5m]) > 0")
    assert compiled == [DEFAULT_OPTIONS]
    store = SeriesStore(FakeClock(0.0))
    for t in (0.0, 30.0, 60.0):
        store.set("x", (("job", "a"),), t, t)
    fast = evaluate(query, store, 60.0, DEFAULT_OPTIONS)
    assert evaluate(query, store, 60.0, PLAIN_OPTIONS) == fast != []
    assert evaluate(query, store, 60.0, PLAIN_OPTIONS) == fast
    assert compiled == [DEFAULT_OPTIONS, PLAIN_OPTIONS]
