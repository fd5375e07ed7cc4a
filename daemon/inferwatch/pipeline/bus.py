"""Bounded queues between sources and the dispatcher.

Each source gets its own queue, so a flood from one engine log cannot starve the kernel log. A
put that waits longer than ``put_timeout`` drops the record and counts it in
``inferwatch_records_dropped_total{queue}``: a reader is never blocked forever.

A source that reads lines in batches (a followed log) hands each batch on as one
:class:`~inferwatch.model.LineBatch` of at most ``batch_lines`` lines; its queue holds
``maxsize // batch_lines`` of them, so it bounds about as many lines as a queue of single lines
would. The consumer gives the handler a batch's lines one by one, each failing on its own: a
line costs no queue operation and no task switch of its own (at a busy log's thousands of lines
a second, about a tenth of the daemon's work).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from inferwatch.logsetup import get_logger
from inferwatch.model import LineBatch, Record
from inferwatch.pipeline.repeats import Repeats, origin
from inferwatch.pipeline.telemetry import Telemetry
from inferwatch.sources.base import Emit

log = get_logger(__name__)
Handler = Callable[[Record], Awaitable[None]]


class Bus:
    def __init__(self, telemetry: Telemetry, maxsize: int = 10_000, put_timeout: float = 5.0):
        self.telemetry = telemetry
        self.maxsize = maxsize
        self.put_timeout = put_timeout
        self._queues: dict[str, asyncio.Queue[Record]] = {}
        self._batch_lines: dict[str, int] = {}
        self._consumers: list[asyncio.Task[None]] = []
        self.repeats = Repeats(time.monotonic)

    def queue(self, name: str, batch_lines: int | None = None) -> asyncio.Queue[Record]:
        """``name``'s queue, sized when first asked for (``batch_lines``: 1 when not given);
        asking again for another batch size is a wiring error, raised, not a silent bound of
        ``batch_lines`` times as many lines."""
        found = self._queues.get(name)
        if found is None:
            size = self._batch_lines[name] = max(1, batch_lines or 1)
            found = self._queues[name] = asyncio.Queue(max(1, self.maxsize // size))
        elif batch_lines is not None and max(1, batch_lines) != self._batch_lines[name]:
            raise ValueError(
                f"queue {name!r} was made for batches of {self._batch_lines[name]} lines, "
                f"not {batch_lines}: give the emitter's batch size first"
            )
        return found

    def emitter(self, name: str, batch_lines: int = 1) -> Emit:
        """The put of ``name``'s records; ``batch_lines``: the most lines its batches hold."""
        queue = self.queue(name, batch_lines)

        async def emit(record: Record) -> None:
            try:
                queue.put_nowait(record)
                return
            except asyncio.QueueFull:
                pass
            try:
                async with asyncio.timeout(self.put_timeout):
                    await queue.put(record)
            except TimeoutError:
                lost = len(record.lines) if isinstance(record, LineBatch) else 1
                self.telemetry.dropped(name, lost)

        return emit

    def consume(self, name: str, handler: Handler) -> None:
        queue = self.queue(name)

        async def loop() -> None:
            while True:
                record = await queue.get()
                try:
                    for each in record.lines if isinstance(record, LineBatch) else (record,):
                        try:
                            await handler(each)
                        except Exception as exc:
                            self.telemetry.source_error(name, "dispatch", type(exc).__name__)
                            kind = f"{name}: {origin(exc)}"
                            self.repeats.note(kind, "record handling failed", exc, queue=name)
                finally:
                    queue.task_done()

        self._consumers.append(asyncio.create_task(loop(), name=f"dispatch:{name}"))

    async def drain(self, timeout: float) -> bool:
        """Wait until every queued record is handled; False if time ran out."""
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*(q.join() for q in self._queues.values()))
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        for task in self._consumers:
            task.cancel()
        if self._consumers:
            await asyncio.wait(self._consumers, timeout=1.0)
        for task in self._consumers:
            if not task.done():
                log.warning("a record handler did not stop in time", task=task.get_name())
        self._consumers.clear()

    def depth(self) -> dict[str, int]:
        return {name: q.qsize() for name, q in self._queues.items()}
