"""Engine crash incidents: one per chain of crash lines, paged within ``window`` seconds.

reference/engine.md 5.1: an engine death is logged as a chain — the worker's or engine core's
traceback with the real error, ``EngineCore encountered a fatal error.`` / ``failed to start``,
then the API server's ``output_handler failed`` and ``EngineDeadError`` (once per API server),
one ``EngineDeadError`` per in-flight request — spread over a few seconds and several processes.
Counting lines would page five times for one death, and the loudest line (``engine_dead``) is
the least informative. So:

1. ``parsers.engine_grouper.TracebackGrouper`` turns lines into traceback blocks (a hint line
   after a CUDA error is not a second crash);
2. the first line that makes a block mean the engine died (a fault signature such as an illegal
   memory access, ``EngineDeadError``, a worker's death; the grouper's ``incident``) opens a
   chain: the incident. Bare exceptions seen up to ``window`` seconds before it (a worker's
   traceback printed ahead of ``fatal error``) and every block that comes while it is open
   join it as root-cause candidates;
3. ``window - tick`` seconds after that first identifying line the chain is decided, even while
   unrelated lines keep coming: the blocks still open are closed as they stand, and the chain
   becomes one ``engine_crash`` event and one increment of
   ``inferwatch_engine_crashes_total{engine,signature}``, labelled with the most specific
   signature in it (``ROOT_RANK``): ``illegal_memory_access`` rather than ``engine_dead``; a
   start-up failure stays ``startup_failed`` unless a specific fault caused it; a generic
   exception (the ``AttributeError`` under a fatal error) ranks above the openers;
4. crash lines of the same death that come later (more ``EngineDeadError`` lines, the other
   workers' tracebacks) extend the decided incident while they follow each other within
   ``window`` seconds: they never count again. A start-up line ends it; the next death is a
   new incident.

``tick`` is how often the caller asks (the daemon's tick, about every second), so the page is
out at most ``window`` seconds after the first identifying line: the crash-latency promise.
Clock-free: the caller passes each record's time and ``flush(now)`` from its tick (a log that
went quiet is decided there); ``flush()`` at the end of input decides everything.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.engine import names as n
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.parsers.engine_grouper import TracebackGroup, TracebackGrouper
from inferwatch.parsers.engine_records import (
    EngineCrash,
    EngineRecord,
    EngineStats,
    OtherLine,
    SpecDecode,
    StartupFact,
)

ROOT_RANK = {
    "illegal_memory_access": 0, "cuda_oom": 0, "npu_oom": 0, "nccl": 0, "iteration_timeout": 0,
    "assertion": 0, "startup_failed": 1, "exception": 2, "fatal_error": 3, "worker_exception": 3,
    "engine_died": 4, "worker_died": 4, "output_handler_failed": 5, "engine_dead": 6,
}  # fmt: skip
"""Lower is closer to the root cause; unknown signatures rank with generic exceptions."""
_TRACE_KINDS = frozenset({"traceback", "cuda_error_detail", "request_error"})
_MAX_RECENT = 64


class ChainMember(NamedTuple):
    """One traceback block of a chain."""

    at: float
    line: int
    last_line: int
    line_count: int
    signature: str
    exception: str | None
    root_cause: str | None
    proc: str | None
    incident: bool
    source: str
    key: str
    gpu: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "line": self.line, "last_line": self.last_line, "signature": self.signature,
            "exception": self.exception, "root_cause": self.root_cause, "proc": self.proc,
            "incident": self.incident,
        }  # fmt: skip


@dataclass(slots=True)
class _Chain:
    """An incident not decided yet: opened by its first identifying line at ``opened``."""

    opened: float
    deadline: float
    members: list[ChainMember] = field(default_factory=list)


@dataclass(slots=True)
class _Decided:
    """A decided incident, still taking its late lines while they come within the window."""

    opened: float
    last_at: float


def root_signature(group: TracebackGroup) -> str:
    """The block's own root cause: a generic exception under an opener is ``exception``."""
    if group.exception is not None and group.signature == group.opener:
        return "exception"
    return group.signature


