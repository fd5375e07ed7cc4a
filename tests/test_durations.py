"""The one duration parser (inferwatch.durations) and the framing each caller keeps around it."""

from __future__ import annotations

import pytest

from inferwatch.config.types import parse_duration as config_duration
from inferwatch.durations import DurationError, parse_duration_ms, parse_duration_s
from inferwatch.gotemplate.builtins import FuncError
from inferwatch.gotemplate.funcs import parse_duration as template_duration
from inferwatch.notify.channels.common import parse_duration as channel_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("9ms", 0.009), ("1s7ms", 1.007), ("1m30s", 90.0), ("2h", 7200.0),
     ("1y", 31_536_000.0), ("1w2d", 777_600.0)],
)  # fmt: skip
def test_every_caller_reads_the_same_grammar(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds == parse_duration_ms(text) / 1000
    assert config_duration(text) == seconds
    assert template_duration(text) == seconds
    assert channel_duration(text, 1.0) == seconds


@pytest.mark.parametrize("bad", ["", "5", "1.5s", "1s1m", "-1s", " 1s", "1 s"])
def test_the_grammar_refuses(bad: str) -> None:
    with pytest.raises(DurationError):
        parse_duration_s(bad)


def test_config_framing() -> None:
    assert config_duration(" 10s ") == 10.0
    assert config_duration(7) == 7.0 and config_duration(2.5) == 2.5
    with pytest.raises(ValueError, match="cannot be negative"):
        config_duration(-1)
    with pytest.raises(ValueError, match="expected a duration such as"):
        config_duration(True)
    with pytest.raises(ValueError, match=r"invalid duration '5x': use units y w d h m s ms"):
        config_duration("5x")


def test_template_framing() -> None:
    with pytest.raises(FuncError, match=r'not a valid duration string: "1\.5h"'):
        template_duration("1.5h")
    with pytest.raises(FuncError):
        template_duration(" 1h")  # Go does not trim either


def test_channel_framing() -> None:
    assert channel_duration(None, 3.0) == 3.0
    assert channel_duration(4, 3.0) == 4.0
    assert channel_duration(" 10 ", 3.0) == 10.0 and channel_duration("2.5", 3.0) == 2.5
    with pytest.raises(ValueError, match="bad duration 'soon'"):
        channel_duration("soon", 1.0)
