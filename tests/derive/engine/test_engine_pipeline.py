"""The composed engine log pipeline, applied to a real series store as the daemon and replay do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.derive.effects import Effect, apply
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.pipeline import EngineLogPipeline
from inferwatch.labels import make_labels
from inferwatch.parsers.engine import parse_engine_line
from inferwatch.store.series import is_stale
from inferwatch.store.tsdb import SeriesStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
CONTENT = (ROOT / "engine" / "constructed_content_change.log").read_text(encoding="utf-8")
CORPUS = (ROOT / "corpus" / "engine-lines.txt").read_text(encoding="utf-8").split("\n")
E0 = make_labels({"engine": "flash", "dp_rank": "0"})


def wall(ts: str) -> float:
    """``MM-DD HH:MM:SS`` in 2026, UTC (replay does this with --year and --tz)."""
    return datetime.strptime(f"2026-{ts}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


def run(lines: list[str]) -> tuple[SeriesStore, list[object], EngineLogPipeline]:
    """Feed lines at their own times (a line without one keeps the last) and apply effects."""
    store = SeriesStore(FakeClock(0.0))
    pipeline = EngineLogPipeline("flash")
    events: list[object] = []
    at = 0.0
    for number, text in enumerate(lines, start=1):
        record = parse_engine_line(text)
        if record is not None and record.prefix.ts is not None:
            at = max(at, wall(record.prefix.ts))
        effects: list[Effect] = pipeline.feed(
            record, at, number, "flash.log", f"flash.log:{number}"
        )
        events += apply(effects, store)
    events += apply(pipeline.flush(), store)
    return store, events, pipeline


def test_store_gets_the_series_and_a_crash_ends_them() -> None:
    lines = CONTENT.splitlines()[3:30] + CORPUS[32:37]  # busy windows, then L33-L37 (a crash)
    store, events, _ = run(lines)
    decode = store.get(n.DECODE, E0)
    mal = store.get(n.MAL, E0)
    running = store.get(n.RUNNING, E0)
    assert decode is not None and mal is not None and running is not None
    values = [v for v in mal.samples()[1] if not is_stale(v)]
    assert len(values) == 12 and all(4.4 < v < 4.8 for v in values)
    assert is_stale(mal.vs[-1])
    assert is_stale(running.vs[-1])  # the fatal error ended "Running: 1": no stall suspicion
    assert store.get(n.KV_CAPACITY, make_labels({"engine": "flash", "dp_rank": "0"})) is not None
    kinds = [getattr(e, "type", None) for e in events]
    assert kinds == ["startup", "engine_crash"]
    crashes = store.get(n.CRASHES, make_labels({"engine": "flash", "signature": "exception"}))
    assert crashes is not None and crashes.vs[-1] == 1.0


def test_summary_from_the_pipeline() -> None:
    _, _, pipeline = run(CONTENT.splitlines())
    summary = pipeline.summary()
    assert "explained by MAL" in summary["verdict"]


def test_a_long_busy_run_keeps_bounded_state() -> None:
    """60,000 records of one long busy period: one period, not one per window (speed is measured
    by the replay benchmark in bench/, never asserted here)."""
    lines = CONTENT.splitlines()
    stats, spec = parse_engine_line(lines[4]), parse_engine_line(lines[5])
    other = parse_engine_line(CORPUS[83])  # an access line
    pipeline = EngineLogPipeline("flash")
    windows = 20_000
    for i in range(windows):
        at = i * 10.0
        pipeline.feed(stats, at, 3 * i, "f", "k")
        pipeline.feed(spec, at, 3 * i + 1, "f", "k")
        pipeline.feed(other, at, 3 * i + 2, "f", "k")
    assert len(pipeline.busy.periods("flash", "0")) == 1  # one long busy period, bounded state
