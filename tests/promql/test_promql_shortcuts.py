"""Evaluation shortcuts that must not change any result or error: skipping the right operand of
``and``/``unless``/matching operators when the left is empty and the right cannot fail, running
the cheaper side of an ``and`` first (or, of sides of alike cost, the one that decided last time),
skipping an expression while none of the metrics it reads exists, and dropping staleness markers
from windows by their bit pattern."""

from __future__ import annotations

import math
import random
import struct
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql import eval as promql_eval
from inferwatch.promql import functions as promql_functions
from inferwatch.promql import select as promql_select
from inferwatch.promql.absent import empty_without, names_if_empty_without
from inferwatch.promql.ast import ValueType, VectorSelector
from inferwatch.promql.context import Ctx
from inferwatch.promql.cost import cost
from inferwatch.promql.engine import (
    DEFAULT_OPTIONS,
    PLAIN_OPTIONS,
    EvalError,
    EvalOptions,
    Vector,
    evaluate,
    load,
)
from inferwatch.promql.eval import compile_expr, shared_subexpressions
from inferwatch.promql.index import cache_for
from inferwatch.promql.safe import cannot_fail
from inferwatch.promql.select import _drop_markers
from inferwatch.store.series import STALE_NAN, is_stale
from inferwatch.store.tsdb import SeriesStore


@pytest.mark.parametrize(
    ("expr", "safe"),
    [
        ("x", True),
        ("x > 1", True),
        ("2 < x", True),
        ("x > bool 1", True),  # drops the name, but one metric's label sets are unique
        ("x * 2", True),
        ("time() - last_over_time(x[1h]) > 30", True),
        ("(x or y) * 2", False),  # two metrics: without their names, label sets may collide
        ('{__name__="x"} * 2', False),  # (conservatively: the name is a matcher here)
        ("x + y", True),  # one-to-one on all labels, each side unique
        ("quantile_over_time(0.5, x[10m]) < 0.85 * quantile_over_time(0.5, y[24h])", True),
        ("x + on(job) y", False),  # matching on some labels can find two
        ("x + sum(y)", False),
        ("last_over_time(x[1h]) > 0", True),
        ("quantile_over_time(0.5, x[5m]) < 3", True),
        ('rate({__name__=~"x|y"}[5m])', False),  # no one name: outputs may collide
        ("min_over_time(x[2m]) == 1 and on(job) y offset 5m == 1", True),
        ("x or y", True),
        ("x unless y", True),
        ("x < on(job) group_left() y", False),  # matching can fail
        ("sum(x)", False),
        ("-x", False),
        ("abs(x)", False),
        ("vector(1)", False),
    ],
)
def test_cannot_fail(expr: str, safe: bool) -> None:
    assert cannot_fail(load(expr).ast) is safe


def _store() -> SeriesStore:
    store = SeriesStore(FakeClock(0.0))
    store.set("m", make_labels({"job": "a", "inst": "1"}), 1.0, 0.0)
    store.set("m", make_labels({"job": "a", "inst": "2"}), 2.0, 0.0)
    store.set("n", make_labels({"job": "a"}), 10.0, 0.0)
    store.set("x", make_labels({"job": "a"}), 1.0, 0.0)
    return store


@pytest.mark.parametrize(
    "expr",
    [
        "nothing and (n + on(job) m)",  # the right side fails on its own: still evaluated
        "nothing unless (n + on(job) m)",
        "nothing < on(job) (n + on(job) m)",
    ],
)
def test_an_empty_left_side_still_raises_the_right_sides_error(
    expr: str, eval_options: EvalOptions
) -> None:
    with pytest.raises(EvalError, match="many-to-many matching not allowed"):
        evaluate(load(expr), _store(), 0.0, eval_options)


