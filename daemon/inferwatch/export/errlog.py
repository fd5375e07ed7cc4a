"""Errors of the HTTP server logged once per kind, then counted.

A hostile or broken client repeats the same failure thousands of times a second (before this,
1,100 half-open connections wrote 280,961 ``socket.accept()`` tracebacks, 114 MB, in 75 s).
Here the first occurrence of a kind is logged with its detail (and, for a bug, its traceback: a
system error such as running out of descriptors is told by its message and origin, the line
that met it, as it is not the server's fault); the repeats are counted and reported as one line
per kind at most every ``interval`` seconds, and the totals are kept for the status API.
Sources: the connection guard, asyncio's exception handler (accept errors) and aiohttp's
loggers.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.logsetup import get_logger

log = get_logger(__name__)
CAPTURED_LOGGERS = ("aiohttp.server", "aiohttp.web", "aiohttp.access", "asyncio")
MAX_DETAIL = 2000


class ErrorThrottle:
    """Log each kind once, then at most one summary line per kind per ``interval``."""

    def __init__(self, interval: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self._clock = clock
        self.totals: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        self._reported: dict[str, float] = {}

    def note(self, kind: str, detail: str = "", trace: str | None = None) -> None:
        """Count one occurrence; log it if it is the kind's first, else maybe a summary."""
        total = self.totals.get(kind, 0) + 1
        self.totals[kind] = total
        now = self._clock()
        if total == 1:
            self._reported[kind] = now
            fields: dict[str, Any] = {"kind": kind, "detail": detail[:MAX_DETAIL]}
            if trace:
                fields["traceback"] = trace[-MAX_DETAIL:]
            log.warning("server error (repeats of this kind are counted, not logged)", **fields)
            return
        self._pending[kind] = self._pending.get(kind, 0) + 1
        if now - self._reported[kind] >= self.interval:
            self._report(kind, now)

    def flush(self) -> None:
        """Report every pending count now (at stop, so nothing counted is lost)."""
        now = self._clock()
        for kind in list(self._pending):
            self._report(kind, now)

    def _report(self, kind: str, now: float) -> None:
        count = self._pending.pop(kind, 0)
        self._reported[kind] = now
        if count:
            log.warning("server error repeated", kind=kind, count=count, total=self.totals[kind])

    # -- the two outside sources ------------------------------------------------------------

    def loop_exception(self, _loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An asyncio exception handler: ``socket.accept() out of system resource`` and kin."""
        exc = context.get("exception")
        message = str(context.get("message", "asyncio error"))
        kind, trace = message, None
        if isinstance(exc, BaseException):
            kind = f"{message}: {_origin(exc)}"
            trace = _trace(exc)
        self.note(kind, f"{message}: {exc}" if exc is not None else message, trace)

    def capture(self) -> logging.Filter:
        """A filter that turns a stdlib log record into :meth:`note` and drops the record."""
        return _Capture(self)


class _Capture(logging.Filter):
    def __init__(self, throttle: ErrorThrottle) -> None:
        super().__init__()
        self._throttle = throttle

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return False
        exc = record.exc_info[1] if record.exc_info else None
        kind = f"{record.name}: {record.msg}"
        if exc is not None:
            kind += f": {_origin(exc)}"
        trace = _trace(exc) if exc is not None else None
        self._throttle.note(kind, record.getMessage(), trace)
        return False


def _trace(exc: BaseException) -> str | None:
    """The traceback worth logging once: a bug's. An ``OSError`` (no descriptors left, a reset
    or refused connection) comes from the host or the peer, and its kind names where it met."""
    if isinstance(exc, OSError):
        return None
    return "".join(traceback.format_exception(exc))


def _origin(exc: BaseException) -> str:
    """The exception's type and the line that raised it: one bug, one kind."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"


__all__ = ["CAPTURED_LOGGERS", "ErrorThrottle"]
