"""docker: an engine container's output through ``docker logs``, resumable by timestamp.

The command is ``docker logs --follow --timestamps`` plus ``--since S`` when resuming (S = the
RFC 3339 time docker printed on the last line read), else the configured start (``--tail
1000``). docker writes the container's stdout to its stdout and the container's stderr (where
vLLM logs) to its stderr; both are sent into one pipe so the lines keep docker's order, which the
timestamp position relies on. A line without docker's time prefix is docker's own message (an
error), kept for the exit reason and never emitted.

``--since`` is inclusive, so the lines at the saved time come again: those whose content is
among the ones already read at that exact time are dropped, so a restart neither repeats nor
loses a line. ``docker logs`` exits 0 when the container stops; it is started again from the
position. No docker binary, no such container, no reachable daemon: :class:`NoData`.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import shutil
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from inferwatch.clock import Clock
from inferwatch.errors import InferwatchError, NoData
from inferwatch.model import DockerRecord
from inferwatch.sources.base import Emit
from inferwatch.sources.follow_process import lines, restart_delay, spawn, stop

STREAM_LIMIT = 1024 * 1024
_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)
_NOT_THERE = (  # docker's words for "nothing to read here"; anything else is an error
    "No such container",
    "Cannot connect to the Docker daemon",
    "permission denied while trying to connect",
)


class DockerLogsFailed(InferwatchError):
    """docker logs exited with an error this source does not know, before delivering a line."""


def stamp_ns(stamp: str) -> int | None:
    """Unix nanoseconds of docker's RFC 3339 time (trailing zeros of the fraction trimmed)."""
    m = _STAMP.fullmatch(stamp)
    if m is None:
        return None
    y, mo, d, hh, mm, ss = (int(g) for g in m.groups()[:6])
    try:
        seconds = int(datetime(y, mo, d, hh, mm, ss, tzinfo=UTC).timestamp())
    except ValueError:
        return None
    if m[8] != "Z":
        sign = 1 if m[8][0] == "+" else -1
        seconds -= sign * (int(m[8][1:3]) * 3600 + int(m[8][4:6]) * 60)
    return seconds * 1_000_000_000 + int((m[7] or "").ljust(9, "0"))


def digest(text: str) -> str:
    """A short fingerprint of a line's content, for the lines saved at the resume time."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class Mark:
    """A position: docker's time of the newest line read, and the digests of the lines read
    at exactly that time (several lines can share one)."""

    stamp: str
    ns: int
    seen: tuple[str, ...] = ()

    def then(self, stamp: str, ns: int, text: str) -> Mark:
        if ns == self.ns:
            return Mark(self.stamp, ns, (*self.seen, digest(text)))
        return Mark(stamp, ns, (digest(text),)) if ns > self.ns else self

    @staticmethod
    def restore(checkpoint: Any) -> Mark | None:
        if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("since"), str):
            return None
        ns = stamp_ns(checkpoint["since"])
        seen = checkpoint.get("seen")
        seen = tuple(s for s in seen if isinstance(s, str)) if isinstance(seen, list) else ()
        return Mark(checkpoint["since"], ns, seen) if ns is not None else None


class DockerLogsSource:
    def __init__(
        self,
        container: str,
        clock: Clock,
        *,
        name: str | None = None,
        docker: str = "docker",
        checkpoint: Any = None,
        start: Sequence[str] = ("--tail", "1000"),
        restart_delay: float = 1.0,
    ) -> None:
        self.container = container
        self.name = name or f"docker:{container}"
        self.clock = clock
        self.docker = docker
        self.start = tuple(start)
        self.restart_delay = restart_delay
        self._mark = Mark.restore(checkpoint)
        self._acked: tuple[int, Mark] | None = (0, self._mark) if self._mark else None
        self._count = 0
        self.restarts = 0
        self.oversized = 0

    def command(self) -> list[str]:
        """The docker command line for the current position."""
        where = ["--since", self._mark.stamp] if self._mark else list(self.start)
        return [self.docker, "logs", "--follow", "--timestamps", *where, self.container]

    def checkpoint(self) -> dict[str, Any] | None:
        """``{"since": S, "seen": [...]}`` of the last line applied (None before the first)."""
        if self._acked is None:
            return None
        return {"since": self._acked[1].stamp, "seen": list(self._acked[1].seen)}

    def _ack(self, count: int, mark: Mark) -> Callable[[], None]:
        def ack() -> None:
            if self._acked is None or count > self._acked[0]:
                self._acked = (count, mark)

        return ack

    async def run(self, emit: Emit) -> None:
        if shutil.which(self.docker) is None:
            raise NoData(f"docker not installed ({self.docker} not found)")
        idle = 0  # consecutive runs that delivered nothing (a stopped container): back off
        while True:
            delivered, code, errors = await self._follow(emit)
            if delivered == 0 and code != 0:
                reason = errors or "no message"
                if any(s.lower() in reason.lower() for s in _NOT_THERE):
                    raise NoData(f"docker logs {self.container}: {reason}")
                raise DockerLogsFailed(f"docker logs exited {code}: {reason}")
            idle = 0 if delivered else idle + 1
            self.restarts += 1
            await asyncio.sleep(restart_delay(self.restart_delay, idle))

    async def _follow(self, emit: Emit) -> tuple[int, int, str]:
        """Run docker logs once; returns lines delivered, exit code and docker's own messages."""
        proc = await spawn(self.command(), limit=STREAM_LIMIT, merge_stderr=True)
        assert proc.stdout is not None
        resume = self._mark
        again = list(resume.seen) if resume else []  # lines at the resume time, once each
        tail: deque[str] = deque(maxlen=5)
        delivered = 0
        try:
            async for raw in lines(proc.stdout):
                if raw is None:  # a line beyond STREAM_LIMIT: skip it, keep going
                    self.oversized += 1
                    continue
                line = raw.decode("utf-8", "replace").rstrip("\n").removesuffix("\r")
                stamp, _, text = line.partition(" ")
                ns = stamp_ns(stamp)
                if ns is None:
                    tail.append(line.strip())
                    continue
                if resume is not None and ns <= resume.ns:  # --since repeats the resume time
                    if ns < resume.ns:
                        continue
                    seen = digest(text)
                    if seen in again:
                        again.remove(seen)
                        continue
                await emit(self._record(stamp, ns, text))
                delivered += 1
            code = await proc.wait()
        finally:
            await stop(proc)
        return delivered, code, " | ".join(tail)

    def _record(self, stamp: str, ns: int, text: str) -> DockerRecord:
        self._count += 1
        mark = self._mark.then(stamp, ns, text) if self._mark else Mark(stamp, ns, (digest(text),))
        self._mark = mark
        return DockerRecord(
            source=self.name,
            path=self.container,
            line_no=self._count,
            text=text,
            read_at=self.clock.time(),
            ack=self._ack(self._count, mark),
            mono_at=self.clock.monotonic(),
            stamp=stamp,
            ns=ns,
        )