def test_a_relabelling_that_merges_series_still_fails_beside_an_empty_side(
    eval_options: EvalOptions,
) -> None:
    """``label_replace`` is empty over nothing, but over two series it may make one label set
    twice: an expression reading it beside a missing metric is still evaluated."""
    query = load('nothing == 0 unless on(job) label_replace(m, "inst", "1", "", "")')
    assert not empty_without(query.ast, _store().has)
    with pytest.raises(EvalError, match="same labelset"):
        evaluate(query, _store(), 0.0, eval_options)


@pytest.mark.parametrize(
    ("expr", "count"),
    [
        ("nothing and x", 0),
        ("x and nothing", 0),
        ("x and on(job) m > 1", 1),
        ("x unless on(job) m > 5", 1),
        ("nothing unless x", 0),
        ("x > on(job) group_left() n", 0),
        ("n > on(job) group_right() x", 1),
        ("nothing or x", 1),
    ],
)
def test_results_are_unchanged(expr: str, count: int, eval_options: EvalOptions) -> None:
    assert len(evaluate(load(expr), _store(), 0.0, eval_options)) == count  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("x", {"x"}),
        ("rate(x[5m]) > 0", {"x"}),
        ('{__name__="x", job="a"}', {"x"}),
        ("sum by (job) (increase(x[5m])) > 0 or (x unless x offset 5m)", {"x"}),
        ("time() - last_over_time(x[1h]) > 30 and on(job) y > 0", {"x", "y"}),
        ("quantile_over_time(0.5, x[5m]) < on(job) group_left() y", {"x", "y"}),
        ("abs(-x) * 2", {"x"}),
        ("day_of_month(x)", {"x"}),
        ("histogram_quantile(0.9, x)", {"x"}),
        ("absent(x)", None),  # something out of nothing
        ("absent_over_time(x[5m])", None),
        ("x or vector(0)", None),
        ("day_of_month()", None),
        ("scalar(x) * y", None),  # scalar() of nothing is NaN, not nothing
        ("topk(3, x)", None),  # a parameter is checked even over nothing
        ('{job="a"}', None),  # no metric name: could match anything
        ('label_replace(x, "a", "$1", "b", "(.*)")', {"x"}),
        ('label_join(x == 1, "a", ",", "b", "c")', {"x"}),
        ("time()", None),  # a scalar
    ],
)
def test_names_if_empty_without(expr: str, names: set[str] | None) -> None:
    found = names_if_empty_without(load(expr).ast)
    assert (None if found is None else set(found)) == names


@pytest.mark.parametrize(
    "expr",
    [
        "nothing",
        "rate(nothing[5m]) > 0",
        "sum by (job) (increase(nothing[5m])) > 0 or (nothing unless nothing offset 5m)",
        "time() - last_over_time(nothing[1h]) > 30",
        "x and on(job) nothing",  # x exists: evaluated, and empty all the same
    ],
)
def test_expressions_over_missing_metrics_are_empty(expr: str, eval_options: EvalOptions) -> None:
    assert evaluate(load(expr), _store(), 60.0, eval_options) == []


