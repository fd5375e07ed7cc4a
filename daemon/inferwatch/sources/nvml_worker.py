"""NVML's own worker thread: a wedged driver holds this thread, never the shared pool.

A thread cannot be killed, so a call that runs past its timeout keeps the worker until it
returns; meanwhile :meth:`NvmlWorker.run` refuses new work with :class:`WorkerBusy` at once (the
poll is skipped and counted) and SQLite, snapshots and the other sources go on in their pool.
The thread is a daemon thread: a call stuck for ever does not hold up the daemon's exit.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerBusy(Exception):
    """The previous call is still running."""


class NvmlWorker:
    def __init__(self, name: str = "inferwatch-nvml", idle_exit_s: float = 60.0) -> None:
        self.name = name
        self.idle_exit_s = idle_exit_s  # an idle thread ends (a reload's old source leaks none)
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._current: Future[Any] | None = None

    @property
    def busy(self) -> bool:
        return self._current is not None and not self._current.done()

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:  # no job can slip in between this look and the exit
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:  # handed to the waiting coroutine
                future.set_exception(exc)
            else:
                future.set_result(result)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        if self.busy:
            raise WorkerBusy(self.name)
        future: Future[T] = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._current = future
            self._jobs.put((fn, future))
        return future

    @property
    def running(self) -> bool:
        """Whether the worker thread exists now."""
        return self._thread is not None

    async def run(self, timeout: float, fn: Callable[[], T]) -> T:
        """``fn()`` in the worker; ``TimeoutError`` after ``timeout`` (the call runs on)."""
        future = self.submit(fn)
        async with asyncio.timeout(timeout):
            return await asyncio.shield(asyncio.wrap_future(future))

    def stop(self) -> None:
        """Let the thread end after its current call (if it ever returns)."""
        with self._lock:
            if self._thread is not None:
                self._jobs.put(None)
                self._thread = None
