"""The engine /metrics parser on arbitrary text: samples or an ExpositionError, nothing else,
in bounded time and memory (never more samples than lines)."""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferwatch.parsers.promtext import ExpositionError, parse_exposition

TOKENS = ["# TYPE ", "# HELP ", "# EOF", "# UNIT ", "vllm:num_requests_running", "x_total", "x",
          "_bucket", "_sum", "_count", "_created", " counter", " gauge", " histogram", " summary",
          " untyped", " info", " stateset", "{", "}", "=", ",", '"', '\\"', "\\", "\\n",
          'le="+Inf"', 'le="0.5"', 'engine="0"', "model_name", " ", "\t", "\n", "\r", "1",
          "-1.5e3", "NaN", "+Inf", "-Inf", "0x1F", "1e999", " 1700000000", " 1700000000.5", "é",
          "\x00", "\ufeff", "#", ":", "le"]  # fmt: skip

LINES = st.lists(st.sampled_from(TOKENS), max_size=12).map("".join)


def check(text: str) -> None:
    try:
        samples = parse_exposition(text)
    except ExpositionError as exc:
        assert str(exc).startswith("invalid exposition: ")
        assert exc.line_no is None or 1 <= exc.line_no <= len(text.splitlines())
        return
    assert len(samples) <= max(1, len(text.splitlines()))
    for s in samples:
        assert isinstance(s.value, float) and s.name


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=80).map("".join))
def test_token_soup_never_crashes(text: str) -> None:
    check(text)


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES, max_size=30).map("\n".join))
def test_line_soup_never_crashes(text: str) -> None:
    check(text)


@settings(max_examples=150, deadline=2000)
@given(st.text(max_size=400))
def test_any_text_never_crashes(text: str) -> None:
    check(text)


def test_a_large_body_costs_memory_in_proportion() -> None:
    """2 MB of valid lines, then 2 MB of garbage: bounded peaks, a located error."""
    good = "".join(f'vllm:x{{engine="{i}"}} {i}\n' for i in range(70_000))
    tracemalloc.start()
    try:
        samples = parse_exposition(good)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(samples) == 70_000
    assert peak < 200 * len(good), peak  # a few hundred bytes a sample, never a blow-up
    bad = good + "vllm:x{engine=\n" * 1000
    try:
        parse_exposition(bad)
    except ExpositionError as exc:
        assert exc.line_no == 70_001
    else:
        raise AssertionError("garbage parsed")
