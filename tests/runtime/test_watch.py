"""The watchdog → asyncio bridge: real inotify through watchdog, waits bounded by timeouts."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from inferwatch.runtime.watch import OVERFLOW_LOGGER, FileWatcher, nearest_directory

TIMEOUT = 10.0


class Waker:
    """Counts callbacks and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.calls = 0
        self.event = asyncio.Event()

    def __call__(self) -> None:
        self.calls += 1
        self.event.set()

    async def wait(self, timeout: float = TIMEOUT) -> bool:
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            return False
        self.event.clear()
        return True


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 60))


async def _until(check: Callable[[], bool], what: str) -> None:
    """Wait for a condition, driving the watcher's own refresh like a consumer's timer does."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_event_in_a_watched_directory_wakes_the_subscriber(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with FileWatcher() as watcher:
            waker = Waker()
            sub = watcher.subscribe(str(tmp_path), waker)
            assert watcher.mode == "inotify" and sub.watched == str(tmp_path)
            (tmp_path / "x.log").write_text("hello\n")
            assert await waker.wait()
        assert watcher.mode == "stopped"

    run(scenario)


def test_file_subscription_ignores_unrelated_names(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with FileWatcher() as watcher:
            mine, everything = Waker(), Waker()
            watcher.subscribe(str(tmp_path / "app.log"), mine)
            watcher.subscribe(str(tmp_path), everything)
            (tmp_path / "other.txt").write_text("x")
            assert await everything.wait()
            assert mine.calls == 0
            (tmp_path / "app.log.1").write_text("rotated\n")  # siblings concern the file
            assert await mine.wait()

    run(scenario)


def test_reading_a_watched_file_is_not_a_change(tmp_path: Path) -> None:
    rules = tmp_path / "gpu.yaml"
    rules.write_text("groups: []\n")

    async def scenario() -> None:
        async with FileWatcher() as watcher:
            mine, marker = Waker(), Waker()
            watcher.subscribe(str(rules), mine)
            watcher.subscribe(str(tmp_path / "marker"), marker)
            assert rules.read_text() == "groups: []\n"  # open + read + close, as a reload does
            (tmp_path / "marker").write_text("x")  # delivered after the read's events, if any
            assert await marker.wait()
            assert mine.calls == 0
            rules.write_text("groups: [] # edited\n")
            assert await mine.wait()

    run(scenario)


def test_missing_path_is_watched_through_its_nearest_ancestor(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "engine.log"

    async def scenario() -> None:
        async with FileWatcher() as watcher:
            waker = Waker()
            sub = watcher.subscribe(str(target), waker)
            assert sub.watched == str(tmp_path)
            (tmp_path / "a").mkdir()
            assert await waker.wait()
            await _until(lambda: sub.watched == str(tmp_path / "a"), "the watch to move down")
            (tmp_path / "a" / "b").mkdir()
            assert await waker.wait()
            assert sub.watched == str(tmp_path / "a" / "b")
            waker.calls = 0
            target.write_text("up\n")
            assert await waker.wait()

    run(scenario)


def test_deleted_and_recreated_directory_is_watched_again(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()

    async def scenario() -> None:
        async with FileWatcher() as watcher:
            waker = Waker()
            sub = watcher.subscribe(str(logs / "x.log"), waker)
            shutil.rmtree(logs)
            await waker.wait()
            logs.mkdir()
            watcher.refresh()  # what the consumer's stat timer does
            assert sub.watched == str(logs)
            waker.event.clear()
            (logs / "x.log").write_text("again\n")
            assert await waker.wait()

    run(scenario)


def test_observer_that_cannot_start_degrades_to_polling(tmp_path: Path) -> None:
    class NoInotify:
        def start(self) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        def stop(self) -> None:  # pragma: no cover - never started
            pass

        def join(self, timeout: float | None = None) -> None:  # pragma: no cover
            pass

        def schedule(self, event_handler: Any, path: str, *, recursive: bool = False) -> Any:
            raise AssertionError("not started")

        def unschedule(self, watch: Any) -> None:  # pragma: no cover
            pass

    async def scenario() -> None:
        watcher = FileWatcher(observer_factory=NoInotify)
        watcher.start()
        sub = watcher.subscribe(str(tmp_path), Waker())
        assert watcher.mode == "polling"
        assert watcher.error is not None and "ENOSPC" not in watcher.error
        assert "watch limit" in watcher.error
        assert str(tmp_path) in watcher.unwatched
        sub.close()
        watcher.stop()

    run(scenario)


def test_a_directory_that_cannot_be_watched_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with FileWatcher() as watcher:
            observer = watcher._observer
            assert observer is not None
            real = observer.schedule

            def limited(handler: Any, path: str, **kwargs: Any) -> Any:
                if path.endswith("full"):
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real(handler, path, **kwargs)

            monkeypatch.setattr(observer, "schedule", limited)
            (tmp_path / "full").mkdir()
            watcher.subscribe(str(tmp_path / "full"), Waker())
            ok = Waker()
            watcher.subscribe(str(tmp_path), ok)
            assert watcher.unwatched == {str(tmp_path / "full")}
            assert watcher.mode == "inotify" and "No space left" in str(watcher.error)
            (tmp_path / "y").write_text("y")
            assert await ok.wait()

    run(scenario)


def test_overflow_wakes_everybody(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()

    async def scenario() -> None:
        async with FileWatcher() as watcher:
            first, second = Waker(), Waker()
            watcher.subscribe(str(tmp_path / "one"), first)
            watcher.subscribe(str(tmp_path / "two"), second)
            thread = threading.Thread(target=watcher.notify_overflow)
            thread.start()
            thread.join()
            assert await first.wait() and await second.wait()
            assert watcher.overflows == 1
            # watchdog announces IN_Q_OVERFLOW only through its logger
            logging.getLogger(OVERFLOW_LOGGER).warning(
                "Inotify queue overflowed; filesystem events were lost"
            )
            assert await first.wait() and await second.wait()
            assert watcher.overflows == 2

    run(scenario)


def _burst(path: Path, count: int) -> None:
    with open(path, "ab", buffering=0) as f:
        for i in range(count):
            f.write(b"line %d\n" % i)


def test_bursts_are_coalesced_and_stop_is_clean(tmp_path: Path) -> None:
    async def scenario() -> None:
        watcher = FileWatcher()
        watcher.start()
        waker = Waker()
        watcher.subscribe(str(tmp_path), waker)
        _burst(tmp_path / "burst.log", 2000)
        assert await waker.wait()
        await asyncio.sleep(0.2)  # let the observer thread finish dispatching the burst
        assert 1 <= waker.calls < 2000
        observer = watcher._observer
        await asyncio.to_thread(watcher.stop)
        assert observer is not None and not observer.is_alive()  # type: ignore[attr-defined]
        calls = waker.calls
        (tmp_path / "after.log").write_text("x")
        await asyncio.sleep(0.2)
        assert waker.calls == calls

    run(scenario)


def test_events_after_the_loop_closed_are_dropped(tmp_path: Path) -> None:
    holder: dict[str, FileWatcher] = {}

    async def scenario() -> None:
        watcher = FileWatcher()
        watcher.start()
        watcher.subscribe(str(tmp_path), Waker())
        holder["w"] = watcher

    asyncio.run(scenario())
    watcher = holder["w"]
    watcher.from_thread(str(tmp_path), {"late"})  # the loop is closed: no error
    watcher.notify_overflow()
    watcher.stop()


def test_nearest_directory(tmp_path: Path) -> None:
    assert nearest_directory(str(tmp_path / "no" / "such" / "file")) == str(tmp_path)
    assert nearest_directory(str(tmp_path)) == str(tmp_path)
    (tmp_path / "f").write_text("")
    assert nearest_directory(str(tmp_path / "f")) == str(tmp_path)
    assert nearest_directory("/") == "/"
    assert os.path.isdir(nearest_directory("relative/does/not/exist"))