def test_an_expression_is_evaluated_once_its_metric_exists(eval_options: EvalOptions) -> None:
    store = _store()
    query = load("rate(late[5m]) > 0")
    assert evaluate(query, store, 0.0, eval_options) == []
    for t in (0.0, 30.0, 60.0):
        store.set("late", make_labels({"job": "a"}), t, t)
    assert len(evaluate(query, store, 60.0, eval_options)) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "empty"),
    [
        ("quantile_over_time(0.5, x[5m]) < on(job) group_left() nothing", True),
        ("nothing > on(job) group_left() x", True),
        ("x and on(job) (nothing > on(job) group_left() m)", True),  # the right side: empty
        ("(n + on(job) m) and on(job) nothing", False),  # the left side may fail on its own
        ("nothing and (n + on(job) m)", False),  # so may the right one
        ("x unless on(job) nothing", False),  # x itself
        ("nothing unless on(job) (n + on(job) m)", False),
        ("nothing unless on(job) x", True),
        ("x or nothing", False),
        ("nothing or rate(nothing[5m])", True),
        ("sum by (job) (nothing) * 2", True),
        ("topk(1, nothing)", False),  # a parameter is checked even over nothing
        ("scalar(x) * nothing", False),  # the scalar side could fail
        ("absent(nothing)", False),
        ('{job="a"}', False),
        ("-nothing", True),
        ("quantile_over_time(0.5, nothing[5m])", True),
        ("time() - last_over_time(nothing[1h]) > 30", True),
        ('label_replace(nothing == 1, "a", "$1", "b", "(.*)")', True),
        ('label_join(nothing, "a", ",", "b", "c")', True),
        ('nothing == 0 unless on(job) label_replace(nothing == 1, "a", "$1", "b", "(.+)")', True),
        # m exists: relabelled, its two series could become one (an error)
        ('nothing == 0 unless on(job) label_replace(m, "inst", "1", "", "")', False),
    ],
)
def test_empty_without(expr: str, empty: bool, eval_options: EvalOptions) -> None:
    """What is judged empty is empty, and evaluating it raises nothing."""
    store = _store()
    query = load(expr)
    assert empty_without(query.ast, store.has) is empty
    if empty:
        assert evaluate(query, store, 60.0, eval_options) == []


def _window_reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The metric names of the range windows read from now on, in order."""
    reads: list[str | None] = []

    def counting(real):  # type: ignore[no-untyped-def]
        def read(ctx, msel):  # type: ignore[no-untyped-def]
            reads.append(msel.selector.name)
            return real(ctx, msel)

        return read

    # windows (most range functions) and spans (rate, increase and the kept windows of
    # quantile_over_time and count_over_time)
    monkeypatch.setattr(promql_functions, "windows", counting(promql_select.windows))
    monkeypatch.setattr(promql_functions, "spans", counting(promql_select.spans))
    return reads


def test_the_cheap_side_of_an_and_runs_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """``quantile_over_time(…) and x offset 5m == 1``: the instant check is empty, so the
    window is never read; with the check true, the result is the left side's, as before."""
    query = load("quantile_over_time(0.5, m[5m]) and on(job) n offset 1m == 10")
    ast = query.ast
    assert cost(ast.rhs) < cost(ast.lhs)  # type: ignore[union-attr]
    reads = _window_reads(monkeypatch)
    store = _store()
    assert evaluate(query, store, 30.0) == []  # n offset 1m: nothing at -30 s
    assert reads == []
    store.set("n", make_labels({"job": "a"}), 10.0, 60.0)
    found = evaluate(query, store, 60.0)
    assert reads == ["m"]
    assert sorted(s.value for s in found) == [1.0, 2.0]  # type: ignore[union-attr]


def test_a_matching_right_side_runs_only_when_it_could_fail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``nothing and (quantile(…) >= on(job) group_left() one)``: the right side can fail
    only on a duplicate job among ``one``; without one it is not evaluated, with one it is,
    and raises as Prometheus does."""
    reads = _window_reads(monkeypatch)
    query = load("nothing and on(job) quantile_over_time(0.5, m[5m]) >= on(job) group_left() one")
    store = _store()
    store.set("one", make_labels({"job": "a"}), 0.5, 0.0)
    assert evaluate(query, store, 0.0) == []
    assert reads == []
    store.set("one", make_labels({"job": "a", "x": "2"}), 0.5, 0.0)  # a second job="a"
    with pytest.raises(EvalError, match="duplicate series"):
        evaluate(query, store, 0.0)
    assert reads == ["m"]


def test_the_cheap_side_runs_first_when_the_other_fails_only_as_probed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``(quantile(…) < on(job) group_left() one and … ) and on(job) n offset 1m == 10`` (the
    shape of EngineDecodeBelowAnchor): the left side can fail only on a duplicate job among
    ``one`` (or ``two``). With the check empty the windows are not read; with a duplicate they
    are, and the error is raised as Prometheus (which evaluates both sides) raises it."""
    reads = _window_reads(monkeypatch)
    query = load(
        "quantile_over_time(0.5, m[5m]) < on(job) group_left() one"
        " and on(job) max_over_time(m[5m]) >= on(job) group_left() two"
        " and on(job) n offset 1m == 10"
    )
    store = _store()
    store.set("one", make_labels({"job": "a"}), 5.0, 0.0)
    store.set("two", make_labels({"job": "a"}), 1.0, 0.0)
    assert evaluate(query, store, 30.0) == []  # n offset 1m: nothing at -30 s
    assert reads == []
    store.set("n", make_labels({"job": "a"}), 10.0, 60.0)
    found = evaluate(query, store, 60.0)
    assert reads == ["m", "m"]
    assert sorted(s.value for s in found) == [1.0, 2.0]  # type: ignore[union-attr]
    reads.clear()
    store = _store()
    store.set("one", make_labels({"job": "a"}), 5.0, 0.0)
    store.set("two", make_labels({"job": "a"}), 1.0, 0.0)
    store.set("two", make_labels({"job": "a", "x": "2"}), 1.0, 0.0)  # a second job="a"
    with pytest.raises(EvalError, match="duplicate series"):
        evaluate(query, store, 30.0)  # n offset 1m is empty, and the left side fails
    assert reads == ["m", "m"]


