"""journald: kernel messages through a ``journalctl`` subprocess, resumable by cursor.

For hosts where /dev/kmsg is not permitted but the system journal is (reference/kernel-log.md
sections 1 and 5). The command is ``journalctl -f -o json --all _TRANSPORT=kernel`` plus
``--after-cursor=C`` when resuming, else the configured start (``-n all``). Not ``-k``: it
implies the current boot, and resuming must cross reboots. ``--all`` keeps large fields from
being printed as null.

The source does not parse kernel text. It decodes the JSON entry only as far as the journal's
own format demands (MESSAGE as a string, an array of bytes, null, or several of those when the
field occurs twice) and emits a :class:`JournalRecord`: a ``LineRecord`` whose ``text`` is the
message, plus the cursor and timestamps. Acknowledging a record moves :meth:`checkpoint` to its
cursor. If journalctl exits it is restarted after the last cursor read; cancelling kills it.
A cursor journalctl rejects falls back to ``--since`` the cursor's own time, reported as a gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferwatch.clock import Clock
from inferwatch.errors import InferwatchError, NoData
from inferwatch.model import Gap, JournalRecord
from inferwatch.sources.base import Emit
from inferwatch.sources.follow_process import lines, restart_delay, spawn, stop

JOURNAL_DIR = Path("/run/systemd/journal")
STREAM_LIMIT = 8 * 1024 * 1024  # one JSON entry per line; --all lets fields grow large


class JournalctlFailed(InferwatchError):
    """journalctl exited with an error before delivering anything."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """The fields of one ``journalctl -o json`` entry this source uses (numbers as ints)."""

    cursor: str | None
    message: str | None
    realtime_usec: int | None = None
    monotonic_usec: int | None = None
    source_monotonic_usec: int | None = None
    boot_id: str | None = None
    priority: int | None = None
    facility: int | None = None
    transport: str | None = None


def decode_entry(line: str | bytes) -> JournalEntry | None:
    """One output line of ``journalctl -o json``; None when it is not a JSON object."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    return JournalEntry(
        cursor=_first_text(data.get("__CURSOR")),
        message=field_text(data.get("MESSAGE")),
        realtime_usec=_int(data.get("__REALTIME_TIMESTAMP")),
        monotonic_usec=_int(data.get("__MONOTONIC_TIMESTAMP")),
        source_monotonic_usec=_int(data.get("_SOURCE_MONOTONIC_TIMESTAMP")),
        boot_id=_first_text(data.get("_BOOT_ID")),
        priority=_int(data.get("PRIORITY")),
        facility=_int(data.get("SYSLOG_FACILITY")),
        transport=_first_text(data.get("_TRANSPORT")),
    )


def field_text(value: object) -> str | None:
    """A journal field as text: a string; an array of byte values (decoded as UTF-8 with
    replacement); null; or, for a field that occurs twice, an array of those (joined by
    newlines, nulls left out)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 256 for v in value):
            return bytes(value).decode("utf-8", "replace")
        parts = [text for text in map(field_text, value) if text is not None]
        return "\n".join(parts) if parts else None
    return str(value)


def _first_text(value: object) -> str | None:
    if isinstance(value, list):
        return next((t for t in map(_first_text, value) if t is not None), None)
    return field_text(value)


def _int(value: object) -> int | None:
    text = _first_text(value)
    return int(text) if text is not None and text.strip().isdigit() else None


def cursor_realtime(cursor: str) -> int | None:
    """The ``t=`` part of a cursor: its entry's realtime in microseconds (hex in the cursor)."""
    for part in cursor.split(";"):
        if part.startswith("t="):
            with contextlib.suppress(ValueError):
                return int(part[2:], 16)
    return None


