"""An engine's log file(s), followed through the rotation-safe tailer.

Each line goes on as a :class:`LineRecord` whose ``ack`` acknowledges it in the tailer, so the
checkpoint the daemon saves with its snapshot covers exactly the lines already applied; the
lines of one read go together, in :class:`LineBatch` records of at most ``batch_lines``.
"""

from __future__ import annotations

import contextlib
import glob
from collections.abc import AsyncGenerator
from functools import partial
from typing import Any, cast

from inferwatch.clock import Clock
from inferwatch.errors import NoData
from inferwatch.model import LineBatch, LineRecord
from inferwatch.runtime.watch import FileWatcher
from inferwatch.sources.base import Emit
from inferwatch.sources.tail.checkpoint import CheckpointError
from inferwatch.sources.tail.follow import follow
from inferwatch.sources.tail.model import (
    MIN_POLL_GAP,
    FileStatus,
    TailConfig,
    TailLine,
    TailStats,
)
from inferwatch.sources.tail.tailer import Tailer

BATCH_LINES = 64
"""The most lines one :class:`LineBatch` holds (a read of a busy log is split)."""


class FileLinesSource:
    """Follows ``paths`` (files or globs) and emits every line once, in file order."""

    batch_lines = BATCH_LINES

    def __init__(
        self,
        name: str,
        paths: tuple[str, ...],
        clock: Clock,
        *,
        checkpoint: Any = None,
        watcher: FileWatcher | None = None,
        poll_interval: float = 1.0,
        min_poll_gap: float = MIN_POLL_GAP,
    ) -> None:
        self.name = name
        self.clock = clock
        self.watcher = watcher
        self.config = TailConfig(
            paths=paths, poll_interval=poll_interval, min_poll_gap=min_poll_gap
        )
        self._restored = checkpoint if isinstance(checkpoint, dict) else None
        self._tailer: Tailer | None = None

    def tail_stats(self) -> tuple[TailStats, tuple[FileStatus, ...]] | None:
        """The tailer's counters and per-path health (None before it started)."""
        if self._tailer is None:
            return None
        return self._tailer.stats, self._tailer.statuses()

    def input_health(self) -> tuple[str, str] | None:
        """Up while any followed path is open; else an error if one cannot be read (a FIFO, a
        directory, no permission), else no data (nothing there). None before it started."""
        if self._tailer is None:
            return None
        statuses = self._tailer.statuses()
        if any(s.state == "ok" for s in statuses):
            return "up", ""
        errors = [s.error or s.path for s in statuses if s.state == "error"]
        if errors:
            return "error", "; ".join(dict.fromkeys(errors))
        return "no_data", f"no file matches {', '.join(self.config.paths)}"

    def checkpoint(self) -> Any:
        return self._tailer.checkpoint() if self._tailer is not None else self._restored

    def _make_tailer(self) -> Tailer:
        try:
            return Tailer(self.config, clock=self.clock, checkpoint=self._restored)
        except CheckpointError:
            return Tailer(self.config, clock=self.clock, checkpoint=None)

    def _any_file(self) -> bool:
        return any(glob.glob(p) for p in self.config.paths)  # noqa: PTH207 - full-path patterns

    async def run(self, emit: Emit) -> None:
        if self._tailer is None and self._restored is None and not self._any_file():
            # Said once by the supervisor, which retries later: a log that appears is followed.
            raise NoData(f"no file matches {', '.join(self.config.paths)}")
        tailer = self._tailer or self._make_tailer()
        self._tailer = tailer
        stream = cast(AsyncGenerator[list[TailLine], None], follow(tailer, watcher=self.watcher))
        async with contextlib.aclosing(stream):
            async for batch in stream:
                read_at = self.clock.time()  # one read: the batch's lines arrived together
                name, ack, size = self.name, tailer.ack, self.batch_lines
                records = [
                    LineRecord(name, line.path, line.line_no, line.text, read_at,
                               partial(ack, line.position))
                    for line in batch
                ]  # fmt: skip
                for start in range(0, len(records), size):
                    await emit(LineBatch(name, tuple(records[start : start + size])))