def test_the_side_that_decided_runs_first_when_costs_are_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``max_over_time(m[1m]) > 0 and on(job) max_over_time(n[1m]) > 0``: the left side runs
    first as written; once the right side was the empty one, it runs first (the left window
    is not read while it stays empty); when the left side is the empty one again, the order
    turns back."""
    query = load("max_over_time(m[1m]) > 0 and on(job) max_over_time(n[1m]) > 0")
    reads = _window_reads(monkeypatch)
    store = SeriesStore(FakeClock(0.0))
    job = make_labels({"job": "a"})

    def at(t: float, m: float, n: float) -> Vector:  # 70 s apart: a window holds one sample
        store.set("m", job, m, t)
        store.set("n", job, n, t)
        reads.clear()
        return evaluate(query, store, t)  # type: ignore[return-value]

    assert at(0.0, 1.0, 0.0) == [] and reads == ["m", "n"]  # as written; the right decided
    assert at(70.0, 1.0, 0.0) == [] and reads == ["n"]  # the right side first now
    assert at(140.0, 0.0, 1.0) == [] and reads == ["n", "m"]  # the left side decided
    assert at(210.0, 0.0, 1.0) == [] and reads == ["m"]  # and runs first again
    assert len(at(280.0, 2.0, 3.0)) == 1 and reads == ["m", "n"]


def test_a_much_cheaper_side_stays_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """``quantile_over_time(…) and on(job) n offset 1m == 10``: an empty quantile after a true
    check does not put the window first (it would be read at every step of a busy engine,
    while the check alone is empty there)."""
    query = load("quantile_over_time(0.5, m[5m]) > 5 and on(job) n offset 1m == 10")
    reads = _window_reads(monkeypatch)
    store = _store()
    store.set("n", make_labels({"job": "a"}), 10.0, 60.0)
    assert evaluate(query, store, 60.0) == [] and reads == ["m"]  # check true, quantile empty
    reads.clear()
    assert evaluate(query, store, 500.0) == [] and reads == []  # n offset 1m empty: m unread


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([0.0, 1.0, 2.0]),
                          st.booleans()), min_size=1, max_size=12))  # fmt: skip
def test_any_order_gives_what_both_sides_evaluated_give(
    steps: list[tuple[float, float, bool]],
) -> None:
    """A sequence of evaluations of one compiled query, the order turning as the data goes,
    against the plain path (both sides always evaluated, as Prometheus does): the same samples,
    and the same error when the left side fails (a duplicate ``job`` among ``two``)."""
    text = "max_over_time(m[1m]) >= on(job) group_left() two and on(job) last_over_time(n[1m]) > 0"
    fast, plain = load(text), load(text)
    store = SeriesStore(FakeClock(0.0))
    job = make_labels({"job": "a"})
    store.set("two", job, 1.0, 0.0)
    for i, (m, n, duplicate) in enumerate(steps):
        t = 10.0 * (i + 1)
        store.set("m", job, m, t)
        store.set("n", job, n, t)
        store.set("two", job, 1.0, t)
        if duplicate:
            store.set("two", make_labels({"job": "a", "x": str(i)}), 1.0, t)
        outcomes: list[object] = []
        for query, options in ((fast, DEFAULT_OPTIONS), (plain, PLAIN_OPTIONS)):
            try:
                found = evaluate(query, store, t, options)
                assert isinstance(found, list)
                outcomes.append(sorted(found))
            except EvalError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


def _reference(ts: array[float], vs: array[float]) -> tuple[array[float], array[float]]:
    keep = [i for i, v in enumerate(vs) if not (math.isnan(v) and is_stale(v))]
    return array("d", (ts[i] for i in keep)), array("d", (vs[i] for i in keep))


def test_drop_markers_matches_a_sample_by_sample_filter() -> None:
    rng = random.Random(7)
    # Two samples whose bytes hold the marker's pattern across their boundary: not a marker.
    marker = struct.pack("<d", STALE_NAN)
    lo = struct.unpack("<d", b"\x00" * 5 + marker[:3])[0]
    hi = struct.unpack("<d", marker[3:] + b"\x00" * 3)[0]
    choices = [STALE_NAN, math.nan, -math.nan, 1.0, 0.0, -0.0, math.inf, lo, hi]
    for _ in range(3000):
        n = rng.randrange(0, 30)
        vs = array("d", [rng.choice(choices) for _ in range(n)])
        if n >= 2 and rng.random() < 0.2:
            vs[0], vs[1] = lo, hi
        ts = array("d", [float(i) for i in range(n)])
        got, want = _drop_markers(ts, vs), _reference(ts, vs)
        assert got[0] == want[0]
        assert got[1].tobytes() == want[1].tobytes()


counter_steps = st.lists(
    st.tuples(
        st.sampled_from([5.0, 10.0, 10.0, 15.0, 60.0]),  # time since the last sample
        st.sampled_from([0.0, 1.0, 2.5, 7.0, -4.0, -1000.0, math.nan, STALE_NAN]),  # change
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(a=counter_steps, b=counter_steps)
def test_rate_and_increase_read_in_place_as_the_general_path_would(
    a: list[tuple[float, float]], b: list[tuple[float, float]]
) -> None:
    """``rate``/``increase`` read a window without NaN or drop in place (``Series.irregular``);
    the result is the general path's to the bit: with resets, NaNs, markers and gaps."""
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    for job, steps in (("a", a), ("b", b)):
        t, value = 0.0, 0.0
        for gap, change in steps:
            t += gap
            if math.isnan(change):
                store.set("c", make_labels({"job": job}), change, t)
                continue
            value = max(0.0, value + change) if change > -1000 else 0.0
            store.set("c", make_labels({"job": job}), value, t)
    texts = ("rate(c[1m])", "increase(c[2m])", "increase(c[30s])")
    times = [float(t) for t in range(0, 700, 35)]

    def results(options: EvalOptions | None = None) -> list[list[tuple[object, str]]]:
        queries = [load(text) for text in texts]
        found = [
            evaluate(q, store, t, options) if options else evaluate(q, store, t)
            for q in queries
            for t in times
        ]
        return [sorted((s.labels, repr(s.value)) for s in vec) for vec in found]  # type: ignore[union-attr]

    fast = results()
    assert fast == results(PLAIN_OPTIONS)  # the speed machinery off: the general path
    with pytest.MonkeyPatch.context() as patch:  # the general range-function path
        for name in ("rate", "increase"):
            general = promql_functions.FunctionSpec(
                (ValueType.MATRIX,), promql_functions._range(name)
            )
            patch.setitem(promql_functions.FUNCTIONS, name, general)  # type: ignore[arg-type]
        assert fast == results()


