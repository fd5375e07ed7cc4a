"""Kept windows (promql/sliding.py): quantile_over_time and count_over_time give, evaluation
after evaluation, exactly what a fresh read gives, while reading only the samples that moved;
and the functions of a window's samples alone (avg_over_time, …) give, from the value they
kept for an unchanged window, exactly what a fresh read gives."""

from __future__ import annotations

import random

import pytest

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql import select as promql_select
from inferwatch.promql import sliding
from inferwatch.promql.engine import PLAIN_OPTIONS, Query, evaluate, load
from inferwatch.store.series import STALE_NAN
from inferwatch.store.tsdb import SeriesStore

QUERIES = (
    "quantile_over_time(0.75, m[10m])",
    "quantile_over_time(0.5, m[1h] offset 1m)",
    "quantile_over_time(0, m[10m])",
    "quantile_over_time(1, m[10m])",
    "quantile_over_time(1.5, m[10m])",  # out of range: +Inf, the ordinary path
    "count_over_time(m[10m])",
    "count_over_time(m[1h] offset 1m) >= 10",
)


# Kept per series with the window they came from (promql/functions._window_values).
WINDOW_QUERIES = (
    "avg_over_time(m[10m])",
    "sum_over_time(m[1h] offset 1m)",
    "min_over_time(m[10m]) > 3",
    "max_over_time(m[10m])",
    "stddev_over_time(m[10m])",
    "stdvar_over_time(m[1h])",
    "present_over_time(m[10m])",
    "changes(m[10m])",
    "resets(m[1h])",
)


def _value(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.2:
        return STALE_NAN
    if roll < 0.25:
        return rng.choice((0.0, -0.0))  # equal values of different sign: order matters
    if roll < 0.27:
        return float("nan")  # an ordinary NaN: such windows take the ordinary path
    if roll < 0.28:
        return rng.choice((float("inf"), float("-inf")))
    return float(rng.randint(0, 30))  # many ties


@pytest.mark.parametrize("texts", [QUERIES, WINDOW_QUERIES], ids=["kept", "window-values"])
@pytest.mark.parametrize("seed", range(12))
def test_kept_windows_equal_fresh_reads(seed: int, texts: tuple[str, ...]) -> None:
    """Random series (markers, ties, ±0, NaN, ±Inf) changed in every way a series changes:
    appends, a replaced last value, a raised level, trims with compactions; each evaluation of
    one compiled query (its windows kept) is compared bit for bit with the general path."""
    rng = random.Random(seed)
    store = SeriesStore(FakeClock(0.0))
    series = [make_labels({"job": "a", "i": str(i)}) for i in range(3)]
    queries = [load(q) for q in texts]
    t = 0.0
    for _ in range(400):
        t += rng.choice((5.0, 10.0, 10.0, 30.0, 400.0))
        for labels in series:
            if rng.random() < 0.8:
                store.set("m", labels, _value(rng), t)
            if rng.random() < 0.05:
                store.set("m", labels, _value(rng), t)  # the same time: replaces the last value
            found = store.get("m", labels)
            if found is not None and rng.random() < 0.02:
                found.raise_level(rng.choice((1.0, 0.5)))
            if found is not None and rng.random() < 0.03:
                found.trim(t - rng.choice((600.0, 1800.0, 3600.0)))
        for at in (t + rng.choice((0.0, 1.0, 9.0)), t + 10.0):  # the second: same windows, often
            _same_as_fresh(queries, store, at)


def _same_as_fresh(queries: list[Query], store: SeriesStore, at: float) -> None:
    for query in queries:
        kept = evaluate(query, store, at)
        fresh = evaluate(load(query.text), store, at, PLAIN_OPTIONS)
        assert _bits(kept) == _bits(fresh), (query.text, at)


def _bits(vec: object) -> list[tuple[object, str]]:
    return sorted((s.labels, repr(s.value)) for s in vec)  # type: ignore[attr-defined]


def test_a_window_a_few_samples_later_reads_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SeriesStore(FakeClock(0.0))
    labels = make_labels({"job": "a"})
    for i in range(2000):  # a day of 30-s samples, every third one stale
        store.set("r", labels, STALE_NAN if i % 3 == 2 else float(i % 97), 30.0 * i)
    query = load("quantile_over_time(0.75, r[1d]) + count_over_time(r[1d])")
    fresh_reads: list[int] = []
    real = promql_select.window_in

    def counted(ctx, s, lo, hi):  # type: ignore[no-untyped-def]
        fresh_reads.append(hi - lo)
        return real(ctx, s, lo, hi)

    monkeypatch.setattr(sliding, "window_in", counted)
    t = 30.0 * 1999
    assert _bits(evaluate(query, store, t)) == _bits(evaluate(query, store, t, PLAIN_OPTIONS))
    assert fresh_reads == [2000, 2000]  # the first evaluation (markers dropped once: ctx.windows)
    for i in range(2000, 2010):
        store.set("r", labels, float(i % 89), 30.0 * i)
        t = 30.0 * i
        kept = evaluate(query, store, t)
        assert _bits(kept) == _bits(evaluate(load(query.text), store, t, PLAIN_OPTIONS))
    assert fresh_reads == [2000, 2000]  # ten evaluations later: only the samples that moved
    store.set("r", labels, 5.0, t)  # the last value replaced: its index names another value
    assert _bits(evaluate(query, store, t)) == _bits(evaluate(query, store, t, PLAIN_OPTIONS))
    assert len(fresh_reads) == 4
