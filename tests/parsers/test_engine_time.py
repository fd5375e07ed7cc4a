from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from inferwatch.parsers.engine import parse_engine_line
from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_time import engine_time

UTC_TZ = UTC


def ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_vllm_time_gets_year_and_zone() -> None:
    p = LinePrefix(ts="08-05 20:20:43")
    assert engine_time(p, year=2025, tz=ZoneInfo("Asia/Shanghai")) == ts(
        "2025-08-05T20:20:43+08:00"
    )


def test_docker_wrapper_wins_and_is_utc() -> None:
    # corpus L62: docker's UTC time around an engine time seven hours behind
    p = LinePrefix(
        wrapper="docker", wrapper_ts="2025-04-04T07:55:21.123456789Z", ts="04-04 00:55:21"
    )
    got = engine_time(p, year=1999, tz=UTC_TZ)
    assert got is not None and abs(got - ts("2025-04-04T07:55:21.123457+00:00")) < 1e-5


def test_new_year_wrap() -> None:
    now = ts("2026-01-01T00:05:00+00:00")
    p = LinePrefix(ts="12-31 23:59:50")
    assert engine_time(p, year=2026, tz=UTC_TZ, now=now) == ts("2025-12-31T23:59:50+00:00")


def test_sglang_full_and_time_only() -> None:
    assert engine_time(LinePrefix(ts="2025-02-27 09:33:27"), year=2000, tz=UTC_TZ) == ts(
        "2025-02-27T09:33:27+00:00"
    )
    assert engine_time(LinePrefix(ts="09:33:27"), year=2025, tz=UTC_TZ) is None


def test_from_a_real_corpus_line() -> None:
    line = (
        "(APIServer pid=6485) INFO 08-05 20:20:43 [loggers.py:123] SpecDecoding metrics: Mean "
        "acceptance length: 1.00, Accepted throughput: 0.00 tokens/s, Drafted throughput: 1.23 "
        "tokens/s, Accepted: 0 tokens, Drafted: 495 tokens, Per-position acceptance rate: 0.000, "
        "0.000, 0.000, 0.000, 0.000, Avg Draft acceptance rate: 0.0%"
    )
    record = parse_engine_line(line)
    assert record is not None
    assert engine_time(record.prefix, year=2025, tz=UTC_TZ) == ts("2025-08-05T20:20:43+00:00")


def test_garbage_is_none() -> None:
    assert engine_time(LinePrefix(ts="13-45 99:99:99"), year=2025, tz=UTC_TZ) is None
    assert engine_time(LinePrefix(), year=2025, tz=UTC_TZ) is None