def test_a_window_with_markers_is_cleaned_once_per_evaluation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _store()
    labels = make_labels({"job": "a"})
    for i in range(40):  # a recorded series that goes stale every third sample
        store.set("r", labels, STALE_NAN if i % 3 == 2 else float(i), 10.0 * i)
    cleaned: list[int] = []
    real = promql_select._drop_markers

    def counted(ts: array[float], vs: array[float]) -> tuple[array[float], array[float]]:
        cleaned.append(len(vs))
        return real(ts, vs)

    monkeypatch.setattr(promql_select, "_drop_markers", counted)
    query = load("avg_over_time(r[1h]) + sum_over_time(r[1h]) + count_over_time(r[1h])")
    (sample,) = evaluate(query, store, 395.0)
    kept = [float(i) for i in range(40) if i % 3 != 2]  # 0, 1, 3, 4, …, 39
    assert sample.value == sum(kept) / 27 + sum(kept) + 27
    assert cleaned == [40]
    (again,) = evaluate(query, store, 395.0)  # the same window: nothing is read again
    assert again.value == sample.value
    assert cleaned == [40]  # (count_over_time kept its window, avg and sum their values)
    store.set("r", labels, 40.0, 400.0)
    (moved,) = evaluate(query, store, 405.0)  # a sample more: avg and sum read it once
    assert moved.value == sum([*kept, 40.0]) / 28 + sum([*kept, 40.0]) + 28
    assert cleaned == [40, 41]


