"""Blocking calls (NVML, SQLite, subprocess) run in a bounded thread pool with a timeout.

A thread cannot be killed: a call that times out keeps its worker until it returns, and the pool's
bound stops a wedged driver from eating every thread. The caller gets ``TimeoutError`` at once.
"""

from __future__ import annotations

import asyncio
import functools
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
        return await asyncio.wait_for(future, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
