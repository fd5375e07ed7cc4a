"""The engine-log source says "no data" while no file matches, and follows one once it exists."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferwatch.clock import SystemClock
from inferwatch.errors import NoData
from inferwatch.model import LineRecord, Record
from inferwatch.sources.engine_log import FileLinesSource


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
