"""RE2 with Go's meaning: what it refuses, how it anchors, and the memo's bound."""

from __future__ import annotations

import pytest

from inferwatch import regexp


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a)\\1", "invalid escape sequence"),
        ("a(?=b)", "invalid perl operator"),
        ("a(?!b)", "invalid perl operator"),
        ("(?<=a)b", "invalid perl operator"),
        ("(?>a)", "invalid perl operator"),
        ("a*+", "bad repetition operator"),
        ("(", "missing )"),
    ],
)
def test_what_go_refuses_is_refused(pattern: str, reason: str) -> None:
    with pytest.raises(regexp.RegexError, match=None) as info:
        regexp.compile(pattern)
    assert reason in str(info.value)


def test_matches_is_the_whole_value() -> None:
    r = regexp.compile("ab|a")
    assert r.matches("ab") and r.matches("a")
    assert not r.matches("abc") and not r.matches("xab")
    assert not regexp.compile("a$").matches("a\n")  # Python's $ would take the newline
    assert regexp.compile(r"\d+").matches("42") and not regexp.compile(r"\d").matches("٣")


def test_dot_matches_a_newline_only_when_asked() -> None:
    assert not regexp.compile("a.b").matches("a\nb")
    assert regexp.compile("a.b", dot_nl=True).matches("a\nb")
    assert regexp.compile("(?s)a.b").matches("a\nb")


def test_a_value_that_is_not_utf8_matches_nothing() -> None:
    assert not regexp.compile(".*").matches("\ud800")
    with pytest.raises(regexp.RegexError):
        regexp.compile("\ud800")


def test_the_memo_stays_bounded() -> None:
    r = regexp.Regexp("x[0-9]+")
    for i in range(5000):
        assert r.matches(f"x{i}")
    assert not r.matches("y" * 1000)  # long values are matched, not kept
    assert len(r._memo) <= 1024


def test_groups_and_finditer() -> None:
    r = regexp.compile("(?P<word>[a-z]+)(?:-(\\d))?")
    assert r.groups == 2 and r.groupindex == {"word": 1}
    assert [(m.start(), m.end()) for m in r.finditer("ab-1 cd")] == [(0, 4), (5, 7)]
    found = r.search("  xy")
    assert found is not None and found.group(1) == "xy"
