"""Busy periods and the verdict: content (MAL) or stack (step rate) behind a decode difference.

The two logs are CONSTRUCTED (tests/fixtures/engine/constructed_*.log, headers say how) in the
exact vLLM V1 formats of reference/engine.md 2.1 and 3.1, after the observations of
reference/host.md "The physics of decode speed".
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inferwatch.derive.engine.busy import BusyPeriods
from inferwatch.derive.engine.periods import BusyPeriod, Cohort, StatsWindow
from inferwatch.derive.engine.pipeline import EngineLogPipeline
from inferwatch.derive.engine.verdict import compare
from inferwatch.parsers.engine import parse_engine_line

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engine"


def replay(name: str) -> dict[str, Any]:
    pipeline = EngineLogPipeline("flash")
    for number, text in enumerate((FIXTURES / name).read_text(encoding="utf-8").splitlines(), 1):
        record = parse_engine_line(text)
        if record is None or record.prefix.ts is None:
            continue
        wall = datetime.strptime(f"2026-{record.prefix.ts}", "%Y-%m-%d %H:%M:%S")
        at = wall.replace(tzinfo=UTC).timestamp()
        pipeline.feed(record, at, number, name, f"{name}:{number}")
    pipeline.flush()
    summary = pipeline.summary()
    json.dumps(summary)  # JSON-able for replay's summary line
    return summary


def test_content_change_is_attributed_to_mal() -> None:
    summary = replay("constructed_content_change.log")
    (stream,) = summary["engines"]
    first, second = stream["busy_periods"]
    assert first["windows"] == second["windows"] == 12
    assert first["mal"] == pytest.approx(4.6, abs=0.1) and 150 <= first["decode"] <= 170
    assert 2.6 <= second["mal"] <= 3.1 and 94 <= second["decode"] <= 120
    # each period's first window is a prefill (5480 prompt t/s): left out of the speed figures
    assert second["verdict"] == (
        "decode 105 vs 159 earlier is explained by MAL 2.8 vs 4.6 at an unchanged step rate of 37/s"
    )
    assert "explained by MAL" in str(summary["verdict"])
    assert "regression" not in str(summary["verdict"])


def test_stack_regression_is_attributed_to_the_step_rate() -> None:
    summary = replay("constructed_stack_regression.log")
    (stream,) = summary["engines"]
    first, second = stream["busy_periods"]
    assert first["mal"] == pytest.approx(second["mal"], rel=0.05)
    assert second["verdict"].startswith("step rate fell 38 % at similar MAL: stack regression")
    assert "explained by MAL" not in str(summary["verdict"])


def window(at: float, decode: float, mal: float | None, running: int = 1) -> StatsWindow:
    steps = None if mal is None else decode / mal
    drafts = None if mal is None else 100.0
    accepted = None if mal is None else (mal - 1) * 100.0
    return StatsWindow("e", "0", at, decode, running, mal, steps, accepted, drafts)


def test_periods_split_on_idle_gaps_not_on_single_idle_windows() -> None:
    busy = BusyPeriods()
    for i in range(5):
        busy.add(window(i * 10.0, 100.0, 2.5))
    busy.add(window(50.0, 20.0, 2.5, running=0))  # one window with nothing running
    for i in range(6, 9):
        busy.add(window(i * 10.0, 100.0, 2.5))
    busy.add(window(200.0, 100.0, 2.5))  # > 3 intervals later: a new period
    periods = busy.periods("e", "0")
    assert [(p.start, p.end, p.windows) for p in periods] == [(0.0, 80.0, 8), (200.0, 200.0, 1)]


def test_period_mal_is_pooled_from_counts_not_averaged() -> None:
    busy = BusyPeriods()
    busy.add(StatsWindow("e", None, 0.0, 100.0, 1, 2.0, 50.0, accepted=10.0, drafts=10.0))
    busy.add(StatsWindow("e", None, 10.0, 100.0, 1, 4.0, 25.0, accepted=270.0, drafts=90.0))
    (period,) = busy.periods("e")
    assert period.mal == pytest.approx(1 + 280 / 100)  # not (2 + 4) / 2


def period(decode: float, mal: float | None, steps: float | None, running: int = 1) -> BusyPeriod:
    """A period of three decode-bound windows at one concurrency (``steps`` per request)."""
    cohort = Cohort(3, decode, mal, steps)
    return BusyPeriod("e", None, 0.0, 1.0, 3, decode, mal, steps, float(running), {running: cohort})


def test_verdict_texts() -> None:
    prev = period(150.0, 4.6, 33.0)
    assert compare(period(100.0, 2.8, 35.7), prev, None) == (
        "decode 100 vs 150 earlier is explained by MAL 2.8 vs 4.6 at an unchanged step rate of 36/s"
    )
    assert compare(period(62.0, 2.8, 22.0), period(100.0, 2.8, 35.7), None).startswith(
        "step rate fell 38 % at similar MAL: stack regression"
    )
    assert compare(period(102.0, 2.8, 36.0), period(100.0, 2.8, 35.7), None).startswith(
        "decode unchanged"
    )
    assert "not compared: no concurrency both saw" in compare(
        period(60.0, 2.8, 21.0, 3), prev, None
    )
    assert "both the stack and the content" in compare(period(50.0, 2.0, 25.0), prev, None)
    assert "step rate unknown" in compare(period(60.0, None, None), prev, None)
    baseline = compare(period(62.0, 2.8, 22.0), None, 36.0)
    assert baseline.endswith("step rate 22/s is 39 % below the log's single-stream median of 36/s")


def test_periods_compare_like_with_like() -> None:
    """Bursty agentic traffic: prefill windows and 1-4 requests running (the issue's case of
    "step rate rose 126 %" then "fell 80 %" on an unchanged stack)."""
    busy = BusyPeriods()
    t = 0.0
    for running, prefill in [(1, 0.0), (1, 2400.0), (2, 0.0), (2, 0.0), (1, 0.0), (2, 0.0),
                             (1, 0.0), (2, 900.0), (2, 0.0), (1, 0.0)]:  # fmt: skip
        t += 10.0
        per_request = 40.0 / (1 + 0.08 * (running - 1))  # the batch slows each request a little
        decode = 2.5 * per_request * running * (0.2 if prefill else 1.0)
        steps = decode / 2.5
        busy.add(StatsWindow("e", "0", t, decode, running, 2.5, steps, 150.0 * running, 100.0 *
                             running, prefill))  # fmt: skip
    t += 600.0  # idle, then a burst at mostly two requests
    for running in (2, 2, 2, 2, 1, 1, 1, 2):
        t += 10.0
        per_request = 40.0 / (1 + 0.08 * (running - 1))
        decode = 2.5 * per_request * running
        busy.add(StatsWindow("e", "0", t, decode, running, 2.5, decode / 2.5, 150.0 * running,
                             100.0 * running, 0.0))  # fmt: skip
    first, second = busy.periods("e", "0")
    assert first.running == 1.0 and first.cohorts[1].windows == 4  # the prefill window is out
    assert second.running == 2.0
    text = compare(second, first, None)
    assert text.startswith("decode unchanged") and "at 1 running" not in text, text
    assert "stack" not in text
    assert busy.summary()["verdict"] == "no decode difference between busy periods"


def test_summary_without_busy_periods() -> None:
    busy = BusyPeriods()
    busy.add(window(0.0, 0.0, None, running=0))
    assert busy.summary()["verdict"].startswith("no busy periods")
