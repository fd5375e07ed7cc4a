from __future__ import annotations

import pytest

from inferwatch.export.timeparam import parse_time_param

NOW = 1_790_000_000.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1789999000", 1_789_999_000.0),
        ("1789999000.5", 1_789_999_000.5),
        ("10m", NOW - 600),
        ("1h30m", NOW - 5400),
        ("2026-09-21T14:13:20Z", NOW),
        ("2026-09-21T22:13:20+08:00", NOW),
    ],
)
def test_seconds_rfc3339_and_durations_back_from_now(text: str, expected: float) -> None:
    assert parse_time_param(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("yesterday", "is not a time"),
        ("nan", "is not a time"),
        ("2026-09-21T14:13:20", "has no zone"),
    ],
)
def test_anything_else_is_refused_with_the_forms_it_takes(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_time_param(text, NOW)
