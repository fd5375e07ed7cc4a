"""The engine-log source says "no data" while no file matches, and follows one once it exists."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferwatch.clock import SystemClock
from inferwatch.errors import NoData
from inferwatch.labels import make_labels
from inferwatch.model import LineRecord, Record
from inferwatch.pipeline.tail_metrics import tail_tick
from inferwatch.sources.engine_log import FileLinesSource
from inferwatch.store.tsdb import SeriesStore


def test_missing_log_is_no_data_then_followed(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.log"
    src = FileLinesSource("engine:x", (str(path),), SystemClock(), poll_interval=0.05)

    async def nothing(_r: Record) -> None:
        return None

    with pytest.raises(NoData, match="no file matches"):
        asyncio.run(src.run(nothing))

    path.write_text("first line\nsecond line\n")
    got: list[str] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def emit(r: Record) -> None:
            assert isinstance(r, LineRecord)
            got.append(r.text)
            if r.ack is not None:
                r.ack()
            if len(got) == 2:
                done.set()

        task = asyncio.create_task(src.run(emit))
        await asyncio.wait_for(done.wait(), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert got == ["first line", "second line"]
    assert src.checkpoint() is not None


def test_tailer_numbers_and_file_health_become_metrics(tmp_path: Path) -> None:

    path = tmp_path / "pipeline.log"
    path.write_text("one\ntwo\nthree\n")
    clock = SystemClock()
    src = FileLinesSource("engine:x", (str(path), str(tmp_path / "later-*.log")), clock,
                          poll_interval=0.05)  # fmt: skip
    store = SeriesStore(clock)
    tick = tail_tick(store, clock, src)
    asyncio.run(tick())  # before the tailer runs: nothing to say, no crash
    assert store.get("inferwatch_tail_lines_total", make_labels({"source": "engine:x"})) is None

    async def scenario() -> None:
        seen: list[str] = []
        done = asyncio.Event()

        async def emit(r: Record) -> None:
            assert isinstance(r, LineRecord)
            seen.append(r.text)
            if len(seen) == 3:
                done.set()

        task = asyncio.create_task(src.run(emit))
        await asyncio.wait_for(done.wait(), 30)
        await tick()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    lines = store.get("inferwatch_tail_lines_total", make_labels({"source": "engine:x"}))
    assert lines is not None and lines.vs[-1] == 3.0
    read = store.get("inferwatch_tail_read_bytes_total", make_labels({"source": "engine:x"}))
    assert read is not None and read.vs[-1] == len("one\ntwo\nthree\n")
    ok = make_labels({"source": "engine:x", "path": str(path), "state": "ok"})
    state = store.get("inferwatch_tail_file_state", ok)
    assert state is not None and state.vs[-1] == 1.0
