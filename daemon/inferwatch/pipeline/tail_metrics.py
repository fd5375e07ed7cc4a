"""The tailer's own numbers as metrics, per file source (DESIGN.md §6 self-telemetry).

Counters mirror :class:`TailStats` (they start again at 0 when the daemon restarts, which
``rate()`` reads as a reset); ``inferwatch_tail_file_state`` says per configured path or glob
match whether it is ``ok``, ``missing`` (no data yet, not an error) or in ``error`` (permission
denied, not a regular file), so a log that became unreadable shows on a dashboard and in rules.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from inferwatch.clock import Clock
from inferwatch.event import Kind
from inferwatch.labels import make_labels
from inferwatch.sources.tail.model import FileStatus, TailStats
from inferwatch.store.tsdb import SeriesStore

COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("lines", "inferwatch_tail_lines_total", "Lines read and handed on."),
    ("bytes_read", "inferwatch_tail_read_bytes_total", "Bytes read from followed files."),
    ("rotations", "inferwatch_tail_rotations_total", "Rotations followed (rename, recreate)."),
    ("truncations", "inferwatch_tail_truncations_total", "Files truncated under the reader."),
    ("truncated_lines", "inferwatch_tail_long_lines_total", "Lines cut at the length limit."),
    ("nul_bytes_skipped", "inferwatch_tail_nul_bytes_total", "NUL bytes skipped."),
    ("bytes_unread_dropped", "inferwatch_tail_lost_bytes_total", "Bytes gone before read."),
    ("errors", "inferwatch_tail_errors_total", "Errors met while following (retried)."),
)
STATE = "inferwatch_tail_file_state"
STATES = ("ok", "missing", "error")


class Tailed(Protocol):
    name: str

    def tail_stats(self) -> tuple[TailStats, tuple[FileStatus, ...]] | None: ...


def describe(store: SeriesStore) -> None:
    for _, name, help_text in COUNTERS:
        store.describe(name, Kind.COUNTER, help_text)
    store.describe(STATE, Kind.GAUGE, "1 for the state each followed path is in now.")


def export(store: SeriesStore, source: str, stats: TailStats, files: tuple[FileStatus, ...],
           now: float) -> None:  # fmt: skip
    labels = make_labels({"source": source})
    for attr, name, _ in COUNTERS:
        store.set_counter(name, labels, float(getattr(stats, attr)), now)
    for status in files:
        for state in STATES:
            where = make_labels({"source": source, "path": status.path, "state": state})
            store.set(STATE, where, 1.0 if status.state == state else 0.0, now)


def tail_tick(store: SeriesStore, clock: Clock, source: Tailed) -> Callable[[], Awaitable[None]]:
    """A tick job copying ``source``'s tailer numbers into the store."""
    describe(store)

    async def tick() -> None:
        found = source.tail_stats()
        if found is not None:
            export(store, source.name, found[0], found[1], clock.time())

    return tick
