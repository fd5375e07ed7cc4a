"""Engine crash incidents: one per chain of crash lines, labelled with the root cause.

reference/engine.md 5.1: an engine death is logged as a chain — the worker's or engine core's
traceback with the real error, ``EngineCore encountered a fatal error.`` / ``failed to start``,
then the API server's ``output_handler failed`` and ``EngineDeadError`` (once per API server),
one ``EngineDeadError`` per in-flight request — spread over a few seconds and several processes.
Counting lines would page five times for one death, and the loudest line (``engine_dead``) is
the least informative. So:

1. ``parsers.engine_grouper.TracebackGrouper`` turns lines into traceback blocks (a hint line
   after a CUDA error is not a second crash);
2. blocks that mean the engine died (``incident``) of one engine within ``window`` seconds of
   each other form one chain; blocks that do not (a worker's bare exception) join a chain that
   is open or opens within ``window`` after them, as root-cause candidates, and never make one;
3. when the chain's window has closed, the chain becomes one ``engine_crash`` event and one
   increment of ``inferwatch_engine_crashes_total{engine,signature}``, labelled with the most
   specific signature in it (``ROOT_RANK``): ``illegal_memory_access`` rather than
   ``engine_dead``; a start-up failure stays ``startup_failed`` unless a specific fault caused
   it; a generic exception (the ``AttributeError`` under a fatal error) ranks above the openers.

Clock-free: the caller passes each record's time. A chain is decided once later input is more
than ``window`` seconds past it and the grouper can no longer hold a block of it (``max_gap``
further records, or six windows of time), by ``flush(now)`` — the daemon's tick; a log quiet for
``window`` seconds closes here — or by ``flush()`` at the end of input, which decides everything.
So an incident reaches the event log about ``window`` seconds after its last line.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.engine import names as n
from inferwatch.labels import make_labels
from inferwatch.model import Event
from inferwatch.parsers.engine_grouper import TracebackGroup, TracebackGrouper
from inferwatch.parsers.engine_records import (
    EngineCrash,
    EngineRecord,
    EngineStats,
    OtherLine,
    SpecDecode,
)

ROOT_RANK = {
    "illegal_memory_access": 0, "cuda_oom": 0, "npu_oom": 0, "nccl": 0, "iteration_timeout": 0,
    "assertion": 0, "startup_failed": 1, "exception": 2, "fatal_error": 3, "engine_died": 4,
    "output_handler_failed": 5, "engine_dead": 6,
}  # fmt: skip
"""Lower is closer to the root cause; unknown signatures rank with generic exceptions."""
_TRACE_KINDS = frozenset({"traceback", "cuda_error_detail", "request_error"})
_MAX_RECENT = 64


@dataclass(frozen=True, slots=True)
class ChainMember:
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

    def to_dict(self) -> dict[str, object]:
        return {
            "line": self.line, "last_line": self.last_line, "signature": self.signature,
            "exception": self.exception, "root_cause": self.root_cause, "proc": self.proc,
            "incident": self.incident,
        }  # fmt: skip


@dataclass(slots=True)
class _Chain:
    last_at: float
    members: list[ChainMember] = field(default_factory=list)
    last_line: int = 0  # line of the last member: the gap is counted in lines, not records


def root_signature(group: TracebackGroup) -> str:
    """The block's own root cause: a generic exception under an opener is ``exception``."""
    if group.exception is not None and group.signature == group.opener:
        return "exception"
    return group.signature


class EngineCrashTracker:
    """Feed every record of one engine's log in order (None for lines that parse to nothing)."""

    __slots__ = ("_chain", "_grouper", "_last_fed", "_line", "_max_gap", "_max_times", "_recent",
                 "_times", "engine", "window")  # fmt: skip

    def __init__(
        self, engine: str, *, window: float = 5.0, max_gap: int = 50, max_times: int = 8192
    ) -> None:
        self.engine = engine
        self.window = window
        self._max_gap = max_gap
        self._max_times = max_times
        self._grouper = TracebackGrouper(max_gap=max_gap)
        self._times: dict[int, tuple[float, str, str]] = {}
        self._recent: deque[ChainMember] = deque(maxlen=_MAX_RECENT)
        self._chain: _Chain | None = None
        self._last_fed = -math.inf
        self._line = 0

    def feed(
        self, record: EngineRecord | None, at: float, line: int, source: str, key: str
    ) -> list[Effect]:
        speed = isinstance(record, EngineStats | SpecDecode)
        if speed and self._chain is None and self._grouper.idle:
            self._last_fed = max(self._last_fed, at)  # the common case: no crash under way
            return []
        if record is not None and not self._grouper.moves(record, line):
            return []  # a line the replay scanner may not deliver: it must change nothing
        self._last_fed = max(self._last_fed, at)
        if isinstance(record, EngineCrash) or (
            isinstance(record, OtherLine) and record.kind in _TRACE_KINDS
        ):
            self._times[line] = (at, source, key)
            if len(self._times) > self._max_times:
                del self._times[next(iter(self._times))]
        out: list[Effect] = []
        for group in self._grouper.feed(record, line):
            self._add(group, source, out)
        chain = self._chain
        if chain is not None:
            self._line = max(self._line, line)
            if self._due(chain, at):
                self._decide(out)
        return out

    def flush(self, now: float = math.inf) -> list[Effect]:
        """Decide chains whose window has closed by ``now``; with no ``now`` (end of input),
        everything still open. Call it from the daemon's tick: a quiet stream closes here."""
        out: list[Effect] = []
        quiet = now - self._last_fed > self.window
        if quiet:
            for group in self._grouper.flush():
                self._add(group, "", out)
        chain = self._chain
        if (
            chain is not None
            and now - chain.last_at > self.window
            and (quiet or self._due(chain, now))
        ):
            self._decide(out)
        return out

    def _due(self, chain: _Chain, now: float) -> bool:
        """The chain's window has closed and no block of it can still be held by the grouper:
        ``max_gap`` lines came since, or far more time than any chain takes passed. Lines, not
        records: replay's scanner skips lines no parser needs, and the decision must not move."""
        late = now - chain.last_at
        gap = self._line - chain.last_line
        return late > self.window and (gap >= self._max_gap or late > 6 * self.window)

    def _add(self, group: TracebackGroup, source: str, out: list[Effect]) -> None:
        at, src, key = self._times.get(group.first_line, (self._last_fed, source, ""))
        member = ChainMember(
            at, group.first_line, group.last_line, group.line_count, root_signature(group),
            group.exception, group.root_cause, group.prefix.proc, group.incident, src,
            key or f"{src}:{group.first_line}",
        )  # fmt: skip
        chain = self._chain
        joins = chain is not None and abs(at - chain.last_at) <= self.window
        if not member.incident:
            if joins and chain is not None:
                chain.members.append(member)
            else:
                self._recent.append(member)
            return
        if chain is not None and not joins:
            self._decide(out)
            chain = None
        if chain is None:
            chain = self._chain = _Chain(at)
            chain.members += [m for m in self._recent if 0 <= at - m.at <= self.window]
            self._recent.clear()
        chain.members.append(member)
        chain.last_at = max(chain.last_at, at)
        chain.last_line = max(chain.last_line, member.last_line)

    def _decide(self, out: list[Effect]) -> None:
        chain, self._chain = self._chain, None
        if chain is None:
            return
        members = sorted(chain.members, key=lambda m: (m.at, m.line))
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
        out.append(Event("engine_crash", first.at, first.source, f"{first.key}:crash",
                         first.line, {"engine": self.engine, "signature": root.signature},
                         details))  # fmt: skip
