"""Rotation-safe file tailing shared by every file source: the synchronous core.

:class:`Tailer` follows paths and globs and hands out every line exactly once across rename and
copy-truncate rotation, truncation (also when the file regrew past our offset before we looked),
delete and recreate, symlink switches and restarts. Each :meth:`Tailer.poll` is one explicit step
(reconcile names with ``stat``, then read what is there, without blocking), so tests drive it with
a fake clock and the daemon drives it from :func:`inferwatch.sources.tail.follow.follow`.

Delivery is at-least-once by construction and exactly-once for a careful consumer: each line
carries a position; the consumer acknowledges what it has turned into state (:meth:`Tailer.ack`,
cumulative) and stores :meth:`Tailer.checkpoint`, which covers only acknowledged lines, in the
same transaction as that state. A kill -9 then re-delivers only lines that were never committed.

Identity is ``(dev, ino)`` while a file is open plus a prefix fingerprint and an anchor across
restarts (see :mod:`~inferwatch.sources.tail.identity`). Per-file errors are data
(:meth:`Tailer.statuses`); a missing file is "no data".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.sources.tail.acks import AckLedger
from inferwatch.sources.tail.checkpoint import Checkpoint, CheckpointError
from inferwatch.sources.tail.files import FileSet
from inferwatch.sources.tail.follower import Follower
from inferwatch.sources.tail.identity import DirListing, SiblingRule
from inferwatch.sources.tail.model import (
    FileStatus,
    Position,
    TailConfig,
    TailLine,
    TailStats,
)
from inferwatch.sources.tail.paths import watch_dirs
from inferwatch.sources.tail.siblings import SiblingTracker
from inferwatch.sources.tail.status import StatusBoard

__all__ = [
    "CheckpointError",
    "FileStatus",
    "Position",
    "TailConfig",
    "TailLine",
    "TailStats",
    "Tailer",
]


class Tailer:
    """Follows files; :meth:`poll` returns new lines, :meth:`ack` + :meth:`checkpoint` persist.

    ``checkpoint`` is what :meth:`checkpoint` returned in an earlier run (``None`` on the very
    first start: then rotated siblings that already exist are history, and ``start_at`` applies).
    A malformed checkpoint raises :class:`CheckpointError`.
    """

    def __init__(
        self,
        config: TailConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.stats = TailStats()
        self.more = False
        self._clock = clock
        self._restore = Checkpoint.from_json(checkpoint) if checkpoint is not None else None
        rule = SiblingRule(config.rotated_globs, config.ignored_suffixes)
        self._board = StatusBoard(clock, self.stats)
        siblings = SiblingTracker(rule, self.stats, config.max_line_bytes)
        self._files = FileSet(config, self.stats, self._board, siblings, fresh=checkpoint is None)
        self._ledger = AckLedger()
        self._started = False
        self._turn = 0
        self._watch_dirs: frozenset[str] = frozenset()
        self._frozen: dict[str, Any] | None = None
        self._listing = DirListing()

    # -- public API ------------------------------------------------------------------------

    def poll(self) -> list[TailLine]:
        """Reconcile names, then read what is available (at most ``poll_budget_bytes``).

        ``more`` is set when the budget ran out, i.e. calling again at once will find data.
        """
        listing = self._listing
        now = self._clock.monotonic()
        if not self._started:
            self._started = True
            if self._restore is not None:
                listing = self._files.restore(self._restore, listing, now)
        self._files.reconcile(listing, now)
        out: list[TailLine] = []
        budget = self.config.poll_budget_bytes
        for follower in self._read_order():
            if budget <= 0:
                break
            budget -= self._service(follower, out, budget, now)
        self.more = budget <= 0
        self._files.retire(now)
        return out

    def ack(self, position: Position) -> None:
        """Acknowledge the line at ``position`` and every line delivered before it."""
        self._ledger.ack(position)

    def checkpoint(self) -> dict[str, Any]:
        """JSON-able resume state covering exactly the acknowledged lines.

        Before the first poll it is the checkpoint the tailer was given; after :meth:`close`, the
        state at closing: persisting it at any moment never forgets a file.
        """
        if self._frozen is not None:
            return self._frozen
        if not self._started and self._restore is not None:
            return self._restore.to_json()
        names = {id(f): path for path, f in self._files.attached.items()}
        files = tuple(f.entry(names.get(id(f))) for f in self._files.followers() if not f.lost)
        siblings = self._files.siblings
        files += tuple(siblings.pending.values())  # not found since start-up: not forgotten
        return Checkpoint(files, tuple(siblings.seen.values())).to_json()

    def statuses(self) -> tuple[FileStatus, ...]:
        """Per path: ok, missing (no data, not an error) or error (with the OS error text)."""
        return self._board.all()

    def watch_dirs(self) -> frozenset[str]:
        """Directories whose events should wake this tailer (parents of paths and targets)."""
        if self._files.changed:
            self._files.changed = False
            self._watch_dirs = watch_dirs(self.config.paths, self._files.attached)
        return self._watch_dirs

    def close(self) -> None:
        """Close every descriptor. Partial lines are not flushed: a restart re-reads them."""
        if self._frozen is None:
            self._frozen = self.checkpoint()
        self._files.close()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------------

    def _read_order(self) -> list[Follower]:
        """Rotated-away files first (their lines are older), then live files round-robin."""
        live = list(self._files.attached.values())
        if live:
            turn = self._turn % len(live)
            live = live[turn:] + live[:turn]
            self._turn += 1
        return [*self._files.detached, *live]

    def _service(self, follower: Follower, out: list[TailLine], budget: int, now: float) -> int:
        if follower.fd < 0:
            self._flush(follower, out)
            return 0
        if follower.detached_at is None and self._held_back(follower):
            return 0
        start = follower.read_pos
        cfg = self.config
        try:
            lines = follower.read(self._ledger.delivered, budget, cfg.read_chunk_bytes, now)
            self._deliver(follower, lines, out)
            if follower.detached_at is not None and follower.framer.pending:
                follower.refresh()
                if follower.at_eof and follower.quiet(now, cfg.rotate_grace):
                    self._flush(follower, out)
            follower.grow_prefix()
        except OSError as exc:
            self._files.report(follower, exc)
        else:
            self._files.recovered(follower)
        return follower.read_pos - start

    def _held_back(self, follower: Follower) -> bool:
        """Strict order: a live file waits while an older file of its path is still open."""
        if not self.config.strict_rotation_order:
            return False
        return any(f.label == follower.label and f.fd >= 0 for f in self._files.detached)

    def _flush(self, follower: Follower, out: list[TailLine]) -> None:
        line = follower.flush_partial(self._ledger.delivered)
        if line is not None:
            self._deliver(follower, [line], out)

    def _deliver(self, follower: Follower, lines: list[TailLine], out: list[TailLine]) -> None:
        self._ledger.record(follower, lines)
        out.extend(lines)
