"""Per-path health of a tailer, kept as data: errors never stop it, "missing" is not an error.

A state is recorded with the time it began, and only changes of state (or of error text) are
recorded, so a file that stays unreadable reports one stable status instead of one per poll.
"""

from __future__ import annotations

from collections.abc import Callable

from inferwatch.clock import Clock
from inferwatch.sources.tail.model import FileState, FileStatus, TailStats


class StatusBoard:
    """What each configured path or glob match looks like now."""

    def __init__(self, clock: Clock, stats: TailStats) -> None:
        self._clock = clock
        self._stats = stats
        self._status: dict[str, FileStatus] = {}

    def set(self, path: str, state: FileState, error: str | None = None) -> None:
        old = self._status.get(path)
        if old is None or old.state != state or old.error != error:
            self._status[path] = FileStatus(path, state, error, self._clock.time())

    def error(self, path: str, exc: OSError) -> None:
        """Count the error and show it (``PermissionError: [Errno 13] …``) until it goes away."""
        self._stats.count_error(exc)
        self.set(path, "error", f"{type(exc).__name__}: {exc}")

    def forget(self, path: str) -> None:
        self._status.pop(path, None)

    def keep_only(self, keep: Callable[[str], bool]) -> None:
        for path in [p for p in self._status if not keep(p)]:
            del self._status[path]

    def all(self) -> tuple[FileStatus, ...]:
        return tuple(self._status[path] for path in sorted(self._status))
