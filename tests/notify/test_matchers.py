from __future__ import annotations

import pytest

from inferwatch.labels import MatchOp, make_labels
from inferwatch.notify.matchers import (
    MatcherError,
    format_matchers,
    matches,
    parse_list,
    parse_matcher,
    parse_matchers,
)


@pytest.mark.parametrize(
    ("text", "name", "op", "value"),
    [
        ('alertname="X"', "alertname", MatchOp.EQ, "X"),
        ('severity=~"crit.*"', "severity", MatchOp.RE, "crit.*"),
        ("a!=b", "a", MatchOp.NE, "b"),
        ('a!~"x|y"', "a", MatchOp.NRE, "x|y"),
        ("  gpu = 3  ", "gpu", MatchOp.EQ, "3"),
        ("job=my job", "job", MatchOp.EQ, "my job"),
        ('msg="say \\"hi\\" \\\\ ok"', "msg", MatchOp.EQ, 'say "hi" \\ ok'),
        ('msg="a\\nb"', "msg", MatchOp.EQ, "a\nb"),
        ('v="a,b}"', "v", MatchOp.EQ, "a,b}"),
        ("gpu=", "gpu", MatchOp.EQ, ""),
        ('gpu=""', "gpu", MatchOp.EQ, ""),
        ("x=~.+", "x", MatchOp.RE, ".+"),
    ],
)
def test_parse_one(text: str, name: str, op: MatchOp, value: str) -> None:
    m = parse_matcher(text)
    assert (m.name, m.op, m.value) == (name, op, value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{a="b", c=~"d"}', [("a", "=", "b"), ("c", "=~", "d")]),
        ('a="b",c!=d', [("a", "=", "b"), ("c", "!=", "d")]),
        ('{a="b",}', [("a", "=", "b")]),
        ("{}", []),
        ("", []),
        ("  { x = 1 , y !~ 2 }  ", [("x", "=", "1"), ("y", "!~", "2")]),
    ],
)
def test_parse_lists(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert [(m.name, m.op.value, m.value) for m in parse_matchers(text)] == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('="x"', "column 1: expected a label name"),
        ("1abc=x", "expected a label name"),
        ("abc", "expected one of"),
        ('a="b"x', "column 6: unexpected text"),
        ('a="open', "unterminated"),
        ('a="bad\\q"', "unknown escape"),
        ('a=~"("', "invalid regex"),
        ('{a="b"', "expected , or }"),
        ('a="b" c="d"', "unexpected text"),
        ('a=x"y"', "unexpected quote"),
        ('{a="b"} x', "unexpected text"),
    ],
)
def test_errors(text: str, fragment: str) -> None:
    with pytest.raises(MatcherError, match="invalid") as info:
        parse_matchers(text)
    assert fragment in str(info.value)
    assert repr(text) in str(info.value)


def test_parse_matcher_wants_exactly_one() -> None:
    with pytest.raises(MatcherError, match="exactly one"):
        parse_matcher("a=b, c=d")
    with pytest.raises(MatcherError, match="exactly one"):
        parse_matcher("")


def test_matching_is_anchored_and_absent_is_empty() -> None:
    labels = make_labels({"severity": "critical", "engine": "main"})
    assert matches(parse_list(['severity=~"crit.*"', "engine!=aux"]), labels)
    assert not matches(parse_list(['severity=~"crit"']), labels)  # anchored
    assert matches(parse_list(['gpu=""']), labels)  # absent label == empty
    assert not matches(parse_list(['gpu=~".+"']), labels)
    assert matches((), labels)


def test_parse_list_accepts_lists_per_item_and_round_trips() -> None:
    found = parse_list(['{a="b", c=~"d"}', 'e!="f\\"g"'])
    text = format_matchers(found)
    assert text == '{a="b",c=~"d",e!="f\\"g"}'
    assert parse_matchers(text) == found