class JournaldSource:
    def __init__(
        self,
        clock: Clock,
        *,
        journalctl: str = "journalctl",
        journal_dir: Path = JOURNAL_DIR,
        checkpoint: Any = None,
        start: Sequence[str] = ("-n", "all"),
        name: str = "kernel",
        restart_delay: float = 1.0,
        matches: Sequence[str] = ("_TRANSPORT=kernel",),
    ) -> None:
        self.name = name
        self.matches = tuple(matches)
        self.clock = clock
        self.journalctl = journalctl
        self.journal_dir = journal_dir
        self.start = tuple(start)
        self.restart_delay = restart_delay
        cursor = checkpoint.get("cursor") if isinstance(checkpoint, dict) else checkpoint
        self._cursor: str | None = cursor if isinstance(cursor, str) and cursor else None
        self._acked: tuple[int, str] | None = (0, self._cursor) if self._cursor else None
        self._since_usec: int | None = None
        self._count = 0
        self.restarts = 0
        self.oversized = 0

    def command(self) -> list[str]:
        """The journalctl command line for the current position."""
        args = [self.journalctl, "-f", "-o", "json", "--all"]
        if self._cursor is not None:
            args.append(f"--after-cursor={self._cursor}")
        elif self._since_usec is not None:
            args.append(f"--since=@{self._since_usec // 1_000_000}")
        else:
            args.extend(self.start)
        return [*args, *self.matches]

    def checkpoint(self) -> dict[str, Any] | None:
        """``{"cursor": C}``: the cursor of the last entry applied (None before the first)."""
        return {"cursor": self._acked[1]} if self._acked else None

    def _ack(self, count: int, cursor: str) -> Callable[[], None]:
        def ack() -> None:
            if self._acked is None or count > self._acked[0]:
                self._acked = (count, cursor)

        return ack

    async def run(self, emit: Emit) -> None:
        if not self.journal_dir.is_dir():
            raise NoData(f"journald is not running here (no {self.journal_dir})")
        if shutil.which(self.journalctl) is None:
            raise NoData(f"journalctl not found ({self.journalctl})")
        idle = 0  # consecutive runs that delivered nothing: back off up to MAX_RESTART_DELAY
        while True:
            delivered, code, errors = await self._follow(emit)
            if delivered == 0 and code != 0:
                if self._cursor is not None and "cursor" in errors.lower():
                    await self._fall_back(emit, errors)
                    continue
                raise JournalctlFailed(f"journalctl exited {code}: {errors or 'no message'}")
            idle = 0 if delivered else idle + 1
            self.restarts += 1
            await asyncio.sleep(restart_delay(self.restart_delay, idle))

    async def _fall_back(self, emit: Emit, errors: str) -> None:
        """journalctl rejected the saved cursor: resume by its time; say what may be lost."""
        assert self._cursor is not None
        self._since_usec = cursor_realtime(self._cursor)
        self._cursor = None
        reason = f"journal cursor rejected ({errors.strip()[:200]}); resumed by time"
        await emit(Gap(self.name, 0, self.clock.time(), reason))

    async def _follow(self, emit: Emit) -> tuple[int, int, str]:
        """Run journalctl once; returns entries delivered, exit code and stderr's tail."""
        proc = await spawn(self.command(), limit=STREAM_LIMIT, merge_stderr=False)
        assert proc.stdout is not None and proc.stderr is not None
        tail: deque[str] = deque(maxlen=5)
        drain = asyncio.create_task(_collect(proc.stderr, tail))
        delivered = 0
        try:
            async for line in lines(proc.stdout):
                if line is None:  # one entry beyond STREAM_LIMIT: skip it, keep going
                    self.oversized += 1
                    continue
                entry = decode_entry(line)
                if entry is None or not entry.cursor or entry.transport not in (None, "kernel"):
                    continue
                if self._since_usec is not None and (entry.realtime_usec or 0) <= self._since_usec:
                    continue  # at or before the entry we resumed from by time
                await emit(self._record(entry, entry.cursor))
                delivered += 1
            code = await proc.wait()
            await drain
        finally:
            await stop(proc)
            drain.cancel()
            await asyncio.gather(drain, return_exceptions=True)
        return delivered, code, " | ".join(tail)

    def _record(self, entry: JournalEntry, cursor: str) -> JournalRecord:
        self._count += 1
        self._cursor, self._since_usec = cursor, None
        return JournalRecord(
            source=self.name,
            path="journald",
            line_no=self._count,
            text=entry.message or "",
            read_at=self.clock.time(),
            ack=self._ack(self._count, cursor),
            mono_at=self.clock.monotonic(),
            cursor=cursor,
            realtime_usec=entry.realtime_usec,
            monotonic_usec=entry.monotonic_usec,
            source_monotonic_usec=entry.source_monotonic_usec,
            boot_id=entry.boot_id,
            priority=entry.priority,
            facility=entry.facility,
        )


async def _collect(stream: asyncio.StreamReader, tail: deque[str]) -> None:
    """Keep the last lines journalctl wrote to stderr (never let its pipe fill up)."""
    while line := await stream.readline():
        tail.append(line.decode("utf-8", "replace").strip())
