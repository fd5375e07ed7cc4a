"""The engine-log source says "no data" while no file matches, and follows one once it exists."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferwatch.clock import SystemClock
from inferwatch.errors import NoData
from inferwatch.labels import make_labels
from inferwatch.model import LineBatch, Record
from inferwatch.pipeline.tail_metrics import tail_tick
from inferwatch.sources.engine_log import FileLinesSource
from inferwatch.store.tsdb import SeriesStore


def _follow(src: FileLinesSource, lines: int) -> list[LineBatch]:
    """Run the source until it has emitted ``lines`` lines, acknowledging each; its batches."""
    got: list[LineBatch] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def emit(r: Record) -> None:
            assert isinstance(r, LineBatch)  # one read's lines, each with its own ack
            got.append(r)
            for line in r.lines:
                assert line.ack is not None
                line.ack()
            if sum(len(b.lines) for b in got) >= lines:
                done.set()

        task = asyncio.create_task(src.run(emit))
        await asyncio.wait_for(done.wait(), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    return got


def test_missing_log_is_no_data_then_followed(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.log"
    src = FileLinesSource("engine:x", (str(path),), SystemClock(), poll_interval=0.05)

    async def nothing(_r: Record) -> None:
        return None

    with pytest.raises(NoData, match="no file matches"):
        asyncio.run(src.run(nothing))

    path.write_text("first line\nsecond line\n")
    got = [line.text for batch in _follow(src, 2) for line in batch.lines]
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
            assert isinstance(r, LineBatch)
            seen.extend(line.text for line in r.lines)
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


def test_a_read_goes_on_in_batches_of_at_most_batch_lines(tmp_path: Path) -> None:
    """A backlog read at once is split into LineBatch records of at most ``batch_lines``,
    in file order, each line acknowledging its own position."""
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i}\n" for i in range(150)))
    src = FileLinesSource("engine:x", (str(path),), SystemClock(), poll_interval=0.05)
    src.batch_lines = 64
    batches = _follow(src, 150)
    sizes = [len(batch.lines) for batch in batches]
    texts = [line.text for batch in batches for line in batch.lines]
    assert texts == [f"line {i}" for i in range(150)]
    assert max(sizes) <= 64 and len(sizes) >= 3
    [entry] = src.checkpoint()["files"]  # every line acknowledged: the whole file is covered
    assert (entry["offset"], entry["line_no"]) == (path.stat().st_size, 150)
