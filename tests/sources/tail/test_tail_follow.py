"""The async driver: wake-ups from the FileWatcher, the stat timer as safety net, backlogs.

Rows 17 (inotify unavailable, 1,000 files) and 18 (inotify overflow) of the reliability matrix.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.runtime.watch import FileWatcher
from inferwatch.sources.tail.follow import follow
from inferwatch.sources.tail.tailer import TailConfig, Tailer, TailLine
from sources.tail.tail_harness import AppendWriter, encode, numbered


class NoInotify:
    """An observer that cannot start, as with ENOSPC from inotify_init/add_watch."""

    def start(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def stop(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> None:
        pass

    def schedule(self, event_handler: Any, path: str, *, recursive: bool = False) -> Any:
        raise AssertionError("never started")

    def unschedule(self, watch: Any) -> None:
        pass


class DeafObserver(NoInotify):
    """Starts, accepts watches, and never reports an event: every event 'overflowed'."""

    def start(self) -> None:
        pass

    def schedule(self, event_handler: Any, path: str, *, recursive: bool = False) -> Any:
        return object()


async def collect(
    tailer: Tailer,
    watcher: FileWatcher | None,
    interval: float,
    until: Callable[[list[TailLine]], bool],
    *,
    on_start: Callable[[], None] | None = None,
    timeout: float = 60.0,
) -> list[TailLine]:
    got: list[TailLine] = []

    async def consume() -> None:
        stream = follow(tailer, watcher=watcher, interval=interval)
        async with contextlib.aclosing(stream):
            async for batch in stream:
                got.extend(batch)
                tailer.ack(batch[-1].position)
                if until(got):
                    return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    if on_start is not None:
        on_start()
    await asyncio.wait_for(task, timeout)
    return got


def test_thousand_files_with_inotify_unavailable(tmp_path: Path) -> None:
    """Row 17: inotify cannot start; polling alone delivers every line; the fallback is reported."""
    for i in range(500):
        AppendWriter(tmp_path / f"f{i:04d}.log").lines(numbered(f"F{i:04d}", 2))
    config = TailConfig(paths=(str(tmp_path / "*.log"),), poll_interval=0.05)

    def more_files() -> None:
        for i in range(500, 1000):
            AppendWriter(tmp_path / f"f{i:04d}.log").lines(numbered(f"F{i:04d}", 2))

    async def scenario() -> tuple[list[TailLine], FileWatcher]:
        watcher = FileWatcher(observer_factory=NoInotify)
        watcher.start()
        with Tailer(config) as tailer:
            got = await collect(
                tailer, watcher, 0.05, lambda got: len(got) >= 2000, on_start=more_files
            )
        watcher.stop()
        return got, watcher

    got, watcher = asyncio.run(scenario())
    assert sorted(line.text for line in got) == sorted(
        text for i in range(1000) for text in numbered(f"F{i:04d}", 2)
    )
    assert watcher.mode == "stopped" and watcher.error is not None
    assert "No space left" in watcher.error


def test_overflow_forces_a_rescan(tmp_path: Path) -> None:
    """Row 18: no event ever arrives; an injected overflow makes the driver reconcile at once."""
    path = tmp_path / "app.log"
    AppendWriter(path).lines(["before"])
    config = TailConfig(paths=(str(path),))

    async def scenario() -> tuple[list[TailLine], int, int]:
        watcher = FileWatcher(observer_factory=DeafObserver)
        watcher.start()
        with Tailer(config) as tailer:
            got = await collect(tailer, watcher, 600, lambda got: len(got) >= 1)
            before = tailer.stats.reconciles
            AppendWriter(path).lines(["after overflow"])

            async def inject() -> None:
                await asyncio.sleep(0.05)
                watcher.notify_overflow()

            injector = asyncio.create_task(inject())
            got += await collect(tailer, watcher, 600, lambda got: len(got) >= 1, timeout=10)
            await injector
            after = tailer.stats.reconciles
        watcher.stop()
        return got, before, after

    started = time.monotonic()
    got, before, after = asyncio.run(scenario())
    assert [line.text for line in got] == ["before", "after overflow"]
    assert after > before
    assert time.monotonic() - started < 30  # not the 600 s timer


def test_inotify_wakes_the_driver_long_before_the_timer(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "engine.log"  # the directory does not exist yet

    async def scenario() -> list[TailLine]:
        async with FileWatcher() as watcher:
            with Tailer(TailConfig(paths=(str(path),))) as tailer:

                async def write_later() -> None:
                    await asyncio.sleep(0.1)
                    path.parent.mkdir()
                    await asyncio.sleep(0.1)
                    AppendWriter(path).lines(["first"])

                writer = asyncio.create_task(write_later())
                got = await collect(tailer, watcher, 600, lambda got: len(got) >= 1, timeout=20)
                await writer
                return got

    assert [line.text for line in asyncio.run(scenario())] == ["first"]


def test_backlog_is_drained_in_bounded_batches(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    lines = numbered("B", 20_000)
    path.write_bytes(encode(lines))
    config = TailConfig(paths=(str(path),), poll_budget_bytes=64 * 1024)

    async def scenario() -> tuple[list[TailLine], int]:
        batches = 0
        got: list[TailLine] = []
        with Tailer(config) as tailer:
            stream = follow(tailer, interval=600)
            async with contextlib.aclosing(stream):
                async for batch in stream:
                    batches += 1
                    assert sum(line.raw_len + 1 for line in batch) <= 64 * 1024 + 100
                    got.extend(batch)
                    tailer.ack(batch[-1].position)
                    if len(got) == len(lines):
                        break
        return got, batches

    got, batches = asyncio.run(scenario())
    assert [line.text for line in got] == lines
    assert batches >= len(encode(lines)) // (64 * 1024)


def test_closing_the_stream_releases_subscriptions(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    AppendWriter(path).lines(["x"])

    async def scenario() -> tuple[int, int]:
        async with FileWatcher() as watcher:
            with Tailer(TailConfig(paths=(str(path),))) as tailer:
                stream = follow(tailer, watcher=watcher)
                async for _ in stream:
                    break
                during = len(watcher._dirs)
                await stream.aclose()
                return during, len(watcher._dirs)

    during, after = asyncio.run(scenario())
    assert during == 1 and after == 0


def test_writes_soon_after_a_poll_are_read_together(tmp_path: Path) -> None:
    """A log written line by line is read in batches: a poll woken by a write comes at least
    ``min_poll_gap`` after the previous poll, so writes made meanwhile join its batch. A write
    after a quiet spell is read as soon as it is woken for."""
    path = tmp_path / "engine.log"
    AppendWriter(path).lines(["first"])
    config = TailConfig(paths=(str(path),), min_poll_gap=1.5)

    async def scenario() -> tuple[list[list[str]], float]:
        batches: list[list[str]] = []
        async with FileWatcher() as watcher:
            with Tailer(config) as tailer:
                stream = follow(tailer, watcher=watcher, interval=600)
                async with contextlib.aclosing(stream):
                    started = time.monotonic()
                    writer: asyncio.Task[None] | None = None
                    async for batch in stream:
                        batches.append([line.text for line in batch])
                        tailer.ack(batch[-1].position)
                        if writer is None:  # two writes, each its own inotify event
                            writer = asyncio.create_task(write_twice())
                        if sum(map(len, batches)) == 3:
                            break
                    assert writer is not None
                    await writer
                    return batches, time.monotonic() - started

    async def write_twice() -> None:
        AppendWriter(path).lines(["second"])
        await asyncio.sleep(0.3)  # the driver is woken for the first write meanwhile
        AppendWriter(path).lines(["third"])

    batches, took = asyncio.run(scenario())
    assert batches == [["first"], ["second", "third"]]
    assert took < 60  # woken, not the 600-s timer


def test_a_steady_stream_is_polled_on_a_timer_without_file_events(tmp_path: Path) -> None:
    """While lines keep coming the driver polls every ``min_poll_gap`` and holds no watch (each
    write would only cost watchdog's threads); once the log is quiet it watches again, and a
    line written after that is read on its event."""
    path = tmp_path / "engine.log"
    path.touch()
    config = TailConfig(paths=(str(path),), min_poll_gap=0.05)
    written = [f"line {i}" for i in range(60)]

    async def scenario() -> tuple[list[str], list[int], int]:
        got: list[str] = []
        watched: list[int] = []  # directories watched, seen at each batch
        async with FileWatcher() as watcher:
            with Tailer(config) as tailer:

                async def write() -> None:
                    for text in written:
                        AppendWriter(path).lines([text])
                        await asyncio.sleep(0.02)

                stream = follow(tailer, watcher=watcher, interval=600)
                async with contextlib.aclosing(stream):
                    writer = asyncio.create_task(write())
                    async for batch in stream:
                        got += [line.text for line in batch]
                        watched.append(len(watcher._dirs))
                        tailer.ack(batch[-1].position)
                        if len(got) == len(written):
                            await writer
                            break
                    # quiet: after STREAM_QUIET_POLLS empty polls the driver watches again, and
                    # the next line is read on its event (the timer is 600 s)
                    async with asyncio.timeout(60):
                        async for batch in _after(stream, lambda: len(watcher._dirs) == 1, path):
                            got += [line.text for line in batch]
                            break
                    return got, watched, len(watcher._dirs)

    got, watched, after = asyncio.run(scenario())
    assert got == [*written, "after the quiet"]
    assert 0 in watched  # streaming: no directory watched
    assert after == 1


async def _after(stream: Any, ready: Callable[[], bool], path: Path) -> Any:
    """Once ``ready()`` holds, write one more line and yield the stream's batches."""

    async def write_when_ready() -> None:
        while not ready():  # noqa: ASYNC110 (the watcher has no event for this)
            await asyncio.sleep(0.01)
        AppendWriter(path).lines(["after the quiet"])

    task = asyncio.create_task(write_when_ready())
    async for batch in stream:
        yield batch
    await task
