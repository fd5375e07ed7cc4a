"""Blocking calls (NVML, SQLite, subprocess) run in a bounded thread pool with a timeout.

A thread cannot be killed: a call that times out keeps its worker until it returns, and the pool's
bound stops a wedged driver from eating every thread. The caller gets ``TimeoutError`` at once.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class BlockingPool:
    def __init__(self, workers: int = 4, name: str = "inferwatch-io") -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    async def run(self, timeout: float, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation that
        # arrives as the call finishes, and a cancelled consumer would then run on after stop.
        async with asyncio.timeout(timeout):
            return await future

    def shutdown(self, timeout: float = 0.0) -> bool:
        """Refuse new work, drop queued work, and wait up to ``timeout`` for running calls (so
        a database is not closed under a thread still writing it). False if some still run."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout
        for thread in list(getattr(self._pool, "_threads", ())):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in getattr(self._pool, "_threads", ()))