def test_shared_subexpressions_are_those_read_more_than_once() -> None:
    """Across a group's expressions, and within one: the vector subexpressions that occur
    twice or more (by the text results are kept under); never a scalar, nor the comparisons
    that differ by their threshold."""
    one, two = load("x > 1").ast, load("(x > 2 and y > 0) or sum(z) > 1 or sum(z) < 0").ast
    first, second = shared_subexpressions([one, two])
    assert first == {repr(load("x").ast)}
    # ``z`` occurs twice too, inside the repeated ``sum(z)``
    assert second == {repr(load(e).ast) for e in ("x", "sum(z)", "z")}
    assert shared_subexpressions([one]) == [frozenset()]
    assert load("x > 1").shared == frozenset()  # a query alone keeps what it reads twice
    assert load("sum(z) > 1 or sum(z) < 0").shared == {repr(load(e).ast) for e in ("sum(z)", "z")}


def test_only_shared_results_are_kept_for_the_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two expressions evaluated with one Ctx (a rule group's): ``x``, read by both, is
    selected once and kept; ``y``, read once, is selected once and never kept (a lookup that
    cannot hit costs more than it saves); the results are those of keeping everything."""
    s = SeriesStore(FakeClock(0.0))
    s.set("x", make_labels({"job": "a"}), 5.0, 0.0)
    s.set("y", make_labels({"job": "a"}), 1.0, 0.0)
    texts = ("x > 1", "x > 2 and y > 0")
    asts = [load(t).ast for t in texts]
    shared = shared_subexpressions(asts)
    reads: list[str | None] = []

    def counted(ctx: Ctx, sel: VectorSelector) -> Vector:
        reads.append(sel.name)
        return promql_select.instant(ctx, sel)

    monkeypatch.setattr(promql_eval, "instant", counted)
    kept = [compile_expr(a, DEFAULT_OPTIONS, own) for a, own in zip(asts, shared, strict=True)]
    every = [compile_expr(a, DEFAULT_OPTIONS) for a in asts]
    ctx = Ctx(s, 0.0, DEFAULT_OPTIONS, cache_for(s, DEFAULT_OPTIONS))
    got = [run(ctx) for run in kept]
    assert sorted(reads) == ["x", "y"]
    assert set(ctx.memo) == {repr(load("x").ast)}
    fresh = Ctx(s, 0.0, DEFAULT_OPTIONS, cache_for(s, DEFAULT_OPTIONS))
    assert [run(fresh) for run in every] == got
    assert len(fresh.memo) > len(ctx.memo)
