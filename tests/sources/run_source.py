"""Run a streaming source until a condition holds (helper for the source tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from inferwatch.model import Record
from inferwatch.sources.base import Source


async def collect(
    source: Source, done: Callable[[list[Record]], bool], ack: bool = True, timeout: float = 30
) -> list[Record]:
    """The records ``source`` emits (acknowledged unless ``ack`` is False) until ``done``; a
    source that fails is re-raised, one that gives up too soon fails the test."""
    got: list[Record] = []
    finished = asyncio.Event()

    async def emit(record: Record) -> None:
        got.append(record)
        if ack and record.ack is not None:
            record.ack()
        if done(got):
            finished.set()

    task = asyncio.create_task(source.run(emit))
    waiter = asyncio.create_task(finished.wait())
    await asyncio.wait({task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    task.cancel()
    waiter.cancel()
    results = await asyncio.gather(task, return_exceptions=True)
    if isinstance(results[0], BaseException) and not isinstance(results[0], asyncio.CancelledError):
        raise results[0]
    assert done(got), f"gave up after {timeout:.0f} s with {len(got)} records"
    return got
