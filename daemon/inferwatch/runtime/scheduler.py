"""One scheduler interface, two implementations.

``live_scheduler.LiveScheduler`` wraps APScheduler's ``AsyncIOScheduler`` for the daemon
(``max_instances=1`` and ``coalesce=True``: a hung NVML call cannot pile runs up).
:class:`VirtualScheduler` runs the same jobs on a :class:`~inferwatch.clock.FakeClock` for replay
and tests, because APScheduler cannot take an injected clock. Both use APScheduler's triggers to
compute cron fire times, so a digest scheduled at ``0 8 * * *`` fires at the same instants in
both. Virtual time never waits for anything real: :func:`run_virtual` runs it to its end without
an event loop (replay imports no asyncio)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Protocol, TypeVar

from inferwatch.clock import FakeClock
from inferwatch.logsetup import get_logger

Job = Callable[[], Awaitable[None]]
ErrorHook = Callable[[str, BaseException], None]
log = get_logger(__name__)
_EPS = timedelta(microseconds=1)


class Scheduler(Protocol):
    def every(self, name: str, seconds: float, job: Job, first_in: float = 0.0) -> None:
        """Run ``job`` every ``seconds``, the first time ``first_in`` seconds from now."""
        ...

    def cron(self, name: str, expression: str, job: Job, tz: tzinfo | None = None) -> None: ...

    def remove(self, name: str) -> None: ...


def guard(name: str, job: Job, on_error: ErrorHook | None) -> Job:
    """A job that never raises into the scheduler: errors are reported and the job runs again.
    A job whose awaited call was cancelled (the daemon stopping drops a blocking call still
    queued) ends quietly: APScheduler would log it as a failure with a traceback, outside the
    JSON log. A cancellation of the job's own task still propagates."""

    async def run() -> None:
        try:
            await job()
        except Exception as exc:
            if on_error is not None:
                on_error(name, exc)
            else:
                log.warning("job failed", job=name, error=repr(exc))
        except BaseException as exc:
            import asyncio  # noqa: PLC0415 (a cancellation comes from a loop: asyncio is loaded)

            if not isinstance(exc, asyncio.CancelledError):
                raise
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            log.info("job cancelled", job=name)

    return run


Result = TypeVar("Result")


def run_virtual(coro: Coroutine[Any, Any, Result]) -> Result:
    """Run a coroutine of virtual time (replay: records and :class:`VirtualScheduler` jobs) to
    its end, without an event loop; raises RuntimeError if it waits for something real (it needs
    a loop then, ``asyncio.run``)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a coroutine of virtual time waited for something real: it needs a loop")


@dataclass(order=True, slots=True)
class _Entry:
    due: float
    seq: int
    name: str = field(compare=False)
    job: Job = field(compare=False)
    next_due: Callable[[float], float | None] = field(compare=False)
    cron: bool = field(default=False, compare=False)


class VirtualScheduler:
    """Runs jobs in virtual time: :meth:`run_until` advances the fake clock from due time to due
    time, awaiting each job, so the same job code sees the same ``clock.time()`` it would live."""

    def __init__(self, clock: FakeClock, on_error: ErrorHook | None = None) -> None:
        self.clock = clock
        self._on_error = on_error
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._removed: set[str] = set()

    def every(self, name: str, seconds: float, job: Job, first_in: float = 0.0) -> None:
        if seconds <= 0:
            raise ValueError("interval must be positive")

        def nxt(prev: float) -> float:
            return prev + seconds

        self._push(self.clock.time() + first_in, name, job, nxt)

    def cron(self, name: str, expression: str, job: Job, tz: tzinfo | None = None) -> None:
        # APScheduler is imported only with a cron job (replay and tests never load it)
        from inferwatch.runtime.crontab import crontab_trigger  # noqa: PLC0415

        trigger = crontab_trigger(expression, tz or UTC)

        def nxt(prev: float) -> float | None:
            now = datetime.fromtimestamp(prev, UTC)
            fire = trigger.get_next_fire_time(None, now + _EPS)
            return fire.timestamp() if fire else None

        first = nxt(self.clock.time() - 1e-6)
        if first is not None:
            self._push(first, name, job, nxt, cron=True)

    def remove(self, name: str) -> None:
        self._removed.add(name)

    def _push(
        self,
        due: float,
        name: str,
        job: Job,
        nxt: Callable[[float], float | None],
        *,
        cron: bool = False,
    ) -> None:
        self._removed.discard(name)
        heapq.heappush(self._heap, _Entry(due, next(self._seq), name, job, nxt, cron))

    def next_due(self) -> float | None:
        return self._heap[0].due if self._heap else None

    def skip_to(self, t: float) -> None:
        """Jump over a long quiet stretch: every job due before ``t`` is re-anchored so its next
        run is its first fire time at or after ``t`` (interval jobs run at ``t``), as if the runs
        in between had been coalesced. Replay uses this for gaps of hours between records."""
        entries, self._heap = self._heap, []
        for entry in entries:
            due = entry.due
            if due < t:
                if entry.cron:
                    fire = entry.next_due(t - 1e-6)
                    if fire is None:
                        continue
                    due = fire
                else:
                    due = t
            heapq.heappush(self._heap, replace(entry, due=due))
        if t > self.clock.time():
            self.clock.set(t)

    async def run_until(self, t: float) -> int:
        """Run every job due at or before ``t`` in time order; leave the clock at ``t``."""
        ran = 0
        while self._heap and self._heap[0].due <= t:
            entry = heapq.heappop(self._heap)
            if entry.name in self._removed:
                continue
            if entry.due > self.clock.time():
                self.clock.set(entry.due)
            await guard(entry.name, entry.job, self._on_error)()
            ran += 1
            following = entry.next_due(entry.due)
            # coalesce: a job that fell behind runs once, then resumes its cadence from now
            while following is not None and following <= self.clock.time() and following < t:
                following = entry.next_due(following)
            if following is not None:
                entry.due, entry.seq = following, next(self._seq)  # popped: safe to reuse
                heapq.heappush(self._heap, entry)
        if t > self.clock.time():
            self.clock.set(t)
        return ran
