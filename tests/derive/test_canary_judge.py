"""The canary's verdict: the expected answer, without repetition."""

from __future__ import annotations

import pytest

from inferwatch.derive.canary import decode_rate, judge, repetition


@pytest.mark.parametrize(
    "text", ["Paris", "Paris.", "The capital of France is Paris.", " paris", "Paris, France"]
)
def test_right_answers(text: str) -> None:
    assert judge(text, "Paris") == ""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("London", "does not contain 'Paris'"),
        ("", "does not contain 'Paris'"),
        ("Paris Paris Paris Paris Paris", "repeats 'Paris'"),
        ("!!!!!!!!!!!!", "repeats '!'"),
        ("Paris de de de de de de", "repeats 'de'"),
        ("a b a b a b a b a b a b a b", "repeats 'a b'"),
    ],
)
def test_wrong_answers(text: str, why: str) -> None:
    assert why in judge(text, "Paris")


def test_ordinary_text_does_not_repeat() -> None:
    assert repetition("The capital of France is Paris, on the Seine, since 987.") == ""
    assert repetition("1000 tokens") == ""


def test_decode_rate() -> None:
    assert decode_rate(11, 0.5, 1.5) == 10.0
    assert decode_rate(1, 0.5, 0.5) is None
    assert decode_rate(5, None, None) is None