class EngineCrashTracker:
    """Feed every record of one engine's log in order (None for lines that parse to nothing)."""

    __slots__ = ("_chain", "_decided", "_grouper", "_last_fed", "_max_times", "_recent",
                 "_settle", "_times", "engine", "window")  # fmt: skip

    def __init__(
        self,
        engine: str,
        *,
        window: float = 5.0,
        tick: float = 1.0,
        max_gap: int = 50,
        max_times: int = 8192,
    ) -> None:
        self.engine = engine
        self.window = window
        self._settle = max(0.0, window - tick)
        self._max_times = max_times
        self._grouper = TracebackGrouper(max_gap=max_gap)
        self._times: dict[int, tuple[float, str, str]] = {}
        self._recent: deque[ChainMember] = deque(maxlen=_MAX_RECENT)
        self._chain: _Chain | None = None
        self._decided: _Decided | None = None
        self._last_fed = -math.inf

    def feed(
        self, record: EngineRecord | None, at: float, line: int, source: str, key: str
    ) -> list[Effect]:
        speed = isinstance(record, EngineStats | SpecDecode)
        if speed and self._chain is None and self._grouper.idle:
            # The common case, a decided incident behind or not: no chain to decide and no
            # block for the record to close, and a stats line never opens or joins one.
            self._last_fed = max(self._last_fed, at)
            return []
        if record is not None and not self._grouper.moves(record, line):
            return []  # a line the replay scanner may not deliver: it must change nothing
        self._last_fed = max(self._last_fed, at)
        out: list[Effect] = []
        if self._chain is not None and at >= self._chain.deadline:
            self._decide(out)  # this line comes too late to join the incident
        if isinstance(record, StartupFact):
            self._decided = None  # a new process starts: its death is a new incident
        crashy = isinstance(record, EngineCrash) or (
            isinstance(record, OtherLine) and record.kind in _TRACE_KINDS
        )
        if crashy:
            self._times[line] = (at, source, key)
            if len(self._times) > self._max_times:
                del self._times[next(iter(self._times))]
        for group in self._grouper.feed(record, line):
            self._add(group, source, out)
        if (
            crashy
            and record is not None
            and self._chain is None
            and (self._decided is None or at > self._decided.last_at + self.window)
            and self._grouper.incident_open(record)
        ):
            self._open(at)  # the first line that identifies the crash
        if self._chain is not None and at >= self._chain.deadline:
            self._decide(out)
        return out

    def flush(self, now: float = math.inf) -> list[Effect]:
        """Decide the incident whose time is up by ``now``; with no ``now`` (end of input),
        everything still open. Call it from the daemon's tick."""
        out: list[Effect] = []
        if now - self._last_fed > self.window:  # a quiet log: its blocks are complete
            for group in self._grouper.flush():
                self._add(group, "", out)
        if self._chain is not None and now >= self._chain.deadline:
            self._decide(out)
        return out

    def _open(self, at: float) -> _Chain:
        chain = self._chain = _Chain(at, at + self._settle)
        chain.members += [m for m in self._recent if 0 <= at - m.at <= self.window]
        self._recent.clear()
        return chain

    def _add(self, group: TracebackGroup, source: str, out: list[Effect]) -> None:
        at, src, key = self._times.get(group.first_line, (self._last_fed, source, ""))
        member = ChainMember(
            at, group.first_line, group.last_line, group.line_count, root_signature(group),
            group.exception, group.root_cause, group.prefix.proc, group.incident, src,
            key or f"{src}:{group.first_line}", group.gpu,
        )  # fmt: skip
        chain = self._chain
        if chain is not None and abs(at - chain.opened) <= self.window:
            chain.members.append(member)
            return
        decided = self._decided
        if decided is not None and decided.opened - self.window <= at <= (
            decided.last_at + self.window
        ):
            if member.incident:  # the same death, told again: never a second count
                decided.last_at = max(decided.last_at, at)
            return
        if not member.incident:
            self._recent.append(member)
            return
        if chain is not None:
            self._conclude(out)  # another death, far from this one in time
        self._decided = None
        self._open(at).members.append(member)  # known as an incident only once closed

    def _decide(self, out: list[Effect]) -> None:
        for group in self._grouper.flush():  # blocks still open are taken as they stand
            self._add(group, "", out)
        self._conclude(out)

    def _conclude(self, out: list[Effect]) -> None:
        chain, self._chain = self._chain, None
        if chain is None:
            return
        members = sorted(chain.members, key=lambda m: (m.at, m.line))
        last = max((m.at for m in members if m.incident), default=chain.opened)
        self._decided = _Decided(chain.opened, max(last, chain.opened))
        if not any(m.incident for m in members):
            return  # cannot happen: a chain opens on an incident
        root = min(members, key=lambda m: ROOT_RANK.get(m.signature, 2))
        first = members[0]
        labels = make_labels({"engine": self.engine, "signature": root.signature})
        out.append(CounterInc(n.CRASHES, labels, 1.0, first.at))
        details: dict[str, object] = {
            "engine": self.engine,
            "signature": root.signature,
            "signatures": [m.signature for m in members],
            "exception": root.exception,
            "root_cause": root.root_cause,
            "lines": [m.line for m in members],
            "line_count": sum(m.line_count for m in members),
            "procs": sorted({m.proc for m in members if m.proc}),
            "members": [m.to_dict() for m in members],
        }
        gpu = next((m.gpu for m in (root, *members) if m.gpu is not None), None)
        if gpu is not None:
            details["gpu"] = gpu  # the index a CUDA OOM names
        out.append(Event("engine_crash", first.at, first.source, f"{first.key}:crash",
                         first.line, {"engine": self.engine, "signature": root.signature},
                         details))  # fmt: skip
