"""pipeline.registry: what the table builds from a config."""

from __future__ import annotations

from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.event import Event
from inferwatch.pipeline.registry import (
    ENGINE_LOG_POLL_GAP,
    BuildContext,
    Built,
    build_engines,
    build_kernel,
)
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.sources.engine_log import FileLinesSource
from inferwatch.sources.tail.model import MIN_POLL_GAP
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore


def _build(tmp_path: Path, text: str) -> Built:
    config = parse_config(text, "t.yml")
    clock = FakeClock()

    async def sink(_events: list[Event]) -> None:
        return None

    pool, log = BlockingPool(workers=1), EventLog(tmp_path / "events.db")
    try:
        ctx = BuildContext(config, clock, pool, SeriesStore(clock), log, {}, sink)
        built = build_engines(ctx)
        built.extend(build_kernel(ctx))
        return built
    finally:
        log.close()
        pool.shutdown()


def test_engine_logs_are_polled_less_often_than_kernel_log_files(tmp_path: Path) -> None:
    """A busy engine log is read in batches up to 0.25 s old (its readers wait seconds); a
    kernel log file keeps the tailer's 0.1 s, as an Xid pages within a second."""
    built = _build(
        tmp_path,
        f"engines:\n  - name: e\n    log: [{tmp_path / 'e.log'}]\n"
        f"kernel: {{source: file, path: {tmp_path / 'kern.log'}}}\n",
    )
    gaps = {s.name: s.config.min_poll_gap for s in built.sources if isinstance(s, FileLinesSource)}
    assert gaps == {"engine:e": ENGINE_LOG_POLL_GAP, "kernel": MIN_POLL_GAP}
    assert ENGINE_LOG_POLL_GAP > MIN_POLL_GAP
