"""/dev/kmsg: one record per read, sequence-tracked, resumable across restarts of the daemon.

The source reads raw records (reference/kernel-log.md §2-3) and hands them on undecoded; the
kernel parsers turn them into events. What the source owns is the sequence: records already
applied before a restart are skipped using the saved ``(boot_id, next_seq)``, records the ring
overwrote (while we were down, or an EPIPE overrun while reading) are reported as a :class:`Gap`
with the exact count, never skipped silently.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.clock import Clock
from inferwatch.errors import NoData
from inferwatch.model import Gap, LineRecord
from inferwatch.sources.base import Emit

READ_SIZE = 16384  # a record is at most ~8 KiB; a smaller buffer loses the record (EINVAL)
BATCH = 512  # records read before yielding to the loop


def default_opener(path: Path) -> Callable[[], int]:
    def open_kmsg() -> int:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    return open_kmsg


def read_boot_id(proc: Path) -> str:
    try:
        return (proc / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def record_seq(raw: bytes) -> int | None:
    """The sequence number from a record header ``prio,seq,usec,flags;``."""
    head = raw[:64].split(b";", 1)[0].split(b",", 2)
    if len(head) < 3 or not head[1].isdigit():
        return None
    return int(head[1])


class KmsgSource:
    def __init__(
        self,
        path: Path,
        clock: Clock,
        *,
        boot_id: str,
        checkpoint: Any = None,
        opener: Callable[[], int] | None = None,
        name: str = "kernel",
    ) -> None:
        self.name = name
        self.path = path
        self.clock = clock
        self.boot_id = boot_id
        self._open = opener or default_opener(path)
        self._resume_from: int | None = None
        if isinstance(checkpoint, dict) and checkpoint.get("boot_id") == boot_id and boot_id:
            next_seq = checkpoint.get("next_seq")
            self._resume_from = int(next_seq) if isinstance(next_seq, int) else None
        self._acked: int | None = self._resume_from

    def checkpoint(self) -> dict[str, Any] | None:
        """``{boot_id, next_seq}`` of the records applied so far (None before the first)."""
        if self._acked is None:
            return None
        return {"boot_id": self.boot_id, "next_seq": self._acked}

    def _ack(self, seq: int) -> Callable[[], None]:
        def ack() -> None:
            if self._acked is None or seq + 1 > self._acked:
                self._acked = seq + 1

        return ack

    async def run(self, emit: Emit) -> None:
        try:
            fd = self._open()
        except (PermissionError, FileNotFoundError) as exc:
            raise NoData(f"cannot read {self.path}: {exc.strerror}") from None
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.EACCES, errno.ENODEV, errno.ENXIO):
                raise NoData(f"cannot read {self.path}: {exc.strerror}") from None
            raise
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        try:
            loop.add_reader(fd, readable.set)
            watching = True
        except (OSError, ValueError, NotImplementedError):
            watching = False  # not pollable (a test file): poll on a timer
        try:
            expected = self._resume_from
            while True:
                readable.clear()
                expected = await self._drain(fd, emit, expected)
                if watching:
                    await readable.wait()
                else:
                    await asyncio.sleep(0.5)
        finally:
            if watching:
                loop.remove_reader(fd)
            os.close(fd)

    async def _drain(self, fd: int, emit: Emit, expected: int | None) -> int | None:
        """Read every available record; returns the next expected sequence number."""
        overrun = False
        count = 0
        while True:
            try:
                raw = os.read(fd, READ_SIZE)
            except BlockingIOError:
                return expected
            except BrokenPipeError:
                overrun = True  # the ring overwrote our next record; the seq jump tells how many
                continue
            if not raw:
                return expected
            seq = record_seq(raw)
            if seq is None:
                continue
            if expected is not None and seq < expected:
                continue  # applied before the restart
            if expected is not None and seq > expected:
                why = "ring overrun while reading" if overrun else "overwritten before it was read"
                await emit(Gap(self.name, seq - expected, self.clock.time(), why))
            overrun = False
            await emit(
                LineRecord(
                    source=self.name,
                    path=str(self.path),
                    line_no=seq,
                    text=raw.decode("ascii", "replace"),
                    read_at=self.clock.time(),
                    ack=self._ack(seq),
                    mono_at=self.clock.monotonic(),
                )
            )
            expected = seq + 1
            count += 1
            if count % BATCH == 0:
                await asyncio.sleep(0)
