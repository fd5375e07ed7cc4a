"""Recorded files as a time-ordered stream of the records that matter.

Each reader yields only records some parser could match (a cheap substring check runs first, so
the 99 % of ordinary lines cost one ``in`` test), with the wall time of the record taken from its
own prefix: ISO times with an offset as they are, naive times in ``--tz``, times without a year in
``--year``, kernel seconds as seconds from an arbitrary origin. A record without a time inherits
the last time seen in its file; in an engine log, the last time of a record with an anchor (the
scanner may skip an access-log line or a warning, so their times date nothing but themselves).
Files are merged by time, stable by file then line.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import NamedTuple

from inferwatch.parsers.engine_precheck import unanchored
from inferwatch.replay.engine_parts import Hit, anchor_records, parse_hit


@dataclass(slots=True)
class TimedRecord:
    """One record on the replay's timeline. Not frozen: one is made per record, and a frozen
    dataclass sets each of its nine fields through ``object.__setattr__`` (~4x the cost)."""

    at: float
    file_index: int
    line: int
    source: str
    kind: str  # "kernel" | "engine"
    text: str  # a kernel record's message ("" for an engine record: its parse is all it needs)
    parsed: object | None = None
    rendered: str | None = None  # an engine line event's fields as JSON (output.fields_json)
    base: str = "wall"  # how ``at`` was found: a TimeBase value


WALL = "wall"  # Unix seconds from the records' own wall times (or placed with --boot-time)
BOOT_RELATIVE = "boot-relative"  # seconds since boot: the records give no wall time
UNTIMED = "untimed"  # no time at all (dmesg -H deltas): every record at 0


class TimeContext(NamedTuple):
    """How records' times become Unix seconds: the year of prefixes without one, the zone of
    naive times, and the boot time (Unix seconds) that places kernel seconds, when known."""

    year: int
    tz: tzinfo
    boot_time: float | None = None

    def wall_seconds(self, wall: datetime, year_missing: bool) -> float | None:
        if year_missing:
            try:
                wall = wall.replace(year=self.year)
            except ValueError:  # Feb 29 in a non-leap year
                return None
        if wall.tzinfo is None:
            wall = wall.replace(tzinfo=self.tz)
        return wall.timestamp()


LineSource = Callable[[Path], Iterable[tuple[int, bytes]]]
ENGINE_LINES: LineSource | None = None
"""Where engine lines come from: None is the parallel scan with parsing in its workers
(:func:`anchor_records`); a line source (``anchor_lines``, every line) is parsed here."""


def _parsed(lines: Iterable[tuple[int, bytes]], ctx: TimeContext, render: bool) -> Iterator[Hit]:
    for number, raw in lines:
        hit = parse_hit(number, raw, ctx.year, ctx.tz, render)
        if hit is not None:
            yield hit


def engine_records(
    path: Path,
    index: int,
    ctx: TimeContext,
    source: str,
    lines: LineSource | None = None,
    *,
    render: bool = False,
) -> Iterator[TimedRecord]:
    """Engine lines that can become records (found by the parallel anchor scan), parsed, with
    their times; bystanders (access logs, warnings, other libraries' lines: nothing reads them)
    are dropped where they are parsed. A record without a time of its own takes the last time
    of a record with an anchor: the scanner delivers all of those and only some of the others,
    so a scanned replay dates like a full read. Records before the file's first such time (a
    traceback) take that first time: the epoch would put hours of empty virtual time before
    the log. With ``render``, line events come with their fields as JSON (rendered where
    the records are parsed: in the scan workers)."""
    reader = lines or ENGINE_LINES
    if reader is None:
        hits = anchor_records(path, ctx.year, ctx.tz, render=render)
    else:
        hits = _parsed(reader(path), ctx, render)
    last_at: float | None = None
    early: list[tuple[int, object, str | None]] = []
    for number, record, own, rendered in hits:
        if own is not None and not unanchored(record):
            last_at = own
            for n, r, j in early:
                yield TimedRecord(own, index, n, source, "engine", "", r, j)
            early.clear()
        at = own if own is not None else last_at
        if at is None:
            early.append((number, record, rendered))
            continue
        yield TimedRecord(at, index, number, source, "engine", "", record, rendered)
    for n, r, j in early:  # no timed record at all
        yield TimedRecord(0.0, index, n, source, "engine", "", r, j, base=UNTIMED)


Reader = Callable[[Path, int, TimeContext, str], Iterator[TimedRecord]]


def merged(streams: Iterable[Iterator[TimedRecord]]) -> Iterator[TimedRecord]:
    """One stream ordered by time, ties broken by file order then line number (one file's
    stream is passed on as it is: merging it alone would change nothing)."""
    streams = list(streams)
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda r: (r.at, r.file_index, r.line))
