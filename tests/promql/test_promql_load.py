"""Loading: what is refused, by name, before anything runs (and what must still load)."""

from __future__ import annotations

import pytest

from inferwatch.promql.ast import AtModifier, Binary, Cardinality, VectorSelector, selectors
from inferwatch.promql.engine import PromQLError, ValueType, load


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("rate(x[5m:1m])", "subqueries"),
        ("max_over_time(rate(x[1m])[5m:])", "subqueries"),
        ("mad_over_time(x[5m])", "mad_over_time"),
        ("sort_by_label(x)", "sort_by_label"),
        ("holt_winters(x[5m], 0.5, 0.5)", "holt_winters"),
        ("histogram_count(x)", "histogram_count"),
        ("limitk(1, x)", "limitk"),
        ("x + fill(0) y", "fill"),
        ('x{a="1" or b="2"}', "'or'"),
        ("1m", "duration"),
        ("x > 5m", "duration"),
        ("x[90]", "unit"),
        ("x offset 60", "unit"),
        ("x offset +1m", "'+' after offset"),
        ('x{"job"="a"}', "quoted label"),
        ("x[5m]", "range vector"),
        ("sum(", "parse error"),
        ("1 > 2", "parse error"),
        ('x{a=~"("}', "parse error"),
        ('x{a=~"(a)\\\\1"}', "illegal regex"),  # RE2, as Go: no backreferences
        ('label_replace(x, "1bad", "", "a", "")', "invalid destination label name"),
        ('label_replace(x, "d", "", "a", "a(?=b)")', "invalid regular expression"),
        ('label_replace(x, "d", "", "a", "(a)\\\\1")', "invalid regular expression"),
        ('label_replace(x, "d", "", "a", "(?<!a)b")', "invalid regular expression"),
        ('label_join(x, "d", ",", "1bad")', "invalid source label name"),
        ('count_values("1bad", x)', "invalid label name"),
        ("", "parse error"),
        ("`unterminated", "unterminated"),
    ],
)
def test_refused_at_load(text: str, needle: str) -> None:
    with pytest.raises(PromQLError, match=None) as info:
        load(text)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "x offset -5m",
        "x @ start()",
        "rate(x[5m] @ end() offset 1m)",
        "rate(x[1h30m] @ 100)",
        'label_replace(x, "d", "$1", "s", `(\\d+)`)',
        'x{a=~"\\\\p{L}+"} + label_replace(x, "d", "$1", "s", "(\\\\p{Greek})")',  # RE2 classes
        "0x1F + .5 + 5. + 1e3 + Inf + NaN",
        "a + on(b) group_left(c) d",
        "a > bool on() group_right b",
        "sum by (a) (x) or sum(x) by (b)",
        "x # a comment\n + 1",
        "time()",
        '"a string"',
    ],
)
def test_loads(text: str) -> None:
    load(text)


def test_types_and_tree() -> None:
    assert load("1 + 2").type is ValueType.SCALAR
    assert load("vector(1)").type is ValueType.VECTOR
    assert load('"s"').type is ValueType.STRING
    q = load("a * on(job) group_left(team) b offset 1m")
    assert isinstance(q.ast, Binary)
    assert q.ast.matching is not None
    assert q.ast.matching.card is Cardinality.MANY_TO_ONE
    assert q.ast.matching.include == ("team",)
    assert isinstance(q.ast.rhs, VectorSelector)
    assert q.ast.rhs.offset == 60
    assert [type(s).__name__ for s in selectors(load("rate(a[5m]) + b").ast)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x @ 100", 100.0),
        ("x @ 1.5", 1.5),
        ("x @ 0", 0.0),
        ("x @ -10", -10.0),
        ("x @ -10.5", -10.5),
    ],
)
def test_at_timestamps(text: str, expected: float) -> None:
    ast = load(text).ast
    assert isinstance(ast, VectorSelector)
    assert ast.at == AtModifier("at", expected)


def test_backtick_strings_keep_backslashes() -> None:
    ast = load('x{a=~`\\d+"q`}').ast
    assert isinstance(ast, VectorSelector)
    assert ast.matchers[0].value == '\\d+"q'
