"""Records, configuration and status of the file tailer.

Kept apart from the machinery so that consumers (sources, the status page, tests) can import the
shapes without the I/O code. Everything here is plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Opaque acknowledgement token handed out with every line: ``(delivery sequence, byte offset in
#: its file just after the line)``. Only :meth:`Tailer.ack` interprets it; the offset is there so a
#: consumer can build an idempotency key together with the file identity if it wants one.
Position = tuple[int, int]

FileState = Literal["ok", "missing", "error"]


@dataclass(frozen=True, slots=True)
class TailLine:
    """One line read from a followed file.

    ``text`` is the line decoded as UTF-8 with ``errors="replace"`` (invalid bytes become U+FFFD),
    without its ``\\n`` and without a ``\\r`` just before it. ``raw_len`` is the number of bytes
    the line occupied in the file, ``\\r`` included and ``\\n`` excluded, also when ``text`` was cut
    (``truncated``: the line was longer than ``max_line_bytes``; ``text`` holds its head).
    ``partial`` marks the unterminated tail of a file that was rotated away, deleted or truncated
    and then stayed quiet: it is delivered once, as is, because no newline will ever come.
    ``line_no`` counts lines of one file identity from 1 (across restarts through the checkpoint;
    relative to the start position when the tailer was told to start at the end of a file).
    """

    path: str
    line_no: int
    text: str
    raw_len: int
    truncated: bool
    position: Position
    partial: bool = False


MIN_POLL_GAP = 0.1
"""The tailer's default ``min_poll_gap`` (seconds)."""


@dataclass(frozen=True, slots=True)
class TailConfig:
    """What to follow and how.

    ``paths`` are file paths or glob patterns (``*``, ``?``, ``[...]``; no ``**``: recursive globs
    cost a directory walk per poll). ``rotated_globs`` name the siblings that rotation produces
    next to a file, with ``{name}`` standing for its base name; compressed siblings are ignored.
    ``rotate_grace`` is how long a rotated-away or deleted file must stay quiet, with every byte
    read, before it is closed. ``start_at`` applies only to files found on the very first start (no
    checkpoint at all): ``"end"`` skips their history; files found later are always read from 0.
    ``strict_rotation_order`` holds the new file of a rotated path back until the old one is
    closed, so lines keep file order across a rotation, at the cost of up to ``rotate_grace`` of
    latency; by default both are read and the old file's lines come first within each poll.
    ``min_poll_gap`` is the least time between two polls woken by file events: a log written
    line by line (hundreds of writes a second) is read in batches, at most this late.
    """

    paths: tuple[str, ...]
    max_line_bytes: int = 1 << 20
    read_chunk_bytes: int = 1 << 20
    poll_budget_bytes: int = 8 << 20
    rotate_grace: float = 30.0
    poll_interval: float = 1.0
    rotated_globs: tuple[str, ...] = ("{name}.*", "{name}-*")
    ignored_suffixes: tuple[str, ...] = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")
    start_at: Literal["beginning", "end"] = "beginning"
    strict_rotation_order: bool = False
    min_poll_gap: float = MIN_POLL_GAP

    def __post_init__(self) -> None:
        if isinstance(self.paths, str):
            raise TypeError("paths must be a sequence of paths, not one string")
        if not self.paths:
            raise ValueError("paths must name at least one file or glob")
        if self.max_line_bytes < 1 or self.read_chunk_bytes < 1 or self.poll_budget_bytes < 1:
            raise ValueError("byte limits must be positive")
        if self.rotate_grace < 0 or self.poll_interval <= 0:
            raise ValueError("rotate_grace must be >= 0 and poll_interval > 0")
        if any("{name}" not in pattern for pattern in self.rotated_globs):
            raise ValueError("each rotated_globs pattern must contain {name}")


@dataclass(frozen=True, slots=True)
class FileStatus:
    """Health of one configured path or glob match, as data (errors never stop the tailer).

    ``missing`` is "no data", not a failure: the file may appear later. ``error`` carries the
    OS error text (permission denied, not a regular file, I/O error) and is retried every poll.
    ``since`` is the wall time of the last change of ``state``.
    """

    path: str
    state: FileState
    error: str | None
    since: float


@dataclass(slots=True)
class TailStats:
    """Counters for self-telemetry (``inferwatch_source_*``); monotonic over a tailer's life."""

    lines: int = 0
    bytes_read: int = 0
    rotations: int = 0
    truncations: int = 0
    copies_read: int = 0
    intermediates_read: int = 0
    partial_lines: int = 0
    truncated_lines: int = 0
    nul_bytes_skipped: int = 0
    bytes_unread_dropped: int = 0
    files_closed: int = 0
    checkpoint_entries_expired: int = 0
    reconciles: int = 0
    errors: int = 0
    errors_by_type: dict[str, int] = field(default_factory=dict)

    def count_error(self, exc: BaseException) -> None:
        self.errors += 1
        name = type(exc).__name__
        self.errors_by_type[name] = self.errors_by_type.get(name, 0) + 1
