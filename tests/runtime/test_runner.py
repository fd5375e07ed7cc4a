"""A daemon's loop exits within its grace even when a task will not stop."""

from __future__ import annotations

import asyncio
import threading
import time

from inferwatch.runtime.blocking import BlockingPool
from inferwatch.runtime.runner import run_bounded


def test_a_task_that_ignores_cancellation_does_not_hold_the_exit() -> None:
    async def stubborn() -> None:
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                continue  # what a buggy handler (or 3.11's wait_for) can do

    async def main() -> int:
        asyncio.get_running_loop().create_task(stubborn(), name="stubborn")
        await asyncio.sleep(0)
        return 7

    started = time.monotonic()
    assert run_bounded(main(), grace=0.2) == 7
    assert time.monotonic() - started < 5.0


def test_pool_shutdown_waits_for_a_running_call_up_to_its_timeout() -> None:
    started, release = threading.Event(), threading.Event()
    pool = BlockingPool(workers=1)

    def call() -> None:
        started.set()
        release.wait(30)

    async def start() -> None:
        task = asyncio.ensure_future(pool.run(60.0, call))
        assert await asyncio.to_thread(started.wait, 30)
        assert not pool.shutdown(timeout=0.05)  # still running: reported, not waited forever
        release.set()
        await task

    asyncio.run(start())
    assert pool.shutdown(timeout=5.0)
