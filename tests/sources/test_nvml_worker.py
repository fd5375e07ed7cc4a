"""NVML's own worker thread: busy refuses at once, a timeout leaves the call running, an idle
thread ends and the next call starts a new one."""

from __future__ import annotations

import asyncio
import threading

import pytest

from conftest import wait_until
from inferwatch.sources.nvml_worker import NvmlWorker, WorkerBusy


def test_busy_then_free_again() -> None:
    worker = NvmlWorker()
    release = threading.Event()

    async def scene() -> None:
        with pytest.raises(TimeoutError):
            await worker.run(0.05, lambda: release.wait(30))
        with pytest.raises(WorkerBusy):
            await worker.run(1.0, lambda: 1)
        release.set()

    asyncio.run(scene())
    wait_until(lambda: not worker.busy, 10, "the stuck call to end")
    assert asyncio.run(worker.run(10.0, lambda: threading.current_thread().name)) == worker.name


def test_errors_reach_the_caller() -> None:
    def boom() -> None:
        raise ValueError("driver said no")

    with pytest.raises(ValueError, match="driver said no"):
        asyncio.run(NvmlWorker().run(10.0, boom))


def test_an_idle_thread_ends_and_comes_back() -> None:
    worker = NvmlWorker(idle_exit_s=0.01)
    assert asyncio.run(worker.run(10.0, lambda: 1)) == 1
    wait_until(lambda: not worker.running, 10, "the idle thread to end")
    assert asyncio.run(worker.run(10.0, lambda: 2)) == 2
    worker.stop()
    assert not worker.running
