"""The async driver of a :class:`~inferwatch.sources.tail.tailer.Tailer`: poll when woken or on a
timer.

The tailer's :meth:`~inferwatch.sources.tail.tailer.Tailer.poll` is cheap and non-blocking, so it
runs in the loop thread. Between polls the driver waits for whichever comes first: a wake-up from
the :class:`~inferwatch.runtime.watch.FileWatcher` (inotify via watchdog) for any directory the
tailer cares about, or ``poll_interval`` seconds. The timer is the safety net that makes missed or
overflowed inotify events, unwatchable directories and files moved into place harmless: they only
cost latency, never lines.

A backlog is drained batch after batch (each at most ``poll_budget_bytes``) with a yield to the
loop in between, so catching up on a large file does not starve other tasks. A poll that read
everything there was is not followed by another at once when a watcher is there: a write made
meanwhile has set the wake-up already (it is cleared before each poll), so the next poll waits for
it rather than finding nothing (at a busy log's 100 writes a second, half the polls).

Polls woken by file events are at least ``min_poll_gap`` apart: an engine writing each line as it
logs it (hundreds of writes a second, each one inotify event) is read in batches of that age at
most, instead of once per write; a line after a quiet spell is read as soon as it is woken for.

While lines keep coming (two polls in a row found some, the second within twice the gap), the
driver *streams*: it polls every ``min_poll_gap`` on its own timer and drops its file-event
subscriptions, since every write would still pass through watchdog's threads (a few hundred
microseconds of Python each, the larger part of a busy log's cost) only to wake a driver that
polls anyway. After ``STREAM_QUIET_POLLS`` empty polls it subscribes again and polls once more
(a write made before the subscription is not missed), then waits for events as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from inferwatch.runtime.watch import FileWatcher, Subscription
from inferwatch.sources.tail.model import TailLine
from inferwatch.sources.tail.tailer import Tailer

STREAM_QUIET_POLLS = 10
"""Empty polls in a row (a second at the default gap) that end streaming."""


async def follow(
    tailer: Tailer,
    *,
    watcher: FileWatcher | None = None,
    interval: float | None = None,
) -> AsyncIterator[list[TailLine]]:
    """Yield batches of new lines for ever (until the consumer stops iterating or is cancelled).

    The consumer acknowledges what it has committed with ``tailer.ack(batch[-1].position)`` and
    stores ``tailer.checkpoint()`` together with the state it derived. Subscriptions are released
    when the iteration ends (``aclose()``, ``break`` inside ``async with contextlib.aclosing``,
    or cancellation).
    """
    period = tailer.config.poll_interval if interval is None else interval
    gap = tailer.config.min_poll_gap
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    subscriptions: dict[str, Subscription] = {}
    last_found = -float("inf")  # when a poll last found lines
    streaming, quiet = False, 0
    try:
        while True:
            if watcher is not None and not streaming:
                _sync_subscriptions(watcher, tailer.watch_dirs(), subscriptions, wake.set)
            wake.clear()
            polled = loop.time()
            batch = tailer.poll()
            dense = bool(batch) and polled - last_found <= 2 * gap
            if batch:
                last_found = polled
                yield batch
            if tailer.more:
                await asyncio.sleep(0)
                continue
            if watcher is None:
                if batch:
                    continue  # no wake-ups to wait for: look again at once while lines keep coming
            elif streaming or (dense and gap > 0):
                quiet = 0 if batch else quiet + 1
                if quiet < STREAM_QUIET_POLLS:
                    if not streaming:
                        streaming = True
                        _release(subscriptions)
                    await asyncio.sleep(max(0.0, polled + gap - loop.time()))
                    continue
                streaming, quiet = False, 0
                continue  # subscribe again, then poll once more before waiting for events
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
                # that arrives as the event fires, and the driver would never stop.
                async with asyncio.timeout(period):
                    await wake.wait()
            except TimeoutError:
                if watcher is not None:
                    watcher.refresh()
            else:
                early = polled + gap - loop.time()
                if early > 0:
                    await asyncio.sleep(early)  # more writes join the next batch meanwhile
    finally:
        _release(subscriptions)


def _release(subscriptions: dict[str, Subscription]) -> None:
    for subscription in subscriptions.values():
        subscription.close()
    subscriptions.clear()


def _sync_subscriptions(
    watcher: FileWatcher,
    wanted: frozenset[str],
    subscriptions: dict[str, Subscription],
    callback: Callable[[], None],
) -> None:
    """Subscribe to directories the tailer now cares about, drop the ones it no longer does."""
    for path in [p for p in subscriptions if p not in wanted]:
        subscriptions.pop(path).close()
    for path in wanted:
        if path not in subscriptions:
            subscriptions[path] = watcher.subscribe(path, callback)
