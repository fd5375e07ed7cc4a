"""Errors that repeat on every record or scrape, logged once per kind and then counted.

A broken engine answering garbage to every scrape used to write a full traceback each time. Here
the first occurrence of a kind is logged (with its traceback, if any); the repeats are counted
and reported as one line per kind at most every ``interval`` seconds, with the count.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.logsetup import get_logger

log = get_logger(__name__)
MAX_DETAIL = 2000


class Repeats:
    def __init__(self, clock: Callable[[], float], interval: float = 300.0) -> None:
        self.interval = interval
        self._clock = clock
        self.totals: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        self._reported: dict[str, float] = {}

    def note(self, kind: str, event: str, exc: BaseException | None = None, **fields: Any) -> None:
        """Count one occurrence of ``kind``; log ``event`` if it is the first, else at most one
        ``event`` line with the count every ``interval``."""
        total = self.totals[kind] = self.totals.get(kind, 0) + 1
        now = self._clock()
        if total == 1:
            self._reported[kind] = now
            if exc is not None:
                fields["error"] = f"{type(exc).__name__}: {exc}"[:MAX_DETAIL]
                fields["traceback"] = "".join(traceback.format_exception(exc))[-MAX_DETAIL:]
            log.error(event + " (repeats are counted, not logged)", **fields)
            return
        self._pending[kind] = self._pending.get(kind, 0) + 1
        if now - self._reported[kind] >= self.interval:
            count = self._pending.pop(kind)
            self._reported[kind] = now
            log.error(event + " (repeated)", count=count, total=total, **fields)


def origin(exc: BaseException) -> str:
    """The exception's type and the line that raised it: one bug, one kind."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"
