"""Faults of the state directory (full, read-only, I/O error), told apart from corruption.

A full or read-only file system is a condition of the host, not of a file: nothing is moved
aside for it. :class:`StateFaults` remembers which state file cannot be written since when,
counts each failed write (``inferwatch_state_write_errors_total{file}``), keeps
``inferwatch_state_write_failing{file}`` at 1 while it lasts and words it as a problem for
``/api/v1/status``; the next successful write of that file clears it.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from inferwatch.clock import Clock
from inferwatch.event import Kind
from inferwatch.labels import make_labels
from inferwatch.logsetup import get_logger
from inferwatch.store.tsdb import SeriesStore

log = get_logger(__name__)

WRITE_ERRORS = "inferwatch_state_write_errors_total"
WRITE_FAILING = "inferwatch_state_write_failing"

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_READ_ONLY_ERRNOS = {errno.EROFS, errno.EACCES, errno.EPERM}
_SQLITE_FULL = ("database or disk is full",)
_SQLITE_READ_ONLY = ("readonly database", "unable to open database file")
_SQLITE_IO = ("disk i/o error",)


def fault_kind(exc: BaseException) -> str | None:
    """``"full"``, ``"read-only"`` or ``"failing (I/O error)"`` for a fault of the file system
    under a state file; None for anything else (corruption, a bug)."""
    if isinstance(exc, OSError):
        if exc.errno in _FULL_ERRNOS:
            return "full"
        if exc.errno in _READ_ONLY_ERRNOS:
            return "read-only"
        if exc.errno == errno.EIO:
            return "failing (I/O error)"
        return None
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        if any(s in text for s in _SQLITE_FULL):
            return "full"
        if any(s in text for s in _SQLITE_READ_ONLY):
            return "read-only"
        if any(s in text for s in _SQLITE_IO):
            return "failing (I/O error)"
    return None


def is_disk_fault(exc: BaseException) -> bool:
    """True for ENOSPC/EDQUOT/EROFS/EACCES/EIO and SQLite's "database or disk is full",
    "attempt to write a readonly database", "disk I/O error"."""
    return fault_kind(exc) is not None


def probe_writable(directory: Path) -> OSError | None:
    """Create and remove a file in ``directory``; the error if that is not possible."""
    probe = directory / f".write-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        return exc
    return None


@dataclass(slots=True)
class _Fault:
    kind: str
    error: str
    since: float


class StateFaults:
    """Which state files cannot be written right now; safe from any thread."""

    def __init__(self, store: SeriesStore, clock: Clock, state_dir: Path) -> None:
        self.store = store
        self.clock = clock
        self.state_dir = state_dir
        self.read_only_at_start: str | None = None
        self._faults: dict[str, _Fault] = {}
        self._lock = threading.Lock()
        store.describe(WRITE_ERRORS, Kind.COUNTER, "Failed writes of a state file (disk full…).")
        store.describe(WRITE_FAILING, Kind.GAUGE, "1 while a state file cannot be written.")

    def note(self, what: str, exc: BaseException | None) -> None:
        """Record the outcome of a write of ``what`` (a file name): None is a success."""
        if exc is None:
            self.ok(what)
        else:
            self.failed(what, exc)

    def failed(self, what: str, exc: BaseException) -> None:
        now = self.clock.time()
        kind = fault_kind(exc) or "failing"
        labels = make_labels({"file": what})
        with self._lock:
            new = what not in self._faults
            since = now if new else self._faults[what].since
            self._faults[what] = _Fault(kind, str(exc), since)
        self.store.inc(WRITE_ERRORS, labels, 1.0, now, wake=False)
        self.store.set(WRITE_FAILING, labels, 1.0, now)
        if new:
            log.error("state file cannot be written", file=what, kind=kind, error=str(exc))

    def ok(self, what: str) -> None:
        with self._lock:
            gone = self._faults.pop(what, None)
        if gone is not None:
            self.store.set(WRITE_FAILING, make_labels({"file": what}), 0.0, self.clock.time())
            log.info("state file written again", file=what, failing_since=gone.since)

    def failing(self, what: str) -> bool:
        with self._lock:
            return what in self._faults

    def problems(self) -> list[str]:
        """One line per state file that cannot be written, and the read-only start if any."""
        out = [] if self.read_only_at_start is None else [self.read_only_at_start]
        with self._lock:
            faults = sorted(self._faults.items())
        for what, fault in faults:
            out.append(
                f"state dir {self.state_dir} is {fault.kind}: cannot write {what}"
                f" since {fault.since:.0f} ({fault.error})"
                + ("; notifications are kept in memory and still sent" if "outbox" in what else "")
            )
        return out
