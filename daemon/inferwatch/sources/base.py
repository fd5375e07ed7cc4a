"""What a source is: something that reads one kind of input and emits records, nothing more.

A source never parses and never touches the store; it reports its health as data. Two shapes:
a :class:`Source` runs for ever (a tailer, /dev/kmsg), a :class:`PolledSource` is called by the
scheduler (NVML, scrapes, probes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from inferwatch.model import Record

Emit = Callable[[Record], Awaitable[None]]


class Source(Protocol):
    """A long-running reader. ``run`` returns only when cancelled (or raises).

    Raise :class:`inferwatch.errors.NoData` when the input does not exist here; any other
    exception is counted and the source is restarted with backoff.
    """

    name: str

    async def run(self, emit: Emit) -> None: ...


class PolledSource(Protocol):
    """Read once per ``interval``; raise ``NoData`` when there is nothing to read here."""

    name: str
    interval: float

    async def poll(self) -> Record | None: ...


@runtime_checkable
class Announcing(Protocol):
    """A polled source that also reports how its polls go (e.g. a scrape's up/down changes):
    the supervisor emits these records after each poll, before the poll's own record."""

    def notices(self) -> list[Record]: ...


@runtime_checkable
class SelfReporting(Protocol):
    """A long-running source that can say how its input looks between records: a followed file
    replaced by a FIFO or a directory, or unreadable, yields no record and raises nothing.

    ``input_health`` returns ``(state, reason)`` with state ``up`` (reading), ``no_data`` (its
    input does not exist) or ``error`` (it exists and cannot be read), or None when not known."""

    def input_health(self) -> tuple[str, str] | None: ...


@runtime_checkable
class Checkpointed(Protocol):
    """A source whose position can be saved with the state derived from it."""

    def checkpoint(self) -> Any: ...


@dataclass(slots=True)
class Health:
    """What the status API shows for a source."""

    state: str = "starting"  # starting | up | no_data | error | stopped
    reason: str = ""
    last_error: str = ""
    since: float = 0.0
    restarts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "last_error": self.last_error,
            "since": self.since,
            "restarts": self.restarts,
        }
